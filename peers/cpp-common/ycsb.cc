// See ycsb.h.
#include "ycsb.h"

#include <cmath>
#include <stdexcept>

#include "harness.h"

namespace shale {
namespace ycsb {

namespace {
constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ULL;
constexpr double kTheta = 0.99;
constexpr uint64_t kScrambledItems = 10000000000ULL;
constexpr double kScrambledZetan = 26.46902820178302;
constexpr uint64_t kMaxScanLength = 100;
}  // namespace

uint64_t fnv64(uint64_t v) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (int i = 0; i < 8; i++) {
    h ^= v & 0xff;
    h *= 1099511628211ULL;
    v >>= 8;
  }
  return (h >> 63) ? (~h + 1) : h;
}

void key(uint64_t keynum, std::string* out) {
  *out = "user";
  *out += std::to_string(fnv64(keynum));
}

void Values::fill_field(uint64_t keynum, uint64_t field, uint64_t version, char* out,
                        size_t len) const {
  uint64_t salt = (version << 16) + field + 1;
  uint64_t state = mix64(seed ^ mix64(keynum) ^ mix64(salt));
  for (size_t off = 0; off < len; off += 8) {
    state += kGamma;
    uint64_t x = mix64(state);
    for (size_t b = 0; b < 8 && off + b < len; b++) out[off + b] = static_cast<char>(x >> (8 * b));
  }
}

void Values::record(uint64_t keynum, std::string* out) const {
  out->assign(record_len(), '\0');
  for (uint64_t j = 0; j < field_count; j++)
    fill_field(keynum, j, 0, &(*out)[j * field_length], field_length);
}

bool Values::update_field(uint64_t keynum, uint64_t field, uint64_t version,
                          std::string* rec) const {
  if (rec->size() != record_len() || field >= field_count) return false;
  fill_field(keynum, field, version, &(*rec)[field * field_length], field_length);
  return true;
}

Rng::Rng(uint64_t seed) : state_(mix64(seed)) {}

uint64_t Rng::next_u64() {
  state_ += kGamma;
  return mix64(state_);
}

double Rng::next_f64() {
  return static_cast<double>(next_u64() >> 11) * (1.0 / static_cast<double>(1ULL << 53));
}

uint64_t Rng::below(uint64_t m) {
  if (m == 0) return 0;
  unsigned __int128 p = static_cast<unsigned __int128>(next_u64()) * m;
  if (static_cast<uint64_t>(p) < m) {
    uint64_t t = (0 - m) % m;
    while (static_cast<uint64_t>(p) < t) p = static_cast<unsigned __int128>(next_u64()) * m;
  }
  return static_cast<uint64_t>(p >> 64);
}

static double zeta_extend(uint64_t from_n, double from_sum, uint64_t n, double theta) {
  double sum = from_sum;
  for (uint64_t i = from_n; i < n; i++) sum += 1.0 / std::pow(static_cast<double>(i + 1), theta);
  return sum;
}

double zeta(uint64_t n, double theta) { return zeta_extend(0, 0.0, n, theta); }

Zipfian::Zipfian(uint64_t items, double theta, double zetan)
    : items_(items), theta_(theta), alpha_(1.0 / (1.0 - theta)), zetan_(zetan),
      zeta2_(zeta(2, theta)), eta_(0) {
  eta_ = eta_for(items, zetan);
}

Zipfian Zipfian::ycsb_scrambled() { return Zipfian(kScrambledItems + 1, kTheta, kScrambledZetan); }

double Zipfian::eta_for(uint64_t items, double zetan) const {
  return (1.0 - std::pow(2.0 / static_cast<double>(items), 1.0 - theta_)) /
         (1.0 - zeta2_ / zetan);
}

void Zipfian::grow_to(uint64_t items) {
  if (items > items_) {
    zetan_ = zeta_extend(items_, zetan_, items, theta_);
    items_ = items;
    eta_ = eta_for(items, zetan_);
  }
}

uint64_t Zipfian::sample(Rng& rng) const {
  double u = rng.next_f64();
  double uz = u * zetan_;
  if (uz < 1.0) return 0;
  if (uz < 1.0 + std::pow(0.5, theta_)) return 1;
  double x = static_cast<double>(items_) * std::pow(eta_ * u - eta_ + 1.0, alpha_);
  // As Rust's saturating `as u64`: NaN and negatives to 0.
  uint64_t k;
  if (!(x >= 0.0)) k = 0;
  else if (x >= 18446744073709551616.0) k = UINT64_MAX;
  else k = static_cast<uint64_t>(x);
  uint64_t top = items_ == 0 ? 0 : items_ - 1;
  return k < top ? k : top;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Read: return "read";
    case Kind::Update: return "update";
    case Kind::Insert: return "insert";
    case Kind::Scan: return "scan";
    case Kind::ReadModifyWrite: return "read-modify-write";
  }
  return "?";
}

Spec workload_spec(const std::string& w) {
  Spec s;
  if (w == "a") { s.p[0] = 0.5; s.p[1] = 0.5; }
  else if (w == "b") { s.p[0] = 0.95; s.p[1] = 0.05; }
  else if (w == "c") { s.p[0] = 1.0; }
  else if (w == "d") { s.p[0] = 0.95; s.p[2] = 0.05; s.dist = Dist::Latest; }
  else if (w == "e") { s.p[3] = 0.95; s.p[2] = 0.05; }
  else if (w == "f") { s.p[0] = 0.5; s.p[4] = 0.5; }
  else throw std::runtime_error("unknown YCSB workload \"" + w + "\" (expected one of a, b, c, d, e, f)");
  return s;
}

Shared::Shared(const Spec& spec, uint64_t records, uint64_t present, uint64_t operations)
    : spec_(spec), records_(records) {
  present = std::max(present, records);
  uint64_t expected_new = static_cast<uint64_t>(static_cast<double>(operations) * spec.p[2] * 2.0);
  scramble_range_ = records + expected_new + 1;
  next_insert_ = present;
  acknowledged_ = present;
  if (spec.dist == Dist::Latest) {
    uint64_t items = std::max<uint64_t>(present == 0 ? 0 : present - 1, 2);
    latest_.emplace(items, kTheta, zeta(items, kTheta));
  }
}

void Shared::acknowledge(uint64_t keynum) {
  std::lock_guard<std::mutex> g(mu_);
  pending_.insert(keynum);
  uint64_t limit = acknowledged_.load();
  while (pending_.erase(limit) > 0) limit++;
  acknowledged_.store(limit);
}

uint64_t Shared::last() const {
  uint64_t a = acknowledged_.load();
  return a == 0 ? 0 : a - 1;
}

Generator::Generator(Shared& shared, uint64_t seed, uint64_t thread, uint64_t field_count)
    : shared_(shared), rng_(seed + thread), scrambled_(Zipfian::ycsb_scrambled()),
      latest_(shared.latest()), field_count_(field_count == 0 ? 1 : field_count) {}

Kind Generator::next_kind() {
  const Spec& s = shared_.spec();
  double total = 0.0;
  for (int k = 0; k < kKinds; k++) total += s.p[k];
  double u = rng_.next_f64() * total;
  Kind last = Kind::Read;
  for (int k = 0; k < kKinds; k++) {
    double p = s.p[k];
    if (p <= 0.0) continue;
    if (u < p) return static_cast<Kind>(k);
    u -= p;
    last = static_cast<Kind>(k);
  }
  return last;
}

uint64_t Generator::next_keynum() {
  switch (shared_.spec().dist) {
    case Dist::Uniform:
      return rng_.below(std::max<uint64_t>(shared_.records(), 1));
    case Dist::Zipfian: {
      uint64_t last = shared_.last();
      for (;;) {
        uint64_t z = scrambled_.sample(rng_);
        uint64_t k = fnv64(z) % shared_.scramble_range();
        if (k <= last) return k;
      }
    }
    case Dist::Latest: {
      uint64_t last = shared_.last();
      if (latest_ && last >= 2) {
        latest_->grow_to(last);
        uint64_t z = latest_->sample(rng_);
        return last - std::min(z, last);
      }
      return last;
    }
  }
  return 0;
}

Operation Generator::next_op() {
  Operation op;
  op.kind = next_kind();
  switch (op.kind) {
    case Kind::Read:
      op.keynum = next_keynum();
      break;
    case Kind::Update:
    case Kind::ReadModifyWrite: {
      op.keynum = next_keynum();
      op.field = rng_.below(field_count_);
      uint64_t v = rng_.next_u64();
      op.version = v == 0 ? 1 : v;
      break;
    }
    case Kind::Insert:
      op.keynum = shared_.next_insert();
      break;
    case Kind::Scan:
      op.keynum = next_keynum();
      op.length = 1 + rng_.below(kMaxScanLength);
      break;
  }
  return op;
}

}  // namespace ycsb
}  // namespace shale

// YCSB's core workloads A-F, generated exactly as crates/shale-workload's
// `ycsb` module generates them (keys, record values, operation sequences;
// checked against peers/testdata/ycsb-vectors.json). Definitions: the Rust
// module's documentation and docs/bench-ycsb.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace shale {
namespace ycsb {

// YCSB's Utils.fnvhash64: FNV-1a over the 8 little-endian bytes, then the
// absolute value as a signed 64-bit integer (2^63 for INT64_MIN).
uint64_t fnv64(uint64_t v);

// "user" + decimal(fnv64(keynum)), into *out.
void key(uint64_t keynum, std::string* out);

struct Values {
  uint64_t field_count = 10, field_length = 100, seed = 0;
  uint64_t record_len() const { return field_count * field_length; }
  // `len` bytes of the stream of field `field` of `keynum` at `version`.
  void fill_field(uint64_t keynum, uint64_t field, uint64_t version, char* out, size_t len) const;
  // The record as loaded (every field at version 0).
  void record(uint64_t keynum, std::string* out) const;
  // Replaces one field of a whole record; false if the record's length or
  // the field is wrong.
  bool update_field(uint64_t keynum, uint64_t field, uint64_t version, std::string* rec) const;
};

// splitmix64, as shale_workload::Rng.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next_u64();
  double next_f64();
  uint64_t below(uint64_t m);

 private:
  uint64_t state_;
};

double zeta(uint64_t n, double theta);

// Gray et al.'s Zipfian generator, as YCSB runs it.
class Zipfian {
 public:
  Zipfian(uint64_t items, double theta, double zetan);
  static Zipfian ycsb_scrambled();
  void grow_to(uint64_t items);
  uint64_t sample(Rng& rng) const;

 private:
  double eta_for(uint64_t items, double zetan) const;
  uint64_t items_;
  double theta_, alpha_, zetan_, zeta2_, eta_;
};

enum class Kind { Read, Update, Insert, Scan, ReadModifyWrite };
const char* kind_name(Kind k);  // read, update, insert, scan, read-modify-write
constexpr int kKinds = 5;

enum class Dist { Zipfian, Latest, Uniform };

struct Spec {
  double p[kKinds] = {0, 0, 0, 0, 0};  // in Kind order
  Dist dist = Dist::Zipfian;
};

// Throws std::runtime_error unless `letter` is a..f.
Spec workload_spec(const std::string& letter);

struct Operation {
  Kind kind = Kind::Read;
  uint64_t keynum = 0, field = 0, version = 0, length = 0;
};

// What the threads of one run share (see shale_workload::ycsb::Shared).
class Shared {
 public:
  Shared(const Spec& spec, uint64_t records, uint64_t present, uint64_t operations);
  uint64_t next_insert() { return next_insert_.fetch_add(1); }
  void acknowledge(uint64_t keynum);
  uint64_t last() const;
  const Spec& spec() const { return spec_; }
  uint64_t records() const { return records_; }
  uint64_t scramble_range() const { return scramble_range_; }
  const std::optional<Zipfian>& latest() const { return latest_; }

 private:
  Spec spec_;
  uint64_t records_, scramble_range_;
  std::atomic<uint64_t> next_insert_, acknowledged_;
  std::mutex mu_;
  std::set<uint64_t> pending_;
  std::optional<Zipfian> latest_;
};

// One thread's generator: seeded with seed + thread.
class Generator {
 public:
  Generator(Shared& shared, uint64_t seed, uint64_t thread, uint64_t field_count);
  Operation next_op();
  uint64_t next_keynum();

 private:
  Kind next_kind();
  Shared& shared_;
  Rng rng_;
  Zipfian scrambled_;
  std::optional<Zipfian> latest_;
  uint64_t field_count_;
};

}  // namespace ycsb
}  // namespace shale

// The shared part of the C++ harnesses; see harness.h and
// docs/harness-protocol.md.
#include "harness.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <thread>

#include "keccak.h"
#include "threads.h"

namespace shale {

// ---------------------------------------------------------------- dataset

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

Scheme parse_scheme(const std::string& name) {
  if (name == "hash") return Scheme::Hash;
  if (name == "hash8") return Scheme::Hash8;
  if (name == "path") return Scheme::Path;
  throw std::runtime_error("unknown key scheme \"" + name +
                           "\" (expected \"hash\", \"hash8\" or \"path\")");
}

const char* scheme_name(Scheme s) {
  switch (s) {
    case Scheme::Hash: return "hash";
    case Scheme::Hash8: return "hash8";
    case Scheme::Path: return "path";
  }
  return "?";
}

static void put_be64(uint8_t* p, uint64_t v) {
  for (int k = 0; k < 8; k++) p[k] = static_cast<uint8_t>(v >> (8 * (7 - k)));
}

// Suffix bytes of a path key: 1..8, the first nibble being the slot.
static size_t path_suffix_len(uint64_t i) { return 1 + (mix64(i) & 7); }

void make_key(Scheme scheme, uint64_t i, std::string* out) {
  out->clear();
  switch (scheme) {
    case Scheme::Hash: {
      // i as a big-endian 256-bit word: 24 zero bytes, then be64(i).
      uint8_t word[32] = {0};
      put_be64(word + 24, i);
      auto d = keccak256(word, sizeof word);
      out->assign(reinterpret_cast<const char*>(d.data()), d.size());
      break;
    }
    case Scheme::Hash8: {
      uint8_t b[8];
      put_be64(b, i);
      auto d = keccak256(b, sizeof b);
      out->assign(reinterpret_cast<const char*>(d.data()), d.size());
      break;
    }
    case Scheme::Path: {
      // Account a = i / 16 hashed with the tag "account", then a short path
      // whose first nibble is the slot i % 16 (so an account's keys sort by i).
      uint8_t in[15];
      put_be64(in, i / 16);
      std::memcpy(in + 8, "account", 7);
      auto d = keccak256(in, sizeof in);
      out->assign(reinterpret_cast<const char*>(d.data()), d.size());
      uint64_t h = mix64(i);
      size_t len = path_suffix_len(i);
      out->push_back(static_cast<char>(((i % 16) << 4) | ((h >> 3) & 0x0F)));
      for (size_t k = 1; k < len; k++) out->push_back(static_cast<char>((h >> (8 * k)) & 0xFF));
      break;
    }
  }
}

void make_value(uint64_t seed, uint64_t i, size_t size, std::string* out) {
  out->resize(size);
  uint64_t state = mix64(seed ^ mix64(i));
  for (size_t pos = 0; pos < size; pos += 8) {
    state += 0x9E3779B97F4A7C15ULL;
    uint64_t chunk = mix64(state);
    for (size_t k = 0; k < 8 && pos + k < size; k++)
      (*out)[pos + k] = static_cast<char>(chunk >> (8 * k));  // little-endian
  }
}

uint64_t DatasetSpec::key_bytes() const {
  if (parsed_scheme() != Scheme::Path) return 32 * keys;
  uint64_t total = 0;
  for (uint64_t i = 0; i < keys; i++) total += 32 + path_suffix_len(i);
  return total;
}

// ---------------------------------------------------------------- protocol

// Field accessors that say which field is missing or of the wrong type, as
// serde would refuse the request.
static const json& field(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) throw std::runtime_error(std::string("missing field `") + name + "`");
  return *it;
}

static uint64_t get_u64(const json& j, const char* name) {
  const json& v = field(j, name);
  if (!v.is_number_unsigned())
    throw std::runtime_error(std::string("field `") + name + "` must be a non-negative integer");
  return v.get<uint64_t>();
}

static std::string get_string(const json& j, const char* name) {
  const json& v = field(j, name);
  if (!v.is_string()) throw std::runtime_error(std::string("field `") + name + "` must be a string");
  return v.get<std::string>();
}

static bool get_bool(const json& j, const char* name) {
  const json& v = field(j, name);
  if (!v.is_boolean()) throw std::runtime_error(std::string("field `") + name + "` must be a boolean");
  return v.get<bool>();
}

const std::vector<std::string> kOps = {"info", "load", "inspect", "read", "dbbench", "ycsb"};

// The fields of a ycsb request (Request::dir already read). `workload`,
// `operations` and `direct_io` are required by the run phase only.
static void parse_ycsb(const json& j, Request* r) {
  YcsbRequest& y = r->ycsb;
  y.phase = get_string(j, "phase");
  if (y.phase != "load" && y.phase != "run")
    throw std::runtime_error("unknown ycsb phase \"" + y.phase + "\" (expected load or run)");
  y.records = get_u64(j, "records");
  y.field_count = get_u64(j, "field_count");
  y.field_length = get_u64(j, "field_length");
  if (y.field_count == 0 || y.field_length == 0)
    throw std::runtime_error("field_count and field_length must be at least 1");
  y.seed = get_u64(j, "seed");
  r->threads = get_u64(j, "threads");
  if (y.phase == "run") {
    y.workload = get_string(j, "workload");
    y.operations = get_u64(j, "operations");
    r->direct_io = get_bool(j, "direct_io");
  }
  const json& s = field(j, "settings");
  if (!s.is_object()) throw std::runtime_error("field `settings` must be an object");
  YcsbSettings& st = y.settings;
  st.preset = get_string(s, "preset");
  st.filters = get_string(s, "filters");
  if (st.filters != "nofilter" && st.filters != "bloom10")
    throw std::runtime_error("the peers run the presets' layouts only: settings.filters \"nofilter\" "
                             "or \"bloom10\", not \"" + st.filters + "\"");
  st.block_cache_bytes = get_u64(s, "block_cache_bytes");
  st.pin_table_metadata = get_bool(s, "pin_table_metadata");
  if (s.contains("metadata_with_tables")) st.metadata_with_tables = get_bool(s, "metadata_with_tables");
  st.write_buffer_size = get_u64(s, "write_buffer_size");
  st.target_file_size_base = get_u64(s, "target_file_size_base");
  st.max_background_jobs = get_u64(s, "max_background_jobs");
  if (!field(s, "compaction_rate_limit").is_null())
    st.compaction_rate_limit = get_u64(s, "compaction_rate_limit");
  if (s.contains("base_level_bytes")) st.base_level_bytes = get_u64(s, "base_level_bytes");
  if (s.contains("compaction_nice")) {
    const json& n = s["compaction_nice"];
    if (!n.is_number_integer()) throw std::runtime_error("field `compaction_nice` must be an integer");
    st.compaction_nice = n.get<int64_t>();
  }
}

Request parse_request(const json& j) {
  if (!j.is_object()) throw std::runtime_error("request is not a JSON object");
  uint64_t protocol = get_u64(j, "protocol");
  if (protocol != kProtocolVersion)
    throw std::runtime_error("unsupported protocol version " + std::to_string(protocol) +
                             " (this harness speaks " + std::to_string(kProtocolVersion) + ")");
  Request r;
  r.op = get_string(j, "op");
  if (std::find(kOps.begin(), kOps.end(), r.op) == kOps.end()) {
    std::string known;
    for (const std::string& o : kOps) known += (known.empty() ? "" : ", ") + o;
    throw std::runtime_error("unknown op \"" + r.op + "\" (the protocol's ops: " + known + ")");
  }
  if (r.op == "info") return r;
  r.target.dir = get_string(j, "dir");
  if (r.op == "ycsb") {
    parse_ycsb(j, &r);
    return r;
  }
  r.target.config = get_string(j, "config");
  if (r.op == "dbbench") {
    const json& b = field(j, "benchmarks");
    if (!b.is_array()) throw std::runtime_error("field `benchmarks` must be an array");
    for (const json& step : b) {
      if (!step.is_object()) throw std::runtime_error("each benchmark must be an object");
      r.benchmarks.push_back({get_string(step, "name"), get_u64(step, "seed")});
    }
    r.num = get_u64(j, "num");
    r.reads = get_u64(j, "reads");
    r.key_size = get_u64(j, "key_size");
    r.value_size = get_u64(j, "value_size");
    r.threads = get_u64(j, "threads");
    r.cache_bytes = get_u64(j, "cache_bytes");
    r.fresh = get_bool(j, "fresh");
    r.settle = get_bool(j, "settle");
    const json& of = field(j, "open_files");
    const json& bb = field(j, "bloom_bits");
    if (!of.is_number_integer() || !bb.is_number_integer())
      throw std::runtime_error("fields `open_files` and `bloom_bits` must be integers");
    r.open_files = of.get<int64_t>();
    r.bloom_bits = bb.get<int64_t>();
    r.compression = get_string(j, "compression");
    if (r.compression != "none" && r.compression != "default")
      throw std::runtime_error("field `compression` must be none or default");
    if (r.threads == 0) throw std::runtime_error("field `threads` must be at least 1");
    if (r.key_size == 0 || r.key_size > 4096)
      throw std::runtime_error("field `key_size` must be 1 to 4096");
    return r;
  }
  const json& d = field(j, "dataset");
  if (!d.is_object()) throw std::runtime_error("field `dataset` must be an object");
  r.target.dataset.keys = get_u64(d, "keys");
  r.target.dataset.scheme = get_string(d, "scheme");
  r.target.dataset.value_size = get_u64(d, "value_size");
  r.target.dataset.seed = get_u64(d, "seed");
  parse_scheme(r.target.dataset.scheme);  // refuse an unknown scheme now
  if (r.op == "load") {
    r.threads = get_u64(j, "threads");
    r.batch = get_u64(j, "batch");
    if (r.batch == 0) throw std::runtime_error("field `batch` must be at least 1");
  } else if (r.op == "read") {
    r.cache_bytes = get_u64(j, "cache_bytes");
    r.threads = get_u64(j, "threads");
    r.warmup_file = get_string(j, "warmup_file");
    r.reads_file = get_string(j, "reads_file");
    r.direct_io = get_bool(j, "direct_io");
    if (j.contains("trace") && !j["trace"].is_null()) {
      r.trace = get_string(j, "trace");
      if (r.trace.empty()) throw std::runtime_error("field `trace` must be a file path");
    }
  }
  return r;
}

static std::optional<uint64_t> sub(std::optional<uint64_t> a, std::optional<uint64_t> b) {
  if (!a || !b) return std::nullopt;
  return *a - *b;
}

static KindCounts diff(const KindCounts& a, const KindCounts& b) {
  return {sub(a.cache_hits, b.cache_hits), sub(a.cache_misses, b.cache_misses),
          sub(a.physical_reads, b.physical_reads)};
}

ReadCounters diff(const ReadCounters& a, const ReadCounters& b) {
  ReadCounters r;
  r.filter = diff(a.filter, b.filter);
  r.top_index = diff(a.top_index, b.top_index);
  r.index = diff(a.index, b.index);
  r.data = diff(a.data, b.data);
  r.table_open_reads = sub(a.table_open_reads, b.table_open_reads);
  if (a.table_cache && b.table_cache)
    r.table_cache = HitMiss{a.table_cache->hits - b.table_cache->hits,
                            a.table_cache->misses - b.table_cache->misses};
  r.read_requests = a.read_requests - b.read_requests;
  r.read_bytes = a.read_bytes - b.read_bytes;
  r.table_opens = sub(a.table_opens, b.table_opens);
  return r;
}

static json opt(std::optional<uint64_t> v) { return v ? json(*v) : json(nullptr); }

json to_json(const KindCounts& k) {
  return json{{"cache_hits", opt(k.cache_hits)},
              {"cache_misses", opt(k.cache_misses)},
              {"physical_reads", opt(k.physical_reads)}};
}

json to_json(const ReadCounters& c) {
  json j;
  j["blocks"] = json{{"filter", to_json(c.filter)},
                     {"top_index", to_json(c.top_index)},
                     {"index", to_json(c.index)},
                     {"data", to_json(c.data)}};
  j["table_open_reads"] = opt(c.table_open_reads);
  j["table_cache"] = c.table_cache ? json{{"hits", c.table_cache->hits},
                                          {"misses", c.table_cache->misses}}
                                   : json(nullptr);
  j["read_requests"] = c.read_requests;
  j["read_bytes"] = c.read_bytes;
  return j;
}

json to_json(const DbShape& s) {
  const Composition& c = s.composition;
  json comp{{"entries", c.entries},
            {"raw_key_bytes", c.raw_key_bytes},
            {"raw_value_bytes", c.raw_value_bytes},
            {"db_bytes", c.db_bytes},
            {"data_bytes", c.data_bytes},
            {"filter_bytes", c.filter_bytes},
            {"filter_bytes_except_last_level", c.filter_bytes_except_last_level},
            {"top_level_index_bytes", c.top_level_index_bytes},
            {"index_bytes", c.index_bytes}};
  json levels = json::array();
  for (const LevelShape& l : s.levels)
    levels.push_back(json{{"level", l.level}, {"files", l.files}, {"bytes", l.bytes}});
  return json{{"composition", comp}, {"levels", levels}};
}

void EngineKind::check_config(const std::string& config) const {
  for (const std::string& c : configs())
    if (c == config) return;
  std::string known;
  for (const std::string& c : configs()) known += (known.empty() ? "" : ", ") + c;
  throw std::runtime_error("unknown config \"" + config + "\" for " + name() + " (known: " +
                           known + ")");
}

// ---------------------------------------------------------------- helpers

static thread_local bool t_in_get = false;

bool in_get() { return t_in_get; }

GetScope::GetScope() { t_in_get = true; }
GetScope::~GetScope() { t_in_get = false; }

std::vector<uint64_t> read_indices(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw std::runtime_error(path + ": read error");
  if (bytes.size() % 8 != 0)
    throw std::runtime_error(path + ": " + std::to_string(bytes.size()) +
                             " bytes is not a whole number of 8-byte indices");
  std::vector<uint64_t> out(bytes.size() / 8);
  for (size_t k = 0; k < out.size(); k++) {
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--) v = (v << 8) | static_cast<uint8_t>(bytes[8 * k + b]);
    out[k] = v;
  }
  return out;
}

std::pair<size_t, size_t> thread_slice(size_t n, size_t threads, size_t t) {
  threads = std::max<size_t>(threads, 1);
  size_t share = n / threads, extra = n % threads;
  size_t start = t * share + std::min(t, extra);
  return {start, start + share + (t < extra ? 1 : 0)};
}

double percentile_us(const std::vector<uint64_t>& sorted_ns, double q) {
  if (sorted_ns.empty()) return 0.0;
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted_ns.size())));
  size_t idx = std::min(sorted_ns.size() - 1, rank == 0 ? 0 : rank - 1);
  return static_cast<double>(sorted_ns[idx]) / 1000.0;
}

// The number after `key` on the line of `path` that starts with it.
static std::optional<uint64_t> proc_field(const char* path, const std::string& key) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::string line;
  while (std::getline(f, line)) {
    if (line.compare(0, key.size(), key) == 0) {
      try {
        return std::stoull(line.substr(key.size()));
      } catch (...) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> proc_io_read_bytes() { return proc_field("/proc/self/io", "read_bytes:"); }

std::optional<uint64_t> proc_rss_bytes() {
  auto kb = proc_field("/proc/self/status", "VmRSS:");  // "VmRSS:   1234 kB"
  if (!kb) return std::nullopt;
  return *kb * 1024;
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

void log(const std::string& line) { std::cerr << "[harness] " << line << std::endl; }

// ---------------------------------------------------------------- phases

std::vector<std::string> EngineKind::ops() const {
  std::vector<std::string> out;
  for (const std::string& op : kOps)
    if ((op != "dbbench" || supports_dbbench()) && (op != "ycsb" || supports_ycsb())) out.push_back(op);
  return out;
}

json op_info(EngineKind& kind) {
  return json{{"engine", kind.name()},
              {"version", kind.version()},
              {"configs", kind.configs()},
              {"direct_io", kind.supports_direct_io()},
              {"ops", kind.ops()}};
}

static void check_new_dir(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;  // does not exist (or the engine will say why)
  bool empty = true;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) empty = false;
  }
  closedir(d);
  if (!empty) throw std::runtime_error(dir + ": load needs a directory that does not exist or is empty");
}

json op_load(EngineKind& kind, const Request& r) {
  const DatasetSpec& ds = r.target.dataset;
  kind.check_config(r.target.config);
  check_new_dir(r.target.dir);
  Scheme scheme = ds.parsed_scheme();
  size_t threads = std::max<uint64_t>(r.threads, 1);
  uint64_t batches = (ds.keys + r.batch - 1) / r.batch;

  double t0 = now_seconds();
  OpenOptions o;
  o.dir = r.target.dir;
  o.config = r.target.config;
  o.create = true;
  std::unique_ptr<Engine> db = kind.open(o);
  std::atomic<bool> stop{false};
  // Writers take batches in turn: thread t writes batches t, t + T, ...
  run_threads(threads, stop, [&](size_t t) {
    std::vector<std::pair<std::string, std::string>> kvs;
    for (uint64_t b = t; b < batches && !stop; b += threads) {
      uint64_t lo = b * r.batch, hi = std::min(ds.keys, lo + r.batch);
      kvs.resize(hi - lo);
      for (uint64_t i = lo; i < hi; i++) {
        make_key(scheme, i, &kvs[i - lo].first);
        make_value(ds.seed, i, ds.value_size, &kvs[i - lo].second);
      }
      db->put_batch(kvs);
    }
  });
  log("loaded " + std::to_string(ds.keys) + " keys in " + std::to_string(now_seconds() - t0) +
      " s; settling");
  db->settle();
  double seconds = now_seconds() - t0;
  uint64_t user_bytes = ds.key_bytes() + ds.keys * ds.value_size;
  uint64_t table_bytes = db->table_bytes_written();
  uint64_t wal = db->wal_bytes();
  DbShape shape = db->shape(ds);
  db->close();
  return json{{"engine", kind.engine_string(r.target.config)},
              {"seconds", seconds},
              {"user_bytes", user_bytes},
              {"table_bytes_written", table_bytes},
              {"wal_bytes", wal},
              {"write_amp", user_bytes ? double(table_bytes) / double(user_bytes) : 0.0},
              {"shape", to_json(shape)}};
}

// Checks one Get of index i against the dataset; throws on any difference.
static bool check_get(const DatasetSpec& ds, uint64_t i, bool found, const std::string& got,
                      std::string* want) {
  if (i < ds.keys) {
    if (!found) throw std::runtime_error("key " + std::to_string(i) + " of the dataset is missing");
    make_value(ds.seed, i, ds.value_size, want);
    if (got != *want)
      throw std::runtime_error("key " + std::to_string(i) + " has a value other than the dataset's (" +
                               std::to_string(got.size()) + " bytes)");
  } else if (found) {
    throw std::runtime_error("key " + std::to_string(i) + " is beyond the dataset's " +
                             std::to_string(ds.keys) + " keys but present");
  }
  return found;
}

json op_inspect(EngineKind& kind, const Request& r) {
  const DatasetSpec& ds = r.target.dataset;
  kind.check_config(r.target.config);
  OpenOptions o;
  o.dir = r.target.dir;
  o.config = r.target.config;
  std::unique_ptr<Engine> db = kind.open(o);
  Scheme scheme = ds.parsed_scheme();
  std::vector<uint64_t> probes;
  if (ds.keys > 0) probes = {0, ds.keys - 1};
  probes.push_back(ds.keys);
  {
    GetScope scope;
    std::string key, value, want;
    for (uint64_t i : probes) {
      make_key(scheme, i, &key);
      bool found = db->get(key, &value);
      try {
        check_get(ds, i, found, value, &want);
      } catch (const std::exception& e) {
        throw std::runtime_error(r.target.dir + " does not hold the dataset (" + ds.scheme + ", " +
                                 std::to_string(ds.keys) + " keys, value_size " +
                                 std::to_string(ds.value_size) + ", seed " +
                                 std::to_string(ds.seed) + "): " + e.what());
      }
    }
  }
  DbShape shape = db->shape(ds);
  db->close();
  return json{{"engine", kind.engine_string(r.target.config)}, {"shape", to_json(shape)}};
}

// Runs the Gets of `indices` on `threads` threads (contiguous slices) and
// verifies every answer; returns how many were found. With `latencies`, each
// Get's nanoseconds are appended (all threads' together, unsorted).
static uint64_t run_gets(Engine& db, const DatasetSpec& ds, const std::vector<uint64_t>& indices,
                         size_t threads, std::vector<uint64_t>* latencies) {
  Scheme scheme = ds.parsed_scheme();
  threads = std::max<size_t>(threads, 1);
  std::vector<std::vector<uint64_t>> per_thread(threads);
  std::atomic<uint64_t> found{0};
  std::atomic<bool> stop{false};
  run_threads(threads, stop, [&](size_t t) {
    GetScope scope;
    auto [lo, hi] = thread_slice(indices.size(), threads, t);
    std::vector<uint64_t>& lat = per_thread[t];
    if (latencies) lat.reserve(hi - lo);
    std::string key, value, want;
    uint64_t n = 0;
    for (size_t k = lo; k < hi && !stop; k++) {
      uint64_t i = indices[k];
      make_key(scheme, i, &key);
      auto start = std::chrono::steady_clock::now();
      bool ok = db.get(key, &value);
      auto end = std::chrono::steady_clock::now();
      if (latencies)
        lat.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
      if (check_get(ds, i, ok, value, &want)) n++;
    }
    found += n;
  });
  if (latencies)
    for (auto& v : per_thread) latencies->insert(latencies->end(), v.begin(), v.end());
  return found;
}

json op_read(EngineKind& kind, const Request& r) {
  const DatasetSpec& ds = r.target.dataset;
  kind.check_config(r.target.config);
  if (!r.trace.empty() && !kind.supports_trace())
    throw std::runtime_error("the " + kind.name() +
                             " harness cannot record a block-access trace (field `trace`): " +
                             kind.name() + " has no block-cache tracing");
  std::vector<uint64_t> warmup = read_indices(r.warmup_file);
  std::vector<uint64_t> reads = read_indices(r.reads_file);
  OpenOptions o;
  o.dir = r.target.dir;
  o.config = r.target.config;
  o.cache_bytes = r.cache_bytes;
  o.direct_io = r.direct_io;
  std::unique_ptr<Engine> db = kind.open(o);
  size_t threads = std::max<uint64_t>(r.threads, 1);
  if (!r.trace.empty()) db->start_trace(r.trace);

  double tw = now_seconds();
  run_gets(*db, ds, warmup, threads, nullptr);
  log("warm-up: " + std::to_string(warmup.size()) + " Gets in " +
      std::to_string(now_seconds() - tw) + " s");
  if (!r.trace.empty()) db->mark_trace_measure();

  ReadCounters before = db->counters();
  auto io_before = proc_io_read_bytes();
  std::vector<uint64_t> lat;
  lat.reserve(reads.size());
  double t0 = now_seconds();
  uint64_t found = run_gets(*db, ds, reads, threads, &lat);
  double seconds = now_seconds() - t0;
  if (!r.trace.empty()) db->end_trace();
  auto io_after = proc_io_read_bytes();
  ReadCounters counters = diff(db->counters(), before);
  std::sort(lat.begin(), lat.end());
  if (counters.table_opens) {
    log("tables opened during the measured Gets: " + std::to_string(*counters.table_opens));
    if (!counters.table_open_reads && *counters.table_opens == 0) counters.table_open_reads = 0;
  }

  json j{{"engine", kind.engine_string(r.target.config)},
         {"cache_bytes", r.cache_bytes},
         {"direct_io", kind.uses_direct_io(o)},
         {"gets", static_cast<uint64_t>(reads.size())},
         {"found", found},
         {"seconds", seconds},
         {"latency", json{{"p50_us", percentile_us(lat, 0.50)},
                          {"p99_us", percentile_us(lat, 0.99)},
                          {"p999_us", percentile_us(lat, 0.999)}}}};
  json counter_fields = to_json(counters);  // a named object: items() refers into it
  for (auto& [k, v] : counter_fields.items()) j[k] = v;
  j["device_read_bytes"] = (io_before && io_after) ? json(*io_after - *io_before) : json(nullptr);
  auto rss = proc_rss_bytes();
  j["rss_bytes"] = rss ? json(*rss) : json(nullptr);
  db->close();
  return j;
}

// ---------------------------------------------------------------- dbbench

// The workloads' splitmix64 generator (crates/shale-workload's Rng): the
// same seed draws the same keys as `shale bench db`.
namespace {
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(mix64(seed)) {}
  uint64_t next() {
    state += 0x9E3779B97F4A7C15ULL;
    return mix64(state);
  }
  // Uniform in [0, m), unbiased (multiply and reject).
  uint64_t below(uint64_t m) {
    if (m == 0) return 0;
    unsigned __int128 p = static_cast<unsigned __int128>(next()) * m;
    if (static_cast<uint64_t>(p) < m) {
      uint64_t threshold = (0 - m) % m;
      while (static_cast<uint64_t>(p) < threshold)
        p = static_cast<unsigned __int128>(next()) * m;
    }
    return static_cast<uint64_t>(p >> 64);
  }
};

// Key k: k in decimal, zero-padded to `width` bytes (db_bench's %016d).
void dbbench_key(uint64_t k, size_t width, std::string* out) {
  out->assign(width, '0');
  for (size_t i = width; k > 0 && i > 0; k /= 10) (*out)[--i] = static_cast<char>('0' + k % 10);
}

// Half-compressible values: every 100 bytes are 50 random printable bytes
// written twice.
struct Values {
  std::string pool;
  size_t pos = 0;
  Values(uint64_t seed, size_t value_size) {
    Rng rng(seed ^ 0x7a1e5eedULL);
    size_t len = std::max<size_t>(1 << 20, value_size);
    while (pool.size() < len) {
      std::string half(50, ' ');
      for (char& c : half) c = static_cast<char>(' ' + rng.below(95));
      pool += half;
      pool += half;
    }
    pool.resize(len);
  }
  std::string next(size_t n) {
    if (pos + n > pool.size()) pos = 0;
    pos += n;
    return pool.substr(pos - n, n);
  }
};

struct StepOut {
  uint64_t ops = 0, found = 0, bytes = 0;
};
}  // namespace

static const char* const kDbBenchNames[] = {"fillseq",  "fillrandom", "overwrite",
                                            "readrandom", "readhot",  "readmissing",
                                            "seekrandom", "readseq",  "readreverse"};

json op_dbbench(EngineKind& kind, const Request& r) {
  if (!kind.supports_dbbench())
    throw std::runtime_error("op dbbench is not served by the " + kind.name() + " harness");
  for (const DbBenchStep& step : r.benchmarks) {
    bool known = false;
    for (const char* n : kDbBenchNames) known = known || step.name == n;
    if (!known) throw std::runtime_error("dbbench: unknown benchmark \"" + step.name + "\"");
  }
  // A fresh database replaces the one there, under that one's lock.
  if (r.fresh) kind.destroy(r.target.dir);
  OpenOptions o;
  o.dir = r.target.dir;
  o.config = r.target.config;
  o.create = r.fresh;
  o.cache_bytes = r.cache_bytes;
  o.open_files = r.open_files;
  o.bloom_bits = r.bloom_bits;
  o.compress = r.compression != "none";
  std::unique_ptr<Engine> e = kind.open(o);
  const size_t width = r.key_size;
  size_t digits = 1;
  for (uint64_t v = r.num > 0 ? r.num - 1 : 0; v >= 10; v /= 10) digits++;
  if (digits > width)
    throw std::runtime_error("dbbench: key_size " + std::to_string(width) + " cannot hold num " +
                             std::to_string(r.num));
  json results = json::array();
  for (const DbBenchStep& step : r.benchmarks) {
    const std::string& name = step.name;
    bool write = name == "fillseq" || name == "fillrandom" || name == "overwrite";
    uint64_t n = write ? r.num : r.reads;
    uint64_t range = name == "readhot" ? std::max<uint64_t>(1, (r.num + 99) / 100) : r.num;
    ReadCounters before = e->counters();
    std::vector<StepOut> outs(r.threads);
    std::vector<std::string> errors(r.threads);
    double start = now_seconds();
    std::vector<std::thread> threads;
    for (size_t t = 0; t < r.threads; t++) {
      threads.emplace_back([&, t] {
        try {
          StepOut& out = outs[t];
          Rng rng(step.seed * 0x9E3779B97F4A7C15ULL + t + 1);
          std::string key, value, landed;
          if (write) {
            Values values(step.seed + t, r.value_size);
            for (uint64_t i = 0; i < n; i++) {
              dbbench_key(name == "fillseq" ? i : rng.below(r.num), width, &key);
              std::string v = values.next(r.value_size);
              out.bytes += key.size() + v.size();
              e->put_batch({{key, std::move(v)}});
              out.ops++;
            }
            return;
          }
          GetScope scope;
          if (name == "readseq" || name == "readreverse") {
            out.ops = e->scan(n, name == "readreverse", &out.bytes);
            out.found = out.ops;
            return;
          }
          for (uint64_t i = 0; i < n; i++) {
            dbbench_key(rng.below(range), width, &key);
            if (name == "seekrandom") {
              uint64_t b = 0;
              if (e->seek(key, &landed, &b)) {
                out.bytes += b;
                if (landed == key) out.found++;
              }
            } else {
              if (name == "readmissing") key.push_back('.');
              if (e->get(key, &value)) {
                out.found++;
                out.bytes += key.size() + value.size();
              }
            }
            out.ops++;
          }
        } catch (const std::exception& ex) {
          errors[t] = ex.what();
        }
      });
    }
    for (std::thread& th : threads) th.join();
    double wall = now_seconds() - start;
    for (const std::string& err : errors)
      if (!err.empty()) throw std::runtime_error("dbbench " + name + ": " + err);
    ReadCounters d = diff(e->counters(), before);
    StepOut sum;
    for (const StepOut& o2 : outs) {
      sum.ops += o2.ops;
      sum.found += o2.found;
      sum.bytes += o2.bytes;
    }
    double ops = static_cast<double>(std::max<uint64_t>(sum.ops, 1));
    results.push_back(json{
        {"name", name},
        {"ops", sum.ops},
        {"seconds", wall},
        {"micros_per_op", wall * 1e6 * static_cast<double>(r.threads) / ops},
        {"found", sum.found},
        {"bytes", sum.bytes},
        {"block_cache_hits", opt(d.data.cache_hits)},
        {"block_cache_misses", opt(d.data.cache_misses)},
        {"table_cache_hits", d.table_cache ? json(d.table_cache->hits) : json(nullptr)},
        {"table_cache_misses",
         d.table_cache ? json(d.table_cache->misses) : opt(d.table_opens)},
    });
    log("dbbench " + name + ": " + std::to_string(sum.ops) + " ops in " + std::to_string(wall) +
        " s");
  }
  double settle_seconds = 0;
  if (r.settle) {
    double t0 = now_seconds();
    e->settle();
    settle_seconds = now_seconds() - t0;
  }
  e->close();
  return json{{"engine", kind.engine_string(r.target.config)},
              {"results", results},
              {"settle_seconds", settle_seconds}};
}

json handle(EngineKind& kind, const std::string& request_text) {
  json j;
  try {
    j = json::parse(request_text);
  } catch (const json::parse_error& e) {
    throw std::runtime_error(std::string("request is not valid JSON: ") + e.what());
  }
  Request r = parse_request(j);
  std::vector<std::string> served = kind.ops();
  if (std::find(served.begin(), served.end(), r.op) == served.end()) {
    std::string list;
    for (const std::string& o : served) list += (list.empty() ? "" : ", ") + o;
    throw std::runtime_error("op " + r.op + " is not served by the " + kind.name() +
                             " harness (it serves " + list + ")");
  }
  if (r.op == "info") return op_info(kind);
  if (r.op == "ycsb") return op_ycsb(kind, r);
  if (r.op == "load") return op_load(kind, r);
  if (r.op == "inspect") return op_inspect(kind, r);
  if (r.op == "dbbench") return op_dbbench(kind, r);
  return op_read(kind, r);
}

int harness_main(EngineKind& kind) {
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  try {
    json reply = handle(kind, text);
    std::cout << reply.dump(-1, ' ', false, json::error_handler_t::replace) << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');  // one line
    log("error: " + msg);
    std::cout << json{{"error", msg}}.dump(-1, ' ', false, json::error_handler_t::replace)
              << std::endl;
    return 1;
  }
}

}  // namespace shale

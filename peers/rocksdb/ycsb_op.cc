// See ycsb_op.h. The records, operations and their semantics are those of
// `shale bench ycsb` (peers/cpp-common/ycsb.h, docs/bench-ycsb.md); the
// options are the preset's, mapped to RocksDB's as docs/bench-ycsb.md says.
#include "ycsb_op.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/perf_context.h>
#include <rocksdb/perf_level.h>
#include <rocksdb/rate_limiter.h>
#include <rocksdb/statistics.h>
#include <rocksdb/table.h>
#include <rocksdb/version.h>
#include <rocksdb/write_batch.h>

#include "../cpp-common/threads.h"
#include "../cpp-common/ycsb.h"

namespace shale_rocksdb {

using shale::json;
namespace ycsb = shale::ycsb;

namespace {

const char* kMarkerKey = "!ycsb";

const json& need(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) throw std::runtime_error(std::string("missing field `") + name + "`");
  return *it;
}

uint64_t u64(const json& j, const char* name) {
  const json& v = need(j, name);
  if (!v.is_number_unsigned())
    throw std::runtime_error(std::string("field `") + name + "` must be a non-negative integer");
  return v.get<uint64_t>();
}

std::string str(const json& j, const char* name) {
  const json& v = need(j, name);
  if (!v.is_string()) throw std::runtime_error(std::string("field `") + name + "` must be a string");
  return v.get<std::string>();
}

bool boolean(const json& j, const char* name) {
  const json& v = need(j, name);
  if (!v.is_boolean()) throw std::runtime_error(std::string("field `") + name + "` must be a boolean");
  return v.get<bool>();
}

// The preset's options (the `settings` object of the request).
struct Settings {
  std::string preset, filters;
  uint64_t block_cache_bytes = 0, write_buffer_size = 0, target_file_size_base = 0;
  uint64_t max_background_jobs = 2;
  bool pin_table_metadata = false;
  std::optional<uint64_t> rate_limit;
  // max_bytes_for_level_base; RocksDB's default when the request has none.
  std::optional<uint64_t> base_level_bytes;
};

Settings parse_settings(const json& s) {
  if (!s.is_object()) throw std::runtime_error("field `settings` must be an object");
  Settings r;
  r.preset = str(s, "preset");
  r.filters = str(s, "filters");
  if (r.filters != "nofilter" && r.filters != "bloom10")
    throw std::runtime_error("rocksdb runs the presets' layouts only: filters \"nofilter\" or "
                             "\"bloom10\", not \"" + r.filters + "\"");
  r.block_cache_bytes = u64(s, "block_cache_bytes");
  r.pin_table_metadata = boolean(s, "pin_table_metadata");
  r.write_buffer_size = u64(s, "write_buffer_size");
  r.target_file_size_base = u64(s, "target_file_size_base");
  r.max_background_jobs = u64(s, "max_background_jobs");
  const json& rl = need(s, "compaction_rate_limit");
  if (!rl.is_null()) r.rate_limit = u64(s, "compaction_rate_limit");
  if (s.contains("base_level_bytes")) r.base_level_bytes = u64(s, "base_level_bytes");
  return r;
}

// RocksDB's options for a preset (docs/bench-ycsb.md): baseline is RocksDB's
// defaults with the cache; the read-optimized presets add 10-bit Bloom
// filters, partitioned index and filters, index and filter blocks in the
// cache with the top level pinned; mild-pressure adds the small memtables
// and tables, the background jobs and a rate limiter. Every preset sends
// max_bytes_for_level_base (RocksDB's default, so that shale runs with the
// same); levels stay static (7.8's default).
rocksdb::Options options_for(const Settings& s, bool create, bool direct_io,
                             std::shared_ptr<rocksdb::Statistics> stats) {
  rocksdb::Options o;
  o.create_if_missing = create;
  o.statistics = std::move(stats);
  o.use_direct_reads = direct_io;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = rocksdb::NewLRUCache(std::max<uint64_t>(s.block_cache_bytes, 1));
  if (s.filters == "bloom10") {
    t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    t.partition_filters = true;
    t.index_type = rocksdb::BlockBasedTableOptions::kTwoLevelIndexSearch;
    t.cache_index_and_filter_blocks = true;
    t.pin_top_level_index_and_filter = true;
  }
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  if (s.write_buffer_size > 0) o.write_buffer_size = s.write_buffer_size;
  if (s.base_level_bytes) o.max_bytes_for_level_base = *s.base_level_bytes;
  if (s.preset == "mild-pressure") {
    o.target_file_size_base = s.target_file_size_base;
    o.max_background_jobs = static_cast<int>(s.max_background_jobs);
    if (s.rate_limit)
      o.rate_limiter.reset(rocksdb::NewGenericRateLimiter(static_cast<int64_t>(*s.rate_limit)));
  }
  return o;
}

struct Marker {
  uint64_t records = 0, present = 0, field_count = 0, field_length = 0;
  std::string filters;
};

json marker_json(const Marker& m) {
  return json{{"records", m.records},         {"present", m.present},
              {"field_count", m.field_count}, {"field_length", m.field_length},
              {"filters", m.filters}};
}

std::optional<Marker> read_marker(rocksdb::DB* db) {
  std::string v;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), kMarkerKey, &v);
  if (s.IsNotFound()) return std::nullopt;
  if (!s.ok()) throw std::runtime_error("rocksdb get: " + s.ToString());
  json j = json::parse(v);
  Marker m;
  m.records = u64(j, "records");
  m.present = u64(j, "present");
  m.field_count = u64(j, "field_count");
  m.field_length = u64(j, "field_length");
  m.filters = str(j, "filters");
  return m;
}

void check(const rocksdb::Status& s, const std::string& what) {
  if (!s.ok()) throw std::runtime_error("rocksdb " + what + ": " + s.ToString());
}

uint64_t int_property(rocksdb::DB* db, const std::string& name) {
  uint64_t v = 0;
  if (!db->GetIntProperty(name, &v)) throw std::runtime_error("rocksdb: no property " + name);
  return v;
}

// Flush, then wait until no compaction is pending or running (3 polls in a
// row, 100 ms apart), as the harness's settle does.
void settle(rocksdb::DB* db) {
  rocksdb::FlushOptions fo;
  fo.wait = true;
  check(db->Flush(fo), "flush");
  int stable = 0;
  while (stable < 3) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    bool idle = int_property(db, rocksdb::DB::Properties::kCompactionPending) == 0 &&
                int_property(db, rocksdb::DB::Properties::kNumRunningCompactions) == 0 &&
                int_property(db, rocksdb::DB::Properties::kNumRunningFlushes) == 0 &&
                int_property(db, rocksdb::DB::Properties::kMemTableFlushPending) == 0;
    stable = idle ? stable + 1 : 0;
  }
}

std::unique_ptr<rocksdb::DB> open_db(const std::string& dir, const rocksdb::Options& o) {
  rocksdb::DB* db = nullptr;
  check(rocksdb::DB::Open(o, dir, &db), "open " + dir);
  return std::unique_ptr<rocksdb::DB>(db);
}

std::string engine_string() {
  return "rocksdb " + std::to_string(ROCKSDB_MAJOR) + "." + std::to_string(ROCKSDB_MINOR) + "." +
         std::to_string(ROCKSDB_PATCH);
}

// Loads records 0..records into a new database, settles, writes the marker.
json load(const json& r, const Settings& s, const ycsb::Values& values, uint64_t records) {
  std::string dir = str(r, "dir");
  uint64_t threads = u64(r, "threads");
  double start = shale::now_seconds();
  Settings load_settings = s;
  load_settings.preset = "load";  // RocksDB's defaults but the filters and a small cache
  load_settings.block_cache_bytes = 8 << 20;
  load_settings.write_buffer_size = 0;
  auto db = open_db(dir, options_for(load_settings, true, false, nullptr));
  if (read_marker(db.get())) throw std::runtime_error(dir + " already holds a YCSB database");
  std::atomic<uint64_t> next{0};
  std::atomic<bool> stop{false};
  shale::run_threads(threads, stop, [&](size_t) {
    std::string k, v;
    while (!stop) {
      uint64_t lo = next.fetch_add(1000);
      if (lo >= records) return;
      uint64_t hi = std::min(lo + 1000, records);
      rocksdb::WriteBatch b;
      for (uint64_t n = lo; n < hi; n++) {
        ycsb::key(n, &k);
        values.record(n, &v);
        b.Put(k, v);
      }
      check(db->Write(rocksdb::WriteOptions(), &b), "write");
    }
  });
  settle(db.get());
  Marker m{records, records, values.field_count, values.field_length, s.filters};
  check(db->Put(rocksdb::WriteOptions(), kMarkerKey, marker_json(m).dump()), "put");
  check(db->Flush(rocksdb::FlushOptions()), "flush");
  check(db->Close(), "close");
  return json{{"engine", engine_string()}, {"seconds", shale::now_seconds() - start}};
}

struct Latencies {
  std::vector<uint64_t> ns[ycsb::kKinds];
};

// One thread's operations, performed as YCSB's RocksDB binding does: an
// update reads the record and writes it back with one field replaced; a
// read-modify-write is a read followed by such an update.
class Worker {
 public:
  Worker(rocksdb::DB* db, const ycsb::Values& v) : db_(db), v_(v) {}

  void perform(const ycsb::Operation& op) {
    switch (op.kind) {
      case ycsb::Kind::Read: read(op.keynum); break;
      case ycsb::Kind::Update: update(op.keynum, op.field, op.version); break;
      case ycsb::Kind::Insert:
        ycsb::key(op.keynum, &key_);
        v_.record(op.keynum, &value_);
        check(db_->Put(rocksdb::WriteOptions(), key_, value_), "insert");
        break;
      case ycsb::Kind::Scan: scan(op.keynum, op.length); break;
      case ycsb::Kind::ReadModifyWrite:
        read(op.keynum);
        update(op.keynum, op.field, op.version);
        break;
    }
  }

 private:
  void read(uint64_t n) {
    ycsb::key(n, &key_);
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), key_, &value_);
    if (s.IsNotFound()) throw std::runtime_error("record " + std::to_string(n) + " is missing");
    check(s, "get");
    if (value_.size() != v_.record_len())
      throw std::runtime_error("record " + std::to_string(n) + " has the wrong length");
  }

  void update(uint64_t n, uint64_t field, uint64_t version) {
    read(n);
    if (!v_.update_field(n, field, version, &value_))
      throw std::runtime_error("record " + std::to_string(n) + ": field out of range");
    check(db_->Put(rocksdb::WriteOptions(), key_, value_), "update");
  }

  void scan(uint64_t n, uint64_t length) {
    ycsb::key(n, &key_);
    rocksdb::ReadOptions ro;
    std::string upper = "user:";
    rocksdb::Slice upper_slice(upper);
    ro.iterate_upper_bound = &upper_slice;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
    uint64_t got = 0;
    for (it->Seek(key_); it->Valid() && got < length; it->Next()) {
      if (!it->key().starts_with("user")) break;
      value_.assign(it->value().data(), it->value().size());
      got++;
    }
    check(it->status(), "scan");
    if (got == 0) throw std::runtime_error("scan from record " + std::to_string(n) + " found nothing");
  }

  rocksdb::DB* db_;
  const ycsb::Values& v_;
  std::string key_, value_;
};

// Delayed or stopped writes: the count of RocksDB's WRITE_STALL histogram
// (one sample per write that waited).
uint64_t stall_events(rocksdb::Statistics& stats) {
  rocksdb::HistogramData h;
  stats.histogramData(rocksdb::WRITE_STALL, &h);
  return h.count;
}

json op_result(std::vector<uint64_t>& ns, double seconds) {
  std::sort(ns.begin(), ns.end());
  double sum = 0;
  for (uint64_t x : ns) sum += static_cast<double>(x);
  return json{{"count", ns.size()},
              {"ops_per_sec", static_cast<double>(ns.size()) / std::max(seconds, 1e-9)},
              {"mean_us", ns.empty() ? 0.0 : sum / static_cast<double>(ns.size()) / 1000.0},
              {"p50_us", shale::percentile_us(ns, 0.5)},
              {"p95_us", shale::percentile_us(ns, 0.95)},
              {"p99_us", shale::percentile_us(ns, 0.99)},
              {"p999_us", shale::percentile_us(ns, 0.999)}};
}

// Runs the operations with the preset's options, updates the marker,
// settles, closes.
json run(const json& r, const Settings& s, const ycsb::Values& values, uint64_t records) {
  std::string dir = str(r, "dir");
  std::string workload = str(r, "workload");
  ycsb::Spec spec = ycsb::workload_spec(workload);
  uint64_t threads = std::max<uint64_t>(u64(r, "threads"), 1);
  uint64_t operations = u64(r, "operations");
  uint64_t seed = u64(r, "seed");
  auto stats = rocksdb::CreateDBStatistics();
  auto db = open_db(dir, options_for(s, false, boolean(r, "direct_io"), stats));
  std::optional<Marker> m = read_marker(db.get());
  if (!m || m->records != records || m->field_count != values.field_count ||
      m->field_length != values.field_length || m->filters != s.filters)
    throw std::runtime_error(dir + " holds no YCSB database of " + std::to_string(records) +
                             " records of this layout with " + s.filters + " filters");
  ycsb::Shared shared(spec, m->records, m->present, operations);
  std::vector<Latencies> lat(threads);
  std::atomic<bool> stop{false}, done{false};
  std::atomic<uint64_t> pending_max{int_property(db.get(), rocksdb::DB::Properties::kEstimatePendingCompactionBytes)};
  uint64_t stall_micros0 = stats->getTickerCount(rocksdb::STALL_MICROS);
  uint64_t stalls0 = stall_events(*stats);
  uint64_t gets0 = stats->getTickerCount(rocksdb::NUMBER_KEYS_READ);
  // Blocks the operations' threads read from files (data, index and filter
  // blocks their Gets missed in the cache), from RocksDB's per-thread perf
  // context: the figure `shale bench ycsb` reports as block reads per Get.
  std::atomic<uint64_t> block_reads{0};
  // Block-cache lookups and misses of those Gets per level (the per-level
  // perf context). Where index and filter blocks stay with the open tables
  // (baseline), every lookup is a data block: a table searched.
  std::array<std::atomic<uint64_t>, 7> level_lookups{}, level_misses{};
  std::thread sampler([&] {
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      uint64_t p = int_property(db.get(), rocksdb::DB::Properties::kEstimatePendingCompactionBytes);
      uint64_t cur = pending_max.load();
      while (p > cur && !pending_max.compare_exchange_weak(cur, p)) {
      }
    }
  });
  double start = shale::now_seconds();
  try {
    shale::run_threads(threads, stop, [&](size_t t) {
      uint64_t share = operations / threads + (t < operations % threads ? 1 : 0);
      ycsb::Generator g(shared, seed, t, values.field_count);
      Worker w(db.get(), values);
      rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
      rocksdb::get_perf_context()->Reset();
      rocksdb::get_perf_context()->EnablePerLevelPerfContext();
      struct CountReads {
        std::atomic<uint64_t>& into;
        std::array<std::atomic<uint64_t>, 7>& lookups;
        std::array<std::atomic<uint64_t>, 7>& misses;
        ~CountReads() {
          rocksdb::PerfContext* pc = rocksdb::get_perf_context();
          into += pc->block_read_count;
          if (pc->level_to_perf_context != nullptr) {
            for (const auto& [level, c] : *pc->level_to_perf_context) {
              if (level >= lookups.size()) continue;
              lookups[level] += c.block_cache_hit_count + c.block_cache_miss_count;
              misses[level] += c.block_cache_miss_count;
            }
          }
          pc->DisablePerLevelPerfContext();
        }
      } count_reads{block_reads, level_lookups, level_misses};
      for (uint64_t j = 0; j < share && !stop; j++) {
        ycsb::Operation op = g.next_op();
        auto t0 = std::chrono::steady_clock::now();
        w.perform(op);
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
        if (op.kind == ycsb::Kind::Insert) shared.acknowledge(op.keynum);
        lat[t].ns[static_cast<int>(op.kind)].push_back(static_cast<uint64_t>(std::max<int64_t>(ns, 1)));
      }
    });
  } catch (...) {
    done = true;
    sampler.join();
    throw;
  }
  double seconds = shale::now_seconds() - start;
  done = true;
  sampler.join();
  uint64_t p = int_property(db.get(), rocksdb::DB::Properties::kEstimatePendingCompactionBytes);
  uint64_t pmax = std::max(pending_max.load(), p);
  json ops = json::object();
  uint64_t total = 0;
  for (int k = 0; k < ycsb::kKinds; k++) {
    std::vector<uint64_t> all;
    for (auto& l : lat) all.insert(all.end(), l.ns[k].begin(), l.ns[k].end());
    if (all.empty()) continue;
    total += all.size();
    ops[ycsb::kind_name(static_cast<ycsb::Kind>(k))] = op_result(all, seconds);
  }
  uint64_t stall_micros = stats->getTickerCount(rocksdb::STALL_MICROS) - stall_micros0;
  uint64_t stalls = stall_events(*stats) - stalls0;
  uint64_t gets = stats->getTickerCount(rocksdb::NUMBER_KEYS_READ) - gets0;
  json lookups_json = json::array(), misses_json = json::array();
  for (size_t l = 0; l < level_lookups.size(); l++) {
    lookups_json.push_back(level_lookups[l].load());
    misses_json.push_back(level_misses[l].load());
  }
  Marker updated = *m;
  updated.present = shared.last() + 1;
  check(db->Put(rocksdb::WriteOptions(), kMarkerKey, marker_json(updated).dump()), "put");
  settle(db.get());
  check(db->Close(), "close");
  return json{{"engine", engine_string()},
              {"operations", total},
              {"seconds", seconds},
              {"ops_per_sec", static_cast<double>(total) / std::max(seconds, 1e-9)},
              {"ops", ops},
              {"pending_compaction_bytes_max", pmax},
              {"stall_count", stalls},
              {"stall_micros", stall_micros},
              {"gets", gets},
              {"block_reads", block_reads.load()},
              {"level_lookups", lookups_json},
              {"level_misses", misses_json}};
}

}  // namespace

json op_ycsb(const json& r) {
  std::string phase = str(r, "phase");
  Settings s = parse_settings(need(r, "settings"));
  ycsb::Values values{u64(r, "field_count"), u64(r, "field_length"), u64(r, "seed")};
  if (values.field_count == 0 || values.field_length == 0)
    throw std::runtime_error("field_count and field_length must be at least 1");
  uint64_t records = u64(r, "records");
  if (phase == "load") return load(r, s, values, records);
  if (phase == "run") return run(r, s, values, records);
  throw std::runtime_error("unknown ycsb phase \"" + phase + "\" (expected load or run)");
}

}  // namespace shale_rocksdb

// The harness protocol's `ycsb` op (docs/harness-protocol.md) for every C++
// engine: loads a database of YCSB records, or runs a workload on it with a
// preset's options. The records, operations and their semantics are those
// of `shale bench ycsb` (ycsb.h, docs/bench-ycsb.md); how a preset maps to
// an engine's options is the engine's (EngineKind::open with
// OpenOptions::ycsb, documented in its README.md).
//
// # Concurrency
//
// A run's operation threads share the Engine (whose calls are thread-safe,
// as the engines' own are) and a ycsb::Shared; each owns its Generator,
// Worker and latency vectors. A sampler thread reads the engine's
// compaction-debt estimate every 250 ms into an atomic maximum.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <thread>

#include "harness.h"
#include "threads.h"
#include "ycsb.h"

namespace shale {

namespace {

// The marker record: it sorts before every `user` key, so no scan meets it.
const char* const kMarkerKey = "!ycsb";
// Every record key starts with "user" and a digit: scans stop before this.
const char* const kKeyEnd = "user:";
// Records per load batch.
constexpr uint64_t kLoadBatch = 1000;
// The load's block cache (not measured).
constexpr uint64_t kLoadCacheBytes = 8 << 20;

struct Marker {
  uint64_t records = 0, present = 0, field_count = 0, field_length = 0;
  std::string filters;
};

json marker_json(const Marker& m) {
  return json{{"records", m.records},         {"present", m.present},
              {"field_count", m.field_count}, {"field_length", m.field_length},
              {"filters", m.filters}};
}

std::optional<Marker> read_marker(Engine& db) {
  std::string v;
  if (!db.get(kMarkerKey, &v)) return std::nullopt;
  json j = json::parse(v, nullptr, false);
  auto u = [&](const char* f) {
    if (!j.is_object() || !j.contains(f) || !j[f].is_number_unsigned())
      throw std::runtime_error(std::string("unreadable YCSB marker record: no `") + f + "`");
    return j[f].get<uint64_t>();
  };
  Marker m;
  m.records = u("records");
  m.present = u("present");
  m.field_count = u("field_count");
  m.field_length = u("field_length");
  if (!j.contains("filters") || !j["filters"].is_string())
    throw std::runtime_error("unreadable YCSB marker record: no `filters`");
  m.filters = j["filters"].get<std::string>();
  return m;
}

json settings_ignored(EngineKind& kind, const YcsbSettings& s) {
  std::vector<std::string> ignored = kind.ycsb_settings_ignored(s);
  if (!ignored.empty()) {
    std::string list;
    for (const std::string& i : ignored) list += (list.empty() ? "" : ", ") + i;
    log(kind.name() + " has no equivalent of these settings, which it ignores: " + list);
  }
  return ignored;
}

// Loads records 0..records into a new database (the preset's filters, the
// engine's defaults but a small cache and memtable), settles, writes the
// marker.
json load(EngineKind& kind, const Request& r, const ycsb::Values& values) {
  const YcsbRequest& y = r.ycsb;
  double start = now_seconds();
  YcsbSettings s = y.settings;
  s.preset = "load";
  s.block_cache_bytes = kLoadCacheBytes;
  s.write_buffer_size = 0;  // the engine's default
  OpenOptions o;
  o.dir = r.target.dir;
  o.create = true;
  o.ycsb = s;
  std::unique_ptr<Engine> db = kind.open(o);
  if (read_marker(*db)) throw std::runtime_error(o.dir + " already holds a YCSB database");
  std::atomic<uint64_t> next{0};
  std::atomic<bool> stop{false};
  run_threads(std::max<uint64_t>(r.threads, 1), stop, [&](size_t) {
    std::vector<std::pair<std::string, std::string>> kvs;
    while (!stop) {
      uint64_t lo = next.fetch_add(kLoadBatch);
      if (lo >= y.records) return;
      uint64_t hi = std::min(lo + kLoadBatch, y.records);
      kvs.resize(hi - lo);
      for (uint64_t n = lo; n < hi; n++) {
        ycsb::key(n, &kvs[n - lo].first);
        values.record(n, &kvs[n - lo].second);
      }
      db->put_batch(kvs);
    }
  });
  db->settle();
  Marker m{y.records, y.records, values.field_count, values.field_length, s.filters};
  db->put(kMarkerKey, marker_json(m).dump());
  db->flush();
  db->close();
  return json{{"engine", kind.engine_version_string()},
              {"seconds", now_seconds() - start},
              {"settings_ignored", settings_ignored(kind, y.settings)}};
}

struct Latencies {
  std::vector<uint64_t> ns[ycsb::kKinds];
};

// One thread's operations, performed as YCSB's RocksDB binding does: an
// update reads the record and writes it back with one field replaced; a
// read-modify-write is a read followed by such an update. Counts its Gets.
class Worker {
 public:
  Worker(Engine& db, const ycsb::Values& v) : db_(db), v_(v) {}

  void perform(const ycsb::Operation& op) {
    switch (op.kind) {
      case ycsb::Kind::Read: read(op.keynum); break;
      case ycsb::Kind::Update: update(op.keynum, op.field, op.version); break;
      case ycsb::Kind::Insert:
        ycsb::key(op.keynum, &key_);
        v_.record(op.keynum, &value_);
        db_.put(key_, value_);
        break;
      case ycsb::Kind::Scan: scan(op.keynum, op.length); break;
      case ycsb::Kind::ReadModifyWrite:
        read(op.keynum);
        update(op.keynum, op.field, op.version);
        break;
    }
  }

  uint64_t gets() const { return gets_; }

 private:
  void read(uint64_t n) {
    ycsb::key(n, &key_);
    gets_++;
    if (!db_.get(key_, &value_)) throw std::runtime_error("record " + std::to_string(n) + " is missing");
    if (value_.size() != v_.record_len())
      throw std::runtime_error("record " + std::to_string(n) + " has the wrong length");
  }

  void update(uint64_t n, uint64_t field, uint64_t version) {
    read(n);
    if (!v_.update_field(n, field, version, &value_))
      throw std::runtime_error("record " + std::to_string(n) + ": field out of range");
    db_.put(key_, value_);
  }

  void scan(uint64_t n, uint64_t length) {
    ycsb::key(n, &key_);
    if (db_.scan_range(key_, kKeyEnd, length) == 0)
      throw std::runtime_error("scan from record " + std::to_string(n) + " found nothing");
  }

  Engine& db_;
  const ycsb::Values& v_;
  std::string key_, value_;
  uint64_t gets_ = 0;
};

json op_result(std::vector<uint64_t>& ns, double seconds) {
  std::sort(ns.begin(), ns.end());
  double sum = 0;
  for (uint64_t x : ns) sum += static_cast<double>(x);
  return json{{"count", ns.size()},
              {"ops_per_sec", static_cast<double>(ns.size()) / std::max(seconds, 1e-9)},
              {"mean_us", ns.empty() ? 0.0 : sum / static_cast<double>(ns.size()) / 1000.0},
              {"p50_us", percentile_us(ns, 0.5)},
              {"p95_us", percentile_us(ns, 0.95)},
              {"p99_us", percentile_us(ns, 0.99)},
              {"p999_us", percentile_us(ns, 0.999)}};
}

std::optional<uint64_t> minus(std::optional<uint64_t> a, std::optional<uint64_t> b) {
  if (!a || !b) return std::nullopt;
  return *a - *b;
}

json opt_json(std::optional<uint64_t> v) { return v ? json(*v) : json(nullptr); }

json levels_json(const std::optional<std::array<uint64_t, 7>>& after,
                 const std::optional<std::array<uint64_t, 7>>& before) {
  if (!after || !before) return nullptr;
  json a = json::array();
  for (size_t l = 0; l < after->size(); l++) a.push_back((*after)[l] - (*before)[l]);
  return a;
}

// Runs the operations with the preset's options, writes the marker back,
// settles, closes.
json run(EngineKind& kind, const Request& r, const ycsb::Values& values) {
  const YcsbRequest& y = r.ycsb;
  ycsb::Spec spec = ycsb::workload_spec(y.workload);
  uint64_t threads = std::max<uint64_t>(r.threads, 1);
  const YcsbSettings& s = y.settings;
  OpenOptions o;
  o.dir = r.target.dir;
  o.direct_io = r.direct_io;
  o.ycsb = s;
  if (r.direct_io && !kind.supports_direct_io())
    log("direct_io requested, but " + kind.name() + " cannot read with O_DIRECT; ignored");
  std::unique_ptr<Engine> db = kind.open(o);
  std::optional<Marker> m = read_marker(*db);
  if (!m || m->records != y.records || m->field_count != values.field_count ||
      m->field_length != values.field_length || m->filters != s.filters)
    throw std::runtime_error(o.dir + " holds no YCSB database of " + std::to_string(y.records) +
                             " records of this layout with " + s.filters + " filters");
  ycsb::Shared shared(spec, m->records, m->present, y.operations);
  std::vector<Latencies> lat(threads);
  std::vector<uint64_t> gets(threads, 0);
  std::atomic<bool> stop{false}, done{false};
  // The largest compaction debt sampled (-1: the engine has no estimate).
  std::optional<uint64_t> pending0 = db->pending_compaction_bytes();
  std::atomic<int64_t> pending_max{pending0 ? static_cast<int64_t>(*pending0) : -1};
  auto note_pending = [&] {
    std::optional<uint64_t> p = db->pending_compaction_bytes();
    if (!p) return;
    int64_t cur = pending_max.load();
    while (static_cast<int64_t>(*p) > cur &&
           !pending_max.compare_exchange_weak(cur, static_cast<int64_t>(*p))) {
    }
  };
  YcsbCounters before = db->ycsb_counters();
  std::thread sampler([&] {
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      note_pending();
    }
  });
  double start = now_seconds();
  try {
    run_threads(threads, stop, [&](size_t t) {
      uint64_t share = y.operations / threads + (t < y.operations % threads ? 1 : 0);
      ycsb::Generator g(shared, y.seed, t, values.field_count);
      Worker w(*db, values);
      GetScope scope;  // the engines count these threads' reads as the Gets'
      db->ycsb_thread_start();
      struct Finish {
        Engine& db;
        ~Finish() { db.ycsb_thread_finish(); }
      } finish{*db};
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
      gets[t] = w.gets();
    });
  } catch (...) {
    done = true;
    sampler.join();
    throw;
  }
  double seconds = now_seconds() - start;
  done = true;
  sampler.join();
  note_pending();
  json ops = json::object();
  uint64_t total = 0;
  for (int k = 0; k < ycsb::kKinds; k++) {
    std::vector<uint64_t> all;
    for (auto& l : lat) all.insert(all.end(), l.ns[k].begin(), l.ns[k].end());
    if (all.empty()) continue;
    total += all.size();
    ops[ycsb::kind_name(static_cast<ycsb::Kind>(k))] = op_result(all, seconds);
  }
  YcsbCounters after = db->ycsb_counters();
  uint64_t harness_gets = 0;
  for (uint64_t g : gets) harness_gets += g;
  std::optional<uint64_t> engine_gets = minus(after.gets, before.gets);
  Marker updated = *m;
  updated.present = shared.last() + 1;
  db->put(kMarkerKey, marker_json(updated).dump());
  db->settle();
  db->close();
  int64_t pmax = pending_max.load();
  return json{{"engine", kind.engine_version_string()},
              {"operations", total},
              {"seconds", seconds},
              {"ops_per_sec", static_cast<double>(total) / std::max(seconds, 1e-9)},
              {"ops", ops},
              {"pending_compaction_bytes_max", pmax < 0 ? json(nullptr) : json(pmax)},
              {"stall_count", opt_json(minus(after.stall_count, before.stall_count))},
              {"stall_micros", opt_json(minus(after.stall_micros, before.stall_micros))},
              {"gets", engine_gets ? *engine_gets : harness_gets},
              {"block_reads", opt_json(minus(after.block_reads, before.block_reads))},
              {"level_lookups", levels_json(after.level_lookups, before.level_lookups)},
              {"level_misses", levels_json(after.level_misses, before.level_misses)},
              {"settings_ignored", settings_ignored(kind, s)}};
}

}  // namespace

json op_ycsb(EngineKind& kind, const Request& r) {
  if (!kind.supports_ycsb())
    throw std::runtime_error("op ycsb is not served by the " + kind.name() + " harness");
  const YcsbRequest& y = r.ycsb;
  ycsb::Values values{y.field_count, y.field_length, y.seed};
  if (y.phase == "load") return load(kind, r, values);
  return run(kind, r, values);
}

}  // namespace shale

// What every C++ harness shares: the dataset (keys and values,
// byte-identical to crates/shale-workload), the harness protocol of
// docs/harness-protocol.md (requests, replies, which ops a harness serves),
// and the drivers of every op (load, inspect, read, dbbench here, ycsb in
// ycsb_op.cc). An engine only implements `Engine` and `EngineKind` (open,
// put a batch, get, flush, settle, counters, shape; seek, scan and destroy
// for dbbench; scan_range and optional counter hooks for ycsb) and says
// which optional ops it serves; see peers/leveldb and peers/rocksdb.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace shale {

// Ordered, so that replies list their fields in the order of the protocol page.
using json = nlohmann::ordered_json;

// ---------------------------------------------------------------- dataset

// The splitmix64 finalizer (wrapping arithmetic on 64 bits).
uint64_t mix64(uint64_t z);

enum class Scheme { Hash, Hash8, Path };

// "hash", "hash8" or "path" (exactly; the driver sends lower case). Throws on
// anything else.
Scheme parse_scheme(const std::string& name);
const char* scheme_name(Scheme s);

// Key `i` of `scheme`, written into *out (replacing its contents).
void make_key(Scheme scheme, uint64_t i, std::string* out);

// Value `i`: `size` bytes of the splitmix64 stream of (seed, i).
void make_value(uint64_t seed, uint64_t i, size_t size, std::string* out);

struct DatasetSpec {
  uint64_t keys = 0;
  std::string scheme = "hash";
  uint64_t value_size = 110;
  uint64_t seed = 0;

  Scheme parsed_scheme() const { return parse_scheme(scheme); }
  // Sum of the lengths of keys 0..keys (the path scheme's keys vary).
  uint64_t key_bytes() const;
};

// ---------------------------------------------------------------- protocol

constexpr uint32_t kProtocolVersion = 1;

struct OpenRequest {
  std::string dir;
  DatasetSpec dataset;
  std::string config;
};

// The preset options of a ycsb request (its `settings` object; `YcsbSettings`
// in crates/shale-workload/src/protocol.rs). How each engine maps them is in its
// README.md; what an engine has no equivalent for it lists in the reply's
// `settings_ignored`.
struct YcsbSettings {
  std::string preset;   // baseline, readopt-512mb, readopt-1gb, mild-pressure ("load": the load's)
  std::string filters;  // "nofilter" or "bloom10" (the presets' layouts)
  uint64_t block_cache_bytes = 0;
  bool pin_table_metadata = false;    // top-level index and filter pinned, charged to the cache
  bool metadata_with_tables = false;  // index and filter held by open tables, outside the cache
  uint64_t write_buffer_size = 0;     // 0: the engine's default
  uint64_t target_file_size_base = 0;
  uint64_t max_background_jobs = 2;
  std::optional<uint64_t> compaction_rate_limit;  // bytes per second
  std::optional<uint64_t> base_level_bytes;       // absent: the engine's default
  int64_t compaction_nice = 0;                    // shale's own; no peer applies it
};

// A ycsb request (docs/harness-protocol.md).
struct YcsbRequest {
  std::string phase;     // load or run
  std::string workload;  // a..f (run)
  uint64_t records = 0, field_count = 10, field_length = 100, seed = 0, operations = 0;
  YcsbSettings settings;
};

// One benchmark of a dbbench request: its db_bench name and the seed of its
// key generators (thread t draws from Rng(seed * 0x9E3779B97F4A7C15 + t + 1)).
struct DbBenchStep {
  std::string name;
  uint64_t seed = 0;
};

struct Request {
  std::string op;  // one of kOps
  OpenRequest target;  // dir only for ycsb
  // load
  uint64_t threads = 1;
  uint64_t batch = 1000;
  // read
  uint64_t cache_bytes = 0;
  std::string warmup_file;
  std::string reads_file;
  bool direct_io = false;
  // Optional: record a block-access trace of the phase into this file, in the
  // engine's own format (empty: none).
  std::string trace;
  // dbbench (also threads and cache_bytes)
  std::vector<DbBenchStep> benchmarks;
  uint64_t num = 0, reads = 0, key_size = 16, value_size = 100;
  bool fresh = false, settle = false;
  int64_t open_files = -1, bloom_bits = -1;
  std::string compression = "default";
  // ycsb (also dir, threads, direct_io)
  YcsbRequest ycsb;
};

// Every op of the protocol, in the order `info` lists them.
extern const std::vector<std::string> kOps;

// Parses and validates one request (protocol version, op, required fields
// and their types, scheme). Throws std::runtime_error saying what is wrong.
Request parse_request(const json& j);

// Counters of one block kind; nullopt is JSON null ("the engine cannot tell").
struct KindCounts {
  std::optional<uint64_t> cache_hits, cache_misses, physical_reads;
};

struct HitMiss {
  uint64_t hits = 0, misses = 0;
};

// Everything a read phase reports as a difference: counters since open.
struct ReadCounters {
  KindCounts filter, top_index, index, data;
  std::optional<uint64_t> table_open_reads;
  std::optional<HitMiss> table_cache;
  uint64_t read_requests = 0, read_bytes = 0;
  // Tables opened, where the engine counts them (not a reply field). An
  // engine that cannot count its table-open reads still knows there were
  // none when no table was opened during the measured Gets.
  std::optional<uint64_t> table_opens;
};

// after - before, field by field (null stays null).
ReadCounters diff(const ReadCounters& after, const ReadCounters& before);

struct Composition {
  uint64_t entries = 0, raw_key_bytes = 0, raw_value_bytes = 0, db_bytes = 0,
           data_bytes = 0, filter_bytes = 0, filter_bytes_except_last_level = 0,
           top_level_index_bytes = 0, index_bytes = 0;
};

struct LevelShape {
  uint32_t level = 0;
  uint64_t files = 0, bytes = 0;
};

struct DbShape {
  Composition composition;
  std::vector<LevelShape> levels;
};

json to_json(const KindCounts& k);
json to_json(const ReadCounters& c);  // the counter fields of a read reply
json to_json(const DbShape& s);

// ---------------------------------------------------------------- engines

// What an engine can tell about a ycsb run, cumulative since open; nullopt
// where it cannot (the reply says null). Gets and block reads are those of
// the operation threads.
struct YcsbCounters {
  std::optional<uint64_t> stall_count, stall_micros;  // delayed or stopped writes, their time
  std::optional<uint64_t> gets;         // Gets made; nullopt: the harness counts its own
  std::optional<uint64_t> block_reads;  // blocks those threads read from files
  // Block-cache lookups and misses of those threads per level, L0 to L6.
  std::optional<std::array<uint64_t, 7>> level_lookups, level_misses;
};

// One open database.
class Engine {
 public:
  virtual ~Engine() = default;
  // Writes the pairs as one batch, without sync. Throws on failure.
  virtual void put_batch(const std::vector<std::pair<std::string, std::string>>& kvs) = 0;
  // Writes one pair, without sync (the engine's single put where it has one).
  virtual void put(const std::string& key, const std::string& value) { put_batch({{key, value}}); }
  // Looks `key` up; true and *value if found, false if absent. Throws on an
  // engine error.
  virtual bool get(const std::string& key, std::string* value) = 0;
  // Flushes the memtable and waits until no compaction is pending or running.
  virtual void settle() = 0;
  // Read counters since open.
  virtual ReadCounters counters() = 0;
  // Bytes written to table files (flushes, compactions) and to the WAL since open.
  virtual uint64_t table_bytes_written() = 0;
  virtual uint64_t wal_bytes() = 0;
  // The tables of the database; `dataset` is what it holds (an engine that
  // cannot count entries from its tables derives them from it, and says so).
  virtual DbShape shape(const DatasetSpec& dataset) = 0;
  // Closes cleanly (the destructor closes too, ignoring errors).
  virtual void close() = 0;
  // Writes the memtable to a table (and waits for it).
  virtual void flush() = 0;

  // ---- op ycsb (EngineKind::supports_ycsb)

  // YCSB's scan: reads up to n entries from the first key >= start, below
  // `limit`; returns how many (each value is copied out, as a client would).
  virtual uint64_t scan_range(const std::string& start, const std::string& limit, uint64_t n) {
    (void)start, (void)limit, (void)n;
    throw std::runtime_error("this harness has no range scan (op ycsb)");
  }
  // The engine's counters of a ycsb run since open; see YcsbCounters.
  virtual YcsbCounters ycsb_counters() { return {}; }
  // The engine's estimate of its compaction debt in bytes, sampled during a
  // run; nullopt if it has none.
  virtual std::optional<uint64_t> pending_compaction_bytes() { return std::nullopt; }
  // Called on each operation thread before its first and after its last
  // operation (RocksDB collects its per-thread perf context there).
  virtual void ycsb_thread_start() {}
  virtual void ycsb_thread_finish() {}

  // ---- op read's `trace` (EngineKind::supports_trace)

  // Starts recording the block accesses of the engine's read path into the
  // file `path`, in the engine's own trace format. Throws on failure.
  virtual void start_trace(const std::string& path) {
    throw std::runtime_error("this harness cannot record a block-access trace (" + path + ")");
  }
  // Called after the warm-up, just before the measured Gets: the engine
  // notes in its trace (or beside it) where they begin.
  virtual void mark_trace_measure() {}
  // Stops recording and closes the trace file. Throws on failure.
  virtual void end_trace() {}

  // dbbench's seekrandom: a new iterator seeks to the first key >= `key`;
  // false if there is none, else true with that key in *landed and the
  // bytes of its key and value in *bytes. Throws unless the engine has it.
  virtual bool seek(const std::string& key, std::string* landed, uint64_t* bytes) {
    (void)key, (void)landed, (void)bytes;
    throw std::runtime_error("this harness has no seek (op dbbench)");
  }
  // dbbench's readseq / readreverse: reads up to n entries from the first
  // (or the last) key; returns how many, adding their bytes to *bytes.
  virtual uint64_t scan(uint64_t n, bool reverse, uint64_t* bytes) {
    (void)n, (void)reverse, (void)bytes;
    throw std::runtime_error("this harness has no scan (op dbbench)");
  }
};

struct OpenOptions {
  std::string dir;
  std::string config;
  bool create = false;      // create the database (load)
  uint64_t cache_bytes = 8 << 20;
  bool direct_io = false;   // read table files with O_DIRECT if supported
  // Op dbbench only; the other ops keep the harness's configuration:
  int64_t open_files = -1;   // table files kept open; -1: the config's
  int64_t bloom_bits = -1;   // Bloom bits a key; 0: no filter; -1: the config's
  bool compress = true;      // false: blocks stored uncompressed
  // Op ycsb: open with this preset's options instead of `config`'s (which
  // is empty); `create` without failing if the database exists.
  std::optional<YcsbSettings> ycsb;
};

// One engine: its name, configurations and how it opens a database.
class EngineKind {
 public:
  virtual ~EngineKind() = default;
  virtual std::string name() const = 0;        // "leveldb"
  virtual std::string version() const = 0;     // "1.23"
  virtual std::vector<std::string> configs() const = 0;  // default first
  virtual bool supports_direct_io() const = 0;
  // Throws on failure (also for an unknown config).
  virtual std::unique_ptr<Engine> open(const OpenOptions& o) = 0;
  // Whether the engine serves op dbbench (honours OpenOptions::open_files,
  // bloom_bits and compress, and has seek and scan, and destroy below).
  virtual bool supports_dbbench() const { return false; }
  // Whether the engine serves op ycsb (opens with OpenOptions::ycsb, has
  // scan_range).
  virtual bool supports_ycsb() const { return false; }
  // Whether a read request's `trace` is served (Engine::start_trace and the
  // rest). A harness whose engine cannot trace fails such a request.
  virtual bool supports_trace() const { return false; }
  // The settings of `s` this engine has no equivalent for (reported as
  // `settings_ignored`; see the engine's README).
  virtual std::vector<std::string> ycsb_settings_ignored(const YcsbSettings& s) const {
    (void)s;
    return {};
  }
  // "rocksdb 7.8.3": the engine string of ycsb replies (no configuration).
  std::string engine_version_string() const { return name() + " " + version(); }
  // The ops this harness serves, in kOps order (info's `ops`).
  std::vector<std::string> ops() const;
  // Deletes the engine's database in `dir` with the engine's own destroy,
  // which takes the database's lock first: throws, deleting nothing, while
  // another process has it open. A directory without one is left as it is.
  virtual void destroy(const std::string& dir) {
    throw std::runtime_error("the " + name() + " harness cannot destroy " + dir);
  }
  // Whether a database opened with `o` reads its tables with O_DIRECT.
  virtual bool uses_direct_io(const OpenOptions& o) const {
    return o.direct_io && supports_direct_io();
  }

  // "leveldb 1.23 (default)"
  std::string engine_string(const std::string& config) const {
    return name() + " " + version() + " (" + config + ")";
  }
  // Throws unless `config` is one of configs().
  void check_config(const std::string& config) const;
};

// ---------------------------------------------------------------- helpers

// True on a thread while it runs a Get of the read or inspect phase. Engines
// use it to tell the Gets' file reads and cache lookups from their background
// threads' (compactions).
bool in_get();

// Marks the current thread as running Gets (in_get()) while it lives.
struct GetScope {
  GetScope();
  ~GetScope();
};

// Reads a file of little-endian u64 indices.
std::vector<uint64_t> read_indices(const std::string& path);

// Thread t of `threads` takes [first, second) of n: n / threads indices, plus
// one if t < n % threads.
std::pair<size_t, size_t> thread_slice(size_t n, size_t threads, size_t t);

// Nearest-rank percentile (q in (0,1]) of sorted nanoseconds, in microseconds.
double percentile_us(const std::vector<uint64_t>& sorted_ns, double q);

// read_bytes of /proc/self/io, VmRSS of /proc/self/status (bytes); nullopt
// where unavailable.
std::optional<uint64_t> proc_io_read_bytes();
std::optional<uint64_t> proc_rss_bytes();

// Seconds of a monotonic clock.
double now_seconds();

// Logs a line to standard error ("[harness] ...").
void log(const std::string& line);

// ---------------------------------------------------------------- phases

json op_info(EngineKind& kind);
json op_load(EngineKind& kind, const Request& r);
json op_inspect(EngineKind& kind, const Request& r);
json op_read(EngineKind& kind, const Request& r);
json op_dbbench(EngineKind& kind, const Request& r);
json op_ycsb(EngineKind& kind, const Request& r);  // ycsb_op.cc

// Parses `request_text`, runs it and returns the reply; throws on failure.
json handle(EngineKind& kind, const std::string& request_text);

// The whole program: one request on stdin, one reply on stdout, exit 0; or
// {"error": ...} and exit 1.
int harness_main(EngineKind& kind);

}  // namespace shale

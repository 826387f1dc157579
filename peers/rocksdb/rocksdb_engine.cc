// RocksDB behind shale::Engine (ops load, inspect, read, dbbench, ycsb). Block-cache hits and misses per block kind,
// file opens and bytes written come from RocksDB's Statistics tickers; read
// calls on table files are counted by a FileSystemWrapper.
#include "rocksdb_engine.h"

#include <sys/stat.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

#include <rocksdb/block_cache_trace_writer.h>
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/metadata.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/perf_context.h>
#include <rocksdb/perf_level.h>
#include <rocksdb/rate_limiter.h>
#include <rocksdb/statistics.h>
#include <rocksdb/table.h>
#include <rocksdb/system_clock.h>
#include <rocksdb/table_properties.h>
#include <rocksdb/trace_reader_writer.h>
#include <rocksdb/version.h>
#include <rocksdb/write_batch.h>

namespace shale_rocksdb {

using shale::DbShape;
using shale::ReadCounters;

namespace {

struct FsCounters {
  std::atomic<uint64_t> read_requests{0}, read_bytes{0};
};

bool is_table(const std::string& f) {
  return f.size() >= 4 && f.compare(f.size() - 4, 4, ".sst") == 0;
}

// A table file whose read calls (and the bytes they ask for) are counted.
// With direct reads these are the aligned requests RocksDB issues.
class CountingFile : public rocksdb::FSRandomAccessFileOwnerWrapper {
 public:
  CountingFile(std::unique_ptr<rocksdb::FSRandomAccessFile>&& t, FsCounters* c)
      : FSRandomAccessFileOwnerWrapper(std::move(t)), c_(c) {}

  rocksdb::IOStatus Read(uint64_t offset, size_t n, const rocksdb::IOOptions& o,
                         rocksdb::Slice* result, char* scratch,
                         rocksdb::IODebugContext* dbg) const override {
    c_->read_requests++;
    c_->read_bytes += n;
    return target()->Read(offset, n, o, result, scratch, dbg);
  }

  rocksdb::IOStatus MultiRead(rocksdb::FSReadRequest* reqs, size_t num_reqs,
                              const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    c_->read_requests += num_reqs;
    for (size_t k = 0; k < num_reqs; k++) c_->read_bytes += reqs[k].len;
    return target()->MultiRead(reqs, num_reqs, o, dbg);
  }

  rocksdb::IOStatus ReadAsync(rocksdb::FSReadRequest& req, const rocksdb::IOOptions& o,
                              std::function<void(const rocksdb::FSReadRequest&, void*)> cb,
                              void* cb_arg, void** io_handle, rocksdb::IOHandleDeleter* del_fn,
                              rocksdb::IODebugContext* dbg) override {
    c_->read_requests++;
    c_->read_bytes += req.len;
    return target()->ReadAsync(req, o, cb, cb_arg, io_handle, del_fn, dbg);
  }

 private:
  FsCounters* c_;
};

class CountingFs : public rocksdb::FileSystemWrapper {
 public:
  explicit CountingFs(FsCounters* c)
      : rocksdb::FileSystemWrapper(rocksdb::FileSystem::Default()), c_(c) {}
  const char* Name() const override { return "ShaleCountingFs"; }

  rocksdb::IOStatus NewRandomAccessFile(const std::string& f, const rocksdb::FileOptions& o,
                                        std::unique_ptr<rocksdb::FSRandomAccessFile>* r,
                                        rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->NewRandomAccessFile(f, o, r, dbg);
    if (s.ok() && is_table(f)) r->reset(new CountingFile(std::move(*r), c_));
    return s;
  }

 private:
  FsCounters* c_;
};

// RocksDB's options for a ycsb preset (README.md, "The ycsb op"): the
// baseline is RocksDB's defaults with the cache; the read-optimized presets
// add 10-bit Bloom filters, partitioned index and filters, index and filter
// blocks in the cache with the top level pinned; mild-pressure adds the small
// memtables and tables, the background jobs and a rate limiter. Every preset
// sends max_bytes_for_level_base (RocksDB's default, so that shale runs with
// the same); levels stay static (7.8's default).
rocksdb::Options ycsb_options(const shale::YcsbSettings& s, bool create, bool direct_io,
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
    if (s.compaction_rate_limit)
      o.rate_limiter.reset(
          rocksdb::NewGenericRateLimiter(static_cast<int64_t>(*s.compaction_rate_limit)));
  }
  return o;
}

class RocksDbEngine : public shale::Engine {
 public:
  RocksDbEngine(const shale::OpenOptions& o, bool direct_io) : config_(o.config) {
    if (o.ycsb) {
      // Op ycsb: the preset's options on RocksDB's own Env, with statistics
      // (stall counters) in runs only, as the ycsb op always ran.
      ycsb_ = true;
      if (!o.create) stats_ = rocksdb::CreateDBStatistics();
      open(ycsb_options(*o.ycsb, o.create, direct_io, stats_), o.dir);
      return;
    }
    fs_ = std::make_shared<CountingFs>(&fsc_);
    env_ = rocksdb::NewCompositeEnv(fs_);
    stats_ = rocksdb::CreateDBStatistics();

    rocksdb::Options opt;  // RocksDB's defaults, then per config:
    opt.create_if_missing = o.create;
    opt.error_if_exists = o.create;
    opt.env = env_.get();
    opt.statistics = stats_;
    rocksdb::BlockBasedTableOptions t;
    // 10 bits a key unless a dbbench request says otherwise (0: no filter).
    if (o.bloom_bits != 0)
      t.filter_policy.reset(
          rocksdb::NewBloomFilterPolicy(o.bloom_bits < 0 ? 10.0 : static_cast<double>(o.bloom_bits)));
    // Op dbbench's open_files (-1: the default, every table kept open;
    // RocksDB raises anything below 20 to 20) and compression.
    if (o.open_files >= 0) opt.max_open_files = static_cast<int>(o.open_files);
    if (!o.compress) opt.compression = rocksdb::kNoCompression;
    if (o.config == "pebble-like") {
      // Index and filter partitions live in the block cache at high
      // priority; the top levels are pinned with the open table. Half the
      // cache is the high-priority pool (RocksDB's default ratio, stated).
      t.block_cache = rocksdb::NewLRUCache(o.cache_bytes, -1, false, kHighPriPoolRatio);
      t.index_type = rocksdb::BlockBasedTableOptions::kTwoLevelIndexSearch;
      t.partition_filters = true;
      t.cache_index_and_filter_blocks = true;
      t.cache_index_and_filter_blocks_with_high_priority = true;
      t.pin_top_level_index_and_filter = true;
      opt.optimize_filters_for_hits = true;
      opt.level_compaction_dynamic_level_bytes = true;
      opt.write_buffer_size = 64 << 20;
      opt.max_background_jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    } else {
      t.block_cache = rocksdb::NewLRUCache(o.cache_bytes);
    }
    // Both configurations read tables with O_DIRECT when the request asks
    // (the protocol's "if the engine can"), so that the page cache does not
    // stand in for the block cache of either. Flushes and compactions write
    // buffered.
    opt.use_direct_reads = direct_io;
    opt.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
    open(opt, o.dir);
  }

  ~RocksDbEngine() override { close_quietly(); }

  static constexpr double kHighPriPoolRatio = 0.5;

  void put_batch(const std::vector<std::pair<std::string, std::string>>& kvs) override {
    rocksdb::WriteBatch b;
    for (const auto& [k, v] : kvs) b.Put(k, v);
    rocksdb::Status s = db_->Write(rocksdb::WriteOptions(), &b);  // sync = false
    if (!s.ok()) throw std::runtime_error("rocksdb write: " + s.ToString());
  }

  void put(const std::string& key, const std::string& value) override {
    rocksdb::Status s = db_->Put(rocksdb::WriteOptions(), key, value);
    if (!s.ok()) throw std::runtime_error("rocksdb put: " + s.ToString());
  }

  void flush() override {
    rocksdb::Status s = db_->Flush(rocksdb::FlushOptions());  // waits
    if (!s.ok()) throw std::runtime_error("rocksdb flush: " + s.ToString());
  }

  bool get(const std::string& key, std::string* value) override {
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), key, value);
    if (s.IsNotFound()) return false;
    if (!s.ok()) throw std::runtime_error("rocksdb get: " + s.ToString());
    return true;
  }

  // Flush (waiting for it), then wait until RocksDB reports no compaction
  // pending and no flush or compaction running, 3 polls in a row 100 ms
  // apart (WaitForCompact does not exist in 7.8).
  void settle() override {
    rocksdb::FlushOptions fo;
    fo.wait = true;
    rocksdb::Status s = db_->Flush(fo);
    if (!s.ok()) throw std::runtime_error("rocksdb flush: " + s.ToString());
    double start = shale::now_seconds();
    int stable = 0;
    while (stable < 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      bool idle = int_property(rocksdb::DB::Properties::kCompactionPending) == 0 &&
                  int_property(rocksdb::DB::Properties::kNumRunningCompactions) == 0 &&
                  int_property(rocksdb::DB::Properties::kNumRunningFlushes) == 0 &&
                  int_property(rocksdb::DB::Properties::kMemTableFlushPending) == 0;
      stable = idle ? stable + 1 : 0;
    }
    shale::log("rocksdb settled after " + std::to_string(shale::now_seconds() - start) + " s");
  }

  ReadCounters counters() override {
    if (!stats_) throw std::runtime_error("rocksdb: no statistics in a ycsb load");
    auto t = [&](rocksdb::Tickers k) { return stats_->getTickerCount(k); };
    ReadCounters r;
    // Each block-cache miss of a block is one read of it; that is what the
    // physical reads per kind report (all reads together are read_requests).
    uint64_t fmiss = t(rocksdb::BLOCK_CACHE_FILTER_MISS), imiss = t(rocksdb::BLOCK_CACHE_INDEX_MISS),
             dmiss = t(rocksdb::BLOCK_CACHE_DATA_MISS);
    r.filter = {t(rocksdb::BLOCK_CACHE_FILTER_HIT), fmiss, fmiss};
    shale::KindCounts index{t(rocksdb::BLOCK_CACHE_INDEX_HIT), imiss, imiss};
    if (config_ == "pebble-like") {
      // RocksDB counts top-level index and partitions together under INDEX.
      // The top level is pinned with the open table (no block-cache lookup
      // after the table is open), so INDEX is the partitions' lookups; the
      // top level's own are not counted separately.
      r.index = index;
      r.top_index = {};
    } else {
      // Not partitioned: the whole index is the top level, and no partitions.
      r.top_index = index;
      r.index = {0, 0, 0};
    }
    r.data = {t(rocksdb::BLOCK_CACHE_DATA_HIT), dmiss, dmiss};
    r.table_open_reads = std::nullopt;  // not separable from other reads
    r.table_opens = t(rocksdb::NO_FILE_OPENS);
    r.table_cache = std::nullopt;       // hits are not counted
    r.read_requests = fsc_.read_requests;
    r.read_bytes = fsc_.read_bytes;
    return r;
  }

  uint64_t table_bytes_written() override {
    if (!stats_) throw std::runtime_error("rocksdb: no statistics in a ycsb load");
    return stats_->getTickerCount(rocksdb::COMPACT_WRITE_BYTES) +
           stats_->getTickerCount(rocksdb::FLUSH_WRITE_BYTES);
  }
  uint64_t wal_bytes() override {
    if (!stats_) throw std::runtime_error("rocksdb: no statistics in a ycsb load");
    return stats_->getTickerCount(rocksdb::WAL_FILE_BYTES);
  }

  DbShape shape(const shale::DatasetSpec&) override {
    rocksdb::ColumnFamilyMetaData meta;
    db_->GetColumnFamilyMetaData(&meta);
    rocksdb::TablePropertiesCollection props;
    rocksdb::Status s = db_->GetPropertiesOfAllTables(&props);
    if (!s.ok()) throw std::runtime_error("rocksdb table properties: " + s.ToString());
    // Properties are keyed by path; match them to the metadata by file number.
    std::map<uint64_t, std::shared_ptr<const rocksdb::TableProperties>> by_number;
    for (const auto& [path, p] : props) by_number[file_number(path)] = p;

    DbShape shape;
    int last = -1;  // deepest non-empty level
    for (const auto& l : meta.levels)
      if (!l.files.empty()) last = std::max(last, l.level);
    shale::Composition& c = shape.composition;
    for (const auto& l : meta.levels) {
      shale::LevelShape ls{static_cast<uint32_t>(l.level), l.files.size(), 0};
      for (const auto& f : l.files) {
        ls.bytes += f.size;
        auto it = by_number.find(f.file_number);
        if (it == by_number.end())
          throw std::runtime_error("rocksdb: no table properties for " + f.relative_filename);
        const rocksdb::TableProperties& p = *it->second;
        c.entries += p.num_entries;
        // raw_key_size counts internal keys: the user key and 8 bytes of
        // sequence number and type.
        c.raw_key_bytes += p.raw_key_size - 8 * p.num_entries;
        c.raw_value_bytes += p.raw_value_size;
        c.db_bytes += f.size;
        c.data_bytes += p.data_size;
        c.filter_bytes += p.filter_size;
        if (l.level != last) c.filter_bytes_except_last_level += p.filter_size;
        c.index_bytes += p.index_size;
        // Unpartitioned tables have no top_level_index_size: their whole
        // index is the top level.
        c.top_level_index_bytes += p.index_partitions > 0 ? p.top_level_index_size : p.index_size;
      }
      shape.levels.push_back(ls);
    }
    return shape;
  }

  // dbbench's seekrandom: a new iterator per seek.
  bool seek(const std::string& key, std::string* landed, uint64_t* bytes) override {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    it->Seek(key);
    if (!it->status().ok()) throw std::runtime_error("rocksdb seek: " + it->status().ToString());
    if (!it->Valid()) return false;
    landed->assign(it->key().data(), it->key().size());
    *bytes = it->key().size() + it->value().size();
    return true;
  }

  uint64_t scan(uint64_t n, bool reverse, uint64_t* bytes) override {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    uint64_t done = 0;
    for (reverse ? it->SeekToLast() : it->SeekToFirst(); done < n && it->Valid();
         reverse ? it->Prev() : it->Next()) {
      *bytes += it->key().size() + it->value().size();
      done++;
    }
    if (!it->status().ok()) throw std::runtime_error("rocksdb scan: " + it->status().ToString());
    return done;
  }

  // YCSB's scan as the ycsb op always ran it: an iterator bounded above by
  // `limit` (iterate_upper_bound), each value copied out.
  uint64_t scan_range(const std::string& start, const std::string& limit, uint64_t n) override {
    rocksdb::ReadOptions ro;
    rocksdb::Slice upper(limit);
    ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
    std::string value;
    uint64_t got = 0;
    for (it->Seek(start); it->Valid() && got < n; it->Next()) {
      value.assign(it->value().data(), it->value().size());
      got++;
    }
    if (!it->status().ok()) throw std::runtime_error("rocksdb scan: " + it->status().ToString());
    return got;
  }

  // Stalls: the ticker STALL_MICROS and the count of the WRITE_STALL
  // histogram (one sample per delayed write); Gets: NUMBER_KEYS_READ; block
  // reads and per-level lookups: the operation threads' perf contexts.
  shale::YcsbCounters ycsb_counters() override {
    shale::YcsbCounters c;
    if (stats_) {
      rocksdb::HistogramData h;
      stats_->histogramData(rocksdb::WRITE_STALL, &h);
      c.stall_count = h.count;
      c.stall_micros = stats_->getTickerCount(rocksdb::STALL_MICROS);
      c.gets = stats_->getTickerCount(rocksdb::NUMBER_KEYS_READ);
    }
    c.block_reads = block_reads_.load();
    std::array<uint64_t, 7> lookups{}, misses{};
    for (size_t l = 0; l < lookups.size(); l++) {
      lookups[l] = level_lookups_[l].load();
      misses[l] = level_misses_[l].load();
    }
    c.level_lookups = lookups;
    c.level_misses = misses;
    return c;
  }

  std::optional<uint64_t> pending_compaction_bytes() override {
    return int_property(rocksdb::DB::Properties::kEstimatePendingCompactionBytes);
  }

  void ycsb_thread_start() override {
    rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
    rocksdb::get_perf_context()->Reset();
    rocksdb::get_perf_context()->EnablePerLevelPerfContext();
  }

  // Adds the thread's perf context: block_read_count (the blocks its Gets
  // and scans read from files) and each level's block-cache hits and misses.
  void ycsb_thread_finish() override {
    rocksdb::PerfContext* pc = rocksdb::get_perf_context();
    block_reads_ += pc->block_read_count;
    if (pc->level_to_perf_context != nullptr) {
      for (const auto& [level, c] : *pc->level_to_perf_context) {
        if (level >= level_lookups_.size()) continue;
        level_lookups_[level] += c.block_cache_hit_count + c.block_cache_miss_count;
        level_misses_[level] += c.block_cache_miss_count;
      }
    }
    pc->DisablePerLevelPerfContext();
  }

  // Op read's `trace`: RocksDB's own block-cache trace (every access,
  // sampling 1) into `path`, written by RocksDB's file trace writer on the
  // default Env (so the counting file system does not see it).
  void start_trace(const std::string& path) override {
    std::unique_ptr<rocksdb::TraceWriter> file;
    rocksdb::Status s =
        rocksdb::NewFileTraceWriter(rocksdb::Env::Default(), rocksdb::EnvOptions(), path, &file);
    if (!s.ok()) throw std::runtime_error("rocksdb trace file " + path + ": " + s.ToString());
    rocksdb::BlockCacheTraceOptions options;
    options.sampling_frequency = 1;
    auto writer = rocksdb::NewBlockCacheTraceWriter(
        clock(), rocksdb::BlockCacheTraceWriterOptions(), std::move(file));
    s = db_->StartBlockCacheTrace(options, std::move(writer));
    if (!s.ok()) throw std::runtime_error("rocksdb StartBlockCacheTrace: " + s.ToString());
    trace_path_ = path;
  }

  // Writes `<trace>.measure`: the clock RocksDB stamps the trace's records
  // with (the database's SystemClock, microseconds), read now, in decimal.
  void mark_trace_measure() override {
    if (trace_path_.empty()) return;
    uint64_t now = clock()->NowMicros();
    std::string side = trace_path_ + ".measure";
    std::ofstream f(side, std::ios::trunc);
    f << now << "\n";
    f.close();
    if (!f) throw std::runtime_error("cannot write " + side);
  }

  void end_trace() override {
    if (trace_path_.empty()) return;
    rocksdb::Status s = db_->EndBlockCacheTrace();
    trace_path_.clear();
    if (!s.ok()) throw std::runtime_error("rocksdb EndBlockCacheTrace: " + s.ToString());
  }

  void close() override {
    if (!db_) return;
    rocksdb::Status s = db_->Close();
    db_.reset();
    if (!s.ok()) throw std::runtime_error("rocksdb close: " + s.ToString());
  }

 private:
  void open(const rocksdb::Options& opt, const std::string& dir) {
    rocksdb::DB* db = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(opt, dir, &db);
    if (!s.ok()) throw std::runtime_error("rocksdb open " + dir + ": " + s.ToString());
    db_.reset(db);
  }

  // The clock the database stamps its block-cache trace records with.
  rocksdb::SystemClock* clock() const { return db_->GetEnv()->GetSystemClock().get(); }

  void close_quietly() {
    if (db_) db_->Close();
    db_.reset();
  }

  uint64_t int_property(const std::string& name) {
    uint64_t v = 0;
    if (!db_->GetIntProperty(name, &v)) throw std::runtime_error("rocksdb: no property " + name);
    return v;
  }

  // "/dir/000123.sst" -> 123
  static uint64_t file_number(const std::string& path) {
    size_t slash = path.find_last_of('/');
    return std::strtoull(path.c_str() + (slash == std::string::npos ? 0 : slash + 1), nullptr, 10);
  }

  std::string config_;
  std::string trace_path_;  // while a block-cache trace is recorded
  bool ycsb_ = false;
  FsCounters fsc_;
  // Op ycsb: what the operation threads' perf contexts counted.
  std::atomic<uint64_t> block_reads_{0};
  std::array<std::atomic<uint64_t>, 7> level_lookups_{}, level_misses_{};
  // Declared before db_, so that the database closes first.
  std::shared_ptr<CountingFs> fs_;
  std::unique_ptr<rocksdb::Env> env_;
  std::shared_ptr<rocksdb::Statistics> stats_;
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace

std::string RocksDbKind::version() const {
  return std::to_string(ROCKSDB_MAJOR) + "." + std::to_string(ROCKSDB_MINOR) + "." +
         std::to_string(ROCKSDB_PATCH);
}

std::unique_ptr<shale::Engine> RocksDbKind::open(const shale::OpenOptions& o) {
  if (!o.ycsb) check_config(o.config);
  return std::make_unique<RocksDbEngine>(o, uses_direct_io(o));
}

void RocksDbKind::destroy(const std::string& dir) {
  // DestroyDB takes the database's LOCK (an fcntl lock) before deleting
  // anything, so a database another process has open is refused. A
  // directory that does not exist holds no database: nothing to do.
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 && errno == ENOENT) return;
  rocksdb::Status s = rocksdb::DestroyDB(dir, rocksdb::Options());
  if (!s.ok()) throw std::runtime_error("rocksdb destroy " + dir + ": " + s.ToString());
}

std::vector<std::string> RocksDbKind::ycsb_settings_ignored(const shale::YcsbSettings& s) const {
  std::vector<std::string> out;
  if (s.compaction_nice != 0) out.push_back("compaction_nice");
  return out;
}

}  // namespace shale_rocksdb

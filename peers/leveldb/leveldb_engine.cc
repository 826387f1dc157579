// LevelDB behind shale::Engine. What LevelDB does not count itself, the
// harness counts by wrapping two of its interfaces:
//
// * the Env: table files are read through the harness's own pread-based
//   RandomAccessFile, which classifies every Read by the block it fetches
//   (footer, metaindex, index, filter, data; see table_layout.h), and table
//   and log files are written through a WritableFile that counts bytes;
// * the block cache (a Cache around NewLRUCache): LevelDB's block cache holds
//   data blocks only, so its Lookup hits and misses are the data blocks'.
//
// Reads and lookups count towards a Get's kind only on threads running Gets
// (shale::in_get()); compactions run on LevelDB's background thread.
#include "leveldb_engine.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/env.h>
#include <leveldb/filter_policy.h>
#include <leveldb/write_batch.h>

#include "table_layout.h"

namespace shale_leveldb {

using shale::DbShape;
using shale::ReadCounters;

namespace {

struct Counters {
  // Every Read of a table file, by any thread.
  std::atomic<uint64_t> read_requests{0}, read_bytes{0};
  // Reads by threads running Gets, per kind of block.
  std::atomic<uint64_t> get_footer{0}, get_metaindex{0}, get_index{0}, get_filter{0}, get_data{0};
  // Block-cache lookups by threads running Gets.
  std::atomic<uint64_t> cache_hits{0}, cache_misses{0};
  // Bytes appended to table files and to the write-ahead log.
  std::atomic<uint64_t> table_bytes{0}, wal_bytes{0};
  // Table files being written now (a flush or compaction in progress).
  std::atomic<int> table_writers{0};
};

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

bool is_table(const std::string& f) { return ends_with(f, ".ldb") || ends_with(f, ".sst"); }

// A table file read with pread. LevelDB's own Env maps the first 1000 table
// files into memory, and blocks read from a mapping are never put in the block
// cache (LevelDB assumes the mapping serves them), which would make the block
// cache, the thing the study measures, unused. Reading with pread as LevelDB
// does beyond its mmap limit keeps LevelDB's block cache in play.
class CountingTableFile : public leveldb::RandomAccessFile {
 public:
  CountingTableFile(std::string name, int fd, TableLayout layout, Counters* c)
      : name_(std::move(name)), fd_(fd), layout_(layout), c_(c) {}
  ~CountingTableFile() override { ::close(fd_); }

  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char* scratch) const override {
    c_->read_requests++;
    c_->read_bytes += n;
    if (shale::in_get()) {
      switch (layout_.kind_of_read(offset)) {
        case TableLayout::Kind::Footer: c_->get_footer++; break;
        case TableLayout::Kind::Metaindex: c_->get_metaindex++; break;
        case TableLayout::Kind::Index: c_->get_index++; break;
        case TableLayout::Kind::Filter: c_->get_filter++; break;
        case TableLayout::Kind::Data: c_->get_data++; break;
      }
    }
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, scratch + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return leveldb::Status::IOError(name_, std::strerror(errno));
      if (r == 0) break;  // end of file: LevelDB checks the length
      done += static_cast<size_t>(r);
    }
    *result = leveldb::Slice(scratch, done);
    return leveldb::Status::OK();
  }

 private:
  std::string name_;
  int fd_;
  TableLayout layout_;
  Counters* c_;
};

// Counts the bytes appended to a file (a table or the log).
class CountingWritableFile : public leveldb::WritableFile {
 public:
  CountingWritableFile(leveldb::WritableFile* target, std::atomic<uint64_t>* bytes,
                       std::atomic<int>* open_count)
      : target_(target), bytes_(bytes), open_count_(open_count) {
    if (open_count_) (*open_count_)++;
  }
  ~CountingWritableFile() override {
    delete target_;
    if (open_count_) (*open_count_)--;
  }
  leveldb::Status Append(const leveldb::Slice& data) override {
    if (bytes_) *bytes_ += data.size();
    return target_->Append(data);
  }
  leveldb::Status Close() override { return target_->Close(); }
  leveldb::Status Flush() override { return target_->Flush(); }
  leveldb::Status Sync() override { return target_->Sync(); }

 private:
  leveldb::WritableFile* target_;
  std::atomic<uint64_t>* bytes_;
  std::atomic<int>* open_count_;
};

class CountingEnv : public leveldb::EnvWrapper {
 public:
  explicit CountingEnv(Counters* c) : leveldb::EnvWrapper(leveldb::Env::Default()), c_(c) {}

  leveldb::Status NewRandomAccessFile(const std::string& f,
                                      leveldb::RandomAccessFile** r) override {
    if (!is_table(f)) return target()->NewRandomAccessFile(f, r);
    *r = nullptr;
    int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      return e == ENOENT ? leveldb::Status::NotFound(f, std::strerror(e))
                         : leveldb::Status::IOError(f, std::strerror(e));
    }
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int e = errno;
      ::close(fd);
      return leveldb::Status::IOError(f, std::strerror(e));
    }
    // The harness's own reads of the footer and metaindex are not counted:
    // they only tell which block each of LevelDB's reads fetches.
    try {
      TableLayout layout = read_table_layout(fd, static_cast<uint64_t>(st.st_size), f);
      *r = new CountingTableFile(f, fd, layout, c_);
      return leveldb::Status::OK();
    } catch (const std::exception& e) {
      ::close(fd);
      return leveldb::Status::Corruption(f, e.what());
    }
  }

  leveldb::Status NewWritableFile(const std::string& f, leveldb::WritableFile** r) override {
    return wrap(f, target()->NewWritableFile(f, r), r);
  }
  leveldb::Status NewAppendableFile(const std::string& f, leveldb::WritableFile** r) override {
    return wrap(f, target()->NewAppendableFile(f, r), r);
  }

 private:
  leveldb::Status wrap(const std::string& f, leveldb::Status s, leveldb::WritableFile** r) {
    if (!s.ok()) return s;
    if (is_table(f)) {
      *r = new CountingWritableFile(*r, &c_->table_bytes, &c_->table_writers);
    } else if (ends_with(f, ".log")) {  // the WAL; the info log is "LOG"
      *r = new CountingWritableFile(*r, &c_->wal_bytes, nullptr);
    }
    return s;
  }

  Counters* c_;
};

// LevelDB's block cache with its lookups counted (by Get threads only).
class CountingCache : public leveldb::Cache {
 public:
  CountingCache(leveldb::Cache* target, Counters* c) : target_(target), c_(c) {}
  ~CountingCache() override { delete target_; }

  Handle* Insert(const leveldb::Slice& key, void* value, size_t charge,
                 void (*deleter)(const leveldb::Slice& key, void* value)) override {
    return target_->Insert(key, value, charge, deleter);
  }
  Handle* Lookup(const leveldb::Slice& key) override {
    Handle* h = target_->Lookup(key);
    if (shale::in_get()) (h ? c_->cache_hits : c_->cache_misses)++;
    return h;
  }
  void Release(Handle* h) override { target_->Release(h); }
  void* Value(Handle* h) override { return target_->Value(h); }
  void Erase(const leveldb::Slice& key) override { target_->Erase(key); }
  uint64_t NewId() override { return target_->NewId(); }
  void Prune() override { target_->Prune(); }
  size_t TotalCharge() const override { return target_->TotalCharge(); }

 private:
  leveldb::Cache* target_;
  Counters* c_;
};

constexpr int kNumLevels = 7;           // leveldb::config::kNumLevels
constexpr int kMaxOpenFiles = 50000;    // the most LevelDB accepts
constexpr int kL0CompactionTrigger = 4; // leveldb::config::kL0_CompactionTrigger

// The size at which LevelDB compacts level L >= 1: 10 MiB for L1, ten times
// more per level (VersionSet's MaxBytesForLevel).
double max_bytes_for_level(int level) {
  double bytes = 10.0 * 1048576.0;
  for (int l = 1; l < level; l++) bytes *= 10;
  return bytes;
}

struct TableFile {
  int level;
  uint64_t number, size;
};

// The tables of the current version, from the "leveldb.sstables" property:
// "--- level N ---" headers, then one " number:size[smallest .. largest]"
// line per file (keys are escaped, so no line breaks inside).
std::vector<TableFile> list_tables(leveldb::DB* db) {
  std::string s;
  if (!db->GetProperty("leveldb.sstables", &s))
    throw std::runtime_error("leveldb: no leveldb.sstables property");
  std::vector<TableFile> out;
  std::istringstream in(s);
  std::string line;
  int level = -1;
  while (std::getline(in, line)) {
    int l;
    if (std::sscanf(line.c_str(), "--- level %d ---", &l) == 1) {
      level = l;
      continue;
    }
    unsigned long long number, size;
    if (level >= 0 && std::sscanf(line.c_str(), " %llu:%llu[", &number, &size) == 2)
      out.push_back(TableFile{level, number, size});
  }
  return out;
}

std::string table_path(const std::string& dir, uint64_t number) {
  char name[32];
  std::snprintf(name, sizeof name, "/%06llu.ldb", static_cast<unsigned long long>(number));
  std::string p = dir + name;
  if (::access(p.c_str(), F_OK) == 0) return p;
  std::snprintf(name, sizeof name, "/%06llu.sst", static_cast<unsigned long long>(number));
  return dir + name;  // tables of LevelDB before 1.14
}

class LevelDbEngine : public shale::Engine {
 public:
  LevelDbEngine(const shale::OpenOptions& o) : dir_(o.dir) {
    env_ = std::make_unique<CountingEnv>(&c_);
    leveldb::Options opt;  // LevelDB's defaults, except:
    opt.env = env_.get();
    if (o.ycsb) {
      // Op ycsb: the preset's options (README.md, "Op ycsb").
      const shale::YcsbSettings& s = *o.ycsb;
      if (s.filters == "bloom10") filter_.reset(leveldb::NewBloomFilterPolicy(10));
      cache_ = std::make_unique<CountingCache>(
          leveldb::NewLRUCache(std::max<uint64_t>(s.block_cache_bytes, 1)), &c_);
      opt.create_if_missing = o.create;
      if (s.write_buffer_size > 0) opt.write_buffer_size = s.write_buffer_size;
      if (s.preset == "mild-pressure") opt.max_file_size = s.target_file_size_base;
      // Every table kept open, as RocksDB's max_open_files -1 does.
      opt.max_open_files = kMaxOpenFiles;
    } else {
      // 10 bits a key and 1000 open files unless a dbbench request says
      // otherwise (LevelDB clamps max_open_files to 74..50000).
      if (o.bloom_bits != 0) filter_.reset(leveldb::NewBloomFilterPolicy(
          o.bloom_bits < 0 ? 10 : static_cast<int>(o.bloom_bits)));
      cache_ = std::make_unique<CountingCache>(leveldb::NewLRUCache(o.cache_bytes), &c_);
      opt.create_if_missing = o.create;
      opt.error_if_exists = o.create;
      opt.max_open_files = o.open_files < 0 ? 1000 : static_cast<int>(o.open_files);
      if (!o.compress) opt.compression = leveldb::kNoCompression;
    }
    opt.block_cache = cache_.get();
    opt.filter_policy = filter_.get();
    leveldb::DB* db = nullptr;
    leveldb::Status s = leveldb::DB::Open(opt, o.dir, &db);
    if (!s.ok()) throw std::runtime_error("leveldb open " + o.dir + ": " + s.ToString());
    db_.reset(db);
  }

  ~LevelDbEngine() override { db_.reset(); }

  void put_batch(const std::vector<std::pair<std::string, std::string>>& kvs) override {
    leveldb::WriteBatch b;
    for (const auto& [k, v] : kvs) b.Put(k, v);
    leveldb::Status s = db_->Write(leveldb::WriteOptions(), &b);  // sync = false
    if (!s.ok()) throw std::runtime_error("leveldb write: " + s.ToString());
  }

  void put(const std::string& key, const std::string& value) override {
    leveldb::Status s = db_->Put(leveldb::WriteOptions(), key, value);
    if (!s.ok()) throw std::runtime_error("leveldb put: " + s.ToString());
  }

  // LevelDB has no flush call: CompactRange over the empty range writes the
  // memtable to a table and compacts nothing (see settle).
  void flush() override {
    leveldb::Slice empty;
    db_->CompactRange(&empty, &empty);
  }

  bool get(const std::string& key, std::string* value) override {
    leveldb::Status s = db_->Get(leveldb::ReadOptions(), key, value);
    if (s.IsNotFound()) return false;
    if (!s.ok()) throw std::runtime_error("leveldb get: " + s.ToString());
    return true;
  }

  // LevelDB has no flush call and no "compaction pending" property.
  // * Flush: CompactRange over the empty key range ["", ""] first writes the
  //   memtable to a table, then finds no table overlapping the range (every
  //   key is longer than ""), so it compacts nothing.
  // * Settle: wait until no compaction is due by LevelDB's own rule (fewer
  //   than 4 files in L0, every level Ln >= 1 below 10^n MiB), no table file
  //   is being written, and the list of tables is unchanged over 3
  //   consecutive polls 100 ms apart. (Seek-triggered compactions only arise
  //   from reads, and the load does not read.)
  void settle() override {
    flush();
    std::vector<std::pair<int, uint64_t>> previous;
    int stable = 0;
    double start = shale::now_seconds();
    while (stable < 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::vector<TableFile> tables = list_tables(db_.get());
      std::vector<std::pair<int, uint64_t>> now;
      uint64_t bytes[kNumLevels] = {0};
      int l0 = 0;
      for (const TableFile& t : tables) {
        now.emplace_back(t.level, t.number);
        bytes[t.level] += t.size;
        if (t.level == 0) l0++;
      }
      bool due = l0 >= kL0CompactionTrigger;
      for (int l = 1; l < kNumLevels - 1; l++) due = due || bytes[l] >= max_bytes_for_level(l);
      bool idle = !due && c_.table_writers == 0 && now == previous;
      stable = idle ? stable + 1 : 0;
      previous = std::move(now);
    }
    shale::log("leveldb settled after " + std::to_string(shale::now_seconds() - start) + " s");
  }

  ReadCounters counters() override {
    ReadCounters r;
    uint64_t filter = c_.get_filter, index = c_.get_index;
    // Filter and index blocks are not in the block cache: LevelDB reads both
    // when a table enters its table cache and keeps them with the open table.
    // A read of one is where another engine would miss its block cache.
    r.filter = {std::nullopt, filter, filter};
    r.top_index = {std::nullopt, index, index};
    r.index = {0, 0, 0};  // no index partitions
    r.data = {c_.cache_hits.load(), c_.cache_misses.load(), c_.get_data.load()};
    r.table_open_reads = c_.get_footer + c_.get_metaindex + index + filter;
    r.table_cache = std::nullopt;  // LevelDB's table cache is not countable
    r.read_requests = c_.read_requests;
    r.read_bytes = c_.read_bytes;
    r.table_opens = index;  // every table open reads its index block once
    return r;
  }

  uint64_t table_bytes_written() override { return c_.table_bytes; }
  uint64_t wal_bytes() override { return c_.wal_bytes; }

  DbShape shape(const shale::DatasetSpec& ds) override {
    DbShape shape;
    for (int l = 0; l < kNumLevels; l++) shape.levels.push_back({static_cast<uint32_t>(l), 0, 0});
    std::vector<TableFile> tables = list_tables(db_.get());
    int last = -1;  // deepest non-empty level
    for (const TableFile& t : tables) last = std::max(last, t.level);
    shale::Composition& c = shape.composition;
    for (const TableFile& t : tables) {
      shape.levels[t.level].files++;
      shape.levels[t.level].bytes += t.size;
      TableLayout layout = read_table_layout(table_path(dir_, t.number));
      c.db_bytes += t.size;
      c.data_bytes += layout.data_bytes();
      uint64_t filter = layout.filter.present ? layout.filter.size : 0;
      c.filter_bytes += filter;
      if (t.level != last) c.filter_bytes_except_last_level += filter;
      c.index_bytes += layout.index.size;
    }
    c.top_level_index_bytes = c.index_bytes;  // not partitioned
    // LevelDB keeps no entry counts per table. Every key of the dataset is
    // written once and never deleted, so after the memtable is flushed the
    // tables hold exactly one entry per key (checked by inspect's probes).
    c.entries = ds.keys;
    c.raw_key_bytes = ds.key_bytes();
    c.raw_value_bytes = ds.keys * ds.value_size;
    shale::log("leveldb: entries, raw_key_bytes and raw_value_bytes are the dataset's "
               "(LevelDB keeps no per-table counts); block sizes are from the tables' footers");
    return shape;
  }

  void close() override { db_.reset(); }

  bool seek(const std::string& key, std::string* landed, uint64_t* bytes) override {
    std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(leveldb::ReadOptions()));
    it->Seek(key);
    if (!it->status().ok()) throw std::runtime_error("leveldb seek: " + it->status().ToString());
    if (!it->Valid()) return false;
    landed->assign(it->key().data(), it->key().size());
    *bytes = it->key().size() + it->value().size();
    return true;
  }

  uint64_t scan_range(const std::string& start, const std::string& limit, uint64_t n) override {
    std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(leveldb::ReadOptions()));
    std::string value;
    uint64_t got = 0;
    leveldb::Slice end(limit);
    for (it->Seek(start); it->Valid() && got < n && it->key().compare(end) < 0; it->Next()) {
      value.assign(it->value().data(), it->value().size());
      got++;
    }
    if (!it->status().ok()) throw std::runtime_error("leveldb scan: " + it->status().ToString());
    return got;
  }

  // Op ycsb: LevelDB counts no stalls and no compaction debt (null in the
  // reply); block reads are the data, index and filter blocks the
  // operation threads (in_get) read from table files; no per-level counts.
  shale::YcsbCounters ycsb_counters() override {
    shale::YcsbCounters c;
    c.block_reads = c_.get_data + c_.get_index + c_.get_filter;
    return c;
  }

  uint64_t scan(uint64_t n, bool reverse, uint64_t* bytes) override {
    std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(leveldb::ReadOptions()));
    uint64_t done = 0;
    for (reverse ? it->SeekToLast() : it->SeekToFirst(); done < n && it->Valid();
         reverse ? it->Prev() : it->Next()) {
      *bytes += it->key().size() + it->value().size();
      done++;
    }
    if (!it->status().ok()) throw std::runtime_error("leveldb scan: " + it->status().ToString());
    return done;
  }

 private:
  std::string dir_;
  Counters c_;
  // Declared before db_, so that the database closes first.
  std::unique_ptr<CountingEnv> env_;
  std::unique_ptr<const leveldb::FilterPolicy> filter_;
  std::unique_ptr<CountingCache> cache_;
  std::unique_ptr<leveldb::DB> db_;
};

}  // namespace

std::string LevelDbKind::version() const {
  return std::to_string(leveldb::kMajorVersion) + "." + std::to_string(leveldb::kMinorVersion);
}

std::unique_ptr<shale::Engine> LevelDbKind::open(const shale::OpenOptions& o) {
  if (!o.ycsb) check_config(o.config);
  return std::make_unique<LevelDbEngine>(o);
}

void LevelDbKind::destroy(const std::string& dir) {
  // DestroyDB takes the database's LOCK (an fcntl lock) before deleting, so
  // a database another process has open fails here with nothing deleted.
  leveldb::Status s = leveldb::DestroyDB(dir, leveldb::Options());
  if (!s.ok()) throw std::runtime_error("leveldb destroy " + dir + ": " + s.ToString());
}

}  // namespace shale_leveldb

namespace shale_leveldb {

std::vector<std::string> LevelDbKind::ycsb_settings_ignored(const shale::YcsbSettings& s) const {
  std::vector<std::string> out;
  // Index and filter blocks always stay with the open tables, outside the
  // block cache: LevelDB can neither pin them in it nor charge them to it.
  if (s.pin_table_metadata) out.push_back("pin_table_metadata");
  // L1's target is fixed at 10 MiB (VersionSet's MaxBytesForLevel).
  if (s.base_level_bytes) out.push_back("base_level_bytes");
  // One background thread; no rate limiter.
  if (s.preset == "mild-pressure") out.push_back("max_background_jobs");
  if (s.compaction_rate_limit) out.push_back("compaction_rate_limit");
  if (s.compaction_nice != 0) out.push_back("compaction_nice");
  return out;
}

}  // namespace shale_leveldb

// RocksDB 7.8.3 behind the shared harness interface (peers/cpp-common).
#pragma once

#include "../cpp-common/harness.h"

namespace shale_rocksdb {

class RocksDbKind : public shale::EngineKind {
 public:
  std::string name() const override { return "rocksdb"; }
  std::string version() const override;
  // "pebble-like" first: the default of the comparison; "default" is
  // RocksDB's defaults with a Bloom filter, the baseline.
  std::vector<std::string> configs() const override { return {"pebble-like", "default"}; }
  bool supports_direct_io() const override { return true; }
  std::unique_ptr<shale::Engine> open(const shale::OpenOptions& o) override;
  // Op dbbench: open_files, bloom_bits and compression honoured; seek,
  // scan; destroy with rocksdb::DestroyDB (under the database's LOCK).
  bool supports_dbbench() const override { return true; }
  void destroy(const std::string& dir) override;
  // Op ycsb: the presets' options (README.md), RocksDB's own counters.
  bool supports_ycsb() const override { return true; }
  // Op read's `trace`: RocksDB's block-cache trace (StartBlockCacheTrace)
  // and a `<trace>.measure` side file (README.md).
  bool supports_trace() const override { return true; }
  std::vector<std::string> ycsb_settings_ignored(const shale::YcsbSettings& s) const override;
};

}  // namespace shale_rocksdb

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
};

}  // namespace shale_rocksdb

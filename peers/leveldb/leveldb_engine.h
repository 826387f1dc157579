// LevelDB 1.23 behind the shared harness interface (peers/cpp-common).
#pragma once

#include "../cpp-common/harness.h"

namespace shale_leveldb {

class LevelDbKind : public shale::EngineKind {
 public:
  std::string name() const override { return "leveldb"; }
  std::string version() const override;
  std::vector<std::string> configs() const override { return {"default"}; }
  // LevelDB's Env has no O_DIRECT; the harness's own table reader could add
  // it, but then LevelDB would not be read as LevelDB reads.
  bool supports_direct_io() const override { return false; }
  // Op dbbench, for `shale bench db-sweep --engines leveldb`.
  bool supports_dbbench() const override { return true; }
  // leveldb::DestroyDB: refused while another process holds LevelDB's LOCK.
  void destroy(const std::string& dir) override;
  std::unique_ptr<shale::Engine> open(const shale::OpenOptions& o) override;
  // Op ycsb: the presets mapped to LevelDB's options (README.md).
  bool supports_ycsb() const override { return true; }
  std::vector<std::string> ycsb_settings_ignored(const shale::YcsbSettings& s) const override;
};

}  // namespace shale_leveldb

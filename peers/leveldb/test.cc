// Tests of the LevelDB harness: the shared tests (vectors, protocol, end to
// end through the binary) and LevelDB's own counters.
// Usage: shale-leveldb-harness-test VECTORS_JSON HARNESS_BINARY [TMP_BASE]
#include <iostream>

#include "../cpp-common/test_common.h"
#include "leveldb_engine.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " VECTORS_JSON HARNESS_BINARY [TMP_BASE]" << std::endl;
    return 2;
  }
  std::string tmp_base = argc > 3 ? argv[3] : "/tmp";
  shale_leveldb::LevelDbKind kind;
  shale::test::test_vectors(argv[1]);
  shale::test::test_protocol(kind);
  shale::test::EndToEnd e = shale::test::test_end_to_end(kind, argv[2], "default", false, tmp_base);

  // LevelDB-specific: the engine string, 7 levels, an unpartitioned index,
  // and a cold read that opened tables (footer, index, metaindex and filter
  // reads) and missed the block cache for every data block it read.
  SHALE_CHECK(e.load["engine"] == "leveldb 1.23 (default)");
  SHALE_CHECK(e.load["shape"]["levels"].size() == 7);
  const auto& comp = e.load["shape"]["composition"];
  SHALE_CHECK(comp["top_level_index_bytes"] == comp["index_bytes"]);
  const auto& b = e.read["blocks"];
  SHALE_CHECK(e.read["direct_io"] == false);
  SHALE_CHECK(b["data"]["cache_misses"] == b["data"]["physical_reads"]);
  SHALE_CHECK(b["data"]["cache_hits"].is_number());
  SHALE_CHECK(b["filter"]["physical_reads"].get<uint64_t>() > 0);
  SHALE_CHECK(b["top_index"]["physical_reads"].get<uint64_t>() > 0);
  SHALE_CHECK(e.read["table_open_reads"].get<uint64_t>() >=
              2 * b["top_index"]["physical_reads"].get<uint64_t>());
  SHALE_CHECK(b["index"]["cache_misses"] == 0);
  std::cerr << "all LevelDB harness tests passed" << std::endl;
  return 0;
}

// Tests of the RocksDB harness: the shared tests (vectors, protocol, end to
// end through the binary) for both configurations, and RocksDB's counters.
// Usage: shale-rocksdb-harness-test VECTORS_JSON HARNESS_BINARY [TMP_BASE]
#include <iostream>

#include "../cpp-common/test_common.h"
#include "rocksdb_engine.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " VECTORS_JSON HARNESS_BINARY [TMP_BASE]" << std::endl;
    return 2;
  }
  std::string tmp_base = argc > 3 ? argv[3] : "/tmp";
  shale_rocksdb::RocksDbKind kind;
  shale::test::test_vectors(argv[1]);
  shale::test::test_protocol(kind);
  SHALE_CHECK(kind.configs().front() == "pebble-like");

  // pebble-like, reading with O_DIRECT: a partitioned index whose top level
  // is pinned (top_index null, partitions under index) and cached filters.
  shale::test::EndToEnd p = shale::test::test_end_to_end(kind, argv[2], "pebble-like", true, tmp_base);
  SHALE_CHECK(p.load["engine"] == "rocksdb 7.8.3 (pebble-like)");
  SHALE_CHECK(p.load["shape"]["levels"].size() == 7);
  const auto& pc = p.load["shape"]["composition"];
  SHALE_CHECK(pc["top_level_index_bytes"].get<uint64_t>() < pc["index_bytes"].get<uint64_t>());
  const auto& pb = p.read["blocks"];
  SHALE_CHECK(p.read["direct_io"] == true);
  SHALE_CHECK(pb["top_index"]["cache_misses"].is_null());
  // Partitions are looked up in the block cache (RocksDB loads them into it
  // when it opens the tables at DB open, so a cold read may see only hits).
  SHALE_CHECK(pb["index"]["cache_hits"].get<uint64_t>() + pb["index"]["cache_misses"].get<uint64_t>() > 0);
  SHALE_CHECK(pb["filter"]["cache_hits"].is_number());
  SHALE_CHECK(pb["data"]["cache_misses"] == pb["data"]["physical_reads"]);
  SHALE_CHECK(p.read["table_cache"].is_null());

  // default: RocksDB's defaults with a Bloom filter; index and filter are
  // held by the open table, not the block cache.
  shale::test::EndToEnd d = shale::test::test_end_to_end(kind, argv[2], "default", false, tmp_base);
  SHALE_CHECK(d.load["engine"] == "rocksdb 7.8.3 (default)");
  const auto& dc = d.load["shape"]["composition"];
  SHALE_CHECK(dc["top_level_index_bytes"] == dc["index_bytes"]);
  SHALE_CHECK(d.read["direct_io"] == false);
  SHALE_CHECK(d.read["blocks"]["index"]["cache_misses"] == 0);
  SHALE_CHECK(d.read["blocks"]["top_index"]["cache_misses"].is_number());
  std::cerr << "all RocksDB harness tests passed" << std::endl;
  return 0;
}

// Tests of the RocksDB harness: the shared tests (vectors, protocol, end to
// end through the binary) for both configurations, and RocksDB's counters.
// Usage: shale-rocksdb-harness-test VECTORS_JSON HARNESS_BINARY [TMP_BASE]
#include <unistd.h>

#include <iostream>

#include "../cpp-common/test_common.h"
#include "../cpp-common/ycsb_test.h"
#include "rocksdb_engine.h"

// The `ycsb` op end to end: a load of 2,000 records, then every workload on
// it (counts per kind add up), then a database of another layout refused.
static void test_ycsb_op(const std::string& harness, const std::string& tmp_base) {
  std::string tmp = tmp_base + "/ycsb-" + std::to_string(getpid());
  std::system(("rm -rf '" + tmp + "' && mkdir -p '" + tmp + "'").c_str());
  shale::json settings = {{"preset", "readopt-512mb"},  {"filters", "bloom10"},
                          {"block_cache_bytes", 88000}, {"pin_table_metadata", true},
                          {"write_buffer_size", 262144}, {"target_file_size_base", 65536},
                          {"max_background_jobs", 2},  {"compaction_rate_limit", nullptr}};
  shale::json base = {{"protocol", 1}, {"op", "ycsb"}, {"dir", tmp + "/db"},
                      {"records", 2000}, {"field_count", 10}, {"field_length", 100},
                      {"seed", 1}, {"threads", 2}, {"settings", settings}};
  shale::json load = base, reply;
  load["phase"] = "load";
  SHALE_CHECK(shale::test::run_harness(harness, load, &reply, tmp) == 0);
  SHALE_CHECK(reply["engine"] == "rocksdb 7.8.3");
  for (const char* w : {"a", "b", "c", "d", "e", "f"}) {
    shale::json run = base;
    run["phase"] = "run";
    run["workload"] = w;
    run["operations"] = 1000;
    run["direct_io"] = false;
    SHALE_CHECK(shale::test::run_harness(harness, run, &reply, tmp) == 0);
    SHALE_CHECK(reply["operations"] == 1000);
    uint64_t sum = 0;
    for (const auto& [kind, o] : reply["ops"].items()) {
      sum += o["count"].get<uint64_t>();
      SHALE_CHECK(o["p50_us"].get<double>() <= o["p99_us"].get<double>());
    }
    SHALE_CHECK(sum == 1000);
    SHALE_CHECK(reply["stall_micros"].is_number() && reply["pending_compaction_bytes_max"].is_number());
  }
  shale::json other = base;
  other["phase"] = "run";
  other["workload"] = "a";
  other["operations"] = 10;
  other["direct_io"] = false;
  other["records"] = 3000;
  SHALE_CHECK(shale::test::run_harness(harness, other, &reply, tmp) == 1);
  SHALE_CHECK(reply["error"].get<std::string>().find("3000 records") != std::string::npos);
  other["records"] = 2000;
  other["workload"] = "g";
  SHALE_CHECK(shale::test::run_harness(harness, other, &reply, tmp) == 1);
  std::system(("rm -rf '" + tmp + "'").c_str());
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " VECTORS_JSON HARNESS_BINARY [TMP_BASE]" << std::endl;
    return 2;
  }
  std::string tmp_base = argc > 3 ? argv[3] : "/tmp";
  shale_rocksdb::RocksDbKind kind;
  shale::test::test_vectors(argv[1]);
  std::string vectors = argv[1];
  size_t slash = vectors.find_last_of('/');
  shale::test::test_ycsb_vectors(
      (slash == std::string::npos ? std::string(".") : vectors.substr(0, slash)) +
      "/ycsb-vectors.json");
  test_ycsb_op(argv[2], tmp_base);
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

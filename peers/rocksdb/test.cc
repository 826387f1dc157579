// Tests of the RocksDB harness: the shared tests (vectors, protocol, end to
// end through the binary, the protocol fixtures, ops ycsb and dbbench) for
// both configurations, and RocksDB's counters.
// Usage: shale-rocksdb-harness-test VECTORS_JSON HARNESS_BINARY [TMP_BASE]
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "../cpp-common/test_common.h"
#include "../cpp-common/ycsb_test.h"
#include <rocksdb/db.h>

#include "rocksdb_engine.h"

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
  std::string testdata = slash == std::string::npos ? std::string(".") : vectors.substr(0, slash);
  std::string protocol = testdata + "/protocol";
  shale::test::test_ycsb_vectors(testdata + "/ycsb-vectors.json");
  shale::test::test_fixtures(kind, protocol);
  SHALE_CHECK(kind.ops() == (std::vector<std::string>{"info", "load", "inspect", "read", "dbbench", "ycsb"}));

  // Op ycsb: RocksDB's own counters, all present.
  shale::json run = shale::test::test_ycsb_op(kind, argv[2], protocol, tmp_base);
  for (const char* f : {"stall_count", "stall_micros", "pending_compaction_bytes_max", "block_reads"})
    SHALE_CHECK_MSG(run[f].is_number(), f);
  SHALE_CHECK(run["level_lookups"].size() == 7 && run["level_misses"].size() == 7);
  SHALE_CHECK(run["settings_ignored"] == shale::json::array());

  // Op dbbench (shared test), on both configurations, then a fresh run
  // refused while another handle holds RocksDB's lock, deleting nothing.
  for (const char* config : {"default", "pebble-like"}) {
    std::string dir = tmp_base + "/rocksdb-dbbench-" + config;
    shale::json req;
    shale::json readers = shale::test::test_dbbench_op(argv[2], protocol, config, dir, tmp_base, &req);
    const shale::json& rr = readers["results"][0];
    SHALE_CHECK(rr["block_cache_hits"].is_number() && rr["block_cache_misses"].is_number());
    SHALE_CHECK(rr["table_cache_hits"].is_null() && rr["table_cache_misses"].is_number());
    if (std::string(config) == "pebble-like") continue;
    req["benchmarks"] = {{{"name", "fillseq"}, {"seed", 1}}};
    rocksdb::DB* held = nullptr;
    SHALE_CHECK(rocksdb::DB::Open(rocksdb::Options(), dir, &held).ok());
    std::string before;
    SHALE_CHECK(held->Get(rocksdb::ReadOptions(), "0000000000000007", &before).ok());
    shale::json reply;
    SHALE_CHECK(shale::test::run_harness(argv[2], req, &reply, tmp_base) != 0);
    SHALE_CHECK(reply["error"].get<std::string>().find("lock") != std::string::npos);
    std::string after;
    SHALE_CHECK(held->Get(rocksdb::ReadOptions(), "0000000000000007", &after).ok());
    SHALE_CHECK(after == before);
    delete held;
  }
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
  // The traced read wrote RocksDB's block-cache trace: its header record
  // (timestamp, type 1, then the magic), and a `.measure` stamp of the same
  // clock after the header's (crates/shale-bench's decoder checks the rest).
  {
    const std::string& head = p.trace_head;
    SHALE_CHECK(head.size() > 38);
    SHALE_CHECK(head[8] == 1 && head.substr(14, 16) == "feedcafedeadbeef");
    uint64_t start = 0;
    for (int i = 7; i >= 0; i--) start = start << 8 | static_cast<unsigned char>(head[i]);
    uint64_t measure = std::strtoull(p.trace_measure.c_str(), nullptr, 10);
    SHALE_CHECK_MSG(measure >= start && measure - start < 600u * 1000 * 1000,
                    std::to_string(start) + " " + p.trace_measure);
  }

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

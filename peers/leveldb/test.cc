// Tests of the LevelDB harness: the shared tests (vectors, protocol and its
// fixtures, end to end through the binary, ops dbbench and ycsb) and
// LevelDB's own counters.
// Usage: shale-leveldb-harness-test VECTORS_JSON HARNESS_BINARY [TMP_BASE]
#include <cstdlib>
#include <iostream>

#include "../cpp-common/test_common.h"
#include "../cpp-common/ycsb_test.h"
#include <leveldb/db.h>

#include "leveldb_engine.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " VECTORS_JSON HARNESS_BINARY [TMP_BASE]" << std::endl;
    return 2;
  }
  std::string tmp_base = argc > 3 ? argv[3] : "/tmp";
  shale_leveldb::LevelDbKind kind;
  shale::test::test_vectors(argv[1]);
  std::string vectors = argv[1];
  size_t slash = vectors.find_last_of('/');
  std::string testdata = slash == std::string::npos ? std::string(".") : vectors.substr(0, slash);
  std::string protocol = testdata + "/protocol";
  shale::test::test_ycsb_vectors(testdata + "/ycsb-vectors.json");
  shale::test::test_protocol(kind);
  shale::test::test_fixtures(kind, protocol);
  SHALE_CHECK(kind.ops() == (std::vector<std::string>{"info", "load", "inspect", "read", "dbbench", "ycsb"}));
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

  // Op dbbench (shared test), then a fresh run refused while another
  // handle holds LevelDB's lock, deleting nothing.
  std::string dir = tmp_base + "/leveldb-dbbench";
  shale::json req;
  shale::json readers = shale::test::test_dbbench_op(argv[2], protocol, "default", dir, tmp_base, &req);
  SHALE_CHECK(readers["results"][0]["table_cache_hits"].is_null());
  SHALE_CHECK(readers["results"][0]["block_cache_misses"].get<uint64_t>() > 0);
  {
    req["benchmarks"] = {{{"name", "fillseq"}, {"seed", 1}}};
    leveldb::DB* held = nullptr;
    SHALE_CHECK(leveldb::DB::Open(leveldb::Options(), dir, &held).ok());
    std::string before;
    SHALE_CHECK(held->Get(leveldb::ReadOptions(), "0000000000000007", &before).ok());
    shale::json reply;
    SHALE_CHECK(shale::test::run_harness(argv[2], req, &reply, tmp_base) != 0);
    SHALE_CHECK(reply["error"].get<std::string>().find("lock") != std::string::npos);
    std::string after;
    SHALE_CHECK(held->Get(leveldb::ReadOptions(), "0000000000000007", &after).ok());
    SHALE_CHECK(after == before);
    delete held;
  }

  // Op ycsb: LevelDB counts no stalls, compaction debt or per-level
  // lookups (null); it counts the operation threads' block reads, and says
  // which settings it cannot apply.
  shale::json run = shale::test::test_ycsb_op(kind, argv[2], protocol, tmp_base);
  SHALE_CHECK(run["stall_count"].is_null() && run["stall_micros"].is_null());
  SHALE_CHECK(run["pending_compaction_bytes_max"].is_null());
  SHALE_CHECK(run["level_lookups"].is_null() && run["level_misses"].is_null());
  SHALE_CHECK(run["block_reads"].is_number());
  SHALE_CHECK(run["settings_ignored"] == shale::json({"pin_table_metadata", "base_level_bytes"}));

  std::cerr << "all LevelDB harness tests passed" << std::endl;
  return 0;
}

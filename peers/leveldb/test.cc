// Tests of the LevelDB harness: the shared tests (vectors, protocol, end to
// end through the binary) and LevelDB's own counters.
// Usage: shale-leveldb-harness-test VECTORS_JSON HARNESS_BINARY [TMP_BASE]
#include <cstdlib>
#include <iostream>

#include "../cpp-common/test_common.h"
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

  // Op dbbench: a fresh fillseq of 2000 keys, then reads with one open file
  // (clamped by LevelDB) and a tiny block cache.
  std::string dir = tmp_base + "/leveldb-dbbench";
  std::system(("rm -rf '" + dir + "'").c_str());
  shale::json req = {{"protocol", 1}, {"op", "dbbench"}, {"dir", dir}, {"config", "default"},
                     {"fresh", true}, {"settle", true},
                     {"benchmarks", {{{"name", "fillseq"}, {"seed", 1}}}},
                     {"num", 2000}, {"reads", 500}, {"key_size", 16}, {"value_size", 100},
                     {"threads", 1}, {"cache_bytes", 1000}, {"open_files", 0},
                     {"bloom_bits", 10}, {"compression", "none"}};
  shale::json reply;
  SHALE_CHECK(shale::test::run_harness(argv[2], req, &reply, tmp_base) == 0);
  SHALE_CHECK(reply["results"][0]["ops"] == 2000);
  // A fresh run over it destroys it first, and is refused while another
  // handle holds LevelDB's lock.
  SHALE_CHECK(shale::test::run_harness(argv[2], req, &reply, tmp_base) == 0);
  SHALE_CHECK(reply["results"][0]["ops"] == 2000);
  {
    leveldb::DB* held = nullptr;
    SHALE_CHECK(leveldb::DB::Open(leveldb::Options(), dir, &held).ok());
    std::string before;
    SHALE_CHECK(held->Get(leveldb::ReadOptions(), "0000000000000007", &before).ok());
    SHALE_CHECK(shale::test::run_harness(argv[2], req, &reply, tmp_base) != 0);
    SHALE_CHECK(reply["error"].get<std::string>().find("lock") != std::string::npos);
    std::string after;
    SHALE_CHECK(held->Get(leveldb::ReadOptions(), "0000000000000007", &after).ok());
    SHALE_CHECK(after == before);
    delete held;
  }
  req["fresh"] = false;
  req["settle"] = false;
  req["threads"] = 2;
  req["benchmarks"] = {{{"name", "readrandom"}, {"seed", 2}},
                       {{"name", "readmissing"}, {"seed", 3}},
                       {{"name", "seekrandom"}, {"seed", 4}},
                       {{"name", "readseq"}, {"seed", 5}}};
  SHALE_CHECK(shale::test::run_harness(argv[2], req, &reply, tmp_base) == 0);
  const auto& rs = reply["results"];
  SHALE_CHECK(rs.size() == 4);
  SHALE_CHECK(rs[0]["ops"] == 1000 && rs[0]["found"] == 1000);
  SHALE_CHECK(rs[1]["found"] == 0);
  SHALE_CHECK(rs[2]["found"] == 1000);
  SHALE_CHECK(rs[3]["ops"] == 1000);  // 500 entries per thread
  SHALE_CHECK(rs[0]["table_cache_hits"].is_null());
  SHALE_CHECK(rs[0]["block_cache_misses"].get<uint64_t>() > 0);
  req["benchmarks"] = {{{"name", "compact"}, {"seed", 0}}};
  SHALE_CHECK(shale::test::run_harness(argv[2], req, &reply, tmp_base) == 1);
  SHALE_CHECK(reply["error"].get<std::string>().find("unknown benchmark") != std::string::npos);

  std::cerr << "all LevelDB harness tests passed" << std::endl;
  return 0;
}

// See ycsb_test.h.
#include "ycsb_test.h"

#include <fstream>
#include <sstream>

#include "test_common.h"
#include "ycsb.h"

namespace shale::test {

static std::string to_hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

void test_ycsb_vectors(const std::string& path) {
  std::ifstream in(path);
  SHALE_CHECK_MSG(in.good(), "cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  json v = json::parse(ss.str());
  std::string got;
  for (const json& k : v.at("keys")) {
    uint64_t n = k.at("keynum").get<uint64_t>();
    ycsb::key(n, &got);
    SHALE_CHECK_MSG(got == k.at("key").get<std::string>(), "key " + std::to_string(n) + ": " + got);
  }
  for (const json& r : v.at("records")) {
    ycsb::Values vals{r.at("field_count").get<uint64_t>(), r.at("field_length").get<uint64_t>(),
                      r.at("seed").get<uint64_t>()};
    uint64_t n = r.at("keynum").get<uint64_t>();
    vals.record(n, &got);
    SHALE_CHECK_MSG(to_hex(got) == r.at("record").get<std::string>(), "record " + std::to_string(n));
    SHALE_CHECK(vals.update_field(n, r.at("update_field").get<uint64_t>(),
                                  r.at("update_version").get<uint64_t>(), &got));
    SHALE_CHECK_MSG(to_hex(got) == r.at("updated").get<std::string>(),
                    "updated record " + std::to_string(n));
  }
  size_t sequences = 0;
  for (const json& s : v.at("sequences")) {
    std::string w = s.at("workload").get<std::string>();
    ycsb::Shared shared(ycsb::workload_spec(w), s.at("records").get<uint64_t>(),
                        s.at("records").get<uint64_t>(), s.at("operations").get<uint64_t>());
    ycsb::Generator g(shared, s.at("seed").get<uint64_t>(), s.at("thread").get<uint64_t>(),
                      s.at("field_count").get<uint64_t>());
    size_t i = 0;
    for (const json& want : s.at("ops")) {
      ycsb::Operation op = g.next_op();
      if (op.kind == ycsb::Kind::Insert) shared.acknowledge(op.keynum);
      std::string where = "workload " + w + " op " + std::to_string(i++);
      SHALE_CHECK_MSG(want.at("kind").get<std::string>() == ycsb::kind_name(op.kind), where);
      SHALE_CHECK_MSG(want.at("keynum").get<uint64_t>() == op.keynum,
                      where + ": keynum " + std::to_string(op.keynum));
      if (want.contains("field")) {
        SHALE_CHECK_MSG(want.at("field").get<uint64_t>() == op.field, where);
        SHALE_CHECK_MSG(want.at("version").get<uint64_t>() == op.version, where);
      }
      if (want.contains("length")) SHALE_CHECK_MSG(want.at("length").get<uint64_t>() == op.length, where);
    }
    sequences++;
  }
  SHALE_CHECK(sequences == 6);
  SHALE_CHECK(ycsb::fnv64(0) == 6284781860667377211ULL);
}

}  // namespace shale::test

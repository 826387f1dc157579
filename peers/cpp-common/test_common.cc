#include "test_common.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <set>

#include "keccak.h"

namespace shale::test {

namespace fs = std::filesystem;

void fail(const char* file, int line, const char* expr, const std::string& msg) {
  std::cerr << "FAILED " << file << ":" << line << ": " << expr;
  if (!msg.empty()) std::cerr << " -- " << msg;
  std::cerr << std::endl;
  std::exit(1);
}

static std::string hex(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

static std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  SHALE_CHECK_MSG(f.good(), path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void test_vectors(const std::string& vectors_path) {
  auto hex_of = [](const std::array<uint8_t, 32>& d) {
    return hex(std::string(reinterpret_cast<const char*>(d.data()), d.size()));
  };
  // Keccak-256 (not SHA3-256) of "" and "abc".
  SHALE_CHECK(hex_of(keccak256("", 0)) ==
              "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");
  SHALE_CHECK(hex_of(keccak256("abc", 3)) ==
              "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45");
  // Messages of one block less a byte, one block, and more (the absorbing
  // loop), checked through the same sponge with SHA3's padding against
  // Python's hashlib.sha3_256.
  std::string a(200, 'a');
  SHALE_CHECK(hex_of(sponge256(a.data(), 135, 0x06)) ==
              "8094bb53c44cfb1e67b7c30447f9a1c33696d2463ecc1d9c92538913392843c9");
  SHALE_CHECK(hex_of(sponge256(a.data(), 136, 0x06)) ==
              "3fc5559f14db8e453a0a3091edbd2bc25e11528d81c66fa570a4efdcc2695ee1");
  SHALE_CHECK(hex_of(sponge256(a.data(), 200, 0x06)) ==
              "cce34485baf2bf2aca99b94833892a4f52896d3d153f7b840cc4f9fe695f1387");
  SHALE_CHECK(mix64(0x9E3779B97F4A7C15ULL) == 0xE220A8397B1DCDAFULL);

  json v = json::parse(slurp(vectors_path));
  std::set<std::string> schemes;
  std::string got;
  for (const json& k : v.at("keys")) {
    std::string scheme = k.at("scheme").get<std::string>();
    uint64_t index = k.at("index").get<uint64_t>();
    make_key(parse_scheme(scheme), index, &got);
    SHALE_CHECK_MSG(hex(got) == k.at("key").get<std::string>(),
                    scheme + " key " + std::to_string(index) + ": got " + hex(got));
    schemes.insert(scheme);
  }
  SHALE_CHECK(schemes == (std::set<std::string>{"hash", "hash8", "path"}));
  size_t values = 0;
  for (const json& e : v.at("values")) {
    uint64_t index = e.at("index").get<uint64_t>();
    make_value(e.at("seed").get<uint64_t>(), index, e.at("value_size").get<size_t>(), &got);
    SHALE_CHECK_MSG(hex(got) == e.at("value").get<std::string>(), "value " + std::to_string(index));
    values++;
  }
  SHALE_CHECK(values > 0 && v.at("keys").size() >= 30);
  std::cerr << "vectors: " << v.at("keys").size() << " keys and " << values << " values match"
            << std::endl;
}

// Parsing `text` must fail with a message containing `needle`.
static void expect_refused(const std::string& text, const std::string& needle) {
  try {
    parse_request(json::parse(text));
  } catch (const std::exception& e) {
    SHALE_CHECK_MSG(std::string(e.what()).find(needle) != std::string::npos,
                    std::string(e.what()) + " lacks " + needle);
    return;
  }
  fail(__FILE__, __LINE__, "request refused", text);
}

static std::vector<std::string> keys_of(const json& j) {
  std::vector<std::string> out;
  for (auto& [k, v] : j.items()) out.push_back(k);
  return out;
}

void test_protocol(EngineKind& kind) {
  using V = std::vector<std::string>;
  // The documented examples of docs/harness-protocol.md.
  Request info = parse_request(json::parse(R"({"protocol": 1, "op": "info"})"));
  SHALE_CHECK(info.op == "info");
  Request load = parse_request(json::parse(R"({"protocol": 1, "op": "load", "dir": "/abs/db", "config": "geth",
 "dataset": {"keys": 2000000, "scheme": "hash", "value_size": 110, "seed": 0},
 "threads": 2, "batch": 1000})"));
  SHALE_CHECK(load.op == "load" && load.target.dir == "/abs/db" && load.target.config == "geth");
  SHALE_CHECK(load.target.dataset.keys == 2000000 && load.target.dataset.scheme == "hash");
  SHALE_CHECK(load.target.dataset.value_size == 110 && load.target.dataset.seed == 0);
  SHALE_CHECK(load.threads == 2 && load.batch == 1000);
  Request inspect = parse_request(json::parse(R"({"protocol": 1, "op": "inspect", "dir": "/abs/db", "config": "geth",
 "dataset": {"keys": 5, "scheme": "path", "value_size": 7, "seed": 3}})"));
  SHALE_CHECK(inspect.op == "inspect" && inspect.target.dataset.scheme == "path");
  SHALE_CHECK(inspect.target.dataset.seed == 3 && inspect.target.dataset.value_size == 7);
  Request read = parse_request(json::parse(R"({"protocol": 1, "op": "read", "dir": "/abs/db", "config": "geth",
 "dataset": {"keys": 2000000, "scheme": "hash", "value_size": 110, "seed": 0},
 "cache_bytes": 8388608, "threads": 2, "direct_io": true,
 "warmup_file": "/abs/warmup.bin", "reads_file": "/abs/reads.bin"})"));
  SHALE_CHECK(read.op == "read" && read.cache_bytes == 8388608 && read.threads == 2);
  SHALE_CHECK(read.direct_io && read.warmup_file == "/abs/warmup.bin" &&
              read.reads_file == "/abs/reads.bin");

  expect_refused(R"({"protocol": 2, "op": "info"})", "protocol");
  expect_refused(R"({"op": "info"})", "protocol");
  expect_refused(R"({"protocol": 1, "op": "drop"})", "drop");
  expect_refused(R"({"protocol": 1, "op": "inspect", "dir": "/d", "config": "c",
    "dataset": {"keys": 5, "scheme": "trie", "value_size": 110, "seed": 0}})", "trie");
  expect_refused(R"({"protocol": 1, "op": "inspect", "config": "c",
    "dataset": {"keys": 5, "scheme": "hash", "value_size": 110, "seed": 0}})", "dir");
  expect_refused(R"({"protocol": 1, "op": "load", "dir": "/d", "config": "c",
    "dataset": {"keys": 5, "scheme": "hash", "value_size": 110, "seed": 0}, "threads": -1, "batch": 1})",
                 "threads");
  expect_refused(R"({"protocol": 1, "op": "read", "dir": "/d", "config": "c",
    "dataset": {"keys": 5, "scheme": "hash", "value_size": 110, "seed": 0}, "cache_bytes": 1,
    "threads": 1, "warmup_file": "/w", "reads_file": "/r"})", "direct_io");

  // Unknown configurations are refused by the ops.
  bool refused = false;
  try {
    handle(kind, R"({"protocol":1,"op":"inspect","dir":"/nonexistent","config":"no-such-config",
      "dataset":{"keys":5,"scheme":"hash","value_size":110,"seed":0}})");
  } catch (const std::exception& e) {
    refused = std::string(e.what()).find("no-such-config") != std::string::npos;
  }
  SHALE_CHECK(refused);

  // Reply field names.
  json i = handle(kind, R"({"protocol":1,"op":"info"})");
  SHALE_CHECK(keys_of(i) == (V{"engine", "version", "configs", "direct_io"}));
  SHALE_CHECK(i["engine"] == kind.name() && i["configs"].size() == kind.configs().size());
  ReadCounters rc;
  rc.data.physical_reads = 9;
  json c = to_json(rc);
  SHALE_CHECK(keys_of(c) == (V{"blocks", "table_open_reads", "table_cache", "read_requests", "read_bytes"}));
  SHALE_CHECK(keys_of(c["blocks"]) == (V{"filter", "top_index", "index", "data"}));
  SHALE_CHECK(keys_of(c["blocks"]["data"]) == (V{"cache_hits", "cache_misses", "physical_reads"}));
  SHALE_CHECK(c["blocks"]["data"]["cache_hits"].is_null() && c["blocks"]["data"]["physical_reads"] == 9);
  SHALE_CHECK(c["table_cache"].is_null() && c["table_open_reads"].is_null());
  rc.table_cache = HitMiss{3, 4};
  SHALE_CHECK(keys_of(to_json(rc)["table_cache"]) == (V{"hits", "misses"}));
  ReadCounters later = rc;
  later.data.physical_reads = 12;
  later.read_requests = 5;
  ReadCounters d = diff(later, rc);
  SHALE_CHECK(d.data.physical_reads == 3u && !d.data.cache_hits && d.read_requests == 5);
  DbShape shape;
  shape.levels.push_back({6, 3, 9});
  json s = to_json(shape);
  SHALE_CHECK(keys_of(s) == (V{"composition", "levels"}));
  SHALE_CHECK(keys_of(s["composition"]) ==
              (V{"entries", "raw_key_bytes", "raw_value_bytes", "db_bytes", "data_bytes", "filter_bytes",
                 "filter_bytes_except_last_level", "top_level_index_bytes", "index_bytes"}));
  SHALE_CHECK(s["levels"][0] == json::parse(R"({"level":6,"files":3,"bytes":9})"));

  // Thread slices, percentiles.
  SHALE_CHECK(thread_slice(10, 3, 0) == std::make_pair<size_t, size_t>(0, 4));
  SHALE_CHECK(thread_slice(10, 3, 1) == std::make_pair<size_t, size_t>(4, 7));
  SHALE_CHECK(thread_slice(10, 3, 2) == std::make_pair<size_t, size_t>(7, 10));
  SHALE_CHECK(thread_slice(2, 4, 3) == std::make_pair<size_t, size_t>(2, 2));
  std::vector<uint64_t> ns;
  for (uint64_t k = 1; k <= 1000; k++) ns.push_back(k * 1000);
  SHALE_CHECK(percentile_us(ns, 0.5) == 500.0 && percentile_us(ns, 0.99) == 990.0);
  SHALE_CHECK(percentile_us(ns, 0.999) == 999.0 && percentile_us({}, 0.5) == 0.0);
  SHALE_CHECK(proc_rss_bytes().value_or(0) > 0);
  std::cerr << "protocol: parsing and reply fields ok" << std::endl;
}

static void write_indices(const std::string& path, const std::vector<uint64_t>& indices) {
  std::ofstream f(path, std::ios::binary);
  for (uint64_t i : indices) {
    char b[8];
    for (int k = 0; k < 8; k++) b[k] = static_cast<char>(i >> (8 * k));
    f.write(b, 8);
  }
  SHALE_CHECK(f.good());
}

int run_harness(const std::string& harness, const json& request, json* reply,
                const std::string& tmp_dir) {
  std::string req = tmp_dir + "/request.json", out = tmp_dir + "/reply.json",
              err = tmp_dir + "/stderr.txt";
  {
    std::ofstream f(req);
    f << request.dump();
  }
  std::string cmd = "'" + harness + "' < '" + req + "' > '" + out + "' 2> '" + err + "'";
  int status = std::system(cmd.c_str());
  SHALE_CHECK_MSG(status != -1 && WIFEXITED(status), cmd);
  int code = WEXITSTATUS(status);
  std::string text = slurp(out);
  *reply = json::parse(text, nullptr, false);
  if (reply->is_discarded()) *reply = nullptr;
  std::cerr << "  " << request.value("op", "?") << " -> exit " << code << ": "
            << text.substr(0, 400) << (text.size() > 400 ? "...\n" : "");
  if (code != 0) std::cerr << "  stderr: " << slurp(err).substr(0, 2000);
  return code;
}

// The reply must be exactly {"error": "<one line>"}.
static void check_error_reply(int code, const json& reply) {
  SHALE_CHECK(code == 1);
  SHALE_CHECK(reply.is_object() && reply.size() == 1 && reply.contains("error"));
  SHALE_CHECK(reply["error"].is_string() &&
              reply["error"].get<std::string>().find('\n') == std::string::npos);
}

EndToEnd test_end_to_end(EngineKind& kind, const std::string& harness, const std::string& config,
                         bool direct_io, const std::string& tmp_base) {
  using V = std::vector<std::string>;
  fs::create_directories(tmp_base);
  std::string tmpl = tmp_base + "/e2e-XXXXXX";
  SHALE_CHECK(mkdtemp(tmpl.data()) != nullptr);
  std::string tmp = tmpl;
  std::string db = tmp + "/db";
  const uint64_t keys = 3000;
  json dataset{{"keys", keys}, {"scheme", "hash"}, {"value_size", 110}, {"seed", 0}};
  json base{{"protocol", 1}, {"dir", db}, {"config", config}, {"dataset", dataset}};
  std::string engine = kind.engine_string(config);
  EndToEnd e;
  std::cerr << "end to end, " << engine << ", in " << tmp << std::endl;

  // load
  json req = base;
  req["op"] = "load";
  req["threads"] = 2;
  req["batch"] = 500;
  SHALE_CHECK(run_harness(harness, req, &e.load, tmp) == 0);
  SHALE_CHECK(keys_of(e.load) == (V{"engine", "seconds", "user_bytes", "table_bytes_written", "wal_bytes",
                                    "write_amp", "shape"}));
  SHALE_CHECK(e.load["engine"] == engine);
  SHALE_CHECK(e.load["user_bytes"] == keys * (32 + 110));
  SHALE_CHECK(e.load["table_bytes_written"].get<uint64_t>() > 0);
  SHALE_CHECK(e.load["wal_bytes"].get<uint64_t>() >= keys * (32 + 110));
  SHALE_CHECK(e.load["write_amp"].get<double>() > 0.5);
  const json& levels = e.load["shape"]["levels"];
  uint64_t files = 0, bytes = 0;
  for (size_t l = 0; l < levels.size(); l++) {
    SHALE_CHECK(levels[l]["level"] == l);
    files += levels[l]["files"].get<uint64_t>();
    bytes += levels[l]["bytes"].get<uint64_t>();
  }
  SHALE_CHECK(levels.size() >= 2 && files > 0);
  const json& comp = e.load["shape"]["composition"];
  SHALE_CHECK(comp["entries"] == keys);
  SHALE_CHECK(comp["raw_key_bytes"] == keys * 32 && comp["raw_value_bytes"] == keys * 110);
  SHALE_CHECK(comp["db_bytes"] == bytes);
  SHALE_CHECK(comp["data_bytes"].get<uint64_t>() >= keys * 142 / 2);
  SHALE_CHECK(comp["filter_bytes"].get<uint64_t>() >= keys * 10 / 8);
  SHALE_CHECK(comp["index_bytes"].get<uint64_t>() > 0);
  SHALE_CHECK(comp["top_level_index_bytes"].get<uint64_t>() <= comp["index_bytes"].get<uint64_t>());
  SHALE_CHECK(comp["filter_bytes_except_last_level"].get<uint64_t>() <= comp["filter_bytes"].get<uint64_t>());

  // A second load into the now non-empty directory is refused.
  json again;
  check_error_reply(run_harness(harness, req, &again, tmp), again);

  // inspect
  req = base;
  req["op"] = "inspect";
  SHALE_CHECK(run_harness(harness, req, &e.inspect, tmp) == 0);
  SHALE_CHECK(keys_of(e.inspect) == (V{"engine", "shape"}));
  SHALE_CHECK(e.inspect["engine"] == engine);
  SHALE_CHECK(e.inspect["shape"] == e.load["shape"]);
  // A dataset other than the one loaded is refused: other values (seed),
  // fewer keys (key `keys` present), more keys (key `keys - 1` missing),
  // other keys (scheme).
  for (auto [field, value] : std::vector<std::pair<std::string, json>>{
           {"seed", 1}, {"keys", 2000}, {"keys", 4000}, {"scheme", "hash8"}, {"value_size", 100}}) {
    json bad = req;
    bad["dataset"][field] = value;
    json reply;
    check_error_reply(run_harness(harness, bad, &reply, tmp), reply);
  }

  // read: a cold cache (no warm-up), 1,000 Gets on 3 threads, every 6th
  // index beyond the dataset.
  std::vector<uint64_t> reads;
  uint64_t present = 0;
  for (uint64_t k = 0; k < 1000; k++) {
    uint64_t i = (k % 6 == 5) ? keys + k : (k * 7919) % keys;
    reads.push_back(i);
    present += i < keys;
  }
  write_indices(tmp + "/warmup.bin", {});
  write_indices(tmp + "/reads.bin", reads);
  req = base;
  req["op"] = "read";
  req["cache_bytes"] = 1 << 20;
  req["threads"] = 3;
  req["direct_io"] = direct_io;
  req["warmup_file"] = tmp + "/warmup.bin";
  req["reads_file"] = tmp + "/reads.bin";
  SHALE_CHECK(run_harness(harness, req, &e.read, tmp) == 0);
  SHALE_CHECK(keys_of(e.read) ==
              (V{"engine", "cache_bytes", "direct_io", "gets", "found", "seconds", "latency", "blocks",
                 "table_open_reads", "table_cache", "read_requests", "read_bytes", "device_read_bytes",
                 "rss_bytes"}));
  SHALE_CHECK(e.read["engine"] == engine && e.read["cache_bytes"] == 1 << 20);
  SHALE_CHECK(e.read["gets"] == 1000 && e.read["found"] == present);
  SHALE_CHECK(keys_of(e.read["latency"]) == (V{"p50_us", "p99_us", "p999_us"}));
  SHALE_CHECK(e.read["latency"]["p50_us"].get<double>() > 0);
  SHALE_CHECK(e.read["latency"]["p50_us"].get<double>() <= e.read["latency"]["p999_us"].get<double>());
  const json& data = e.read["blocks"]["data"];
  SHALE_CHECK_MSG(data["physical_reads"].is_number() && data["physical_reads"].get<uint64_t>() > 0,
                  data.dump());
  SHALE_CHECK(e.read["read_requests"].get<uint64_t>() >= data["physical_reads"].get<uint64_t>());
  SHALE_CHECK(e.read["read_bytes"].get<uint64_t>() > 0);
  SHALE_CHECK(e.read["rss_bytes"].get<uint64_t>() > 0);

  // A read whose index file is not whole u64s fails.
  {
    std::ofstream f(tmp + "/reads.bin", std::ios::binary);
    f << "123456789";
  }
  json reply;
  check_error_reply(run_harness(harness, req, &reply, tmp), reply);
  // Bad protocol version, unknown config, unknown scheme.
  json bad = base;
  bad["op"] = "inspect";
  bad["protocol"] = 2;
  check_error_reply(run_harness(harness, bad, &reply, tmp), reply);
  bad["protocol"] = 1;
  bad["config"] = "no-such-config";
  check_error_reply(run_harness(harness, bad, &reply, tmp), reply);
  bad["config"] = config;
  bad["dataset"]["scheme"] = "trie";
  check_error_reply(run_harness(harness, bad, &reply, tmp), reply);
  // Not JSON at all.
  {
    std::string cmd = "echo 'not json' | '" + harness + "' > '" + tmp + "/reply.json' 2>/dev/null";
    int status = std::system(cmd.c_str());
    SHALE_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    check_error_reply(1, json::parse(slurp(tmp + "/reply.json")));
  }
  // info
  json info;
  SHALE_CHECK(run_harness(harness, json{{"protocol", 1}, {"op", "info"}}, &info, tmp) == 0);
  SHALE_CHECK(info == op_info(kind));

  fs::remove_all(tmp);
  std::cerr << "end to end, " << engine << ": ok" << std::endl;
  return e;
}

}  // namespace shale::test

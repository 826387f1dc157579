#include "test_common.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <set>

#include "keccak.h"
#include "ycsb.h"

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
  SHALE_CHECK(read.trace.empty());
  Request traced = parse_request(json::parse(R"({"protocol": 1, "op": "read", "dir": "/abs/db", "config": "geth",
 "dataset": {"keys": 5, "scheme": "hash", "value_size": 110, "seed": 0},
 "cache_bytes": 8388608, "threads": 2, "direct_io": false,
 "warmup_file": "/abs/warmup.bin", "reads_file": "/abs/reads.bin", "trace": "/abs/read.trc"})"));
  SHALE_CHECK(traced.trace == "/abs/read.trc");

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
  SHALE_CHECK(keys_of(i) == (V{"engine", "version", "configs", "direct_io", "ops"}));
  SHALE_CHECK(i["engine"] == kind.name() && i["configs"].size() == kind.configs().size());
  SHALE_CHECK(i["ops"] == json(kind.ops()));
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

  // The same read with a trace: an engine that can trace writes one and
  // its `.measure` side file (the engine's test checks their contents);
  // one that cannot fails the request, writing nothing.
  {
    json traced = req;
    std::string trace = tmp + "/read.trc";
    traced["trace"] = trace;
    json reply;
    int rc = run_harness(harness, traced, &reply, tmp);
    if (kind.supports_trace()) {
      SHALE_CHECK_MSG(rc == 0, reply.dump());
      SHALE_CHECK(reply["gets"] == 1000 && reply["found"] == present);
      SHALE_CHECK(fs::file_size(trace) > 0 && fs::exists(trace + ".measure"));
      // Kept for the engine's checks (the directory goes at the end).
      std::ifstream t(trace, std::ios::binary), m(trace + ".measure");
      e.trace_head.assign(std::istreambuf_iterator<char>(t), {});
      e.trace_measure.assign(std::istreambuf_iterator<char>(m), {});
    } else {
      check_error_reply(rc, reply);
      SHALE_CHECK_MSG(reply["error"].get<std::string>().find("cannot record a block-access trace") !=
                          std::string::npos,
                      reply.dump());
      SHALE_CHECK(!fs::exists(trace));
    }
  }

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

static json read_json(const std::string& path) {
  json j = json::parse(slurp(path), nullptr, false);
  SHALE_CHECK_MSG(!j.is_discarded(), path + " is not JSON");
  return j;
}

static std::vector<std::string> strings_of(const json& j) {
  std::vector<std::string> out;
  for (const json& e : j) out.push_back(e.get<std::string>());
  return out;
}

namespace {
// An engine that serves the base ops only, to see unserved ops refused.
class BaseOnlyKind : public EngineKind {
 public:
  std::string name() const override { return "base-only"; }
  std::string version() const override { return "0"; }
  std::vector<std::string> configs() const override { return {"default"}; }
  bool supports_direct_io() const override { return false; }
  std::unique_ptr<Engine> open(const OpenOptions&) override {
    throw std::runtime_error("base-only opens nothing");
  }
};
}  // namespace

// Handling `text` must fail with a message containing every one of `needles`.
static void expect_handle_refuses(EngineKind& kind, const std::string& text,
                                  const std::vector<std::string>& needles) {
  try {
    handle(kind, text);
  } catch (const std::exception& e) {
    for (const std::string& n : needles)
      SHALE_CHECK_MSG(std::string(e.what()).find(n) != std::string::npos,
                      std::string(e.what()) + " lacks " + n);
    return;
  }
  fail(__FILE__, __LINE__, "request refused", text);
}

void test_fixtures(EngineKind& kind, const std::string& dir) {
  using V = std::vector<std::string>;
  json fields = read_json(dir + "/info.reply-fields.json");
  V ops = strings_of(fields.at("ops"));
  SHALE_CHECK_MSG(ops == kOps, "info.reply-fields.json lists other ops than the harness knows");
  std::map<std::string, json> requests;
  for (const std::string& op : ops) {
    json j = read_json(dir + "/" + op + ".request.json");
    SHALE_CHECK_MSG(j.at("op") == op, op + ".request.json");
    Request r = parse_request(j);
    SHALE_CHECK(r.op == op);
    requests[op] = j;
    if (op == "info") continue;
    SHALE_CHECK(r.target.dir == j.at("dir"));
    if (j.contains("dataset")) {
      const json& d = j["dataset"];
      SHALE_CHECK(r.target.config == j.at("config"));
      SHALE_CHECK(r.target.dataset.keys == d.at("keys") && r.target.dataset.scheme == d.at("scheme"));
      SHALE_CHECK(r.target.dataset.value_size == d.at("value_size") &&
                  r.target.dataset.seed == d.at("seed"));
    }
    if (op == "load") SHALE_CHECK(r.threads == j.at("threads") && r.batch == j.at("batch"));
    if (op == "read") {
      SHALE_CHECK(r.cache_bytes == j.at("cache_bytes") && r.threads == j.at("threads"));
      SHALE_CHECK(r.direct_io == j.at("direct_io") && r.warmup_file == j.at("warmup_file") &&
                  r.reads_file == j.at("reads_file"));
    }
    if (op == "dbbench") {
      SHALE_CHECK(r.target.config == j.at("config"));
      SHALE_CHECK(r.benchmarks.size() == j.at("benchmarks").size());
      for (size_t k = 0; k < r.benchmarks.size(); k++)
        SHALE_CHECK(r.benchmarks[k].name == j["benchmarks"][k].at("name") &&
                    r.benchmarks[k].seed == j["benchmarks"][k].at("seed"));
      SHALE_CHECK(r.num == j.at("num") && r.reads == j.at("reads") && r.key_size == j.at("key_size") &&
                  r.value_size == j.at("value_size") && r.threads == j.at("threads") &&
                  r.cache_bytes == j.at("cache_bytes") && r.open_files == j.at("open_files") &&
                  r.bloom_bits == j.at("bloom_bits") && r.compression == j.at("compression") &&
                  r.fresh == j.at("fresh") && r.settle == j.at("settle"));
    }
    if (op == "ycsb") {
      const YcsbRequest& y = r.ycsb;
      const json& st = j.at("settings");
      SHALE_CHECK(y.phase == j.at("phase") && y.workload == j.at("workload"));
      SHALE_CHECK(y.records == j.at("records") && y.field_count == j.at("field_count") &&
                  y.field_length == j.at("field_length") && y.seed == j.at("seed") &&
                  y.operations == j.at("operations") && r.threads == j.at("threads") &&
                  r.direct_io == j.at("direct_io"));
      const YcsbSettings& s = y.settings;
      SHALE_CHECK(s.preset == st.at("preset") && s.filters == st.at("filters") &&
                  s.block_cache_bytes == st.at("block_cache_bytes") &&
                  s.pin_table_metadata == st.at("pin_table_metadata") &&
                  s.metadata_with_tables == st.at("metadata_with_tables") &&
                  s.write_buffer_size == st.at("write_buffer_size") &&
                  s.target_file_size_base == st.at("target_file_size_base") &&
                  s.max_background_jobs == st.at("max_background_jobs") &&
                  s.base_level_bytes == st.at("base_level_bytes").get<uint64_t>() &&
                  !s.compaction_rate_limit && st.at("compaction_rate_limit").is_null() &&
                  s.compaction_nice == st.at("compaction_nice"));
    }
  }
  // A ycsb request: the load phase needs no workload, operations or
  // direct_io; the run phase does; settings name the field that is wrong.
  json y = requests["ycsb"];
  json load = y;
  load["phase"] = "load";
  for (const char* f : {"workload", "operations", "direct_io"}) load.erase(f);
  SHALE_CHECK(parse_request(load).ycsb.phase == "load");
  for (const char* f : {"workload", "operations", "direct_io", "settings", "records"}) {
    json bad = y;
    bad.erase(f);
    expect_refused(bad.dump(), f);
  }
  json bad = y;
  bad["settings"]["filters"] = "fuse9";
  expect_refused(bad.dump(), "fuse9");
  bad = y;
  bad["settings"].erase("block_cache_bytes");
  expect_refused(bad.dump(), "block_cache_bytes");
  bad = y;
  bad["phase"] = "warm";
  expect_refused(bad.dump(), "warm");
  bad = y;
  bad["field_count"] = 0;
  expect_refused(bad.dump(), "field_count");

  // info: the fields, and the ops this harness serves.
  json info = handle(kind, requests["info"].dump());
  SHALE_CHECK(keys_of(info) == strings_of(fields.at("fields")));
  V served = strings_of(info.at("ops"));
  for (const std::string& op : strings_of(fields.at("always_served")))
    SHALE_CHECK_MSG(std::find(served.begin(), served.end(), op) != served.end(), op);
  SHALE_CHECK(served == kind.ops());
  // Unserved ops are refused naming the op and the harness.
  BaseOnlyKind base;
  SHALE_CHECK(base.ops() == (V{"info", "load", "inspect", "read"}));
  expect_handle_refuses(base, requests["dbbench"].dump(), {"op dbbench", "base-only"});
  expect_handle_refuses(base, requests["ycsb"].dump(), {"op ycsb", "base-only"});
  SHALE_CHECK(handle(base, requests["info"].dump())["ops"] == json(base.ops()));
  std::cerr << "fixtures: " << ops.size() << " requests of " << dir << " ok" << std::endl;
}

json test_ycsb_op(EngineKind& kind, const std::string& harness, const std::string& protocol_dir,
                  const std::string& tmp_base) {
  using V = std::vector<std::string>;
  json fields = read_json(protocol_dir + "/ycsb.reply-fields.json");
  fs::create_directories(tmp_base);
  std::string tmpl = tmp_base + "/ycsb-XXXXXX";
  SHALE_CHECK(mkdtemp(tmpl.data()) != nullptr);
  std::string tmp = tmpl;
  json settings = {{"preset", "readopt-512mb"},  {"filters", "bloom10"},
                   {"block_cache_bytes", 88000}, {"pin_table_metadata", true},
                   {"metadata_with_tables", false}, {"write_buffer_size", 262144},
                   {"target_file_size_base", 65536}, {"base_level_bytes", 268435456},
                   {"max_background_jobs", 2},  {"compaction_rate_limit", nullptr},
                   {"compaction_nice", 0}};
  json base = {{"protocol", 1}, {"op", "ycsb"}, {"dir", tmp + "/db"},
               {"records", 2000}, {"field_count", 10}, {"field_length", 100},
               {"seed", 1}, {"threads", 2}, {"settings", settings}};
  json load = base, reply, first;
  load["phase"] = "load";
  SHALE_CHECK(run_harness(harness, load, &reply, tmp) == 0);
  SHALE_CHECK(keys_of(reply) == strings_of(fields["load"]["fields"]));
  SHALE_CHECK(reply["engine"] == kind.engine_version_string());
  SHALE_CHECK(reply["settings_ignored"] == json(kind.ycsb_settings_ignored(parse_request(json::parse(load.dump())).ycsb.settings)));
  json again;
  SHALE_CHECK(run_harness(harness, load, &again, tmp) == 1);
  SHALE_CHECK(again["error"].get<std::string>().find("already holds") != std::string::npos);
  const json& rf = fields["run"];
  V kinds = strings_of(rf["op_kinds"]);
  V nullable = strings_of(rf["nullable"]);
  for (const char* w : {"a", "b", "c", "d", "e", "f"}) {
    json run = base;
    run["phase"] = "run";
    run["workload"] = w;
    run["operations"] = 1000;
    run["direct_io"] = false;
    SHALE_CHECK(run_harness(harness, run, &reply, tmp) == 0);
    SHALE_CHECK(keys_of(reply) == strings_of(rf["fields"]));
    SHALE_CHECK(reply["engine"] == kind.engine_version_string());
    SHALE_CHECK(reply["operations"] == 1000);
    uint64_t sum = 0;
    for (const auto& [k, o] : reply["ops"].items()) {
      SHALE_CHECK_MSG(std::find(kinds.begin(), kinds.end(), k) != kinds.end(), k);
      SHALE_CHECK(keys_of(o) == strings_of(rf["op_fields"]));
      sum += o["count"].get<uint64_t>();
      SHALE_CHECK(o["p50_us"].get<double>() <= o["p99_us"].get<double>());
    }
    SHALE_CHECK(sum == 1000);
    for (const auto& [k, v] : reply.items()) {
      if (v.is_null())
        SHALE_CHECK_MSG(std::find(nullable.begin(), nullable.end(), k) != nullable.end(),
                        k + " is null but not nullable");
    }
    // Every read, update and read-modify-write makes Gets (an update one,
    // a read-modify-write two); scans and inserts none.
    uint64_t want_gets = 0;
    for (const auto& [k, o] : reply["ops"].items()) {
      uint64_t n = o["count"].get<uint64_t>();
      if (k == "read" || k == "update") want_gets += n;
      if (k == "read-modify-write") want_gets += 2 * n;
    }
    SHALE_CHECK_MSG(reply["gets"] == want_gets, reply["gets"].dump() + " gets, want " +
                                                    std::to_string(want_gets));
    for (const char* l : {"level_lookups", "level_misses"})
      SHALE_CHECK(reply[l].is_null() || reply[l].size() == 7);
    if (std::string(w) == "a") first = reply;
  }
  json other = base;
  other["phase"] = "run";
  other["workload"] = "a";
  other["operations"] = 10;
  other["direct_io"] = false;
  other["records"] = 3000;
  SHALE_CHECK(run_harness(harness, other, &reply, tmp) == 1);
  SHALE_CHECK(reply["error"].get<std::string>().find("3000 records") != std::string::npos);
  other["records"] = 2000;
  other["settings"]["filters"] = "nofilter";
  SHALE_CHECK(run_harness(harness, other, &reply, tmp) == 1);
  SHALE_CHECK(reply["error"].get<std::string>().find("nofilter") != std::string::npos);
  other["settings"]["filters"] = "bloom10";
  other["workload"] = "g";
  SHALE_CHECK(run_harness(harness, other, &reply, tmp) == 1);
  SHALE_CHECK(reply["error"].get<std::string>().find("\"g\"") != std::string::npos);
  fs::remove_all(tmp);
  std::cerr << "ycsb op, " << kind.name() << ": ok" << std::endl;
  return first;
}

json test_dbbench_op(const std::string& harness, const std::string& protocol_dir,
                     const std::string& config, const std::string& dir,
                     const std::string& tmp_base, json* request) {
  json fields = read_json(protocol_dir + "/dbbench.reply-fields.json");
  fs::create_directories(tmp_base);
  fs::remove_all(dir);
  json req = {{"protocol", 1}, {"op", "dbbench"}, {"dir", dir}, {"config", config},
              {"fresh", true}, {"settle", true},
              {"benchmarks", {{{"name", "fillseq"}, {"seed", 1}}}},
              {"num", 2000}, {"reads", 500}, {"key_size", 16}, {"value_size", 100},
              {"threads", 1}, {"cache_bytes", 1000}, {"open_files", 0},
              {"bloom_bits", 10}, {"compression", "none"}};
  *request = req;
  json reply;
  SHALE_CHECK(run_harness(harness, req, &reply, tmp_base) == 0);
  SHALE_CHECK(keys_of(reply) == strings_of(fields["fields"]));
  SHALE_CHECK(keys_of(reply["results"][0]) == strings_of(fields["result_fields"]));
  SHALE_CHECK(reply["results"][0]["ops"] == 2000);
  SHALE_CHECK(reply["results"][0]["bytes"] == 2000 * (16 + 100));
  // A fresh run over it destroys it first.
  SHALE_CHECK(run_harness(harness, req, &reply, tmp_base) == 0);
  SHALE_CHECK(reply["results"][0]["ops"] == 2000);
  req["fresh"] = false;
  req["settle"] = false;
  req["threads"] = 2;
  req["benchmarks"] = {{{"name", "readrandom"}, {"seed", 2}},
                       {{"name", "readmissing"}, {"seed", 3}},
                       {{"name", "seekrandom"}, {"seed", 4}},
                       {{"name", "readseq"}, {"seed", 5}},
                       {{"name", "readhot"}, {"seed", 6}},
                       {{"name", "readreverse"}, {"seed", 7}}};
  json readers;
  SHALE_CHECK(run_harness(harness, req, &readers, tmp_base) == 0);
  const auto& rs = readers["results"];
  SHALE_CHECK(rs.size() == 6);
  SHALE_CHECK(rs[0]["ops"] == 1000 && rs[0]["found"] == 1000);
  SHALE_CHECK(rs[1]["ops"] == 1000 && rs[1]["found"] == 0);
  SHALE_CHECK(rs[2]["found"] == 1000);
  SHALE_CHECK(rs[3]["ops"] == 1000);  // 500 entries per thread
  SHALE_CHECK(rs[4]["found"] == 1000);
  SHALE_CHECK(rs[5]["ops"] == 1000 && rs[5]["bytes"] == 1000 * 116);
  SHALE_CHECK(readers["settle_seconds"] == 0);
  std::vector<std::string> nullable = strings_of(fields["result_nullable"]);
  for (const json& r : rs)
    for (const auto& [k, v] : r.items())
      if (v.is_null())
        SHALE_CHECK_MSG(std::find(nullable.begin(), nullable.end(), k) != nullable.end(), k);
  req["benchmarks"] = {{{"name", "compact"}, {"seed", 0}}};
  SHALE_CHECK(run_harness(harness, req, &reply, tmp_base) == 1);
  SHALE_CHECK(reply["error"].get<std::string>().find("unknown benchmark") != std::string::npos);
  std::cerr << "dbbench op: ok" << std::endl;
  return readers;
}

}  // namespace shale::test

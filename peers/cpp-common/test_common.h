// Tests every C++ harness runs (plain checks, no framework): the dataset
// vectors, the protocol's parsing and reply fields, and an end-to-end run of
// the harness binary (load, inspect, read, and the errors).
#pragma once

#include <string>

#include "harness.h"

namespace shale::test {

// Fails the test program (prints where and what, exits 1) unless `cond`.
#define SHALE_CHECK(...)                                                       \
  do {                                                                         \
    if (!(__VA_ARGS__)) ::shale::test::fail(__FILE__, __LINE__, #__VA_ARGS__, ""); \
  } while (0)
#define SHALE_CHECK_MSG(cond, msg)                                             \
  do {                                                                         \
    if (!(cond)) ::shale::test::fail(__FILE__, __LINE__, #cond, (msg));        \
  } while (0)

[[noreturn]] void fail(const char* file, int line, const char* expr, const std::string& msg);

// (a) keys of every scheme and values match peers/testdata/vectors.json.
void test_vectors(const std::string& vectors_path);

// (b) the documented requests parse, bad ones are refused, and the replies
// carry the protocol's field names.
void test_protocol(EngineKind& kind);

// What the end-to-end test saw, for engine-specific checks.
struct EndToEnd {
  json load, inspect, read;
};

// (c) runs the harness binary on a load (3,000 keys, batch 500, 2 threads),
// an inspect, a cold read with missing keys, and requests that must fail
// (wrong dataset, non-empty load directory, bad protocol, unknown config).
// Works in a fresh directory under `tmp_base`.
EndToEnd test_end_to_end(EngineKind& kind, const std::string& harness, const std::string& config,
                         bool direct_io, const std::string& tmp_base);

// Runs `harness` with `request` on stdin; returns its exit code and *reply
// (its stdout as JSON, or null if not JSON).
int run_harness(const std::string& harness, const json& request, json* reply,
                const std::string& tmp_dir);

}  // namespace shale::test

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
  // The traced read's trace file and its `.measure` side file, whole
  // (empty if the engine cannot trace).
  std::string trace_head, trace_measure;
};

// (c) runs the harness binary on a load (3,000 keys, batch 500, 2 threads),
// an inspect, a cold read with missing keys, the same read with a `trace`
// (recorded, or refused by an engine that cannot), and requests that must fail
// (wrong dataset, non-empty load directory, bad protocol, unknown config).
// Works in a fresh directory under `tmp_base`.
EndToEnd test_end_to_end(EngineKind& kind, const std::string& harness, const std::string& config,
                         bool direct_io, const std::string& tmp_base);

// (d) the shared fixtures of peers/testdata/protocol (`dir`): every
// <op>.request.json parses to the fields it holds, info's reply has the
// fields of info.reply-fields.json and lists the ops `kind` serves, and a
// harness that does not serve an op refuses it naming the op.
void test_fixtures(EngineKind& kind, const std::string& protocol_dir);

// (e) op ycsb through the harness binary: a load of 2,000 records, every
// workload on it (counts add up, reply fields as ycsb.reply-fields.json), a
// second load refused, and runs of another layout or workload refused.
// Returns the reply of workload a's run, for engine-specific checks.
json test_ycsb_op(EngineKind& kind, const std::string& harness, const std::string& protocol_dir,
                  const std::string& tmp_base);

// (f) op dbbench through the harness binary on `dir` (under tmp_base): a
// fresh fillseq of 2,000 keys twice (the second destroys the first), then
// readrandom, readmissing, seekrandom and readseq on 2 threads, and an
// unknown benchmark refused. Returns the readers' reply. The request used
// is left in *request (fresh), for an engine's own lock test.
json test_dbbench_op(const std::string& harness, const std::string& protocol_dir,
                     const std::string& config, const std::string& dir,
                     const std::string& tmp_base, json* request);

// Runs `harness` with `request` on stdin; returns its exit code and *reply
// (its stdout as JSON, or null if not JSON).
int run_harness(const std::string& harness, const json& request, json* reply,
                const std::string& tmp_dir);

}  // namespace shale::test

// The harness protocol's `ycsb` op on RocksDB (docs/harness-protocol.md):
// loads a YCSB database, or runs a workload on it with a preset's options.
#pragma once

#include "../cpp-common/harness.h"

namespace shale_rocksdb {

// Handles one `ycsb` request; throws std::runtime_error on failure.
shale::json op_ycsb(const shale::json& request);

}  // namespace shale_rocksdb

// shale-rocksdb-harness: one request of docs/harness-protocol.md on stdin,
// one reply on stdout.
#include "rocksdb_engine.h"

int main() {
  shale_rocksdb::RocksDbKind kind;
  return shale::harness_main(kind);
}

// shale-leveldb-harness: one request of docs/harness-protocol.md on stdin,
// one reply on stdout.
#include "leveldb_engine.h"

int main() {
  shale_leveldb::LevelDbKind kind;
  return shale::harness_main(kind);
}

// shale-rocksdb-harness: one request of docs/harness-protocol.md on stdin,
// one reply on stdout. The `ycsb` op is RocksDB's own (ycsb_op.h); every
// other op goes to the shared harness.
#include <algorithm>
#include <iostream>
#include <iterator>

#include "rocksdb_engine.h"
#include "ycsb_op.h"

int main() {
  shale_rocksdb::RocksDbKind kind;
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  try {
    shale::json request = shale::json::parse(text, nullptr, false);
    shale::json reply;
    if (request.is_object() && request.value("op", "") == "ycsb") {
      if (request.value("protocol", 0) != static_cast<int>(shale::kProtocolVersion))
        throw std::runtime_error("unsupported protocol version");
      reply = shale_rocksdb::op_ycsb(request);
    } else {
      reply = shale::handle(kind, text);
    }
    std::cout << reply.dump(-1, ' ', false, shale::json::error_handler_t::replace) << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    shale::log("error: " + msg);
    std::cout << shale::json{{"error", msg}}.dump(-1, ' ', false,
                                                  shale::json::error_handler_t::replace)
              << std::endl;
    return 1;
  }
}

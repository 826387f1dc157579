// Running one body on several threads, for the harnesses' load, read and
// workload phases.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace shale {

// Runs `fn(t)` for t in 0..threads (at least one) on threads of their own;
// rethrows the first failure as a runtime_error after all have stopped.
// `stop` is set on a failure, to tell the others to give up.
template <typename Fn>
void run_threads(size_t threads, std::atomic<bool>& stop, Fn fn) {
  std::mutex mu;
  std::string first_error;
  std::vector<std::thread> pool;
  for (size_t t = 0; t < std::max<size_t>(threads, 1); t++) {
    pool.emplace_back([&, t] {
      try {
        fn(t);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> g(mu);
        if (first_error.empty()) first_error = e.what();
        stop = true;
      }
    });
  }
  for (auto& th : pool) th.join();
  if (!first_error.empty()) throw std::runtime_error(first_error);
}

}  // namespace shale

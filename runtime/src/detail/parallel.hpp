// Host threads of the runtime: the default thread count (the machine's, or NORMCORE_THREADS)
// and a parallel loop over independent parts. Results never depend on the thread count: each
// part writes its own bytes, and errors are reported for the lowest failing part.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace normcore::detail {

// NORMCORE_THREADS when set (1..256), else the machine's hardware threads (at least 1).
inline unsigned default_threads() {
  if (const char* env = std::getenv("NORMCORE_THREADS")) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(env, &end, 10);
    if (end != env && *end == '\0' && v >= 1 && v <= 256) return static_cast<unsigned>(v);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

// Runs f(i) for i in [0, parts) on up to `threads` threads (the caller's thread included). An
// exception from f is rethrown after every thread has finished: the one of the lowest i (the
// same error as one thread would report, since that stops at its first failing part).
template <typename F>
void parallel_for(std::uint64_t parts, unsigned threads, F&& f) {
  const unsigned nt = static_cast<unsigned>(std::min<std::uint64_t>(threads, parts));
  if (nt <= 1) {
    for (std::uint64_t i = 0; i < parts; ++i) f(i);
    return;
  }
  std::vector<std::exception_ptr> err(nt);
  std::vector<std::uint64_t> err_at(nt, parts);
  auto worker = [&](unsigned t) {
    for (std::uint64_t i = t; i < parts; i += nt) {
      try {
        f(i);
      } catch (...) {
        err[t] = std::current_exception();
        err_at[t] = i;
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(nt - 1);
  for (unsigned t = 1; t < nt; ++t) pool.emplace_back(worker, t);
  worker(0);
  for (auto& th : pool) th.join();
  const auto first = std::min_element(err_at.begin(), err_at.end()) - err_at.begin();
  if (err[static_cast<std::size_t>(first)])
    std::rethrow_exception(err[static_cast<std::size_t>(first)]);
}

}  // namespace normcore::detail

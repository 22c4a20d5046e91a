// For tests: run the ranks of a Gloo group as threads of one process, each
// with its own group member, meeting in a fresh rendezvous directory on
// loopback.
//
//   RunLoopbackGroup(4, [&](Collective& group) { ... group.AllToAllV(...) ... });
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "parallel/gloo_collective.h"

namespace omni::parallel::testing {

// A directory of its own under the system's temp directory, removed on
// destruction.
class RendezvousDir {
 public:
  RendezvousDir() {
    static std::atomic<int> counter{0};
    path_ = (std::filesystem::temp_directory_path() /
             ("omni_rendezvous." + std::to_string(::getpid()) + "." + std::to_string(counter++)))
                .string();
    std::filesystem::create_directories(path_);
  }
  ~RendezvousDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline GlooOptions LoopbackOptions(const RendezvousDir& dir, int rank, int size,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  return {.rank = rank, .size = size, .rendezvous_dir = dir.path(), .prefix = "test", .timeout = timeout};
}

// Connects `size` ranks (threads) and runs body(group) on each; returns when
// all are done. A rank that cannot connect fails the test.
inline void RunLoopbackGroup(int size, const std::function<void(Collective&)>& body,
                             std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  RendezvousDir dir;
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      auto group = ConnectGloo(LoopbackOptions(dir, r, size, timeout));
      ASSERT_TRUE(group.ok()) << group.status().ToString();
      body(**group);
    });
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace omni::parallel::testing

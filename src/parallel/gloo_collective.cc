#include "parallel/gloo_collective.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <system_error>
#include <vector>

#include <fmt/core.h>
#include <gloo/allgatherv.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

namespace omni::parallel {
namespace {

using Milliseconds = std::chrono::milliseconds;

// Gloo's FileStore waits 30 s for a key unless the caller passes a timeout,
// and its own get() (which the TCP transport calls during rendezvous) does
// not: this wrapper bounds every wait by the group's timeout.
class TimedStore final : public gloo::rendezvous::Store {
 public:
  TimedStore(gloo::rendezvous::Store& inner, Milliseconds timeout) : inner_(inner), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override { inner_.set(key, data); }
  std::vector<char> get(const std::string& key) override {
    inner_.wait({key}, timeout_);
    return inner_.get(key);
  }
  void wait(const std::vector<std::string>& keys) override { inner_.wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const Milliseconds& timeout) override {
    inner_.wait(keys, std::min(timeout, timeout_));
  }

 private:
  gloo::rendezvous::Store& inner_;
  const Milliseconds timeout_;
};

class GlooCollective final : public Collective {
 public:
  GlooCollective(std::shared_ptr<gloo::Context> context, Milliseconds timeout)
      : context_(std::move(context)), timeout_(timeout) {}

  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }

  Status AllToAllV(std::span<const float> send, std::span<const int64_t> send_counts, std::span<float> recv,
                   std::span<const int64_t> recv_counts) override {
    OMNI_RETURN_IF_ERROR(
        CheckAllToAllVCounts("AllToAllV", size(), send_counts, send.size(), recv_counts, recv.size()));
    return Run("AllToAllV", [&] {
      gloo::AlltoallvOptions opts(context_);
      // Gloo's input is not const in its signature; it only reads it.
      opts.setInput(const_cast<float*>(send.data()), std::vector<int64_t>(send_counts.begin(), send_counts.end()));
      opts.setOutput(recv.data(), std::vector<int64_t>(recv_counts.begin(), recv_counts.end()));
      opts.setTag(NextTag());
      opts.setTimeout(timeout_);
      gloo::alltoallv(opts);
    });
  }

  Status AllGatherV(std::span<const float> send, std::span<float> recv, std::span<const int64_t> counts) override {
    OMNI_RETURN_IF_ERROR(CheckAllGatherVCounts("AllGatherV", rank(), size(), send.size(), counts, recv.size()));
    return Run("AllGatherV", [&] {
      gloo::AllgathervOptions opts(context_);
      opts.setInput(const_cast<float*>(send.data()), send.size());
      opts.setOutput(recv.data(), std::vector<size_t>(counts.begin(), counts.end()));
      opts.setTag(NextTag());
      opts.setTimeout(timeout_);
      gloo::allgatherv(opts);
    });
  }

  Status Broadcast(std::string* bytes, int root) override {
    if (root < 0 || root >= size()) {
      return InvalidArgument(fmt::format("Broadcast: root {} outside a group of {}", root, size()));
    }
    uint64_t length = rank() == root ? bytes->size() : 0;
    OMNI_RETURN_IF_ERROR(Run("Broadcast", [&] { BroadcastRaw(&length, sizeof(length), root); }));
    if (rank() != root) bytes->resize(length);
    if (length == 0) return Status::Ok();
    return Run("Broadcast", [&] { BroadcastRaw(bytes->data(), length, root); });
  }

  Status Barrier() override {
    return Run("Barrier", [&] {
      gloo::BarrierOptions opts(context_);
      opts.setTag(NextTag());
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    });
  }

 private:
  void BroadcastRaw(void* data, size_t bytes, int root) {
    gloo::BroadcastOptions opts(context_);
    auto* p = static_cast<uint8_t*>(data);
    if (rank() == root) opts.setInput(p, bytes);
    opts.setOutput(p, bytes);
    opts.setRoot(root);
    opts.setTag(NextTag());
    opts.setTimeout(timeout_);
    gloo::broadcast(opts);
  }

  // Every rank numbers its collectives alike (they are called in the same
  // order), so a message never matches another operation's receive.
  uint32_t NextTag() { return next_tag_++; }

  // Gloo reports I/O errors and timeouts as gloo::IoException and broken
  // invariants as gloo::EnforceNotMet; after either its transport is in an
  // unknown state (docs/errors.md), so the group refuses further calls.
  template <typename F>
  Status Run(std::string_view op, F&& body) {
    if (!broken_.empty()) {
      return Unavailable(fmt::format("{} on rank {} of {}: the group failed earlier ({})", op, rank(), size(),
                                     broken_));
    }
    try {
      body();
      return Status::Ok();
    } catch (const std::exception& e) {
      broken_ = e.what();
    } catch (...) {
      broken_ = "unknown exception from Gloo";
    }
    return Unavailable(fmt::format("{} on rank {} of {} failed: {}", op, rank(), size(), broken_));
  }

  std::shared_ptr<gloo::Context> context_;
  const Milliseconds timeout_;
  uint32_t next_tag_ = 0;
  std::string broken_;  // the first failure's message; empty while the group works
};

}  // namespace

StatusOr<std::unique_ptr<Collective>> ConnectGloo(const GlooOptions& o) {
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size) {
    return InvalidArgument(fmt::format("rank {} of a group of {}", o.rank, o.size));
  }
  if (o.timeout.count() <= 0) return InvalidArgument("the group's timeout must be positive");
  if (o.size == 1) return MakeSingleRankCollective();
  if (o.rendezvous_dir.empty() || o.prefix.empty()) {
    return InvalidArgument("a group of several ranks needs a rendezvous directory and a prefix");
  }
  std::error_code ec;
  std::filesystem::create_directories(o.rendezvous_dir, ec);
  if (ec) return Unavailable(fmt::format("rendezvous directory {}: {}", o.rendezvous_dir, ec.message()));
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = o.host;
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore files(o.rendezvous_dir);
    gloo::rendezvous::PrefixStore prefixed(o.prefix, files);
    TimedStore store(prefixed, o.timeout);
    auto context = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
    context->setTimeout(o.timeout);
    context->connectFullMesh(store, device);
    return std::unique_ptr<Collective>(new GlooCollective(std::move(context), o.timeout));
  } catch (const std::exception& e) {
    return Unavailable(fmt::format("rank {} of {} could not join the group {} in {}: {}", o.rank, o.size, o.prefix,
                                   o.rendezvous_dir, e.what()));
  }
}

}  // namespace omni::parallel

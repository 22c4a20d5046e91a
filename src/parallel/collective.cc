#include "parallel/collective.h"

#include <algorithm>

#include <fmt/core.h>

namespace omni::parallel {
namespace {

bool SumsTo(std::span<const int64_t> counts, size_t total) {
  int64_t sum = 0;
  for (int64_t c : counts) {
    if (c < 0) return false;
    sum += c;
  }
  return static_cast<size_t>(sum) == total;
}

class SingleRankCollective final : public Collective {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }

  Status AllToAllV(std::span<const float> send, std::span<const int64_t> send_counts, std::span<float> recv,
                   std::span<const int64_t> recv_counts) override {
    OMNI_RETURN_IF_ERROR(
        CheckAllToAllVCounts("AllToAllV", 1, send_counts, send.size(), recv_counts, recv.size()));
    if (send.size() != recv.size()) return InvalidArgument("AllToAllV: one rank sends what it receives");
    std::copy(send.begin(), send.end(), recv.begin());
    return Status::Ok();
  }

  Status AllGatherV(std::span<const float> send, std::span<float> recv, std::span<const int64_t> counts) override {
    OMNI_RETURN_IF_ERROR(CheckAllGatherVCounts("AllGatherV", 0, 1, send.size(), counts, recv.size()));
    std::copy(send.begin(), send.end(), recv.begin());
    return Status::Ok();
  }

  Status Broadcast(std::string* /*bytes*/, int root) override {
    if (root != 0) return InvalidArgument(fmt::format("Broadcast: root {} outside a group of 1", root));
    return Status::Ok();
  }

  Status Barrier() override { return Status::Ok(); }
};

}  // namespace

std::unique_ptr<Collective> MakeSingleRankCollective() { return std::make_unique<SingleRankCollective>(); }

Status CheckAllToAllVCounts(std::string_view op, int size, std::span<const int64_t> send_counts, size_t send_size,
                            std::span<const int64_t> recv_counts, size_t recv_size) {
  if (send_counts.size() != static_cast<size_t>(size) || recv_counts.size() != static_cast<size_t>(size)) {
    return InvalidArgument(fmt::format("{}: {} send and {} receive counts for a group of {}", op,
                                       send_counts.size(), recv_counts.size(), size));
  }
  if (!SumsTo(send_counts, send_size) || !SumsTo(recv_counts, recv_size)) {
    return InvalidArgument(fmt::format("{}: counts do not add up to the buffers ({} and {} floats)", op, send_size,
                                       recv_size));
  }
  return Status::Ok();
}

Status CheckAllGatherVCounts(std::string_view op, int rank, int size, size_t send_size,
                             std::span<const int64_t> counts, size_t recv_size) {
  if (counts.size() != static_cast<size_t>(size)) {
    return InvalidArgument(fmt::format("{}: {} counts for a group of {}", op, counts.size(), size));
  }
  if (!SumsTo(counts, recv_size) || static_cast<size_t>(counts[static_cast<size_t>(rank)]) != send_size) {
    return InvalidArgument(fmt::format("{}: counts do not match the buffers ({} floats sent, {} received)", op,
                                       send_size, recv_size));
  }
  return Status::Ok();
}

}  // namespace omni::parallel

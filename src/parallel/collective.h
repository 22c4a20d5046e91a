// One rank's handle on a group of ranks that exchange buffers: the
// collectives sequence parallelism needs, behind an interface so a transport
// (Gloo over TCP today, NCCL later) is one new file.
//
//   OMNI_ASSIGN_OR_RETURN(auto group, ConnectGloo({.rank = r, .size = n, .rendezvous_dir = dir, .prefix = "g1"}));
//   OMNI_RETURN_IF_ERROR(group->AllToAllV(send, send_counts, recv, recv_counts));
//
// Every call is collective: each rank of the group makes the same calls in the
// same order, with counts that agree (what rank a sends to b is what b expects
// from a). A failure (a peer died, a peer did not answer within the group's
// timeout) comes back as Unavailable naming the collective and the cause,
// never as a hang or an exception; after one, the group is broken and every
// later call fails at once: the caller builds a new group.
//
// Thread-safety: one thread at a time per handle (a rank's calls are ordered
// by definition); different handles are independent.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/status.h"

namespace omni::parallel {

class Collective {
 public:
  virtual ~Collective() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Rank r's part of `send` is send_counts[r] floats, the parts consecutive in
  // rank order; likewise the part received from rank r lands in `recv` after
  // the parts from ranks below r. send_counts and recv_counts have size()
  // entries and sum to send.size() and recv.size().
  virtual Status AllToAllV(std::span<const float> send, std::span<const int64_t> send_counts, std::span<float> recv,
                           std::span<const int64_t> recv_counts) = 0;

  // Every rank receives every rank's `send` (counts[r] floats from rank r),
  // concatenated in rank order; send.size() == counts[rank()].
  virtual Status AllGatherV(std::span<const float> send, std::span<float> recv,
                            std::span<const int64_t> counts) = 0;

  // `root`'s *bytes replace every other rank's (any length; the length goes
  // first, so the others need not know it).
  virtual Status Broadcast(std::string* bytes, int root) = 0;

  virtual Status Barrier() = 0;
};

// The group of one: exchanges are copies, Broadcast and Barrier do nothing.
std::unique_ptr<Collective> MakeSingleRankCollective();

// Checks the counts of an AllToAllV or AllGatherV against the group size and
// the buffers (InvalidArgument naming `op`); for the implementations.
Status CheckAllToAllVCounts(std::string_view op, int size, std::span<const int64_t> send_counts, size_t send_size,
                            std::span<const int64_t> recv_counts, size_t recv_size);
Status CheckAllGatherVCounts(std::string_view op, int rank, int size, size_t send_size,
                             std::span<const int64_t> counts, size_t recv_size);

}  // namespace omni::parallel

// Collective over Gloo's TCP transport (Debian's libgloo-dev). The ranks meet
// through a rendezvous directory (Gloo's FileStore: each rank writes its
// listening address under `prefix`, reads the others' and connects a full
// mesh); after that every exchange is over TCP. Gloo's headers stay in the
// .cc: callers see only the Collective interface.
//
//   GlooOptions o{.rank = r, .size = 2, .rendezvous_dir = "/run/omniserve/sp", .prefix = "vd-1"};
//   OMNI_ASSIGN_OR_RETURN(std::unique_ptr<Collective> group, ConnectGloo(o));
//
// A group that failed is rebuilt under a new prefix (e.g. a generation
// counter), so the new ranks never read a dead group's addresses.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/status.h"
#include "parallel/collective.h"

namespace omni::parallel {

struct GlooOptions {
  int rank = 0;
  int size = 1;
  std::string rendezvous_dir;  // a directory every rank can read and write; created if missing
  std::string prefix;          // this group's keys in it: a new one for every group built
  std::string host = "127.0.0.1";  // the address this rank listens on and the others reach it at
  // Bounds the rendezvous (waiting for the other ranks to appear) and every
  // collective (waiting for a peer's data): a dead or stuck peer becomes an
  // error after this long instead of a hang.
  std::chrono::milliseconds timeout{30000};
};

// Blocks until all `size` ranks have joined (or the timeout passes:
// Unavailable). size 1 gives MakeSingleRankCollective() without touching the
// directory or the network.
StatusOr<std::unique_ptr<Collective>> ConnectGloo(const GlooOptions& options);

}  // namespace omni::parallel

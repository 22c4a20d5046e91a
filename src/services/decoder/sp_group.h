// `--sp N`: the vision decoder's sequence-parallel group. The server process
// is rank 0; it starts ranks 1..N-1 as child processes of the same binary
// (`omniserve decoder ... --rank R`), connected with Gloo over loopback
// through a rendezvous directory. Each request's parameters go to the other
// ranks as one JSON line on their stdin (an idle rank waits there, with no
// collective timeout running); then every rank runs
// VisionDecoder::GenerateSharded and rank 0 answers.
//
// A rank that dies fails the request in flight (Unavailable, naming the
// rank's fate, at once); the group is torn down and the next request rebuilds
// it (every child started again under a new rendezvous prefix) and is served. Children are signalled only by the PIDs started here; a child whose
// stdin closes (rank 0 exited) exits too.
//
// Thread-safety: not thread-safe; the decoder's FairQueue calls Generate from
// its one thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/vision_decoder/vision_decoder.h"
#include "parallel/collective.h"

namespace omni::decoder {

struct SpGroupOptions {
  int sp = 2;
  // The child command without the rank flags: {self, "decoder", "--model", dir, ...}.
  std::vector<std::string> child_argv;
  std::chrono::milliseconds timeout{60'000};  // connecting, and each collective
};

class SpGroup {
 public:
  // Starts the children and connects; `model` (rank 0's) outlives the group.
  static StatusOr<std::unique_ptr<SpGroup>> Start(const models::VisionDecoder* model, SpGroupOptions options);
  ~SpGroup();  // stops the children

  StatusOr<Tensor> Generate(const models::VisionGenerateRequest& request, const models::VisionGenerateHooks& hooks,
                            models::VisionGenerateTimings* timings);
  // Groups built so far (1 + rebuilds).
  int generation() const { return generation_; }
  const std::vector<pid_t>& child_pids() const { return pids_; }

 private:
  SpGroup(const models::VisionDecoder* model, SpGroupOptions options);
  Status Build();
  void Teardown();
  // Why children are gone ("rank 1 (pid 123) was killed by signal 9"), or
  // empty; ReapExited waits up to `wait` for one to go.
  std::string ReapExitedNow();
  std::string ReapExited(std::chrono::milliseconds wait);

  const models::VisionDecoder* model_;
  SpGroupOptions options_;
  std::string rendezvous_dir_;
  int generation_ = 0;
  std::vector<pid_t> pids_;
  std::vector<int> stdin_fds_;
  std::unique_ptr<parallel::Collective> group_;
};

// A rank > 0: connects to generation `generation`'s group, then runs each
// request line read from stdin until EOF. Returns the process exit code.
int RunSpRank(const models::VisionDecoder& model, int rank, int sp, const std::string& rendezvous_dir,
              int generation, std::chrono::milliseconds timeout);

// The request line rank 0 sends (tested both ways).
std::string EncodeSpRequest(const models::VisionGenerateRequest& request);
StatusOr<models::VisionGenerateRequest> DecodeSpRequest(std::string_view line);

}  // namespace omni::decoder

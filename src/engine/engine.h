// Engine: runs an EngineCore on one engine thread that owns all engine
// state. Other threads (HTTP handlers) submit and cancel requests through a
// queue; outputs come back through each request's OutputCallback, called on
// the engine thread (it must hand the output to its own channel and return).
//
// `n > 1` choices: submit n requests with the same prompt (and distinct ids
// and seeds); after the first prefill the others hit the prefix cache for
// every full block of the prompt.
//
// Thread-safety: all public methods are thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>

#include "engine/engine_core.h"

namespace omni {

class Engine {
 public:
  // Builds the core and starts the engine thread. `sink` (may be null) must
  // outlive the engine.
  static StatusOr<std::unique_ptr<Engine>> Start(const EngineConfig& config,
                                                 std::unique_ptr<ModelRunner> runner,
                                                 KvEventSink* sink);
  // Stop()s.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates now (InvalidArgument naming the field) and queues the request.
  // A duplicate id of an unfinished request ends it at once with kError.
  // Unavailable after Stop().
  Status Submit(EngineRequest request, OutputCallback on_output);
  // The check Submit makes, alone (any thread): for callers that validate a
  // request once at their edge and then submit it, or copies of it, with
  // SubmitValidated, which skips the check.
  Status Validate(const EngineRequest& request) const { return core_->ValidateRequest(request); }
  Status SubmitValidated(EngineRequest request, OutputCallback on_output);
  // Cancels: the request's blocks are released at the next iteration
  // boundary (the model may be reading them mid-step) and it finishes with
  // kAbort. No-op for an unknown or finished id.
  void Cancel(std::string request_id);
  // Finishes a request with `reason` (the caller matched a stop string).
  void Finish(std::string request_id, FinishReason reason);
  // Finishes every request with kAbort and joins the engine thread.
  void Stop();

  // The snapshot published after the latest iteration.
  EngineMetrics Metrics() const;

 private:
  struct AddCommand {
    EngineRequest request;
    OutputCallback on_output;
  };
  struct FinishCommand {
    std::string request_id;
    FinishReason reason;
  };
  using Command = std::variant<AddCommand, FinishCommand>;

  explicit Engine(std::unique_ptr<EngineCore> core);
  void Run();  // the engine thread
  void Apply(Command&& command);
  void Enqueue(Command&& command);

  std::unique_ptr<EngineCore> core_;  // used on the engine thread only (ValidateRequest aside)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Command> inbox_;  // guarded by mu_
  bool stopping_ = false;      // guarded by mu_
  EngineMetrics metrics_;      // guarded by mu_
  std::thread thread_;
};

}  // namespace omni

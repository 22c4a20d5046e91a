// The cancellation side of a proxy (the gateway, the orchestrator): each
// request's running upstream exchange is cancelled when its client goes away
// or when the server's drain deadline passes, whichever thread notices.
//
//   struct Call : UpstreamCall { ... };          // a proxy's per-request state
//   calls.Add(call);                             // before the first attempt
//   writer->OnClientGone([weak] { if (auto c = weak.lock()) c->ClientGone(); });
//   call->SetUpstream(client.StreamAsync(...));  // cancelled at once if already gone
//   ... in the exchange's `done`: calls.Remove(call.get()); call->flags() says why it ended
//   server.SetDrainDeadlineHook([&] { calls.ShutdownAll(); });
//
// Thread-safety: thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "net/http_client.h"

namespace omni {

class UpstreamCall {
 public:
  struct Flags {
    bool client_gone = false;
    bool shutting_down = false;
  };

  virtual ~UpstreamCall() = default;

  // The exchange now running (a retry sets the next one). Cancelled at once
  // if the client is gone or the drain deadline passed.
  void SetUpstream(std::shared_ptr<HttpCallHandle> upstream);
  // The client went away: the exchange is cancelled (its `done` then gets
  // Cancelled).
  void ClientGone();
  // The drain deadline passed: the exchange is cancelled.
  void Shutdown();
  Flags flags() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<HttpCallHandle> upstream_;  // guarded by mu_
  Flags flags_;                               // guarded by mu_
};

// A proxy's calls not yet ended, for its drain-deadline hook.
class UpstreamCalls {
 public:
  // A call added after ShutdownAll is shut down at once.
  void Add(const std::shared_ptr<UpstreamCall>& call);
  void Remove(const UpstreamCall* call);
  // Shuts down every call added and not removed; returns how many.
  size_t ShutdownAll();

 private:
  std::mutex mu_;
  std::unordered_map<const UpstreamCall*, std::weak_ptr<UpstreamCall>> live_;  // guarded by mu_
  bool shutting_down_ = false;                                                 // guarded by mu_
};

}  // namespace omni

#include "net/upstream_calls.h"

#include <vector>

namespace omni {

void UpstreamCall::SetUpstream(std::shared_ptr<HttpCallHandle> upstream) {
  std::lock_guard lock(mu_);
  upstream_ = std::move(upstream);
  if ((flags_.client_gone || flags_.shutting_down) && upstream_ != nullptr) upstream_->Cancel();
}

void UpstreamCall::ClientGone() {
  std::lock_guard lock(mu_);
  flags_.client_gone = true;
  if (upstream_ != nullptr) upstream_->Cancel();
}

void UpstreamCall::Shutdown() {
  std::lock_guard lock(mu_);
  flags_.shutting_down = true;
  if (upstream_ != nullptr) upstream_->Cancel();
}

UpstreamCall::Flags UpstreamCall::flags() const {
  std::lock_guard lock(mu_);
  return flags_;
}

void UpstreamCalls::Add(const std::shared_ptr<UpstreamCall>& call) {
  bool late = false;
  {
    std::lock_guard lock(mu_);
    live_.emplace(call.get(), call);
    late = shutting_down_;
  }
  if (late) call->Shutdown();
}

void UpstreamCalls::Remove(const UpstreamCall* call) {
  std::lock_guard lock(mu_);
  live_.erase(call);
}

size_t UpstreamCalls::ShutdownAll() {
  std::vector<std::shared_ptr<UpstreamCall>> calls;
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
    for (const auto& [raw, weak] : live_) {
      if (auto c = weak.lock()) calls.push_back(std::move(c));
    }
  }
  for (const auto& c : calls) c->Shutdown();
  return calls.size();
}

}  // namespace omni

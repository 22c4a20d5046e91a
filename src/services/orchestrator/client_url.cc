#include "services/orchestrator/client_url.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace omni::orchestrator {
namespace {

bool PlainHost(std::string_view host) {
  if (host.empty() || host.size() > 255) return false;
  for (char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '-' || c == ':' || c == '[' || c == ']';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

StatusOr<std::string> PublicBase(const HttpRequest& request, const std::string& configured) {
  if (!configured.empty()) return configured;
  const std::string host(request.headers.GetOr("host", ""));
  if (!PlainHost(host)) {
    return InvalidArgument("the request's Host header is not a host[:port], so no URL can be made for the "
                           "generated media; send one, or set images.public_url / speech.public_url")
        .WithErrorCode("invalid_host");
  }
  return "http://" + host;
}

StatusOr<std::string> ClientUrl(ObjectStore& store, const ObjectUrlSigner* signer, const Clock& clock,
                                const std::string& key, std::chrono::seconds ttl, const std::string& public_base) {
  if (store.uri().starts_with("s3://")) return store.Presign(key, PresignMethod::kGet, ttl);
  if (signer == nullptr) return Internal("no URL signer for the local store");
  OMNI_ASSIGN_OR_RETURN(std::string path, signer->SignedPath(key, clock.WallNow() + ttl));
  return public_base + path;
}

std::string DecoderMessage(const HttpClientResponse& r) {
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object() && j["error"].contains("message") &&
      j["error"]["message"].is_string()) {
    return j["error"]["message"].get<std::string>();
  }
  return r.body.substr(0, 200);
}

std::optional<Status> DecoderCallFailure(const StatusOr<HttpClientResponse>& r, const DecoderNames& names) {
  const std::string decoder(names.decoder);
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kDeadlineExceeded) {
      return DeadlineExceeded(fmt::format("{} did not answer within {} ({} s)", decoder, names.timeout_setting,
                                          names.timeout.count() / 1000))
          .WithErrorCode(std::string(names.timeout_code));
    }
    return Unavailable(decoder + " could not be reached through the gateway: " + r.status().message())
        .WithErrorCode(std::string(names.unavailable_code));
  }
  if (r->status == 429) {
    return ResourceExhausted(decoder + " is busy: " + DecoderMessage(*r) + "; retry later")
        .WithErrorCode(std::string(names.busy_code));
  }
  if (r->status == 503 || r->status == 502) {
    return Unavailable(decoder + " is unavailable: " + DecoderMessage(*r)).WithErrorCode(std::string(names.unavailable_code));
  }
  return std::nullopt;
}

}  // namespace omni::orchestrator

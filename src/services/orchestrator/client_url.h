// What the image and speech stages share: the URL a client gets for an
// object the decoders wrote (a signed URL on this orchestrator for a local
// store, the store's presigned GET for S3), the base such URLs start with,
// and the message of a decoder's error answer.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/status.h"
#include "net/http.h"
#include "net/http_client.h"
#include "storage/object_store.h"
#include "storage/signed_url.h"

namespace omni::orchestrator {

// `configured` when set, else http://<the request's Host>; a Host that is
// not a plain host[:port] is refused (invalid_host).
StatusOr<std::string> PublicBase(const HttpRequest& request, const std::string& configured);

// The client's URL of `key`, valid for `ttl`. `signer` is needed for a local store.
StatusOr<std::string> ClientUrl(ObjectStore& store, const ObjectUrlSigner* signer, const Clock& clock,
                                const std::string& key, std::chrono::seconds ttl, const std::string& public_base);

// The message of a decoder's OpenAI error body (or the body's start).
std::string DecoderMessage(const HttpClientResponse& response);

// How a decoder call's failures are named to clients.
struct DecoderNames {
  std::string_view decoder;           // "the vision decoder"
  std::string_view timeout_setting;   // "images.decode_s"
  std::chrono::milliseconds timeout;  // its value
  std::string_view busy_code, unavailable_code, timeout_code;
};
// The OpenAI error of a call that failed or answered 429, 502 or 503 (the
// decoder busy, gone or timed out); nullopt for any other answer, which
// the caller reads.
std::optional<Status> DecoderCallFailure(const StatusOr<HttpClientResponse>& response, const DecoderNames& names);

}  // namespace omni::orchestrator

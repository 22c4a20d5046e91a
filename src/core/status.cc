#include "core/status.h"

#include <nlohmann/json.hpp>

namespace omni {

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kUnauthenticated: return 401;
    case StatusCode::kPermissionDenied: return 403;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kMethodNotAllowed: return 405;
    case StatusCode::kAlreadyExists: return 409;
    case StatusCode::kFailedPrecondition: return 412;
    case StatusCode::kPayloadTooLarge: return 413;
    case StatusCode::kUnsupportedMedia: return 415;
    case StatusCode::kResourceExhausted: return 429;
    case StatusCode::kCancelled: return 499;
    case StatusCode::kInternal: return 500;
    case StatusCode::kUnimplemented: return 501;
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kDeadlineExceeded: return 504;
  }
  return 500;
}

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid_argument";
    case StatusCode::kUnauthenticated: return "unauthenticated";
    case StatusCode::kPermissionDenied: return "permission_denied";
    case StatusCode::kNotFound: return "not_found";
    case StatusCode::kMethodNotAllowed: return "method_not_allowed";
    case StatusCode::kAlreadyExists: return "already_exists";
    case StatusCode::kFailedPrecondition: return "failed_precondition";
    case StatusCode::kPayloadTooLarge: return "payload_too_large";
    case StatusCode::kUnsupportedMedia: return "unsupported_media_type";
    case StatusCode::kResourceExhausted: return "resource_exhausted";
    case StatusCode::kCancelled: return "cancelled";
    case StatusCode::kInternal: return "internal";
    case StatusCode::kUnimplemented: return "unimplemented";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kDeadlineExceeded: return "deadline_exceeded";
  }
  return "unknown";
}

std::string_view OpenAiErrorType(StatusCode code) {
  switch (code) {
    case StatusCode::kUnauthenticated: return "authentication_error";
    case StatusCode::kPermissionDenied: return "permission_error";
    case StatusCode::kNotFound: return "not_found_error";
    case StatusCode::kResourceExhausted: return "rate_limit_error";
    default: break;
  }
  return HttpStatusFor(code) < 500 ? "invalid_request_error" : "server_error";
}

StatusCode StatusCodeFromHttp(int s) {
  switch (s) {
    case 400: return StatusCode::kInvalidArgument;
    case 401: return StatusCode::kUnauthenticated;
    case 403: return StatusCode::kPermissionDenied;
    case 404: return StatusCode::kNotFound;
    case 405: return StatusCode::kMethodNotAllowed;
    case 408: return StatusCode::kDeadlineExceeded;
    case 409: return StatusCode::kAlreadyExists;
    case 412: return StatusCode::kFailedPrecondition;
    case 413: return StatusCode::kPayloadTooLarge;
    case 415: return StatusCode::kUnsupportedMedia;
    case 429: return StatusCode::kResourceExhausted;
    case 499: return StatusCode::kCancelled;
    case 501: return StatusCode::kUnimplemented;
    case 502: case 503: return StatusCode::kUnavailable;
    case 504: return StatusCode::kDeadlineExceeded;
    default: break;
  }
  if (s >= 200 && s < 300) return StatusCode::kOk;
  return s < 500 ? StatusCode::kInvalidArgument : StatusCode::kInternal;
}

std::string_view Status::error_code() const {
  return error_code_.empty() ? StatusCodeName(code_) : std::string_view(error_code_);
}

Status&& Status::Annotate(std::string_view context) && {
  if (!ok()) message_ = std::string(context) + ": " + message_;
  return std::move(*this);
}

std::string Status::ToOpenAiJson() const {
  nlohmann::json err = {
      {"message", message_},
      {"type", OpenAiErrorType(code_)},
      {"param", param_.empty() ? nlohmann::json(nullptr) : nlohmann::json(param_)},
      {"code", error_code()},
  };
  // Invalid UTF-8 in a message (e.g. echoing a bad key) must not make the
  // error path itself throw.
  return nlohmann::json{{"error", err}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s(StatusCodeName(code_));
  s += ": ";
  s += message_;
  if (!param_.empty()) s += " (param " + param_ + ")";
  return s;
}

std::string ShownValue(std::string_view value) {
  constexpr size_t kShown = 64;
  std::string shown(value.substr(0, kShown));
  if (value.size() > kShown) shown += "... (" + std::to_string(value.size()) + " bytes)";
  return shown;
}

Status ModelNotFound(std::string_view requested, std::string_view served_models) {
  return NotFound("The model '" + ShownValue(requested) + "' does not exist. Served models: [" + std::string(served_models) + "]")
      .WithParam("model")
      .WithErrorCode("model_not_found");
}

}  // namespace omni

// Status and StatusOr<T>: the one error policy of omniserve.
//
// Request paths return Status/StatusOr and never throw across a handler or a
// thread. Each code maps to one HTTP status and one OpenAI error `type`, so a
// service can turn any failure into `{"error":{"message","type","param","code"}}`
// without a table of its own. Invariants use OMNI_CHECK (check.h) instead.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "core/check.h"

namespace omni {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // 400: malformed JSON, wrong types, bad values
  kUnauthenticated,     // 401
  kPermissionDenied,    // 403: bad signature, expired URL
  kNotFound,            // 404: unknown model, missing object
  kMethodNotAllowed,    // 405
  kAlreadyExists,       // 409
  kFailedPrecondition,  // 412: conditional request failed
  kPayloadTooLarge,     // 413: body or media over a limit
  kUnsupportedMedia,    // 415: media type we cannot decode
  kResourceExhausted,   // 429: queue full, rate limited
  kCancelled,           // 499: the client went away
  kInternal,            // 500: a bug or an unexpected library failure
  kUnimplemented,       // 501
  kUnavailable,         // 503: loading, draining, upstream down (retryable)
  kDeadlineExceeded,    // 504: a timeout
};

// The HTTP status a code maps to.
int HttpStatusFor(StatusCode code);
// Short stable name, e.g. "invalid_argument"; used as the OpenAI `code` field
// when no more specific code was set.
std::string_view StatusCodeName(StatusCode code);
// OpenAI error `type`: "invalid_request_error", "authentication_error",
// "permission_error", "not_found_error", "rate_limit_error", "server_error".
std::string_view OpenAiErrorType(StatusCode code);
// The inverse of HttpStatusFor for statuses received from upstreams.
StatusCode StatusCodeFromHttp(int http_status);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The request field the error is about (OpenAI `param`), empty if none.
  const std::string& param() const { return param_; }
  // A machine-readable error code (OpenAI `code`), e.g. "model_not_found".
  // Defaults to StatusCodeName(code()).
  std::string_view error_code() const;

  Status& WithParam(std::string param) & { param_ = std::move(param); return *this; }
  Status&& WithParam(std::string param) && { param_ = std::move(param); return std::move(*this); }
  Status& WithErrorCode(std::string c) & { error_code_ = std::move(c); return *this; }
  Status&& WithErrorCode(std::string c) && { error_code_ = std::move(c); return std::move(*this); }
  // Prepends context: "loading config: <message>".
  Status&& Annotate(std::string_view context) &&;

  int http_status() const { return HttpStatusFor(code_); }
  // `{"error":{"message":...,"type":...,"param":...|null,"code":...}}`
  std::string ToOpenAiJson() const;
  // "not_found: no such model" (for logs and CLI errors).
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string param_;
  std::string error_code_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
inline Status PayloadTooLarge(std::string m) { return {StatusCode::kPayloadTooLarge, std::move(m)}; }
inline Status PermissionDenied(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
// The one "unknown model" error of every role (404, code model_not_found,
// param model), as OpenAI and vLLM answer it. `requested` is shown cut to
// a few dozen characters: a client's megabyte-long name is not echoed.
Status ModelNotFound(std::string_view requested, std::string_view served_models);
// A client's string as an error message shows it: the first 64 bytes, then
// "... (N bytes)", so an error never echoes a huge value back.
std::string ShownValue(std::string_view value);

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const T& value) : v_(value) {}                // NOLINT: implicit by design
  StatusOr(T&& value) : v_(std::move(value)) {}          // NOLINT
  StatusOr(Status status) : v_(std::move(status)) {      // NOLINT
    OMNI_CHECK(!std::get<Status>(v_).ok()) << "StatusOr built from an OK status";
  }
  template <typename U>
    requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::decay_t<U>, Status> &&
             !std::is_same_v<std::decay_t<U>, StatusOr<T>> && !std::is_same_v<std::decay_t<U>, T>)
  StatusOr(U&& u) : v_(T(std::forward<U>(u))) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  T& value() & { CheckOk(); return std::get<T>(v_); }
  const T& value() const& { CheckOk(); return std::get<T>(v_); }
  T&& value() && { CheckOk(); return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void CheckOk() const {
    OMNI_CHECK(ok()) << "StatusOr::value() on error: " << std::get<Status>(v_).ToString();
  }
  std::variant<T, Status> v_;
};

}  // namespace omni

#define OMNI_STATUS_CONCAT_INNER(a, b) a##b
#define OMNI_STATUS_CONCAT(a, b) OMNI_STATUS_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` is not OK.
#define OMNI_RETURN_IF_ERROR(expr)                  \
  do {                                              \
    ::omni::Status omni_status_tmp_ = (expr);       \
    if (!omni_status_tmp_.ok()) return omni_status_tmp_; \
  } while (0)

// `OMNI_ASSIGN_OR_RETURN(auto x, MakeX());` binds the value or returns the error.
#define OMNI_ASSIGN_OR_RETURN(lhs, expr) \
  OMNI_ASSIGN_OR_RETURN_IMPL(OMNI_STATUS_CONCAT(omni_statusor_, __LINE__), lhs, expr)
#define OMNI_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()

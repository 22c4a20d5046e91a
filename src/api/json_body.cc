#include "api/json_body.h"

#include <fmt/core.h>

namespace omni {

StatusOr<nlohmann::json> ParseJsonObjectBody(std::string_view body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded()) return InvalidArgument("the request body is not valid JSON");
  if (!j.is_object()) return InvalidArgument("the request body must be a JSON object");
  return j;
}

Status JsonFieldError(std::string_view field, std::string_view want) {
  return InvalidArgument(fmt::format("'{}' must be {}", field, want)).WithParam(std::string(field));
}

}  // namespace omni

// The first steps of every JSON API's request parsing, with one wording for
// every role: the body as a JSON object, and the error for a field of the
// wrong type or range ('steps' must be an integer in [1, 200], param
// "steps").
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace omni {

// InvalidArgument for a body that is not JSON, or not an object.
StatusOr<nlohmann::json> ParseJsonObjectBody(std::string_view body);
// InvalidArgument "'<field>' must be <want>" with param <field>.
Status JsonFieldError(std::string_view field, std::string_view want);

}  // namespace omni

// libFuzzer target for PeekJsonModel (services/gateway/model_peek.h), the
// gateway's read of a request's top-level "model" without a JSON DOM. Seeds:
// fuzz/corpus/model_peek.
//
// For any input the scanner must return a model or a Status with one of its
// documented messages, never crash, read out of bounds or recurse without
// bound. A model it returns is valid UTF-8. Where nlohmann (which the LLM
// server parses bodies with) accepts the whole input, the two must agree:
// not an object; missing `model`; `model` not a string; or the same string.
// The scanner stops at the first "model" and nlohmann keeps the last, so the
// comparison is made only when the top level has at most one "model" key.
//
// The gateway_leaf corpus test also links this file and replays the corpus.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/utf8.h"
#include "services/gateway/model_peek.h"

namespace {

using omni::StatusOr;

// Parses with nlohmann, counting "model" keys of the top-level object.
// nullopt when nlohmann rejects the input.
std::optional<nlohmann::json> ParseWithNlohmann(std::string_view input, int* top_level_model_keys) {
  *top_level_model_keys = 0;
  auto count = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1 && parsed == "model") ++*top_level_model_keys;
    return true;
  };
  nlohmann::json j = nlohmann::json::parse(input, count, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  StatusOr<std::string> model = omni::PeekJsonModel(input);
  const std::string message = model.ok() ? "" : model.status().message();
  if (model.ok()) {
    OMNI_CHECK(omni::IsValidUtf8(*model));
  } else {
    OMNI_CHECK(message == "request body is not a JSON object" || message == "`model` must be a string" ||
               message == "missing `model`" || message.starts_with("malformed JSON at byte "))
        << message;
  }

  int model_keys = 0;
  std::optional<nlohmann::json> j = ParseWithNlohmann(input, &model_keys);
  if (!j) return 0;
  if (!j->is_object()) {
    OMNI_CHECK(message == "request body is not a JSON object") << message;
    return 0;
  }
  // nlohmann has no nesting limit; the scanner does.
  if (message.find("nested deeper than") != std::string::npos) return 0;
  if (model_keys > 1) return 0;
  auto it = j->find("model");
  if (it == j->end()) {
    OMNI_CHECK(message == "missing `model`") << message;
  } else if (!it->is_string()) {
    OMNI_CHECK(message == "`model` must be a string") << message;
  } else {
    OMNI_CHECK(model.ok()) << message;
    OMNI_CHECK(*model == it->get<std::string>());
  }
  return 0;
}

// JSON text the way the chat template's `tojson` writes it (Hugging Face's
// json.dumps(x, ensure_ascii=False): ", " and ": " separators, non-ASCII
// verbatim), which is how tool schemas and tool-call arguments looked in the
// model's training data. The one serializer for tool JSON in prompts and in
// parsed tool-call arguments; strings are escaped by core/json_string.h.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace omni::openai {

std::string PythonJsonDumps(const nlohmann::ordered_json& value);

}  // namespace omni::openai

// JSON text the way Python's json.dumps writes it by default (", " and ": "
// separators, non-ASCII escaped as \uXXXX), which is how tool schemas and
// tool-call arguments looked in the model's training data (chat template).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace omni::openai {

std::string PythonJsonDumps(const nlohmann::ordered_json& value);

}  // namespace omni::openai

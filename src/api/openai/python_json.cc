#include "api/openai/python_json.h"

#include <cstdio>

#include "core/json_string.h"

namespace omni::openai {
namespace {

void AppendEscapedString(const std::string& s, std::string* out) { AppendJsonString(s, out); }

void Dump(const nlohmann::ordered_json& v, std::string* out) {
  if (v.is_object()) {
    out->push_back('{');
    bool first = true;
    for (const auto& [k, item] : v.items()) {
      if (!first) out->append(", ");
      first = false;
      AppendEscapedString(k, out);
      out->append(": ");
      Dump(item, out);
    }
    out->push_back('}');
  } else if (v.is_array()) {
    out->push_back('[');
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) out->append(", ");
      Dump(v[i], out);
    }
    out->push_back(']');
  } else if (v.is_string()) {
    AppendEscapedString(v.get<std::string>(), out);
  } else {
    out->append(v.dump());
  }
}

}  // namespace

std::string PythonJsonDumps(const nlohmann::ordered_json& value) {
  std::string out;
  Dump(value, &out);
  return out;
}

}  // namespace omni::openai

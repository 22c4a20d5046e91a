#include "core/config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/whole_number.h"

namespace omni {

const ConfigNode* ConfigNode::Find(std::string_view key) const {
  for (const auto& [k, v] : map) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string_view ConfigNode::KindName() const {
  switch (kind) {
    case Kind::kNull: return "null";
    case Kind::kBool: return "a boolean";
    case Kind::kInt: return "an integer";
    case Kind::kDouble: return "a number";
    case Kind::kString: return "a string";
    case Kind::kList: return "a list";
    case Kind::kMap: return "a map";
  }
  return "?";
}

std::string ConfigNode::Position() const {
  if (line <= 0) return source;
  return source + ":" + std::to_string(line) + ":" + std::to_string(column);
}

Status ConfigError(const ConfigNode& node, std::string_view path, std::string_view message) {
  std::string m = node.Position();
  if (!m.empty()) m += ": ";
  m += path.empty() ? std::string("(top level)") : std::string(path);
  m += ": ";
  m += message;
  return InvalidArgument(std::move(m)).WithParam(std::string(path));
}

namespace {

// --- YAML -> ConfigNode ---

bool ParseIntText(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool ParseDoubleText(std::string_view s, double* out) {
  if (s.empty()) return false;
  // from_chars for double is available in GCC 11+.
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

Status FromYaml(const YAML::Node& y, std::string_view source, ConfigNode* out) {
  out->source = std::string(source);
  YAML::Mark mark = y.Mark();
  out->line = mark.line >= 0 ? mark.line + 1 : 0;
  out->column = mark.column >= 0 ? mark.column + 1 : 0;
  switch (y.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      out->kind = ConfigNode::Kind::kNull;
      return Status::Ok();
    case YAML::NodeType::Scalar: {
      const std::string& text = y.Scalar();
      out->string_value = text;
      if (y.Tag() == "!") {  // quoted: always a string
        out->kind = ConfigNode::Kind::kString;
      } else if (text == "true" || text == "True" || text == "TRUE") {
        out->kind = ConfigNode::Kind::kBool;
        out->bool_value = true;
      } else if (text == "false" || text == "False" || text == "FALSE") {
        out->kind = ConfigNode::Kind::kBool;
      } else if (text == "~" || text == "null" || text == "Null" || text == "NULL") {
        out->kind = ConfigNode::Kind::kNull;
      } else if (ParseIntText(text, &out->int_value)) {
        out->kind = ConfigNode::Kind::kInt;
        out->double_value = static_cast<double>(out->int_value);
      } else if (ParseDoubleText(text, &out->double_value)) {
        out->kind = ConfigNode::Kind::kDouble;
      } else {
        out->kind = ConfigNode::Kind::kString;
      }
      return Status::Ok();
    }
    case YAML::NodeType::Sequence:
      out->kind = ConfigNode::Kind::kList;
      for (const auto& child : y) {
        OMNI_RETURN_IF_ERROR(FromYaml(child, source, &out->list.emplace_back()));
      }
      return Status::Ok();
    case YAML::NodeType::Map:
      out->kind = ConfigNode::Kind::kMap;
      for (const auto& kv : y) {
        if (!kv.first.IsScalar()) {
          return ConfigError(*out, "", "map keys must be scalars");
        }
        std::string key = kv.first.Scalar();
        if (out->Find(key) != nullptr) {
          ConfigNode at;
          OMNI_RETURN_IF_ERROR(FromYaml(kv.first, source, &at));
          return ConfigError(at, key, "duplicate key");
        }
        out->map.push_back(ConfigEntry{std::move(key), ConfigNode{}});
        OMNI_RETURN_IF_ERROR(FromYaml(kv.second, source, &out->map.back().value));
      }
      return Status::Ok();
  }
  return Internal("unknown YAML node type");
}

// --- JSON -> ConfigNode ---

void FromJson(const nlohmann::json& j, std::string_view source, ConfigNode* out) {
  out->source = std::string(source);
  switch (j.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      out->kind = ConfigNode::Kind::kNull;
      break;
    case nlohmann::json::value_t::boolean:
      out->kind = ConfigNode::Kind::kBool;
      out->bool_value = j.get<bool>();
      break;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      out->kind = ConfigNode::Kind::kInt;
      out->int_value = j.get<int64_t>();
      out->double_value = static_cast<double>(out->int_value);
      out->string_value = j.dump();
      break;
    case nlohmann::json::value_t::number_float:
      out->kind = ConfigNode::Kind::kDouble;
      out->double_value = j.get<double>();
      out->string_value = j.dump();
      break;
    case nlohmann::json::value_t::string:
      out->kind = ConfigNode::Kind::kString;
      out->string_value = j.get<std::string>();
      break;
    case nlohmann::json::value_t::array:
      out->kind = ConfigNode::Kind::kList;
      for (const auto& e : j) FromJson(e, source, &out->list.emplace_back());
      break;
    case nlohmann::json::value_t::object:
      out->kind = ConfigNode::Kind::kMap;
      for (const auto& [k, v] : j.items()) {
        out->map.push_back(ConfigEntry{k, ConfigNode{}});
        FromJson(v, source, &out->map.back().value);
      }
      break;
    case nlohmann::json::value_t::binary:
      out->kind = ConfigNode::Kind::kNull;
      break;
  }
}

}  // namespace

StatusOr<ConfigNode> ParseYaml(std::string_view text, std::string_view source_name) {
  ConfigNode root;
  try {
    YAML::Node y = YAML::Load(std::string(text));
    OMNI_RETURN_IF_ERROR(FromYaml(y, source_name, &root));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string(source_name) + ":" + std::to_string(e.mark.line + 1) + ":" +
                           std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  return root;
}

StatusOr<ConfigNode> ParseJson(std::string_view text, std::string_view source_name) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Re-parse with exceptions only to get the byte position for the message.
    try {
      [[maybe_unused]] auto reparsed = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      return InvalidArgument(std::string(source_name) + ": invalid JSON at byte " +
                             std::to_string(e.byte) + ": " + e.what());
    } catch (const std::exception& e) {
      return InvalidArgument(std::string(source_name) + ": invalid JSON: " + e.what());
    }
    return InvalidArgument(std::string(source_name) + ": invalid JSON");
  }
  ConfigNode root;
  FromJson(j, source_name, &root);
  return root;
}

StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Internal("cannot read " + path);
  return ss.str();
}

StatusOr<ConfigNode> LoadConfigFile(const std::string& path) {
  OMNI_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return ParseYaml(text, path);
}

// --- ObjectReader ---

namespace {
// YAML writes `name: 123` unquoted; a string field takes any YAML scalar's
// text. JSON (no line numbers) keeps its types strict.
bool IsStringLike(const ConfigNode& n) {
  if (n.kind == ConfigNode::Kind::kString) return true;
  bool scalar = n.kind == ConfigNode::Kind::kBool || n.kind == ConfigNode::Kind::kInt ||
                n.kind == ConfigNode::Kind::kDouble;
  return scalar && n.line > 0;
}
}  // namespace

ObjectReader::ObjectReader(const ConfigNode& node, std::string path, UnknownKeys unknown)
    : node_(node), path_(std::move(path)), unknown_(unknown) {}

Status ObjectReader::CheckIsMap() const {
  if (node_.kind == ConfigNode::Kind::kMap) return Status::Ok();
  return ConfigError(node_, path_, "expected a map, got " + std::string(node_.KindName()));
}

bool ObjectReader::Has(std::string_view key) const {
  const ConfigNode* n = node_.Find(key);
  return n != nullptr && n->kind != ConfigNode::Kind::kNull;
}

std::string ObjectReader::ChildPath(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

Status ObjectReader::Error(std::string_view key, std::string_view message) const {
  const ConfigNode* n = node_.Find(key);
  return ConfigError(n ? *n : node_, ChildPath(key), message);
}

Status ObjectReader::Require(bool ok, std::string_view key, std::string_view message) const {
  return ok ? Status::Ok() : Error(key, message);
}

const ConfigNode* ObjectReader::Lookup(std::string_view key, bool required, Status* status) {
  seen_.emplace(key);
  if (node_.kind != ConfigNode::Kind::kMap) {
    *status = CheckIsMap();
    return nullptr;
  }
  const ConfigNode* n = node_.Find(key);
  if (n == nullptr || n->kind == ConfigNode::Kind::kNull) {
    if (required) *status = ConfigError(node_, ChildPath(key), "required field is missing");
    return nullptr;
  }
  return n;
}

const ConfigNode* ObjectReader::GetNode(std::string_view key) {
  Status ignored;
  return Lookup(key, false, &ignored);
}

Status ObjectReader::GetString(std::string_view key, std::string* out, bool required) {
  Status s;
  const ConfigNode* n = Lookup(key, required, &s);
  if (n == nullptr) return s;
  if (!IsStringLike(*n)) {
    return ConfigError(*n, ChildPath(key), "expected a string, got " + std::string(n->KindName()));
  }
  *out = n->string_value;
  return Status::Ok();
}

Status ObjectReader::GetInt(std::string_view key, int64_t* out, bool required) {
  Status s;
  const ConfigNode* n = Lookup(key, required, &s);
  if (n == nullptr) return s;
  if (n->kind == ConfigNode::Kind::kInt) {
    *out = n->int_value;
    return Status::Ok();
  }
  // JSON writers emit 4096.0 for integral floats at times; accept exact ones.
  if (n->kind == ConfigNode::Kind::kDouble) {
    if (const std::optional<int64_t> whole = WholeInt64(n->double_value)) {
      *out = *whole;
      return Status::Ok();
    }
  }
  return ConfigError(*n, ChildPath(key), "expected an integer, got " + std::string(n->KindName()));
}

Status ObjectReader::GetInt(std::string_view key, int* out, bool required) {
  int64_t v = *out;
  OMNI_RETURN_IF_ERROR(GetInt(key, &v, required));
  if (v < INT32_MIN || v > INT32_MAX) return Error(key, "integer out of range");
  *out = static_cast<int>(v);
  return Status::Ok();
}

Status ObjectReader::GetDouble(std::string_view key, double* out, bool required) {
  Status s;
  const ConfigNode* n = Lookup(key, required, &s);
  if (n == nullptr) return s;
  if (n->kind != ConfigNode::Kind::kInt && n->kind != ConfigNode::Kind::kDouble) {
    return ConfigError(*n, ChildPath(key), "expected a number, got " + std::string(n->KindName()));
  }
  *out = n->double_value;
  return Status::Ok();
}

Status ObjectReader::GetBool(std::string_view key, bool* out, bool required) {
  Status s;
  const ConfigNode* n = Lookup(key, required, &s);
  if (n == nullptr) return s;
  if (n->kind != ConfigNode::Kind::kBool) {
    return ConfigError(*n, ChildPath(key), "expected a boolean, got " + std::string(n->KindName()));
  }
  *out = n->bool_value;
  return Status::Ok();
}

Status ObjectReader::GetStringList(std::string_view key, std::vector<std::string>* out, bool required) {
  Status s;
  const ConfigNode* n = Lookup(key, required, &s);
  if (n == nullptr) return s;
  if (n->kind != ConfigNode::Kind::kList) {
    return ConfigError(*n, ChildPath(key), "expected a list, got " + std::string(n->KindName()));
  }
  out->clear();
  for (size_t i = 0; i < n->list.size(); ++i) {
    const ConfigNode& e = n->list[i];
    if (!IsStringLike(e)) {
      return ConfigError(e, ChildPath(key) + "[" + std::to_string(i) + "]",
                         "expected a string, got " + std::string(e.KindName()));
    }
    out->push_back(e.string_value);
  }
  return Status::Ok();
}

Status ObjectReader::GetIntList(std::string_view key, std::vector<int64_t>* out, bool required) {
  Status s;
  const ConfigNode* n = Lookup(key, required, &s);
  if (n == nullptr) return s;
  if (n->kind != ConfigNode::Kind::kList) {
    return ConfigError(*n, ChildPath(key), "expected a list, got " + std::string(n->KindName()));
  }
  out->clear();
  for (size_t i = 0; i < n->list.size(); ++i) {
    const ConfigNode& e = n->list[i];
    if (e.kind != ConfigNode::Kind::kInt) {
      return ConfigError(e, ChildPath(key) + "[" + std::to_string(i) + "]",
                         "expected an integer, got " + std::string(e.KindName()));
    }
    out->push_back(e.int_value);
  }
  return Status::Ok();
}

Status ObjectReader::Finish() const {
  if (unknown_ == UnknownKeys::kAllow || node_.kind != ConfigNode::Kind::kMap) return Status::Ok();
  for (const auto& [k, v] : node_.map) {
    if (!seen_.contains(k)) {
      std::string known;
      for (const auto& s : seen_) known += (known.empty() ? "" : ", ") + s;
      return ConfigError(v, ChildPath(k), "unknown key (known keys: " + known + ")");
    }
  }
  return Status::Ok();
}

}  // namespace omni

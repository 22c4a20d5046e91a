// Typed configuration, parsed once at the edge.
//
// YAML and JSON documents are parsed into a ConfigNode tree that remembers
// where each value came from (file, line, column). Config structs then read
// themselves through an ObjectReader, which checks types and values and
// reports errors that name the field path and the position:
//
//   pools.yaml:7:15: pools[1].endpoints[0]: expected a string, got a map
//
// After reading, ObjectReader::Finish() rejects keys nobody asked for (unless
// the reader was told to allow them, as for Hugging Face config.json files,
// which carry many keys a loader does not use). CLI flags bind straight to
// struct fields with CLI11 and then go through the same Validate().
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace omni {

struct ConfigEntry;

struct ConfigNode {
  enum class Kind { kNull, kBool, kInt, kDouble, kString, kList, kMap };

  Kind kind = Kind::kNull;
  bool bool_value = false;
  int64_t int_value = 0;
  double double_value = 0;
  std::string string_value;  // for YAML scalars: the scalar's text, whatever its kind
  std::vector<ConfigNode> list;
  std::vector<ConfigEntry> map;  // in document order
  std::string source;  // file name or "<json>"
  int line = 0;        // 1-based; 0 when unknown
  int column = 0;

  const ConfigNode* Find(std::string_view key) const;
  std::string_view KindName() const;
  // "file:line:col" or "file".
  std::string Position() const;
};

// One key of a map node. A struct rather than std::pair because ConfigNode is
// still incomplete where the vector is declared (pair needs a complete type).
struct ConfigEntry {
  std::string key;
  ConfigNode value;
};

StatusOr<ConfigNode> ParseYaml(std::string_view text, std::string_view source_name);
StatusOr<ConfigNode> ParseJson(std::string_view text, std::string_view source_name);
// A whole file's bytes; NotFound naming the file when it cannot be opened.
StatusOr<std::string> ReadTextFile(const std::string& path);
// Reads a file and parses it as YAML (which also accepts JSON documents).
StatusOr<ConfigNode> LoadConfigFile(const std::string& path);

// Reads the fields of one map node into typed values. Every Get* records the
// key as known; a missing optional key leaves *out untouched, so defaults are
// whatever the struct was initialised with.
class ObjectReader {
 public:
  enum class UnknownKeys { kReject, kAllow };

  ObjectReader(const ConfigNode& node, std::string path, UnknownKeys unknown = UnknownKeys::kReject);

  // Fails unless the node is a map.
  Status CheckIsMap() const;
  bool Has(std::string_view key) const;

  Status GetString(std::string_view key, std::string* out, bool required = false);
  Status GetInt(std::string_view key, int64_t* out, bool required = false);
  Status GetInt(std::string_view key, int* out, bool required = false);
  Status GetDouble(std::string_view key, double* out, bool required = false);
  Status GetBool(std::string_view key, bool* out, bool required = false);
  Status GetStringList(std::string_view key, std::vector<std::string>* out, bool required = false);
  Status GetIntList(std::string_view key, std::vector<int64_t>* out, bool required = false);
  // The raw node for nested structs and lists; nullptr if absent.
  const ConfigNode* GetNode(std::string_view key);

  // An error about `key` with its path and position.
  Status Error(std::string_view key, std::string_view message) const;
  // Error(key, message) unless `ok`.
  Status Require(bool ok, std::string_view key, std::string_view message) const;
  // Rejects keys that were never read, naming the first one.
  Status Finish() const;

  const std::string& path() const { return path_; }
  std::string ChildPath(std::string_view key) const;

 private:
  const ConfigNode* Lookup(std::string_view key, bool required, Status* status);

  const ConfigNode& node_;
  std::string path_;
  UnknownKeys unknown_;
  std::set<std::string, std::less<>> seen_;
};

// An error about a node (for list elements): "file:1:2: path: message".
Status ConfigError(const ConfigNode& node, std::string_view path, std::string_view message);

}  // namespace omni

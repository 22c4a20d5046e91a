#include "engine/kv_event_decoder.h"

#include <limits>
#include <utility>

#include "core/ascii.h"
#include "fmt/format.h"

namespace omni {
namespace {

Status TypeError(std::string_view path, std::string_view expected, const MsgpackValue& got) {
  return InvalidArgument(fmt::format("kv event {}: expected {}, got {}", path, expected, got.TypeName()));
}

// The fields of a msgspec struct, whichever form it came in: an array (field
// i is element i + first, where first is 1 after an event's tag, 0 for the
// untagged EventBatch) or a map keyed by field name. `event` must be one.
class StructFields {
 public:
  StructFields(const MsgpackValue& event, std::string path, size_t first = 1)
      : event_(event), path_(std::move(path)), first_(first) {}

  const std::string& path() const { return path_; }
  std::string FieldPath(std::string_view name) const { return fmt::format("{}.{}", path_, name); }

  // The field, or nullptr when absent (past the end of the array, or no such
  // key). A key that appears twice is an error: which one a server meant is
  // ambiguous.
  StatusOr<const MsgpackValue*> Get(size_t index, std::string_view name) const {
    if (const MsgpackArray* arr = event_.array()) {
      return index + first_ < arr->size() ? &(*arr)[index + first_] : nullptr;
    }
    const MsgpackValue* found = nullptr;
    for (const auto& [key, value] : *event_.map()) {
      const std::string* k = key.str();
      if (k == nullptr || *k != name) continue;
      if (found != nullptr) return InvalidArgument(fmt::format("kv event {}: duplicate key", FieldPath(name)));
      found = &value;
    }
    return found;
  }

  StatusOr<const MsgpackValue*> Required(size_t index, std::string_view name) const {
    OMNI_ASSIGN_OR_RETURN(const MsgpackValue* v, Get(index, name));
    if (v == nullptr) return InvalidArgument(fmt::format("kv event {}: missing", FieldPath(name)));
    return v;
  }

 private:
  const MsgpackValue& event_;
  std::string path_;
  size_t first_;
};

StatusOr<WireBlockHash> ParseHash(const MsgpackValue& v, std::string_view path) {
  WireBlockHash hash;
  if (std::optional<uint64_t> u = v.AsUint64()) {
    hash.key = *u;
  } else if (std::optional<int64_t> i = v.AsInt64()) {
    hash.key = static_cast<uint64_t>(*i);  // Python hash() values are signed 64-bit
  } else if (const MsgpackBin* bin = v.bin()) {
    hash.bytes = bin->bytes;
    // int.from_bytes(b, "big") & (2**64 - 1): the last 8 bytes, big-endian.
    const size_t n = hash.bytes.size();
    for (size_t i = n > 8 ? n - 8 : 0; i < n; ++i) {
      hash.key = (hash.key << 8) | static_cast<uint8_t>(hash.bytes[i]);
    }
  } else {
    return TypeError(path, "int or bin block hash", v);
  }
  return hash;
}

StatusOr<std::vector<WireBlockHash>> ParseHashList(const MsgpackValue& v, std::string_view path) {
  const MsgpackArray* arr = v.array();
  if (arr == nullptr) return TypeError(path, "array of block hashes", v);
  std::vector<WireBlockHash> hashes;
  hashes.reserve(arr->size());
  for (size_t i = 0; i < arr->size(); ++i) {
    OMNI_ASSIGN_OR_RETURN(WireBlockHash h, ParseHash((*arr)[i], fmt::format("{}[{}]", path, i)));
    hashes.push_back(std::move(h));
  }
  return hashes;
}

StatusOr<std::vector<int32_t>> ParseTokenIds(const MsgpackValue& v, std::string_view path) {
  const MsgpackArray* arr = v.array();
  if (arr == nullptr) return TypeError(path, "array of token ids", v);
  std::vector<int32_t> ids;
  ids.reserve(arr->size());
  for (size_t i = 0; i < arr->size(); ++i) {
    std::optional<int64_t> id = (*arr)[i].AsInt64();
    if (!id) return TypeError(fmt::format("{}[{}]", path, i), "int token id", (*arr)[i]);
    if (*id < std::numeric_limits<int32_t>::min() || *id > std::numeric_limits<int32_t>::max()) {
      return InvalidArgument(fmt::format("kv event {}[{}]: token id {} is outside int32", path, i, *id));
    }
    ids.push_back(static_cast<int32_t>(*id));
  }
  return ids;
}

// nil and absent both read as nullopt.
StatusOr<std::optional<int64_t>> ParseOptionalInt(const MsgpackValue* v, std::string_view path) {
  if (v == nullptr || v->is_nil()) return std::optional<int64_t>();
  std::optional<int64_t> i = v->AsInt64();
  if (!i) return TypeError(path, "int or nil", *v);
  return std::optional<int64_t>(*i);
}

StatusOr<std::optional<std::string>> ParseOptionalStr(const MsgpackValue* v, std::string_view path) {
  if (v == nullptr || v->is_nil()) return std::optional<std::string>();
  if (const std::string* s = v->str()) return std::optional<std::string>(*s);
  return TypeError(path, "str or nil", *v);
}

StatusOr<std::string> ParseExtraKey(const MsgpackValue& v, std::string_view path) {
  if (const std::string* s = v.str()) return *s;
  if (const MsgpackBin* bin = v.bin()) return HexLower(bin->bytes);
  if (std::optional<int64_t> i = v.AsInt64()) return std::to_string(*i);
  if (std::optional<uint64_t> u = v.AsUint64()) return std::to_string(*u);
  return TypeError(path, "str, bin or int extra key", v);
}

// vLLM: list[tuple[Any, ...] | None] | None.
StatusOr<std::vector<std::vector<std::string>>> ParseExtraKeys(const MsgpackValue* v, std::string_view path) {
  std::vector<std::vector<std::string>> out;
  if (v == nullptr || v->is_nil()) return out;
  const MsgpackArray* blocks = v->array();
  if (blocks == nullptr) return TypeError(path, "array of per-block extra keys or nil", *v);
  out.resize(blocks->size());
  for (size_t b = 0; b < blocks->size(); ++b) {
    const MsgpackValue& entry = (*blocks)[b];
    if (entry.is_nil()) continue;
    const MsgpackArray* keys = entry.array();
    const std::string entry_path = fmt::format("{}[{}]", path, b);
    if (keys == nullptr) return TypeError(entry_path, "array of extra keys or nil", entry);
    for (size_t k = 0; k < keys->size(); ++k) {
      OMNI_ASSIGN_OR_RETURN(std::string key, ParseExtraKey((*keys)[k], fmt::format("{}[{}]", entry_path, k)));
      out[b].push_back(std::move(key));
    }
  }
  return out;
}

// BlockStored fields, in vLLM's declaration order: block_hashes,
// parent_block_hash, token_ids, block_size, lora_id, medium, lora_name,
// extra_keys (then group_idx and later ones, which the index does not need).
StatusOr<WireBlockStored> ParseBlockStored(const StructFields& f) {
  WireBlockStored e;
  OMNI_ASSIGN_OR_RETURN(const MsgpackValue* hashes, f.Required(0, "block_hashes"));
  OMNI_ASSIGN_OR_RETURN(e.block_hashes, ParseHashList(*hashes, f.FieldPath("block_hashes")));
  // parent_block_hash has no default in vLLM, but a map may leave a nil out.
  OMNI_ASSIGN_OR_RETURN(const MsgpackValue* parent, f.Get(1, "parent_block_hash"));
  if (parent != nullptr && !parent->is_nil()) {
    OMNI_ASSIGN_OR_RETURN(e.parent_block_hash, ParseHash(*parent, f.FieldPath("parent_block_hash")));
  }
  OMNI_ASSIGN_OR_RETURN(const MsgpackValue* tokens, f.Required(2, "token_ids"));
  OMNI_ASSIGN_OR_RETURN(e.token_ids, ParseTokenIds(*tokens, f.FieldPath("token_ids")));
  OMNI_ASSIGN_OR_RETURN(const MsgpackValue* block_size, f.Required(3, "block_size"));
  std::optional<int64_t> bs = block_size->AsInt64();
  if (!bs) return TypeError(f.FieldPath("block_size"), "int", *block_size);
  if (*bs <= 0) return InvalidArgument(fmt::format("kv event {}: {} is not positive", f.FieldPath("block_size"), *bs));
  e.block_size = *bs;
  OMNI_ASSIGN_OR_RETURN(const MsgpackValue* lora_id, f.Get(4, "lora_id"));
  OMNI_ASSIGN_OR_RETURN(e.lora_id, ParseOptionalInt(lora_id, f.FieldPath("lora_id")));
  OMNI_ASSIGN_OR_RETURN(const MsgpackValue* medium, f.Get(5, "medium"));
  OMNI_ASSIGN_OR_RETURN(e.medium, ParseOptionalStr(medium, f.FieldPath("medium")));
  OMNI_ASSIGN_OR_RETURN(const MsgpackValue* lora_name, f.Get(6, "lora_name"));
  OMNI_ASSIGN_OR_RETURN(e.lora_name, ParseOptionalStr(lora_name, f.FieldPath("lora_name")));
  OMNI_ASSIGN_OR_RETURN(const MsgpackValue* extra_keys, f.Get(7, "extra_keys"));
  OMNI_ASSIGN_OR_RETURN(e.extra_keys, ParseExtraKeys(extra_keys, f.FieldPath("extra_keys")));
  return e;
}

// BlockRemoved fields: block_hashes, medium.
StatusOr<WireBlockRemoved> ParseBlockRemoved(const StructFields& f) {
  WireBlockRemoved e;
  OMNI_ASSIGN_OR_RETURN(const MsgpackValue* hashes, f.Required(0, "block_hashes"));
  OMNI_ASSIGN_OR_RETURN(e.block_hashes, ParseHashList(*hashes, f.FieldPath("block_hashes")));
  OMNI_ASSIGN_OR_RETURN(const MsgpackValue* medium, f.Get(1, "medium"));
  OMNI_ASSIGN_OR_RETURN(e.medium, ParseOptionalStr(medium, f.FieldPath("medium")));
  return e;
}

// Appends the event to batch.events, or counts it as skipped if its tag is unknown.
Status ParseEvent(const MsgpackValue& v, size_t index, KvEventBatch& batch) {
  const std::string where = fmt::format("events[{}]", index);
  const MsgpackValue* tag = nullptr;
  if (const MsgpackArray* arr = v.array()) {
    if (arr->empty()) return InvalidArgument(fmt::format("kv event {}: empty array, no type tag", where));
    tag = &arr->front();
  } else if (v.map() != nullptr) {
    OMNI_ASSIGN_OR_RETURN(tag, StructFields(v, where).Required(0, "type"));
  } else {
    return TypeError(where, "tagged array or map", v);
  }
  const std::string* type = tag->str();
  if (type == nullptr) return TypeError(where + " type tag", "str", *tag);
  StructFields fields(v, fmt::format("{} ({})", where, *type));
  if (*type == "BlockStored") {
    OMNI_ASSIGN_OR_RETURN(WireBlockStored e, ParseBlockStored(fields));
    batch.events.emplace_back(std::move(e));
  } else if (*type == "BlockRemoved") {
    OMNI_ASSIGN_OR_RETURN(WireBlockRemoved e, ParseBlockRemoved(fields));
    batch.events.emplace_back(std::move(e));
  } else if (*type == "AllBlocksCleared") {
    batch.events.emplace_back(WireAllBlocksCleared{});
  } else {
    ++batch.skipped_unknown_events;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<KvEventBatch> DecodeKvEventBatch(std::string_view payload, const MsgpackLimits& limits) {
  StatusOr<MsgpackValue> root = DecodeMsgpack(payload, limits);
  if (!root.ok()) return std::move(root).status().Annotate("kv event batch");
  if (root->array() == nullptr && root->map() == nullptr) return TypeError("batch", "array or map", *root);
  // EventBatch fields: ts, events, data_parallel_rank. The rank defaults to
  // None, so msgspec's omit_defaults may leave it out.
  StructFields fields(*root, "batch", /*first=*/0);
  KvEventBatch batch;
  OMNI_ASSIGN_OR_RETURN(const MsgpackValue* ts, fields.Required(0, "ts"));
  std::optional<double> timestamp = ts->AsDouble();
  if (!timestamp) return TypeError(fields.FieldPath("ts"), "float", *ts);
  batch.timestamp = *timestamp;
  OMNI_ASSIGN_OR_RETURN(const MsgpackValue* events, fields.Required(1, "events"));
  const MsgpackArray* list = events->array();
  if (list == nullptr) return TypeError(fields.FieldPath("events"), "array", *events);
  OMNI_ASSIGN_OR_RETURN(const MsgpackValue* rank, fields.Get(2, "data_parallel_rank"));
  OMNI_ASSIGN_OR_RETURN(batch.data_parallel_rank,
                        ParseOptionalInt(rank, fields.FieldPath("data_parallel_rank")));
  batch.events.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) OMNI_RETURN_IF_ERROR(ParseEvent((*list)[i], i, batch));
  return batch;
}

StatusOr<KvEventMessage> DecodeKvEventMessage(std::span<const std::string_view> frames,
                                              const MsgpackLimits& limits) {
  if (frames.size() != 3) {
    return InvalidArgument(
        fmt::format("kv event message: expected 3 frames (topic, seq, payload), got {}", frames.size()));
  }
  if (frames[1].size() != 8) {
    return InvalidArgument(
        fmt::format("kv event message: sequence frame is {} bytes, expected 8 (uint64 big-endian)", frames[1].size()));
  }
  KvEventMessage msg;
  msg.topic = std::string(frames[0]);
  for (char c : frames[1]) msg.seq = (msg.seq << 8) | static_cast<uint8_t>(c);
  OMNI_ASSIGN_OR_RETURN(msg.batch, DecodeKvEventBatch(frames[2], limits));
  return msg;
}

}  // namespace omni

// Reads Hugging Face tokenizer.json into a TokenizerSpec. Follows the
// serialization of the `tokenizers` library (tokenizers/src/*/serialization);
// unknown keys are allowed (files carry version, truncation, padding, ...),
// unknown component types are rejected.
#include <limits>

#include "core/config.h"
#include "text/tokenizer.h"

namespace omni {
namespace {

// Ids index dense tables; a file claiming id 2^31 must not make us allocate it.
constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;

Status Unsupported(const ConfigNode& node, const std::string& path, std::string_view what) {
  return Status(StatusCode::kUnimplemented,
                ConfigError(node, path, "unsupported " + std::string(what)).message());
}

StatusOr<std::string> TypeOf(ObjectReader& r) {
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  std::string type;
  OMNI_RETURN_IF_ERROR(r.GetString("type", &type, /*required=*/true));
  return type;
}

Status ReadNormalizer(const ConfigNode& node, const std::string& path) {
  if (node.kind == ConfigNode::Kind::kNull) return Status::Ok();
  ObjectReader r(node, path, ObjectReader::UnknownKeys::kAllow);
  OMNI_ASSIGN_OR_RETURN(std::string type, TypeOf(r));
  if (type == "Sequence") {
    const ConfigNode* list = r.GetNode("normalizers");
    if (list == nullptr || list->kind != ConfigNode::Kind::kList) {
      return r.Error("normalizers", "expected a list");
    }
    for (size_t i = 0; i < list->list.size(); ++i) {
      OMNI_RETURN_IF_ERROR(ReadNormalizer(list->list[i], r.ChildPath("normalizers") + "[" + std::to_string(i) + "]"));
    }
    return Status::Ok();
  }
  return Unsupported(node, path, "normalizer type '" + type +
                            "' (only null is supported: Unicode normalization tables are not built in)");
}

Status ReadPreTokenizer(const ConfigNode& node, const std::string& path, PreTokenizer* out) {
  if (node.kind == ConfigNode::Kind::kNull) return Status::Ok();
  ObjectReader r(node, path, ObjectReader::UnknownKeys::kAllow);
  OMNI_ASSIGN_OR_RETURN(std::string type, TypeOf(r));
  if (type == "Sequence") {
    const ConfigNode* list = r.GetNode("pretokenizers");
    if (list == nullptr || list->kind != ConfigNode::Kind::kList) {
      return r.Error("pretokenizers", "expected a list");
    }
    for (size_t i = 0; i < list->list.size(); ++i) {
      OMNI_RETURN_IF_ERROR(ReadPreTokenizer(
          list->list[i], r.ChildPath("pretokenizers") + "[" + std::to_string(i) + "]", out));
    }
    return Status::Ok();
  }
  if (type == "ByteLevel") {
    ByteLevelStep step;
    bool use_regex = true;
    OMNI_RETURN_IF_ERROR(r.GetBool("add_prefix_space", &step.add_prefix_space));
    OMNI_RETURN_IF_ERROR(r.GetBool("use_regex", &use_regex));
    if (use_regex) {
      OMNI_ASSIGN_OR_RETURN(auto pattern, Pcre2Pattern::Compile(kGpt2Pattern, false));
      step.gpt2_pattern = std::move(pattern);
    }
    out->AddByteLevel(std::move(step));
    return Status::Ok();
  }
  if (type == "Split") {
    SplitStep step;
    const ConfigNode* pattern = r.GetNode("pattern");
    if (pattern == nullptr) return r.Error("pattern", "missing");
    ObjectReader pr(*pattern, r.ChildPath("pattern"));
    OMNI_RETURN_IF_ERROR(pr.CheckIsMap());
    std::string text;
    bool literal = pr.Has("String");
    if (literal == pr.Has("Regex")) return pr.Error("Regex", "expected exactly one of Regex and String");
    OMNI_RETURN_IF_ERROR(pr.GetString(literal ? "String" : "Regex", &text, true));
    OMNI_RETURN_IF_ERROR(pr.Finish());
    auto compiled = Pcre2Pattern::Compile(text, literal);
    if (!compiled.ok()) return r.Error("pattern", compiled.status().message());
    step.pattern = std::move(compiled).value();
    std::string behavior;
    OMNI_RETURN_IF_ERROR(r.GetString("behavior", &behavior, true));
    if (behavior == "Removed") step.behavior = SplitBehavior::kRemoved;
    else if (behavior == "Isolated") step.behavior = SplitBehavior::kIsolated;
    else if (behavior == "MergedWithPrevious") step.behavior = SplitBehavior::kMergedWithPrevious;
    else if (behavior == "MergedWithNext") step.behavior = SplitBehavior::kMergedWithNext;
    else if (behavior == "Contiguous") step.behavior = SplitBehavior::kContiguous;
    else return r.Error("behavior", "unknown split behavior '" + behavior + "'");
    OMNI_RETURN_IF_ERROR(r.GetBool("invert", &step.invert));
    out->AddSplit(std::move(step));
    return Status::Ok();
  }
  return Unsupported(node, path, "pre_tokenizer type '" + type + "'");
}

Status ReadDecoder(const ConfigNode& node, const std::string& path) {
  // A null decoder is taken as ByteLevel: the vocabulary is byte-level anyway.
  if (node.kind == ConfigNode::Kind::kNull) return Status::Ok();
  ObjectReader r(node, path, ObjectReader::UnknownKeys::kAllow);
  OMNI_ASSIGN_OR_RETURN(std::string type, TypeOf(r));
  if (type == "ByteLevel") return Status::Ok();
  if (type == "Sequence") {
    const ConfigNode* list = r.GetNode("decoders");
    if (list == nullptr || list->kind != ConfigNode::Kind::kList) return r.Error("decoders", "expected a list");
    for (size_t i = 0; i < list->list.size(); ++i) {
      OMNI_RETURN_IF_ERROR(ReadDecoder(list->list[i], r.ChildPath("decoders") + "[" + std::to_string(i) + "]"));
    }
    return Status::Ok();
  }
  return Unsupported(node, path, "decoder type '" + type + "' (only ByteLevel)");
}

Status ReadMerges(const ConfigNode& list, const std::string& path, BpeModelSpec* out) {
  if (list.kind != ConfigNode::Kind::kList) return ConfigError(list, path, "expected a list");
  out->merges.reserve(list.list.size());
  for (size_t i = 0; i < list.list.size(); ++i) {
    const ConfigNode& m = list.list[i];
    std::string where = path + "[" + std::to_string(i) + "]";
    if (m.kind == ConfigNode::Kind::kString) {
      size_t space = m.string_value.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == m.string_value.size() ||
          m.string_value.find(' ', space + 1) != std::string::npos) {
        return ConfigError(m, where, "a merge string must be two tokens separated by one space");
      }
      out->merges.emplace_back(m.string_value.substr(0, space), m.string_value.substr(space + 1));
    } else if (m.kind == ConfigNode::Kind::kList && m.list.size() == 2 &&
               m.list[0].kind == ConfigNode::Kind::kString && m.list[1].kind == ConfigNode::Kind::kString) {
      out->merges.emplace_back(m.list[0].string_value, m.list[1].string_value);
    } else {
      return ConfigError(m, where, "a merge must be \"a b\" or [\"a\", \"b\"]");
    }
  }
  return Status::Ok();
}

Status ReadModel(const ConfigNode& node, const std::string& path, BpeModelSpec* out) {
  ObjectReader r(node, path, ObjectReader::UnknownKeys::kAllow);
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  std::string type = "BPE";
  OMNI_RETURN_IF_ERROR(r.GetString("type", &type));
  if (type != "BPE") return Unsupported(node, path, "model type '" + type + "' (only BPE)");
  bool byte_fallback = false;
  OMNI_RETURN_IF_ERROR(r.GetBool("byte_fallback", &byte_fallback));
  if (byte_fallback) return Unsupported(node, path, "byte_fallback (a byte-level vocab needs none)");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const ConfigNode* n = r.GetNode(key);
    if (n != nullptr && !(n->kind == ConfigNode::Kind::kNull ||
                          (n->kind == ConfigNode::Kind::kString && n->string_value.empty()))) {
      return Unsupported(node, path, key);
    }
  }
  const ConfigNode* dropout = r.GetNode("dropout");
  if (dropout != nullptr && dropout->kind != ConfigNode::Kind::kNull &&
      !(dropout->kind == ConfigNode::Kind::kDouble && dropout->double_value == 0) &&
      !(dropout->kind == ConfigNode::Kind::kInt && dropout->int_value == 0)) {
    return Unsupported(node, path, "BPE dropout");
  }
  OMNI_RETURN_IF_ERROR(r.GetBool("ignore_merges", &out->ignore_merges));
  const ConfigNode* vocab = r.GetNode("vocab");
  if (vocab == nullptr || vocab->kind != ConfigNode::Kind::kMap) return r.Error("vocab", "expected a map");
  out->vocab.reserve(vocab->map.size());
  for (const ConfigEntry& e : vocab->map) {
    if (e.value.kind != ConfigNode::Kind::kInt || e.value.int_value < 0 || e.value.int_value > kMaxTokenId) {
      return ConfigError(e.value, r.ChildPath("vocab") + "." + e.key,
                         "expected a token id in [0, " + std::to_string(kMaxTokenId) + "]");
    }
    out->vocab.emplace_back(e.key, static_cast<int32_t>(e.value.int_value));
  }
  const ConfigNode* merges = r.GetNode("merges");
  if (merges == nullptr) return r.Error("merges", "missing");
  return ReadMerges(*merges, r.ChildPath("merges"), out);
}

Status ReadAddedTokens(const ConfigNode& list, const std::string& path, std::vector<AddedTokenSpec>* out) {
  if (list.kind == ConfigNode::Kind::kNull) return Status::Ok();
  if (list.kind != ConfigNode::Kind::kList) return ConfigError(list, path, "expected a list");
  out->reserve(list.list.size());
  for (size_t i = 0; i < list.list.size(); ++i) {
    ObjectReader r(list.list[i], path + "[" + std::to_string(i) + "]", ObjectReader::UnknownKeys::kAllow);
    OMNI_RETURN_IF_ERROR(r.CheckIsMap());
    AddedTokenSpec t;
    int64_t id = -1;
    OMNI_RETURN_IF_ERROR(r.GetInt("id", &id, true));
    if (id < 0 || id > kMaxTokenId) return r.Error("id", "token id out of range");
    t.id = static_cast<int32_t>(id);
    OMNI_RETURN_IF_ERROR(r.GetString("content", &t.content, true));
    if (t.content.empty()) return r.Error("content", "empty added token");
    OMNI_RETURN_IF_ERROR(r.GetBool("special", &t.special));
    OMNI_RETURN_IF_ERROR(r.GetBool("lstrip", &t.lstrip));
    OMNI_RETURN_IF_ERROR(r.GetBool("rstrip", &t.rstrip));
    // Hugging Face defaults `normalized` to !special.
    t.normalized = !t.special;
    OMNI_RETURN_IF_ERROR(r.GetBool("normalized", &t.normalized));
    out->push_back(std::move(t));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<TokenizerSpec> ParseTokenizerJson(std::string_view json, std::string_view source_name) {
  OMNI_ASSIGN_OR_RETURN(ConfigNode root, ParseJson(json, source_name));
  ObjectReader r(root, "", ObjectReader::UnknownKeys::kAllow);
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  TokenizerSpec spec;
  const ConfigNode* model = r.GetNode("model");
  if (model == nullptr) return r.Error("model", "missing");
  OMNI_RETURN_IF_ERROR(ReadModel(*model, r.ChildPath("model"), &spec.model));
  if (const ConfigNode* n = r.GetNode("normalizer")) {
    OMNI_RETURN_IF_ERROR(ReadNormalizer(*n, r.ChildPath("normalizer")));
  }
  if (const ConfigNode* n = r.GetNode("pre_tokenizer")) {
    OMNI_RETURN_IF_ERROR(ReadPreTokenizer(*n, r.ChildPath("pre_tokenizer"), &spec.pre_tokenizer));
  }
  if (const ConfigNode* n = r.GetNode("decoder")) {
    OMNI_RETURN_IF_ERROR(ReadDecoder(*n, r.ChildPath("decoder")));
  }
  if (const ConfigNode* n = r.GetNode("added_tokens")) {
    OMNI_RETURN_IF_ERROR(ReadAddedTokens(*n, r.ChildPath("added_tokens"), &spec.added_tokens));
  }
  return spec;
}

}  // namespace omni

#include "text/tokenizer.h"

#include <fstream>
#include <sstream>

#include "text/byte_level.h"
#include "core/utf8.h"

namespace omni {

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromSpec(TokenizerSpec spec) {
  std::unique_ptr<Tokenizer> tok(new Tokenizer());
  OMNI_ASSIGN_OR_RETURN(tok->bpe_, BpeModel::Build(spec.model));
  tok->pre_tokenizer_ = std::move(spec.pre_tokenizer);

  int32_t size = 0;
  for (const auto& [token, id] : spec.model.vocab) size = std::max(size, id + 1);
  for (const AddedTokenSpec& t : spec.added_tokens) size = std::max(size, t.id + 1);
  tok->id_to_token_.resize(size);
  tok->token_bytes_.resize(size);
  tok->assigned_.assign(size, 0);
  tok->special_.assign(size, 0);
  tok->added_.assign(size, 0);
  tok->token_to_id_.reserve(spec.model.vocab.size() + spec.added_tokens.size());
  auto assign = [&](const std::string& token, int32_t id) -> Status {
    if (tok->assigned_[id] && tok->id_to_token_[id] != token) {
      return InvalidArgument("token id " + std::to_string(id) + " is given to both '" +
                             tok->id_to_token_[id] + "' and '" + token + "'");
    }
    tok->assigned_[id] = 1;
    tok->id_to_token_[id] = token;
    tok->token_bytes_[id] = ByteLevelToBytes(token);
    tok->token_to_id_[token] = id;
    return Status::Ok();
  };
  for (const auto& [token, id] : spec.model.vocab) OMNI_RETURN_IF_ERROR(assign(token, id));
  for (const AddedTokenSpec& t : spec.added_tokens) {
    OMNI_RETURN_IF_ERROR(assign(t.content, t.id));
    tok->special_[t.id] = t.special ? 1 : 0;
    tok->added_[t.id] = 1;
    AddedTokenMatcher::Entry entry{t.content, t.id, t.lstrip, t.rstrip};
    (t.normalized ? tok->normalized_all_ : tok->raw_all_).Add(entry);
    if (!t.special) (t.normalized ? tok->normalized_plain_ : tok->raw_plain_).Add(entry);
  }
  return tok;
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(std::string_view json, std::string_view source_name) {
  OMNI_ASSIGN_OR_RETURN(TokenizerSpec spec, ParseTokenizerJson(json, source_name));
  return FromSpec(std::move(spec));
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open tokenizer file " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return FromJson(ss.str(), path);
}

StatusOr<std::vector<int32_t>> Tokenizer::Encode(std::string_view text, const EncodeOptions& options) const {
  if (!IsValidUtf8(text)) return InvalidArgument("text to tokenize is not valid UTF-8");
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (options.parse_special_tokens) {
    OMNI_RETURN_IF_ERROR(EncodeSegment(text, raw_all_, normalized_all_, &ids));
  } else {
    OMNI_RETURN_IF_ERROR(EncodeSegment(text, raw_plain_, normalized_plain_, &ids));
  }
  return ids;
}

Status Tokenizer::EncodeSegment(std::string_view text, const AddedTokenMatcher& raw,
                                const AddedTokenMatcher& normalized, std::vector<int32_t>* ids) const {
  // Gaps between raw matches are searched again for normalized added tokens.
  auto encode_gap = [&](std::string_view gap) -> Status {
    size_t pos = 0;
    for (const AddedTokenMatch& m : normalized.FindAll(gap)) {
      OMNI_RETURN_IF_ERROR(EncodePlain(gap.substr(pos, m.begin - pos), ids));
      ids->push_back(m.id);
      pos = m.end;
    }
    return EncodePlain(gap.substr(pos), ids);
  };
  size_t pos = 0;
  for (const AddedTokenMatch& m : raw.FindAll(text)) {
    OMNI_RETURN_IF_ERROR(encode_gap(text.substr(pos, m.begin - pos)));
    ids->push_back(m.id);
    pos = m.end;
  }
  return encode_gap(text.substr(pos));
}

Status Tokenizer::EncodePlain(std::string_view text, std::vector<int32_t>* ids) const {
  if (text.empty()) return Status::Ok();
  if (pre_tokenizer_.empty()) {
    bpe_->EncodePiece(text, ids);
    return Status::Ok();
  }
  OMNI_ASSIGN_OR_RETURN(std::vector<std::string> pieces, pre_tokenizer_.Split(text));
  for (const std::string& piece : pieces) bpe_->EncodePiece(piece, ids);
  return Status::Ok();
}

StatusOr<std::string> Tokenizer::Decode(std::span<const int32_t> ids, const DecodeOptions& options) const {
  std::string bytes;
  for (int32_t id : ids) {
    std::optional<std::string_view> b = TokenBytes(id);
    if (!b) return InvalidArgument("token id " + std::to_string(id) + " is not in the vocabulary");
    if (options.Skips(id, special_[id] != 0)) continue;
    bytes.append(*b);
  }
  std::string text;
  AppendUtf8Lossy(bytes, /*final=*/true, &text);
  return text;
}

std::optional<int32_t> Tokenizer::TokenToId(std::string_view token) const {
  auto it = token_to_id_.find(std::string(token));
  if (it == token_to_id_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string_view> Tokenizer::IdToToken(int32_t id) const {
  if (id < 0 || id >= vocab_size() || !assigned_[id]) return std::nullopt;
  return id_to_token_[id];
}

std::optional<std::string_view> Tokenizer::TokenBytes(int32_t id) const {
  if (id < 0 || id >= vocab_size() || !assigned_[id]) return std::nullopt;
  return token_bytes_[id];
}

bool Tokenizer::IsSpecial(int32_t id) const { return id >= 0 && id < vocab_size() && special_[id]; }
bool Tokenizer::IsAdded(int32_t id) const { return id >= 0 && id < vocab_size() && added_[id]; }

}  // namespace omni

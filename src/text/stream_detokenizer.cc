#include "text/stream_detokenizer.h"

#include "core/utf8.h"

namespace omni {

StatusOr<std::string> StreamDetokenizer::Push(int32_t id) {
  std::optional<std::string_view> bytes = tokenizer_.TokenBytes(id);
  if (!bytes) return InvalidArgument("token id " + std::to_string(id) + " is not in the vocabulary");
  std::string out;
  if (options_.Skips(id, tokenizer_.IsSpecial(id))) return out;
  pending_.append(*bytes);
  size_t consumed = AppendUtf8Lossy(pending_, /*final=*/false, &out);
  pending_.erase(0, consumed);
  return out;
}

std::string StreamDetokenizer::Flush() {
  std::string out;
  AppendUtf8Lossy(pending_, /*final=*/true, &out);
  pending_.clear();
  return out;
}

}  // namespace omni

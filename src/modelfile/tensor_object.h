// Tensor objects: the safetensors files that carry encoder outputs and cached
// embeddings through the object store (DESIGN.md, "Data plane"), so any tool
// in the ecosystem can read them.
//
//   tensor "rows"  [N, D] BF16 or F32   continuous embeddings (optional)
//   tensor "ids"   [N]    I32           discrete token ids (optional)
//   "__metadata__"                      string -> string
//
// Keys are content addressed: emb/<model-id>/<sha256 of the input>.safetensors
// (EmbeddingKey). docs/STORAGE.md has the details.
//
// Thread-safety: free functions; thread-safe as the store is.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "storage/object_store.h"
#include "tensor/tensor.h"

namespace omni {

inline constexpr std::string_view kEmbeddingRowsName = "rows";
inline constexpr std::string_view kEmbeddingIdsName = "ids";

struct EmbeddingObject {
  Tensor rows;  // [N, D] BF16 or F32; undefined (Tensor()) when absent
  Tensor ids;   // [N] I32; undefined when absent
  // Sorted by name after a round trip (safetensors stores a JSON object);
  // names must be unique.
  std::vector<std::pair<std::string, std::string>> metadata;
};

// The object as safetensors bytes (the reference writer's layout, so the
// output is deterministic). InvalidArgument for a wrong dtype or rank, or a
// duplicate metadata name.
StatusOr<std::string> SerializeEmbeddingObject(const EmbeddingObject& object);
// Parses and validates `bytes`, taking ownership: the returned tensors are
// views into that buffer (no copy) and keep it alive. InvalidArgument for a
// malformed file, an unknown tensor name, or a wrong dtype or rank.
StatusOr<EmbeddingObject> ParseEmbeddingObject(std::string bytes);

Status PutEmbeddingObject(ObjectStore& store, std::string_view key, const EmbeddingObject& object);
StatusOr<EmbeddingObject> GetEmbeddingObject(ObjectStore& store, std::string_view key);

// "emb/<model-id>/<sha256_hex>.safetensors". The model id keeps HF Hub
// spelling ([A-Za-z0-9._-] and '/'), with each '/' written as "--" as in the
// Hugging Face cache ("org/name" -> "org--name"), so a model is always one
// key segment. Ids containing "--" or "..", starting or ending with '-', '.'
// or '/', or longer than kMaxModelIdBytes are InvalidArgument (the Hub
// forbids them too), which keeps the mapping one-to-one and every key well
// under the 1024-byte key limit. `sha256_hex` must be 64 lower-case hex digits.
inline constexpr size_t kMaxModelIdBytes = 256;
StatusOr<std::string> EmbeddingKey(std::string_view model_id, std::string_view sha256_hex);

// "gen/<model-id>/<sha256_hex>.<extension>": a decoder's output (an image,
// a clip), content-addressed by its own bytes, the model id spelled as in
// EmbeddingKey; `extension` is lower-case letters and digits ("png").
StatusOr<std::string> GeneratedMediaKey(std::string_view model_id, std::string_view sha256_hex,
                                        std::string_view extension);

}  // namespace omni

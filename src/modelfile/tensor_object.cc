#include "modelfile/tensor_object.h"

#include <set>

#include <fmt/core.h>

#include "modelfile/safetensors.h"
#include "storage/content_hash.h"

namespace omni {
namespace {

Status CheckRows(const Tensor& rows) {
  if (!rows.defined()) return Status::Ok();
  if (rows.rank() != 2 || (rows.dtype() != DType::kBF16 && rows.dtype() != DType::kF32)) {
    return InvalidArgument(fmt::format("embedding rows must be [N, D] BF16 or F32, got {}", rows.DebugString()))
        .WithParam("rows");
  }
  return Status::Ok();
}

Status CheckIds(const Tensor& ids) {
  if (!ids.defined()) return Status::Ok();
  if (ids.rank() != 1 || ids.dtype() != DType::kI32) {
    return InvalidArgument(fmt::format("embedding ids must be [N] I32, got {}", ids.DebugString())).WithParam("ids");
  }
  return Status::Ok();
}

bool IsModelIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-' || c == '/';
}

}  // namespace

StatusOr<std::string> SerializeEmbeddingObject(const EmbeddingObject& object) {
  OMNI_RETURN_IF_ERROR(CheckRows(object.rows));
  OMNI_RETURN_IF_ERROR(CheckIds(object.ids));
  SafetensorsMetadata metadata;
  for (const auto& [name, value] : object.metadata) {
    if (!metadata.emplace(name, value).second) {
      return InvalidArgument(fmt::format("duplicate metadata name '{}'", name)).WithParam("metadata");
    }
  }
  std::vector<NamedTensor> tensors;
  if (object.rows.defined()) tensors.push_back({std::string(kEmbeddingRowsName), object.rows});
  if (object.ids.defined()) tensors.push_back({std::string(kEmbeddingIdsName), object.ids});
  return SerializeSafetensors(tensors, metadata);
}

StatusOr<EmbeddingObject> ParseEmbeddingObject(std::string bytes) {
  OMNI_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::FromBuffer(std::move(bytes), "<embedding object>"));
  EmbeddingObject object;
  for (const SafetensorsTensorInfo& info : file.header().tensors) {
    if (info.name == kEmbeddingRowsName) {
      object.rows = file.View(info);
    } else if (info.name == kEmbeddingIdsName) {
      object.ids = file.View(info);
    } else {
      return InvalidArgument(fmt::format("unexpected tensor '{}' in an embedding object (expected '{}' and '{}')",
                                         info.name, kEmbeddingRowsName, kEmbeddingIdsName));
    }
  }
  OMNI_RETURN_IF_ERROR(CheckRows(object.rows));
  OMNI_RETURN_IF_ERROR(CheckIds(object.ids));
  object.metadata = file.header().metadata;
  return object;
}

Status PutEmbeddingObject(ObjectStore& store, std::string_view key, const EmbeddingObject& object) {
  OMNI_ASSIGN_OR_RETURN(std::string bytes, SerializeEmbeddingObject(object));
  return store.Put(key, bytes);
}

StatusOr<EmbeddingObject> GetEmbeddingObject(ObjectStore& store, std::string_view key) {
  OMNI_ASSIGN_OR_RETURN(std::string bytes, store.Get(key));
  auto object = ParseEmbeddingObject(std::move(bytes));
  if (!object.ok()) return Status(object.status()).Annotate(fmt::format("object '{}'", key));
  return object;
}

namespace {

// "<prefix>/<model segment>/<sha256_hex><suffix>", the model id checked and
// spelled as one key segment (see EmbeddingKey).
StatusOr<std::string> ModelObjectKey(std::string_view prefix, std::string_view model_id, std::string_view sha256_hex,
                                     std::string_view suffix, std::string_view what) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format("invalid model id '{}' for {} key: {}", model_id.substr(0, 64), what, why))
        .WithParam("model");
  };
  if (model_id.empty()) return bad("empty");
  if (model_id.size() > kMaxModelIdBytes) return bad(fmt::format("longer than {} bytes", kMaxModelIdBytes));
  for (char c : model_id) {
    if (!IsModelIdChar(c)) return bad("only [A-Za-z0-9._-] and '/' are allowed");
  }
  if (model_id.find("--") != std::string_view::npos || model_id.find("..") != std::string_view::npos) {
    return bad("contains '--' or '..'");
  }
  // Each '/' becomes "--"; parts that started or ended with '-' would make
  // "---", which could be read two ways.
  std::string segment;
  size_t start = 0;
  while (start <= model_id.size()) {
    size_t end = std::min(model_id.find('/', start), model_id.size());
    std::string_view part = model_id.substr(start, end - start);
    if (part.empty()) return bad("has an empty part between slashes");
    if (part.front() == '-' || part.back() == '-' || part.front() == '.' || part.back() == '.') {
      return bad("a part starts or ends with '-' or '.'");
    }
    if (!segment.empty()) segment += "--";
    segment += part;
    start = end + 1;
  }
  if (!IsSha256Hex(sha256_hex)) {
    return InvalidArgument(fmt::format("{} key needs a SHA-256 as 64 lower-case hex digits", what)).WithParam("sha256");
  }
  std::string key = fmt::format("{}/{}/{}{}", prefix, segment, sha256_hex, suffix);
  OMNI_RETURN_IF_ERROR(ValidateObjectKey(key));
  return key;
}

}  // namespace

StatusOr<std::string> EmbeddingKey(std::string_view model_id, std::string_view sha256_hex) {
  return ModelObjectKey("emb", model_id, sha256_hex, ".safetensors", "an embedding");
}

StatusOr<std::string> GeneratedMediaKey(std::string_view model_id, std::string_view sha256_hex,
                                        std::string_view extension) {
  for (char c : extension) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
      return InvalidArgument("a generated medium's extension must be lower-case letters and digits");
    }
  }
  if (extension.empty() || extension.size() > 8) return InvalidArgument("a generated medium needs an extension");
  return ModelObjectKey("gen", model_id, sha256_hex, "." + std::string(extension), "a generated medium");
}

}  // namespace omni

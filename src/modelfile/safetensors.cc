#include "modelfile/safetensors.h"

#include <cstring>

#include "modelfile/mapped_file.h"

namespace omni {

StatusOr<SafetensorsFile> SafetensorsFile::Build(std::span<const uint8_t> bytes,
                                                 std::shared_ptr<void> keepalive,
                                                 std::string source) {
  OMNI_ASSIGN_OR_RETURN(SafetensorsHeader header, ParseSafetensorsHeader(bytes, source));
  SafetensorsFile file;
  file.source_ = std::move(source);
  file.bytes_ = bytes;
  file.keepalive_ = std::move(keepalive);
  file.header_ = std::move(header);
  for (size_t i = 0; i < file.header_.tensors.size(); ++i) {
    file.index_.emplace(file.header_.tensors[i].name, i);
  }
  return file;
}

StatusOr<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  OMNI_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> mapping, MappedFile::Open(path));
  std::span<const uint8_t> bytes = mapping->bytes();
  return Build(bytes, std::move(mapping), path);
}

StatusOr<SafetensorsFile> SafetensorsFile::FromBuffer(std::span<const uint8_t> bytes,
                                                      std::shared_ptr<void> keepalive,
                                                      std::string source) {
  return Build(bytes, std::move(keepalive), std::move(source));
}

StatusOr<SafetensorsFile> SafetensorsFile::FromBuffer(std::string bytes, std::string source) {
  auto owned = std::make_shared<std::string>(std::move(bytes));
  std::span<const uint8_t> view(reinterpret_cast<const uint8_t*>(owned->data()), owned->size());
  return Build(view, std::move(owned), std::move(source));
}

std::vector<std::string> SafetensorsFile::Names() const {
  std::vector<std::string> names;
  names.reserve(header_.tensors.size());
  for (const auto& t : header_.tensors) names.push_back(t.name);
  return names;
}

const SafetensorsTensorInfo* SafetensorsFile::Find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

Tensor SafetensorsFile::View(const SafetensorsTensorInfo& info) const {
  // The header parser proved begin + nbytes <= data_size, so this stays in
  // the buffer.
  const uint8_t* data = bytes_.data() + header_.data_offset() + info.begin;
  if (reinterpret_cast<uintptr_t>(data) % DTypeSize(info.dtype) != 0) {
    Tensor copy = Tensor::Empty(info.shape, info.dtype);
    std::memcpy(copy.raw_data(), data, info.nbytes());
    return copy;
  }
  // Tensor has no const views; the mapping is read-only, see mapped_file.h.
  return Tensor::View(const_cast<uint8_t*>(data), info.shape, info.dtype, keepalive_);
}

StatusOr<Tensor> SafetensorsFile::Get(std::string_view name) const {
  const SafetensorsTensorInfo* info = Find(name);
  if (info == nullptr) {
    return NotFound("no tensor '" + std::string(name) + "' in " + source_);
  }
  return View(*info);
}

std::string_view SafetensorsFile::Metadata(std::string_view key) const {
  for (const auto& [k, v] : header_.metadata) {
    if (k == key) return v;
  }
  return {};
}

}  // namespace omni

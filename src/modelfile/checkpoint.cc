#include "modelfile/checkpoint.h"

#include <sys/stat.h>


#include "core/config.h"

namespace omni {

namespace {

constexpr std::string_view kSingleFile = "model.safetensors";
constexpr std::string_view kIndexFile = "model.safetensors.index.json";

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Join(const std::string& dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  return dir.back() == '/' ? dir + std::string(name) : dir + "/" + std::string(name);
}

// Reads weight_map into name -> shard file, checking the shard names.
Status ReadWeightMap(const ConfigNode& root, std::map<std::string, std::string>* weight_map) {
  ObjectReader r(root, "", ObjectReader::UnknownKeys::kAllow);  // "metadata" and others
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  const ConfigNode* map = r.GetNode("weight_map");
  if (map == nullptr) return ConfigError(root, "weight_map", "required field is missing");
  if (map->kind != ConfigNode::Kind::kMap) {
    return ConfigError(*map, "weight_map", "expected a map, got " + std::string(map->KindName()));
  }
  for (const auto& [name, file] : map->map) {
    std::string path = "weight_map." + name;
    if (file.kind != ConfigNode::Kind::kString) {
      return ConfigError(file, path, "expected a shard file name, got " + std::string(file.KindName()));
    }
    const std::string& f = file.string_value;
    if (f.empty() || f == "." || f == ".." || f.find('/') != std::string::npos ||
        f.find('\\') != std::string::npos || f.find('\0') != std::string::npos) {
      return ConfigError(file, path, "shard '" + f + "' must be a plain file name in the folder");
    }
    (*weight_map)[name] = f;
  }
  return Status::Ok();
}

}  // namespace

Status Checkpoint::AddShard(SafetensorsFile shard) {
  size_t s = shards_.size();
  const auto& tensors = shard.header().tensors;
  for (size_t i = 0; i < tensors.size(); ++i) {
    auto [it, inserted] = index_.emplace(tensors[i].name, Location{s, i});
    if (!inserted) {
      return InvalidArgument("tensor '" + tensors[i].name + "' is in both " +
                             shards_[it->second.shard].source() + " and " + shard.source());
    }
  }
  shards_.push_back(std::move(shard));
  return Status::Ok();
}

StatusOr<Checkpoint> Checkpoint::OpenFile(const std::string& path) {
  OMNI_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::Open(path));
  Checkpoint ckpt;
  ckpt.dir_ = path;
  OMNI_RETURN_IF_ERROR(ckpt.AddShard(std::move(file)));
  return ckpt;
}

StatusOr<Checkpoint> Checkpoint::Open(const std::string& dir) {
  std::string single = Join(dir, kSingleFile);
  if (IsRegularFile(single)) {
    OMNI_ASSIGN_OR_RETURN(Checkpoint ckpt, OpenFile(single));
    ckpt.dir_ = dir;
    return ckpt;
  }
  std::string index_path = Join(dir, kIndexFile);
  if (!IsRegularFile(index_path)) {
    return NotFound("no " + std::string(kSingleFile) + " or " + std::string(kIndexFile) + " in " +
                    dir);
  }
  OMNI_ASSIGN_OR_RETURN(std::string text, ReadTextFile(index_path));
  OMNI_ASSIGN_OR_RETURN(ConfigNode root, ParseJson(text, index_path));
  std::map<std::string, std::string> weight_map;
  OMNI_RETURN_IF_ERROR(ReadWeightMap(root, &weight_map).Annotate(index_path));

  std::map<std::string, std::vector<std::string>> by_shard;  // sorted: deterministic order
  for (const auto& [name, file] : weight_map) by_shard[file].push_back(name);

  Checkpoint ckpt;
  ckpt.dir_ = dir;
  for (const auto& [file, names] : by_shard) {
    OMNI_ASSIGN_OR_RETURN(SafetensorsFile shard, SafetensorsFile::Open(Join(dir, file)));
    for (const std::string& name : names) {
      if (!shard.Contains(name)) {
        return InvalidArgument(index_path + " maps tensor '" + name + "' to " + file +
                               ", which does not contain it");
      }
    }
    for (const SafetensorsTensorInfo& t : shard.header().tensors) {
      auto it = weight_map.find(t.name);
      if (it == weight_map.end() || it->second != file) {
        return InvalidArgument(shard.source() + " holds tensor '" + t.name + "', which " +
                               index_path + " does not map to that file");
      }
    }
    OMNI_RETURN_IF_ERROR(ckpt.AddShard(std::move(shard)));
  }
  return ckpt;
}

std::vector<std::string> Checkpoint::Names() const {
  std::vector<std::string> names;
  names.reserve(index_.size());
  for (const auto& [name, loc] : index_) names.push_back(name);
  return names;
}

const SafetensorsTensorInfo* Checkpoint::Info(std::string_view name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return nullptr;
  return &shards_[it->second.shard].header().tensors[it->second.tensor];
}

StatusOr<Tensor> Checkpoint::Get(std::string_view name) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    return NotFound("no tensor '" + std::string(name) + "' in checkpoint " + dir_);
  }
  const SafetensorsFile& shard = shards_[it->second.shard];
  return shard.View(shard.header().tensors[it->second.tensor]);
}

StatusOr<Tensor> Checkpoint::GetChecked(std::string_view name, const Shape& shape,
                                        DType dtype) const {
  OMNI_ASSIGN_OR_RETURN(Tensor t, Get(name));
  OMNI_RETURN_IF_ERROR(CheckTensorSpec(t, name, shape, dtype).Annotate(dir_));
  return t;
}

Status CheckTensorSpec(const Tensor& t, std::string_view name, const Shape& shape, DType dtype) {
  bool shape_ok = t.rank() == static_cast<int>(shape.size());
  for (size_t i = 0; shape_ok && i < shape.size(); ++i) {
    shape_ok = shape[i] == -1 || shape[i] == t.shape()[i];
  }
  if (shape_ok && t.dtype() == dtype) return Status::Ok();
  return InvalidArgument("tensor '" + std::string(name) + "' is " +
                         std::string(DTypeName(t.dtype())) + " " + ShapeToString(t.shape()) +
                         ", expected " + std::string(DTypeName(dtype)) + " " +
                         ShapeToString(shape));
}

}  // namespace omni

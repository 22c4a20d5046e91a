// Checkpoint: the weights of a Hugging Face model folder, by tensor name.
//
// A folder holds either one `model.safetensors` or a
// `model.safetensors.index.json` whose "weight_map" maps each tensor name to
// a shard file in the same folder. When both exist, `model.safetensors` wins
// (as in transformers). Every shard is mapped and its header validated at
// Open; the index must agree with the shards exactly: each listed tensor is
// in its shard, and each shard tensor is listed (a mismatch means a corrupt or
// half-copied checkpoint, so it is an error, not a warning). Shard names must
// be plain file names (no '/', no '..').
//
// Get() returns zero-copy views (see safetensors.h). Model code should ask for
// each weight once, through GetChecked, at load time and keep the Tensor;
// names are not looked up on the hot path.
//
// Thread-safety: immutable after Open; Get may be called from many threads.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "modelfile/safetensors.h"
#include "tensor/tensor.h"

namespace omni {

class Checkpoint {
 public:
  static StatusOr<Checkpoint> Open(const std::string& dir);
  // A checkpoint of one file (no folder conventions).
  static StatusOr<Checkpoint> OpenFile(const std::string& path);

  const std::string& dir() const { return dir_; }
  size_t size() const { return index_.size(); }
  size_t num_shards() const { return shards_.size(); }
  // All tensor names, sorted.
  std::vector<std::string> Names() const;
  bool Contains(std::string_view name) const { return index_.find(name) != index_.end(); }
  // nullptr if absent.
  const SafetensorsTensorInfo* Info(std::string_view name) const;

  // NotFound naming the tensor and the folder if absent.
  StatusOr<Tensor> Get(std::string_view name) const;
  // Get plus CheckTensorSpec: the weight a model expects, or an error that
  // says what differs.
  StatusOr<Tensor> GetChecked(std::string_view name, const Shape& shape, DType dtype) const;

 private:
  struct Location {
    size_t shard;
    size_t tensor;  // index into shards_[shard].header().tensors
  };

  Checkpoint() = default;
  Status AddShard(SafetensorsFile shard);

  std::string dir_;
  std::vector<SafetensorsFile> shards_;
  std::map<std::string, Location, std::less<>> index_;
};

// OK if `t` has dtype `dtype` and shape `shape`, where a -1 in `shape` matches
// any size; otherwise InvalidArgument naming `name` and both shapes/dtypes.
Status CheckTensorSpec(const Tensor& t, std::string_view name, const Shape& shape, DType dtype);

}  // namespace omni

// The writing half of safetensors.h.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "modelfile/safetensors.h"

namespace omni {

namespace {

// The reference implementation's Dtype enum order (BOOL, U8, I8, F8_*, I16,
// U16, F16, BF16, I32, U32, F32, F64, I64, U64); it sorts tensors by it,
// descending, so that larger alignments come first.
int ReferenceDTypeRank(DType dtype) {
  switch (dtype) {
    case DType::kU8: return 1;
    case DType::kF16: return 7;
    case DType::kBF16: return 8;
    case DType::kI32: return 9;
    case DType::kF32: return 11;
    case DType::kI64: return 13;
  }
  return 0;
}

struct Planned {
  const NamedTensor* entry;
  Tensor contiguous;  // the tensor itself, or a contiguous copy of it
  uint64_t begin = 0;
};

struct Plan {
  std::string header;  // length prefix + padded JSON
  std::vector<Planned> tensors;  // in file order
};

StatusOr<Plan> MakePlan(const std::vector<NamedTensor>& tensors, const SafetensorsMetadata& metadata) {
  Plan plan;
  std::set<std::string_view> names;
  for (const NamedTensor& nt : tensors) {
    if (nt.name == "__metadata__") {
      return InvalidArgument("safetensors writer: '__metadata__' is reserved, not a tensor name");
    }
    if (!IsValidUtf8(nt.name)) {
      return InvalidArgument("safetensors writer: tensor name is not valid UTF-8");
    }
    if (!names.insert(nt.name).second) {
      return InvalidArgument("safetensors writer: tensor '" + nt.name + "' given twice");
    }
    if (!nt.tensor.defined()) {
      return InvalidArgument("safetensors writer: tensor '" + nt.name + "' is undefined");
    }
    plan.tensors.push_back({&nt, nt.tensor.Contiguous()});
  }
  for (const auto& [k, v] : metadata) {
    if (!IsValidUtf8(k) || !IsValidUtf8(v)) {
      return InvalidArgument("safetensors writer: metadata is not valid UTF-8");
    }
  }
  std::sort(plan.tensors.begin(), plan.tensors.end(), [](const Planned& a, const Planned& b) {
    int ra = ReferenceDTypeRank(a.entry->tensor.dtype());
    int rb = ReferenceDTypeRank(b.entry->tensor.dtype());
    if (ra != rb) return ra > rb;
    return a.entry->name < b.entry->name;
  });

  std::string json = "{";
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {  // std::map: sorted by key
      if (!first) json += ",";
      first = false;
      AppendJsonString(k, &json);
      json += ":";
      AppendJsonString(v, &json);
    }
    json += "}";
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    Planned& p = plan.tensors[i];
    const Tensor& t = p.contiguous;
    if (i > 0 || !metadata.empty()) json += ",";
    AppendJsonString(p.entry->name, &json);
    json += ":{\"dtype\":\"";
    json += DTypeName(t.dtype());
    json += "\",\"shape\":[";
    for (int d = 0; d < t.rank(); ++d) {
      if (d > 0) json += ",";
      json += std::to_string(t.dim(d));
    }
    p.begin = offset;
    offset += t.nbytes();
    json += "],\"data_offsets\":[" + std::to_string(p.begin) + "," + std::to_string(offset) + "]}";
  }
  json += "}";
  json.append((8 - json.size() % 8) % 8, ' ');

  uint64_t n = json.size();
  plan.header.resize(8);
  for (int i = 0; i < 8; ++i) plan.header[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  plan.header += json;
  return plan;
}

Status WriteAll(int fd, const void* data, size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t w = ::write(fd, p, std::min<size_t>(size, size_t{1} << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      return Internal("writing " + path + ": " + std::strerror(errno));
    }
    p += w;
    size -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

StatusOr<std::string> SerializeSafetensors(const std::vector<NamedTensor>& tensors,
                                           const SafetensorsMetadata& metadata) {
  OMNI_ASSIGN_OR_RETURN(Plan plan, MakePlan(tensors, metadata));
  std::string out = std::move(plan.header);
  for (const Planned& p : plan.tensors) {
    out.append(static_cast<const char*>(p.contiguous.raw_data()), p.contiguous.nbytes());
  }
  return out;
}

Status WriteSafetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                        const SafetensorsMetadata& metadata) {
  OMNI_ASSIGN_OR_RETURN(Plan plan, MakePlan(tensors, metadata));
  // The temporary lives beside the target so that rename() is atomic (same
  // file system).
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return Internal("creating a temporary file for " + path + ": " + std::strerror(errno));
  auto fail = [&](Status s) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  };
  // mkstemp creates 0600; model files are meant to be world-readable. (Not
  // derived from umask: reading it means setting it, which races with other
  // threads creating files.)
  if (::fchmod(fd, 0644) != 0) {
    return fail(Internal("chmod " + tmp + ": " + std::strerror(errno)));
  }
  Status s = WriteAll(fd, plan.header.data(), plan.header.size(), tmp);
  for (size_t i = 0; s.ok() && i < plan.tensors.size(); ++i) {
    const Tensor& t = plan.tensors[i].contiguous;
    s = WriteAll(fd, t.raw_data(), t.nbytes(), tmp);
  }
  if (!s.ok()) return fail(std::move(s));
  if (::fsync(fd) != 0) return fail(Internal("fsync " + tmp + ": " + std::strerror(errno)));
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return Internal("close " + tmp + ": " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Internal("rename " + tmp + " -> " + path + ": " + std::strerror(err));
  }
  // Make the rename itself durable.
  int dir = ::open(DirName(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return Status::Ok();
}

}  // namespace omni

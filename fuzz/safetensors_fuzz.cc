// libFuzzer target for the safetensors reader (and, on what it accepts, the
// writer).
//
// For any input: parsing must return a Status, never crash or read out of
// bounds. For an input the reader accepts: every tensor view must lie inside
// the input (each byte is read, so ASan would flag a stray view), and writing
// the tensors back out and reading that must give the same names, dtypes,
// shapes, bytes and metadata, and writing again must give identical bytes.
//
// The modelfile_test binary also links this file and replays the committed
// corpus through it (safetensors_corpus_test.cc).
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "modelfile/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace omni;
  StatusOr<SafetensorsFile> file =
      SafetensorsFile::FromBuffer(std::span<const uint8_t>(data, size), nullptr, "<fuzz>");
  if (!file.ok()) {
    OMNI_CHECK(!file.status().message().empty());
    return 0;
  }
  std::vector<NamedTensor> tensors;
  uint64_t checksum = 0;
  for (const SafetensorsTensorInfo& info : file->header().tensors) {
    Tensor t = file->View(info);
    OMNI_CHECK_EQ(t.nbytes(), info.nbytes());
    const uint8_t* p = static_cast<const uint8_t*>(t.raw_data());
    for (size_t i = 0; i < t.nbytes(); ++i) checksum += p[i];
    tensors.push_back({info.name, t});
  }
  volatile uint64_t sink = checksum;
  (void)sink;

  SafetensorsMetadata metadata(file->header().metadata.begin(), file->header().metadata.end());
  StatusOr<std::string> written = SerializeSafetensors(tensors, metadata);
  OMNI_CHECK(written.ok()) << written.status().ToString();
  StatusOr<SafetensorsFile> reread = SafetensorsFile::FromBuffer(*written, "<rewritten>");
  OMNI_CHECK(reread.ok()) << reread.status().ToString();
  OMNI_CHECK_EQ(reread->size(), tensors.size());
  OMNI_CHECK(reread->header().metadata == file->header().metadata);
  for (const NamedTensor& nt : tensors) {
    const SafetensorsTensorInfo* info = reread->Find(nt.name);
    OMNI_CHECK(info != nullptr);
    OMNI_CHECK(info->dtype == nt.tensor.dtype());
    OMNI_CHECK(info->shape == nt.tensor.shape());
    Tensor t = reread->View(*info);
    OMNI_CHECK(std::memcmp(t.raw_data(), nt.tensor.raw_data(), t.nbytes()) == 0);
  }
  std::vector<NamedTensor> again;
  for (const auto& info : reread->header().tensors) again.push_back({info.name, reread->View(info)});
  StatusOr<std::string> written_again = SerializeSafetensors(again, metadata);
  OMNI_CHECK(written_again.ok() && *written_again == *written);
  return 0;
}

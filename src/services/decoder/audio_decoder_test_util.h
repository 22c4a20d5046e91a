// What the audio decoder's tests share: the demo vocoder (written once per
// test process into a temp folder, removed at exit), a file:// store in a
// temp folder, unit sequences, and a metric read from /metrics text.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "models/audio_decoder/demo_audio_decoder.h"
#include "models/audio_decoder/speakers.h"
#include "models/audio_decoder/unit_bigvgan.h"
#include "storage/fs_io.h"
#include "storage/fs_store.h"

namespace omni::decoder::testing {

// The demo folder (make-demo-model --component ad): speakers fkms, mhwj,
// fphj, mphw; causal; 960 samples per unit; and its zero-shot companion.
struct DemoVocoder {
  std::filesystem::path dir;
  std::unique_ptr<models::UnitBigVgan> model;
  std::unique_ptr<models::UnitBigVgan> zero_shot;  // dir/zeroshot: the ECAPA-TDNN companion
  std::unique_ptr<models::SpeakerTable> speakers;

  static const DemoVocoder& Get() {
    static const DemoVocoder* demo = [] {
      auto* d = new DemoVocoder;
      d->dir = std::filesystem::temp_directory_path() / ("audio_decoder_test.ad." + std::to_string(::getpid()));
      const Status written = models::WriteDemoAudioDecoder({}, d->dir.string());
      EXPECT_TRUE(written.ok()) << written.ToString();
      auto model = models::UnitBigVgan::Load(d->dir.string());
      EXPECT_TRUE(model.ok()) << model.status().ToString();
      d->model = std::move(model).value();
      auto zero_shot = models::UnitBigVgan::Load((d->dir / "zeroshot").string());
      EXPECT_TRUE(zero_shot.ok()) << zero_shot.status().ToString();
      d->zero_shot = std::move(zero_shot).value();
      auto speakers = models::SpeakerTable::Load(d->dir.string(), d->model->config().num_spk);
      EXPECT_TRUE(speakers.ok()) << speakers.status().ToString();
      d->speakers = std::make_unique<models::SpeakerTable>(std::move(speakers).value());
      std::atexit([] { std::filesystem::remove_all(Get().dir); });
      return d;
    }();
    return *demo;
  }
};

// A file:// store in its own temp folder, removed with the object.
class TempStore {
 public:
  explicit TempStore(const std::string& name)
      : dir_(std::filesystem::temp_directory_path() / (name + "." + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
    uri_ = PathToFileUrl(dir_.string());
    auto store = FsStore::Open(uri_, {.sync = false});
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  ~TempStore() { std::filesystem::remove_all(dir_); }
  FsStore& store() { return *store_; }
  const std::string& uri() const { return uri_; }

 private:
  std::filesystem::path dir_;
  std::string uri_;
  std::unique_ptr<FsStore> store_;
};

// n units from a formula, all in [0, 6561).
inline std::vector<int32_t> TestUnits(int n, int salt = 0) {
  std::vector<int32_t> units(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) units[static_cast<size_t>(i)] = (i * 977 + 5 + salt * 131) % 6561;
  return units;
}

// The value of the sample named exactly `sample` ("name" or
// "name{labels}") in Prometheus text; -1 when absent.
inline double MetricValue(const std::string& text, const std::string& sample) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > sample.size() && line.compare(0, sample.size(), sample) == 0 && line[sample.size()] == ' ') {
      return std::stod(line.substr(sample.size() + 1));
    }
  }
  return -1;
}

}  // namespace omni::decoder::testing

// SpeechStage against a fake gateway: a chunk's request carries every unit
// so far until the audio decoder has said how far its receptive field
// reaches ("context" in its answers), then only the units around the chunk,
// learnt separately for table voices and cloned ones (by the answer's
// speaker); the speaker object carries a reference clip through.
#include "services/orchestrator/speech_stage.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "core/base64.h"
#include "services/orchestrator/orchestrator_service.h"
#include "storage/fs_io.h"
#include "storage/fs_store.h"

namespace omni::orchestrator {
namespace {

using Json = nlohmann::json;

class FakeAudioDecoderGateway final : public Upstream {
 public:
  std::shared_ptr<HttpCallHandle> StreamAsync(HttpClientRequest, HttpStreamCallbacks,
                                              std::function<void(StatusOr<int>)> done) override {
    done(Unavailable("not used"));
    return nullptr;
  }
  StatusOr<HttpClientResponse> Request(const HttpClientRequest& request) override {
    const Json body = Json::parse(request.body);
    std::lock_guard lock(mu);
    bodies.push_back(body);
    const int64_t units = body["range"]["last"].get<int64_t>() - body["range"]["first"].get<int64_t>();
    // The zero-shot vocoder (a clip and no id) has another receptive field.
    const bool cloned = body["speaker"].contains("ref_audio") && !body["speaker"].contains("id");
    HttpClientResponse r;
    r.status = 200;
    r.body = Json{{"format", "pcm16"}, {"mime", "audio/L16"}, {"duration", units * 0.04},
                  {"audio", Base64Encode(std::string(static_cast<size_t>(units) * 1920, '\0'))},
                  {"speaker", cloned ? "ref:0123456789abcdef" : "fkms"},
                  {"context", {{"left", cloned ? 7 : 5}, {"right", cloned ? 3 : 2}}}}
                 .dump();
    return r;
  }
  std::mutex mu;
  std::vector<Json> bodies;
};

TEST(SpeechStageTest, ChunksCarryOnlyTheUnitsTheirSamplesNeedOnceTheDecoderSaid) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("speech_stage_test." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  OrchestratorConfig config;
  config.gateway = "http://127.0.0.1:1";
  config.store = PathToFileUrl(dir.string());
  config.speech.audio_decoder = "omni-ad";
  auto store = FsStore::Open(config.store, {.sync = false});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  FakeAudioDecoderGateway gateway;
  FakeClock clock;
  MetricsRegistry metrics;
  const ObjectUrlSigner signer(std::string(32, 's'));
  SpeechStage stage(config, gateway, store->get(), &signer, clock, metrics);
  std::vector<int32_t> units(40);
  for (int i = 0; i < 40; ++i) units[i] = 100 + i;
  auto decode = [&](int64_t first, int64_t last, SpeakerSpec speaker) {
    auto a = stage.Decode(SpeechJob{.units = units, .speaker = speaker, .range = std::make_pair(first, last)}, "",
                          "req-1");
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->bytes.size(), static_cast<size_t>(last - first) * 1920);
  };
  const SpeakerSpec cloned{.ref_audio = "data:audio/wav;base64,UklGRg=="};
  EXPECT_EQ(stage.RightContext({}), -1);  // no answer yet
  decode(0, 10, {});
  EXPECT_EQ(stage.RightContext({}), 2);
  EXPECT_EQ(stage.RightContext(cloned), -1);  // the clone's decoder has not answered
  decode(10, 20, {});
  decode(35, 40, {});
  decode(10, 20, cloned);
  EXPECT_EQ(stage.RightContext(cloned), 3);
  EXPECT_EQ(stage.RightContext(SpeakerSpec{.id = "fkms", .ref_audio = cloned.ref_audio}), 2);  // the id wins
  decode(20, 30, cloned);
  decode(20, 30, SpeakerSpec{.id = "fkms", .ref_audio = cloned.ref_audio});  // the id wins: the table's context
  ASSERT_EQ(gateway.bodies.size(), 6u);
  auto window = [&](size_t i) {
    const Json& b = gateway.bodies[i];
    const int64_t start = b["range"]["window_start"].get<int64_t>();
    const std::vector<int32_t> sent = b["units"].get<std::vector<int32_t>>();
    // The window is a slice of the units, at its place.
    for (size_t k = 0; k < sent.size(); ++k) EXPECT_EQ(sent[k], units[static_cast<size_t>(start) + k]) << i;
    return std::make_pair(start, static_cast<int64_t>(sent.size()));
  };
  EXPECT_EQ(window(0), std::make_pair(int64_t{0}, int64_t{40}));  // nothing learnt yet: everything
  EXPECT_EQ(window(1), std::make_pair(int64_t{5}, int64_t{17}));  // [10 - 5, 20 + 2)
  EXPECT_EQ(window(2), std::make_pair(int64_t{30}, int64_t{10}));  // [35 - 5, 40): the end of the units
  EXPECT_EQ(window(3), std::make_pair(int64_t{0}, int64_t{40}));  // a cloned voice: another checkpoint, not learnt
  EXPECT_EQ(window(4), std::make_pair(int64_t{13}, int64_t{20}));  // [20 - 7, 30 + 3): the clone's own field
  EXPECT_EQ(window(5), std::make_pair(int64_t{15}, int64_t{17}));  // [20 - 5, 30 + 2)
  EXPECT_EQ(gateway.bodies[3]["speaker"]["ref_audio"], cloned.ref_audio);
  EXPECT_EQ(gateway.bodies[1]["range"]["first"], 10);
  EXPECT_EQ(gateway.bodies[1]["range"]["last"], 20);
  EXPECT_EQ(gateway.bodies[1]["model"], "omni-ad");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace omni::orchestrator

// The precise prefix scorer with media, across the real components and no
// sockets: the LLM service (engine on the fake model runner, demo tokenizer,
// embedding objects in a file store) serves chat requests with image parts
// and publishes its KV events, which go through vLLM's wire encoding and the
// gateway's decoder into the gateway's index; the gateway lays the same
// requests out from the objects' store metadata (a HEAD on the same store),
// as GatewayService does.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <mutex>

#include "api/openai/openai_parse.h"
#include "core/config.h"
#include "engine/kv_event_decoder.h"
#include "engine/kv_event_publisher.h"
#include "modelfile/tensor_object.h"
#include "services/gateway/gateway_service.h"
#include "services/gateway/media_info.h"
#include "services/gateway/precise_prefix_index.h"
#include "services/gateway/prompt_tokens.h"
#include "services/llm/llm_test_fixture.h"
#include "storage/content_hash.h"
#include "storage/fs_store.h"
#include "storage/open_store.h"

namespace omni::gateway {
namespace {

namespace fs = std::filesystem;

// The engine publishes on its own thread; the test reads after a request.
class LockedSink final : public KvEventSink {
 public:
  void Publish(KvEvent&& event) override {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(event));
  }
  std::vector<KvEvent> Take() {
    std::lock_guard lock(mu_);
    return std::exchange(events_, {});
  }

 private:
  std::mutex mu_;
  std::vector<KvEvent> events_;
};

// Counts HEADs through to a real store.
class CountingMedia final : public MediaInfoSource {
 public:
  explicit CountingMedia(MediaInfoSource& inner) : inner_(inner) {}
  StatusOr<MediaObjectInfo> Lookup(std::string_view url) override {
    ++lookups;
    return inner_.Lookup(url);
  }
  int lookups = 0;

 private:
  MediaInfoSource& inner_;
};

class MediaRoutingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("omni_media_routing_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/model");
    auto json =
        MakeDemoTokenizerJson(DemoTokenizerSpec{.num_merges = 200, .num_vision_codes = 16, .num_audio_codes = 16});
    ASSERT_TRUE(json.ok());
    std::ofstream(dir_ + "/model/tokenizer.json") << *json;
    store_uri_ = "file://" + dir_ + "/store";
    auto store = FsStore::Open(store_uri_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();

    auto tokenizer = Tokenizer::FromJson(*json);
    ASSERT_TRUE(tokenizer.ok());
    tokenizer_ = std::move(tokenizer).value();
    StartLlm();

    media_info_ = std::make_unique<StoreMediaInfo>(*store_, StoreMediaInfoOptions{.metrics = &gateway_metrics_});
    counting_ = std::make_unique<CountingMedia>(*media_info_);
    auto prompt = PromptTokenizer::FromModelDir(dir_ + "/model", counting_.get());
    ASSERT_TRUE(prompt.ok()) << prompt.status().ToString();
    prompt_ = std::move(prompt).value();
  }

  // A fresh LLM server (an empty prefix cache) on the same store.
  void StartLlm() {
    if (llm_ != nullptr) llm_->Shutdown();
    llm_.reset();
    sink_.Take();
    registry_ = std::make_unique<MetricsRegistry>();  // the server's metrics register once per registry
    llm::LlmServiceOptions o;
    o.model_dir = dir_ + "/model";
    o.served_model_name = "m";
    o.num_kv_blocks = 512;
    o.metrics = registry_.get();
    o.store = store_.get();
    o.store_uri = store_uri_;
    o.kv_events = &sink_;
    o.model_loader = [vocab = tokenizer_->vocab_size()](const std::string&)
        -> StatusOr<std::unique_ptr<llm::LoadedModel>> {
      return std::unique_ptr<llm::LoadedModel>(std::make_unique<llm::testing::FakeLoaded>(vocab, -1));
    };
    auto service = llm::LlmService::Create(std::move(o));
    OMNI_CHECK(service.ok()) << service.status().ToString();
    llm_ = std::move(service).value();
    Status loaded = llm_->Load();
    OMNI_CHECK(loaded.ok()) << loaded.ToString();
  }

  void TearDown() override {
    if (llm_ != nullptr) llm_->Shutdown();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // An embedding object as the vision encoder writes it (rows [rows, 64],
  // ids [ids] below the demo's 16 vision codes, the same metadata in the
  // object and, with object-sha256, in the store); returns its file:// URI.
  std::string PutImage(uint8_t seed, int ids = 729, int rows = 40, bool store_metadata = true) {
    EmbeddingObject object;
    std::vector<float> values(static_cast<size_t>(rows) * 64);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 7 + seed) % 13) / 13.0f;
    object.rows = Tensor::FromFloats(values, {rows, 64});
    object.ids = Tensor::Empty({ids}, DType::kI32);
    for (int i = 0; i < ids; ++i) object.ids.data<int32_t>()[i] = (i * 5 + seed) % 16;
    const std::string medium_sha = Sha256Hex("medium " + std::to_string(seed));
    const ObjectMetadata meta = {{"rows", std::to_string(rows)}, {"width", "64"}, {"ids", std::to_string(ids)},
                                 {"mime", "image/png"},          {"filename", "image.png"}, {"sha256", medium_sha}};
    object.metadata = meta;
    auto bytes = SerializeEmbeddingObject(object);
    OMNI_CHECK(bytes.ok()) << bytes.status().ToString();
    ObjectMetadata store_meta = meta;
    store_meta.emplace_back("object-sha256", Sha256Hex(*bytes));
    const std::string key = "emb/ve/" + medium_sha + ".safetensors";
    Status s = store_->Put(key, *bytes, {.metadata = store_metadata ? store_meta : ObjectMetadata{}});
    OMNI_CHECK(s.ok()) << s.ToString();
    auto uri = ObjectUriInStore(store_uri_, key);
    OMNI_CHECK(uri.ok());
    return *uri;
  }

  // A chat body: text, then each image (by URI) followed by `after`.
  static std::string Body(std::string_view before, const std::vector<std::string>& images, std::string_view after,
                          std::string_view later_turn = "") {
    std::string content = R"([{"type":"text","text":")" + std::string(before) + R"("})";
    for (const std::string& uri : images) {
      content += R"(,{"type":"image_url","image_url":{"url":")" + uri + R"("}})";
    }
    content += R"(,{"type":"text","text":")" + std::string(after) + R"("}])";
    std::string messages = R"([{"role":"user","content":)" + content + "}";
    if (!later_turn.empty()) {
      messages += R"(,{"role":"assistant","content":"I see it."},{"role":"user","content":")" +
                  std::string(later_turn) + R"("})";
    }
    return R"({"model":"m","max_tokens":1,"temperature":0,"messages":)" + messages + "]}";
  }

  // Serves `body` on the LLM; returns its prompt length and the KV events
  // it published, through vLLM's wire format and the gateway's decoder.
  KvEventBatch Serve(const std::string& body, int* prompt_tokens = nullptr) {
    auto request = openai::ParseChatRequest(body);
    OMNI_CHECK(request.ok()) << request.status().ToString();
    auto prepared = llm_->PrepareChat(*request);
    OMNI_CHECK(prepared.ok()) << prepared.status().ToString();
    auto usage = llm_->Generate(*prepared, [](const llm::GenerationEvent&) { return true; });
    OMNI_CHECK(usage.ok()) << usage.status().ToString();
    if (prompt_tokens != nullptr) *prompt_tokens = usage->prompt_tokens;
    const std::vector<KvEvent> events = sink_.Take();
    auto batch = DecodeKvEventBatch(EncodeKvEventBatch(1.0, events, KvEventWireOptions{}));
    OMNI_CHECK(batch.ok()) << batch.status().ToString();
    return *batch;
  }

  PromptTokens Predict(const std::string& body) {
    auto tokens = prompt_->ChatPromptTokens(body);
    OMNI_CHECK(tokens.ok()) << tokens.status().ToString();
    return *tokens;
  }

  std::vector<uint64_t> Hashes(const PrecisePrefixIndex& index, const PromptTokens& p) {
    return index.RequestHashes(p.token_ids, p.media, 1 << 20);
  }

  std::string dir_;
  std::string store_uri_;
  std::unique_ptr<FsStore> store_;
  std::unique_ptr<Tokenizer> tokenizer_;
  LockedSink sink_;
  std::unique_ptr<MetricsRegistry> registry_;
  std::unique_ptr<llm::LlmService> llm_;
  MetricsRegistry gateway_metrics_;
  std::unique_ptr<StoreMediaInfo> media_info_;
  std::unique_ptr<CountingMedia> counting_;
  std::unique_ptr<PromptTokenizer> prompt_;
  const Clock::MonoTime now_ = Clock::MonoTime(std::chrono::seconds(100));
};

TEST_F(MediaRoutingTest, RequestHashesEqualTheHashesOfTheServersEvents) {
  const std::string image = PutImage(1);
  const std::string body = Body("What is in this picture?", {image}, "Describe it in one line.");
  int served = 0;
  const KvEventBatch events = Serve(body, &served);
  const PromptTokens predicted = Predict(body);
  // The layout the server used: same length, the image's 729 ids and 40
  // rows as two key spans of the object's sha256.
  EXPECT_EQ(static_cast<int>(predicted.token_ids.size()), served);
  EXPECT_FALSE(predicted.cut_at_media);
  ASSERT_EQ(predicted.media.size(), 2u);
  EXPECT_EQ(predicted.media[0].length, 729);
  EXPECT_EQ(predicted.media[1].length, 40);
  EXPECT_EQ(predicted.media[0].key, predicted.media[1].key);
  bool keyed = false;
  for (const WireKvEvent& e : events.events) {
    if (const auto* s = std::get_if<WireBlockStored>(&e)) {
      for (const auto& keys : s->extra_keys) keyed = keyed || (!keys.empty() && keys[0] == predicted.media[0].key);
    }
  }
  EXPECT_TRUE(keyed) << "the events name the object's sha256";

  PrecisePrefixIndex index(2, kBlockSize, prompt_->media_token_ids());
  index.Apply(0, events);
  const std::vector<uint64_t> hashes = Hashes(index, predicted);
  ASSERT_EQ(hashes.size(), predicted.token_ids.size() / kBlockSize);
  ASSERT_GT(hashes.size(), 50u);
  // Every full block of the prompt, through the image and past it.
  EXPECT_EQ(index.MatchLength(0, hashes, now_), static_cast<int>(hashes.size()));
  EXPECT_EQ(index.MatchLength(1, hashes, now_), 0);
}

TEST_F(MediaRoutingTest, AnotherImageDiffersFromItsFirstBlockOn) {
  const std::string a = PutImage(1);
  const std::string b = PutImage(2);
  const std::string text = "Compare with what you saw before, please, in detail.";
  PrecisePrefixIndex index(1, kBlockSize, prompt_->media_token_ids());
  index.Apply(0, Serve(Body(text, {a}, "Go on.")));
  const PromptTokens with_a = Predict(Body(text, {a}, "Go on."));
  const PromptTokens with_b = Predict(Body(text, {b}, "Go on."));
  ASSERT_EQ(with_a.token_ids.size(), with_b.token_ids.size());
  ASSERT_EQ(with_b.media.size(), 2u);
  EXPECT_NE(with_a.media[0].key, with_b.media[0].key);
  // Same text and layout; the block holding the image's first position is
  // where b stops matching what the server stored for a.
  const int first_media_block = with_b.media[0].start / kBlockSize;
  EXPECT_EQ(index.MatchLength(0, Hashes(index, with_a), now_), static_cast<int>(with_a.token_ids.size() / kBlockSize));
  EXPECT_EQ(index.MatchLength(0, Hashes(index, with_b), now_), first_media_block);
  const auto ha = Hashes(index, with_a);
  const auto hb = Hashes(index, with_b);
  for (size_t i = 0; i < ha.size(); ++i) EXPECT_EQ(ha[i] == hb[i], static_cast<int>(i) < first_media_block) << i;
}

TEST_F(MediaRoutingTest, AnObjectThatCannotBeHeadedEndsTheScoredPrefixBeforeIt) {
  const std::string text = "A long enough question about the picture that follows, to fill some blocks.";
  const std::string image = PutImage(3);
  const PromptTokens full = Predict(Body(text, {image}, "Thanks."));
  const std::string missing = ObjectUriInStore(store_uri_, "emb/ve/" + std::string(64, 'e') + ".safetensors").value();
  const PromptTokens cut = Predict(Body(text, {missing}, "Thanks."));
  EXPECT_TRUE(cut.cut_at_media);
  EXPECT_TRUE(cut.media.empty());
  // Exactly the tokens before the image's block: the full prompt goes on
  // with the block's mime line, which names what the object says.
  ASSERT_LT(cut.token_ids.size(), full.token_ids.size());
  EXPECT_TRUE(std::equal(cut.token_ids.begin(), cut.token_ids.end(), full.token_ids.begin()));
  EXPECT_EQ(full.token_ids[cut.token_ids.size()], tokenizer_->TokenToId("<|mime_start|>"));
  EXPECT_GT(cut.token_ids.size(), 16u);
  // An object without the metadata, and a URL outside the store, alike.
  const std::string bare = PutImage(4, 729, 40, /*store_metadata=*/false);
  EXPECT_EQ(Predict(Body(text, {bare}, "Thanks.")).token_ids, cut.token_ids);
  EXPECT_EQ(Predict(Body(text, {"http://127.0.0.1:1/emb.safetensors"}, "Thanks.")).token_ids, cut.token_ids);
  // A second image that cannot be looked up keeps the first one scored; the
  // parts after it are not looked up at all.
  counting_->lookups = 0;
  const PromptTokens two = Predict(Body(text, {image, missing, image}, "Thanks."));
  EXPECT_EQ(counting_->lookups, 2);
  EXPECT_TRUE(two.cut_at_media);
  EXPECT_EQ(two.media.size(), 2u);
  EXPECT_GT(two.token_ids.size(), static_cast<size_t>(full.media[1].start + full.media[1].length));
}

TEST_F(MediaRoutingTest, HeadAnswersAreCachedByUri) {
  const std::string image = PutImage(5);
  Predict(Body("x", {image}, "y"));
  Predict(Body("z", {image}, "y"));
  EXPECT_EQ(media_info_->heads(), 1u);
  EXPECT_EQ(media_info_->hits(), 1u);
  // A missing object: a failed lookup, not cached.
  EXPECT_FALSE(media_info_->Lookup(store_->uri() + "/emb/m/" + std::string(64, 'a') + ".safetensors").ok());
  const std::string text = gateway_metrics_.Render();
  EXPECT_NE(text.find(R"(gateway_media_lookups_total{result="cached"} 1)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(gateway_media_lookups_total{result="head"} 1)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(gateway_media_lookups_total{result="failed"} 1)"), std::string::npos) << text;
}

// Two endpoints through GatewayService: one served the image conversation,
// the other only its text before the image. A later turn that repeats the
// image and the text after it goes to the first.
TEST_F(MediaRoutingTest, ARepeatedImageGoesToTheEndpointThatHoldsIt) {
  const std::string yaml = "plugins: [{type: precise-prefix-cache-scorer, parameters: {pendingTtlMs: 0}}]\n"
                           "schedulingProfiles: [{name: p, plugins: [{pluginRef: precise-prefix-cache-scorer}]}]\n"
                           "store: '" + store_uri_ + "'\n"
                           "pools:\n"
                           "- {name: llm, role: llm, models: [m], endpoints: ['127.0.0.1:1', '127.0.0.1:2'],\n"
                           "   kvEvents: ['tcp://127.0.0.1:3', 'tcp://127.0.0.1:4'],\n"
                           "   tokenizer: '" + dir_ + "/model'}\n";
  auto root = ParseYaml(yaml, "gw.yaml");
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  auto config = ParseGatewayConfig(*root);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  FakeClock clock;
  auto gateway = GatewayService::Create(*config, GatewayOptions{.seed = 7, .store = store_.get()}, clock);
  ASSERT_TRUE(gateway.ok()) << gateway.status().ToString();
  PoolRouter& router = *(*gateway)->pools()[0]->router;

  const std::string image = PutImage(6);
  const std::string text = "Here is the photo I took on the trip last summer near the lake.";
  const std::string first_turn = Body(text, {image}, "What bird is this?");
  // Endpoint 0 served the text alone (a conversation that went elsewhere),
  // endpoint 1 the image turn.
  router.ApplyKvEvents(0, Serve(Body(text, {}, "What bird is this?")));
  StartLlm();  // endpoint 1 starts empty, or its events would chain from blocks endpoint 0 stored
  router.ApplyKvEvents(1, Serve(first_turn));

  HttpRequest later;
  later.path = "/v1/chat/completions";
  later.body = Body(text, {image}, "What bird is this?", "And the tree behind it?");
  // Its route may HEAD the store: the HTTP adapter takes it off the io thread.
  EXPECT_TRUE((*gateway)->RouteMayWait(later));
  HttpRequest text_only = later;
  text_only.body = Body(text, {}, "What bird is this?");
  EXPECT_FALSE((*gateway)->RouteMayWait(text_only));
  auto routed = (*gateway)->Route(later);
  ASSERT_TRUE(routed.ok()) << routed.status().ToString();
  EXPECT_EQ(routed->decision.chosen, 1) << router.DebugJson();
  // The image's blocks and the text after it count: most of the prompt.
  EXPECT_GT(routed->decision.prefix_score, 0.8) << router.DebugJson();
  (*gateway)->OnAttemptEnd(*routed, AttemptEnd{.status = 200});
  // Without media lookups (how the io thread routes): only the blocks before
  // the image are scored, and both endpoints hold those.
  auto unlooked = (*gateway)->Route(later, /*look_up_media=*/false);
  ASSERT_TRUE(unlooked.ok());
  EXPECT_LT(unlooked->decision.precise_hashes.size() * 4, routed->decision.precise_hashes.size())
      << unlooked->decision.precise_hashes.size() << " vs " << routed->decision.precise_hashes.size();
  (*gateway)->OnAttemptEnd(*unlooked, AttemptEnd{.status = 200});

  // Another image under the same text: only the blocks before it match,
  // on both endpoints alike.
  HttpRequest other = later;
  other.body = Body(text, {PutImage(7)}, "What bird is this?", "And the tree behind it?");
  auto other_routed = (*gateway)->Route(other);
  ASSERT_TRUE(other_routed.ok());
  EXPECT_LT(other_routed->decision.prefix_score, 0.2) << router.DebugJson();
  EXPECT_GT(other_routed->decision.prefix_score, 0.0) << router.DebugJson();
}

TEST(MediaInfo, ObjectKeysInTheStoreAndMetadata) {
  EXPECT_EQ(ObjectKeyInStore("s3://bkt/p?endpoint=http://h:1", "s3://bkt/p/emb/m/x.safetensors").value(),
            "emb/m/x.safetensors");
  EXPECT_EQ(ObjectKeyInStore("s3://bkt?endpoint=http://h:1", "s3://bkt/emb/x").value(), "emb/x");
  EXPECT_FALSE(ObjectKeyInStore("s3://bkt/p?endpoint=http://h:1", "s3://other/p/emb/x").ok());
  EXPECT_FALSE(ObjectKeyInStore("s3://bkt/p?endpoint=http://h:1", "s3://bkt/q/emb/x").ok());
  EXPECT_FALSE(ObjectKeyInStore("s3://bkt/p?endpoint=http://h:1", "http://h:1/bkt/p/emb/x").ok());
  EXPECT_EQ(ObjectKeyInStore("file:///srv/store/", "file:///srv/store/emb/a%20b").value(), "emb/a b");
  EXPECT_FALSE(ObjectKeyInStore("file:///srv/store", "file:///srv/storex/emb").ok());

  const std::string sha(64, 'A');
  auto info = MediaInfoFromMetadata({{"rows", "256"}, {"ids", "729"}, {"object-sha256", sha}, {"mime", "image/png"}});
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->rows, 256);
  EXPECT_EQ(info->ids, 729);
  EXPECT_EQ(info->object_sha256, std::string(64, 'a'));  // as events send it
  EXPECT_EQ(info->mime, "image/png");
  EXPECT_EQ(info->filename, "");
  EXPECT_FALSE(MediaInfoFromMetadata({{"rows", "256"}, {"ids", "729"}}).ok());
  EXPECT_FALSE(MediaInfoFromMetadata({{"object-sha256", sha}}).ok());
  EXPECT_FALSE(MediaInfoFromMetadata({{"rows", "-1"}, {"object-sha256", sha}}).ok());
  EXPECT_FALSE(MediaInfoFromMetadata({{"rows", "2"}, {"object-sha256", "abc"}}).ok());
}

}  // namespace
}  // namespace omni::gateway

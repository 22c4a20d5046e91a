#include "text/demo_tokenizer.h"

#include <nlohmann/json.hpp>

#include "text/bpe_trainer.h"
#include "text/pretokenizer.h"

namespace omni {
namespace {

// Written for this project; enough repetition that common English and Korean
// words become single tokens.
constexpr std::string_view kCorpus = R"(The quick brown fox jumps over the lazy dog.
The model reads the image and the audio, then it writes the answer.
I think the answer is that the server should stream the tokens to the client.
We're serving an omni model: it can see images, hear audio, and speak.
They'll send a request with a picture of a cat, and the model will describe the cat.
You can't batch requests if the engine handles one request at a time.
What is the weather in Seoul today? It is sunny, with a high of 23 degrees.
The function returns 42 when the input is 6 times 7.
Please call the tool with the image tokens and then return the result.
This is a test of the tokenizer, the chat template and the streaming detokenizer.
안녕하세요. 저는 하이퍼클로바 엑스입니다. 무엇을 도와드릴까요?
오늘 서울의 날씨는 맑고 기온은 이십삼 도입니다.
이 사진에 있는 고양이를 설명해 주세요. 고양이가 소파 위에서 자고 있습니다.
음성을 듣고 텍스트로 답변해 주세요. 그리고 음성으로도 답변해 주세요.
모델은 이미지와 오디오를 이해하고, 이미지를 생성하고, 말을 할 수 있습니다.
서버는 요청을 받아서 토큰을 스트리밍으로 보냅니다.
감사합니다. 좋은 하루 보내세요!
def add(a, b):
    return a + b

for i in range(10):
    print(i, add(i, i))
{"role": "user", "content": "hello"}
)";

}  // namespace

std::string_view DemoTrainingCorpus() { return kCorpus; }

StatusOr<std::string> MakeDemoTokenizerJson(const DemoTokenizerSpec& spec) {
  if (spec.num_merges < 0 || spec.num_merges > 10000) {
    return InvalidArgument("demo tokenizer: num_merges must be in [0, 10000]");
  }
  if (spec.num_vision_codes < 0 || spec.num_vision_codes > kNumVisionCodes) {
    return InvalidArgument("demo tokenizer: num_vision_codes must be in [0, 65536]");
  }
  if (spec.num_audio_codes < 0 || spec.num_audio_codes > kNumAudioCodes) {
    return InvalidArgument("demo tokenizer: num_audio_codes must be in [0, 6561]");
  }
  OMNI_ASSIGN_OR_RETURN(auto pattern, Pcre2Pattern::Compile(kQwen2Pattern, false));
  std::vector<std::string> pieces;
  OMNI_RETURN_IF_ERROR(ApplySplit({std::move(pattern), SplitBehavior::kIsolated, false}, kCorpus, &pieces));
  BpeTrainResult bpe = TrainByteLevelBpe(pieces, spec.num_merges);

  using Json = nlohmann::ordered_json;
  Json vocab = Json::object();
  for (size_t id = 0; id < bpe.vocab.size(); ++id) vocab[bpe.vocab[id]] = id;
  Json merges = Json::array();
  for (const auto& [left, right] : bpe.merges) merges.push_back(left + " " + right);
  Json added = Json::array();
  size_t next_id = bpe.vocab.size();
  for (const OmniAddedToken& t : OmniAddedTokens(spec.num_vision_codes, spec.num_audio_codes)) {
    added.push_back({{"id", next_id++},
                     {"content", t.content},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", t.special}});
  }
  Json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
                     {"use_regex", false}};
  Json split = Json::object();
  split["type"] = "Split";
  split["pattern"]["Regex"] = std::string(kQwen2Pattern);
  split["behavior"] = "Isolated";
  split["invert"] = false;
  Json pre_tokenizer = Json::object();
  pre_tokenizer["type"] = "Sequence";
  pre_tokenizer["pretokenizers"] = Json::array({split, byte_level});
  Json doc = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", std::move(added)},
      {"normalizer", nullptr},
      {"pre_tokenizer", pre_tokenizer},
      {"post_processor", nullptr},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", std::move(vocab)},
        {"merges", std::move(merges)}}},
  };
  try {
    return doc.dump(1) + "\n";
  } catch (const std::exception& e) {
    return Internal(std::string("demo tokenizer: writing JSON failed: ") + e.what());
  }
}

}  // namespace omni

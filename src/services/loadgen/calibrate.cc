#include "services/loadgen/calibrate.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "services/loadgen/workload.h"

namespace omni::loadgen {
namespace {

// Large enough that the per-prompt constant (a BOS token, say) hardly moves
// the ratio; small enough for any context length.
constexpr int kSampleWords = 1000;
// A fixed seed: the sample is the same on every run and every server.
constexpr uint64_t kSampleSeed = 0x5eed;

}  // namespace

StatusOr<double> MeasureTokensPerWord(HttpClient& client, std::string_view base_url, std::string_view model) {
  uint64_t rng = kSampleSeed;
  nlohmann::json body = {{"model", model}, {"prompt", RandomWords(&rng, kSampleWords)}, {"add_special_tokens", false}};
  HttpClientRequest request{.method = HttpMethod::kPost, .url = std::string(base_url) + "/tokenize", .body = body.dump()};
  request.headers.Set("content-type", "application/json");
  OMNI_ASSIGN_OR_RETURN(HttpClientResponse response, client.Request(request));
  if (response.status != 200) {
    return Status(StatusCodeFromHttp(response.status),
                  "POST /tokenize answered " + std::to_string(response.status) + ": " + response.body.substr(0, 300));
  }
  nlohmann::json reply = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  int64_t count = -1;
  if (reply.is_object()) {
    if (auto c = reply.find("count"); c != reply.end() && c->is_number_integer()) {
      count = c->get<int64_t>();
    } else if (auto t = reply.find("tokens"); t != reply.end() && t->is_array()) {
      count = static_cast<int64_t>(t->size());
    }
  }
  if (count <= 0) return Internal("POST /tokenize: no token count in " + response.body.substr(0, 300));
  return static_cast<double>(count) / kSampleWords;
}

int WordsForTokens(int tokens, double tokens_per_word) {
  OMNI_CHECK_GT(tokens_per_word, 0.0);
  if (tokens <= 0) return 0;
  return std::max(1, static_cast<int>(std::lround(tokens / tokens_per_word)));
}

}  // namespace omni::loadgen

// Optional length calibration for `omniserve bench --calibrate`: asks the
// server's POST /tokenize (vLLM's shape: {"model","prompt"} -> {"count",...})
// how many tokens a sample of bench words makes, so lengths given in tokens
// can be turned into word counts for that server's tokenizer.
#pragma once

#include <string_view>

#include "core/status.h"
#include "net/http_client.h"

namespace omni::loadgen {

// Tokens per bench word on the target (> 0). `base_url` as NormalizeBaseUrl
// returns it. Errors: the transport's, or the server's status, or Internal
// for a reply without an integer "count" or "tokens" list.
StatusOr<double> MeasureTokensPerWord(HttpClient& client, std::string_view base_url, std::string_view model);

// Words that make about `tokens` tokens at `tokens_per_word`; at least 1
// when tokens > 0, 0 when tokens == 0.
int WordsForTokens(int tokens, double tokens_per_word);

}  // namespace omni::loadgen

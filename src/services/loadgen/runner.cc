#include "services/loadgen/runner.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include "net/url.h"

namespace omni::loadgen {
namespace {

double SecondsBetween(Clock::MonoTime from, Clock::MonoTime to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

StatusOr<std::string> NormalizeBaseUrl(std::string_view base_url) {
  std::string url(base_url);
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.size() >= 3 && url.compare(url.size() - 3, 3, "/v1") == 0) url.resize(url.size() - 3);
  auto parsed = ParseUrl(url);
  if (!parsed.ok()) return std::move(parsed).status().Annotate("--base-url");
  if (parsed->target != "/") {
    return InvalidArgument("--base-url must be http://host:port (optionally ending in /v1), got " +
                           std::string(base_url));
  }
  return url;
}

StatusOr<std::unique_ptr<HttpTransport>> HttpTransport::Create(std::string_view base_url, int max_connections,
                                                               std::chrono::milliseconds request_timeout) {
  OMNI_ASSIGN_OR_RETURN(std::string url, NormalizeBaseUrl(base_url));
  HttpClientOptions options;
  options.max_idle_per_host = static_cast<size_t>(std::max(1, max_connections));
  options.user_agent = "omniserve-bench";
  return std::unique_ptr<HttpTransport>(new HttpTransport(std::move(url), std::move(options), request_timeout));
}

StatusOr<int> HttpTransport::PostStream(std::string_view path, std::string body, const HttpHeaders& headers,
                                        const HttpStreamCallbacks& callbacks) {
  HttpClientRequest request{.method = HttpMethod::kPost,
                            .url = base_url_ + std::string(path),
                            .headers = headers,
                            .body = std::move(body),
                            .timeout = timeout_};
  request.headers.Set("content-type", "application/json");
  request.headers.Set("accept", "text/event-stream");
  return client_.Stream(request, callbacks);
}

Status ValidateLoadOptions(const LoadOptions& o) {
  if (o.model.empty()) return InvalidArgument("--model is required");
  if (o.sampling.max_tokens < 1) return InvalidArgument("--output-len must be >= 1");
  if (o.concurrency < 1) return InvalidArgument("--concurrency must be >= 1");
  if (o.request_rate < 0 || !std::isfinite(o.request_rate)) {
    return InvalidArgument("--request-rate must be a positive number of requests per second");
  }
  if (o.max_concurrency < 1) return InvalidArgument("--max-concurrency must be >= 1");
  return Status::Ok();
}

std::vector<double> PoissonArrivals(int n, double rate, uint64_t seed) {
  OMNI_CHECK_GT(rate, 0.0);
  std::mt19937_64 rng(seed);
  std::vector<double> times;
  times.reserve(static_cast<size_t>(std::max(0, n)));
  double t = 0;
  for (int i = 0; i < n; ++i) {
    // Inverse-CDF sampling of Exp(rate); 1 - u is in (0, 1], so the log is finite.
    double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    t += -std::log(1.0 - u) / rate;
    times.push_back(t);
  }
  return times;
}

BenchRunner::BenchRunner(StreamingTransport* transport, const Clock* clock, LoadOptions options)
    : transport_(transport), clock_(clock), options_(std::move(options)) {
  OMNI_CHECK(transport_ != nullptr);
  OMNI_CHECK(clock_ != nullptr);
}

RunResult BenchRunner::Run(const Workload& workload) {
  std::vector<std::vector<RequestRecord>> per_conversation(workload.conversations.size());
  Clock::MonoTime start = clock_->Now();
  if (options_.request_rate > 0) {
    RunOpenLoop(workload, start, &per_conversation);
  } else {
    RunClosedLoop(workload, start, &per_conversation);
  }
  RunResult result;
  for (auto& records : per_conversation) {
    for (auto& r : records) {
      result.duration_s = std::max(result.duration_s, r.start_s + r.e2e_s);
      result.records.push_back(std::move(r));
    }
  }
  return result;
}

void BenchRunner::RunClosedLoop(const Workload& workload, Clock::MonoTime start,
                                std::vector<std::vector<RequestRecord>>* out) {
  std::atomic<size_t> next{0};
  size_t n = workload.conversations.size();
  int workers = static_cast<int>(std::min<size_t>(static_cast<size_t>(options_.concurrency), n));
  std::vector<std::thread> threads;
  for (int i = 0; i < workers; ++i) {
    threads.emplace_back([&] {
      for (size_t c = next++; c < n; c = next++) {
        RunConversation(workload, workload.conversations[c], start, &(*out)[c]);
      }
    });
  }
  for (auto& t : threads) t.join();
}

void BenchRunner::RunOpenLoop(const Workload& workload, Clock::MonoTime start,
                              std::vector<std::vector<RequestRecord>>* out) {
  size_t n = workload.conversations.size();
  std::mutex mu;
  std::condition_variable cv;
  std::deque<size_t> ready;  // guarded by mu: conversations whose arrival time has passed
  bool all_dispatched = false;  // guarded by mu
  int workers = static_cast<int>(std::min<size_t>(static_cast<size_t>(options_.max_concurrency), n));
  std::vector<std::thread> threads;
  for (int i = 0; i < workers; ++i) {
    threads.emplace_back([&] {
      for (;;) {
        size_t c;
        {
          std::unique_lock lock(mu);
          cv.wait(lock, [&] { return !ready.empty() || all_dispatched; });
          if (ready.empty()) return;
          c = ready.front();
          ready.pop_front();
        }
        RunConversation(workload, workload.conversations[c], start, &(*out)[c]);
      }
    });
  }
  std::vector<double> arrivals = PoissonArrivals(static_cast<int>(n), options_.request_rate, options_.seed);
  for (size_t c = 0; c < n; ++c) {
    double wait_s = arrivals[c] - SecondsBetween(start, clock_->Now());
    if (wait_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
    {
      std::lock_guard lock(mu);
      ready.push_back(c);
    }
    cv.notify_one();
  }
  {
    std::lock_guard lock(mu);
    all_dispatched = true;
  }
  cv.notify_all();
  for (auto& t : threads) t.join();
}

void BenchRunner::RunConversation(const Workload& workload, const Conversation& c, Clock::MonoTime run_start,
                                  std::vector<RequestRecord>* out) {
  std::vector<std::string> answers;
  for (size_t turn = 0; turn < c.user_turns.size(); ++turn) {
    int t = static_cast<int>(turn);
    RequestRecord r = SendOne(BuildChatMessages(workload, c, t, answers), c, t, run_start);
    bool ok = r.ok;
    answers.push_back(r.output_text);
    out->push_back(std::move(r));
    if (ok) continue;
    // Later turns would resend a conversation the server never answered;
    // they count as failed without being sent.
    double now_s = SecondsBetween(run_start, clock_->Now());
    for (size_t rest = turn + 1; rest < c.user_turns.size(); ++rest) {
      RequestRecord skipped;
      skipped.conversation_id = c.id;
      skipped.turn = static_cast<int>(rest);
      skipped.start_s = now_s;
      skipped.error_kind = "skipped";
      skipped.error_message = "an earlier turn of the conversation failed";
      out->push_back(std::move(skipped));
    }
    return;
  }
}

RequestRecord BenchRunner::SendOne(const std::vector<ChatMessage>& messages, const Conversation& c, int turn,
                                   Clock::MonoTime run_start) {
  RequestRecord record;
  record.conversation_id = c.id;
  record.turn = turn;
  std::string body = BuildRequestBody(options_.endpoint, options_.model, messages, options_.sampling);
  HttpHeaders headers;
  for (const auto& [k, v] : options_.headers) headers.Add(k, v);
  headers.Set("x-session-id", "conv-" + std::to_string(c.id));

  StreamAccumulator acc(options_.endpoint);
  Clock::MonoTime sent = clock_->Now();
  record.start_s = SecondsBetween(run_start, sent);
  HttpStreamCallbacks callbacks;
  // Both run on the client's io thread; the accumulator is touched by one
  // thread at a time because Stream() returns only after the last callback.
  callbacks.on_headers = [&](int status, const HttpHeaders&) {
    acc.OnStatus(status);
    return true;
  };
  callbacks.on_body = [&](std::string_view chunk) {
    acc.OnBody(chunk, SecondsBetween(sent, clock_->Now()));
    return true;
  };
  StatusOr<int> status = transport_->PostStream(EndpointPath(options_.endpoint), std::move(body), headers, callbacks);
  double end_s = SecondsBetween(sent, clock_->Now());
  if (status.ok()) acc.OnStatus(*status);
  acc.Finish(status.ok() ? Status::Ok() : status.status(), end_s, &record);
  return record;
}

}  // namespace omni::loadgen

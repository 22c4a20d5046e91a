#include "services/routing_sim/routing_sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <queue>
#include <random>
#include <string>

#include "core/check.h"
#include "core/clock.h"
#include "services/gateway/pool_router.h"
#include "services/routing_sim/sim_prompts.h"

namespace omni::routing_sim {
namespace {

// The longest prompt a workload sends, in simulated tokens (sim_prompts.h:
// one marker per message plus the generation prompt's marker).
int LongestPromptTokens(const SimOptions& o) {
  const loadgen::WorkloadOptions& w = o.workload;
  const bool system = w.kind != loadgen::WorkloadKind::kSynthetic && w.prefix_len > 0;
  const int turns = w.kind == loadgen::WorkloadKind::kMultiTurn ? w.turns : 1;
  int n = system ? 1 + w.prefix_len : 0;
  n += turns * (1 + w.input_len) + (turns - 1) * (1 + o.output_len);
  return n + 1;
}

// A uniform double in [0, 1) from the top 53 bits: the same on every
// standard library, unlike std::uniform_real_distribution.
double Uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

class Simulation {
 public:
  Simulation(const SimOptions& options, const loadgen::Workload& workload, Policy policy);
  PolicyResult Run();

 private:
  enum class EventKind { kScrape, kConversationArrival, kStepStart, kStepEnd };
  struct Event {
    double time;
    uint64_t seq;  // ties in time run in the order they were scheduled
    EventKind kind;
    int index;     // replica or conversation
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  struct ConversationState {
    std::vector<std::string> answers;
  };
  struct RequestState {
    int conversation = 0;
    int turn = 0;
    int replica = 0;
    double sent = 0;
    double kv_tokens = 0;  // the router's RouteDecision::kv_tokens
  };

  void Push(double time, EventKind kind, int index) { events_.push(Event{time, next_seq_++, kind, index}); }
  void AdvanceClockTo(double t);
  void StartNextConversation();
  void SendTurn(int conversation, int turn);
  void WakeReplica(int r);
  void OnStepStart(int r);
  void OnStepEnd(int r);
  void OnScrape();
  void FlushKvEvents(int r);

  const SimOptions& options_;
  const loadgen::Workload& workload_;
  const Policy policy_;
  const int64_t total_requests_;

  FakeClock clock_;
  int64_t clock_ns_ = 0;
  double now_ = 0;
  std::unique_ptr<gateway::PoolRouter> router_;
  bool precise_ = false;
  std::vector<SimReplica> replicas_;
  std::vector<bool> step_pending_;  // a kStepStart or kStepEnd is queued for the replica
  // Prompt tokens sent to each replica: its vllm:prefix_cache_queries_total.
  std::vector<double> prompt_tokens_sent_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t next_seq_ = 0;
  std::mt19937_64 arrivals_rng_;

  std::vector<ConversationState> conversations_;
  int next_conversation_ = 0;
  std::vector<RequestState> requests_;  // by request id, in send order

  PolicyResult result_;
  std::vector<double> ttfts_;
  int64_t completed_ = 0;
  double imbalance_sum_ = 0;
  int64_t imbalance_samples_ = 0;
};

Simulation::Simulation(const SimOptions& options, const loadgen::Workload& workload, Policy policy)
    : options_(options),
      workload_(workload),
      policy_(policy),
      total_requests_(workload.total_requests()),
      arrivals_rng_(options.seed ^ 0x6a09e667f3bcc909ULL),
      conversations_(workload.conversations.size()) {
  ReplicaOptions replica = options.replica;
  int n = options.replicas;
  if (policy == Policy::kSingleReplica) {
    replica.kv_blocks *= n;
    replica.max_num_seqs *= n;
    replica.max_num_batched_tokens *= n;
    n = 1;
  }
  std::vector<std::string> addresses;
  for (int r = 0; r < n; ++r) {
    replicas_.emplace_back(replica);
    addresses.push_back("replica-" + std::to_string(r));
  }
  step_pending_.assign(n, false);
  prompt_tokens_sent_.assign(n, 0);
  router_ = std::make_unique<gateway::PoolRouter>(std::move(addresses), PolicyProfile(policy), clock_, options.seed);
  precise_ = router_->profile().Uses(PluginType::kPrecisePrefixCacheScorer);
  requests_.reserve(total_requests_);
  ttfts_.reserve(total_requests_);
  result_.policy = policy;
  result_.replicas = n;
  result_.kv_blocks_per_replica = replica.kv_blocks;
  result_.requests_per_replica.assign(n, 0);
}

void Simulation::AdvanceClockTo(double t) {
  OMNI_CHECK_GE(t, now_);
  now_ = t;
  const auto ns = static_cast<int64_t>(std::llround(t * 1e9));
  clock_.Advance(std::chrono::nanoseconds(ns - clock_ns_));
  clock_ns_ = ns;
}

void Simulation::StartNextConversation() {
  if (next_conversation_ >= static_cast<int>(workload_.conversations.size())) return;
  SendTurn(next_conversation_++, 0);
}

void Simulation::SendTurn(int conversation, int turn) {
  const loadgen::Conversation& conv = workload_.conversations[conversation];
  const std::vector<loadgen::ChatMessage> messages =
      loadgen::BuildChatMessages(workload_, conv, turn, conversations_[conversation].answers);
  const std::string prompt_text = SerializeMessages(messages);
  SimRequest request;
  request.id = static_cast<int64_t>(requests_.size());
  request.tokens = ChatPromptTokens(messages);
  request.prompt_len = static_cast<int>(request.tokens.size());
  request.output_len = options_.output_len;

  gateway::RouteDecision d = router_->Pick(
      {.model = "sim", .prompt_text = prompt_text, .token_ids = request.tokens});
  const int r = d.chosen;

  AppendWordTokens(AnswerText(options_.workload.seed, conversation, turn, options_.output_len), &request.tokens);
  requests_.push_back(RequestState{.conversation = conversation, .turn = turn, .replica = r, .sent = now_,
                                   .kv_tokens = d.kv_tokens});
  ++result_.requests_per_replica[r];
  result_.prompt_tokens += request.prompt_len;
  prompt_tokens_sent_[r] += request.prompt_len;
  replicas_[r].Enqueue(std::move(request));
  WakeReplica(r);
}

void Simulation::WakeReplica(int r) {
  if (step_pending_[r]) return;
  step_pending_[r] = true;
  // Queued at the current time, so every request that arrives at this
  // instant is in the queue when the step is planned.
  Push(now_, EventKind::kStepStart, r);
}

void Simulation::OnStepStart(int r) {
  std::optional<double> seconds = replicas_[r].StartStep();
  FlushKvEvents(r);  // evictions made room for the admitted requests
  if (!seconds) {
    step_pending_[r] = false;
    return;
  }
  Push(now_ + *seconds, EventKind::kStepEnd, r);
}

void Simulation::OnStepEnd(int r) {
  StepOutcome out = replicas_[r].FinishStep();
  FlushKvEvents(r);
  for (const StepOutcome::FirstToken& f : out.first_tokens) {
    ttfts_.push_back(now_ - requests_[f.id].sent);
    result_.cached_tokens += f.cached_tokens;
  }
  for (int64_t id : out.finished) {
    router_->Finish(r, requests_[id].kv_tokens);
    ++completed_;
    result_.output_tokens += options_.output_len;
    result_.duration_s = now_;
    const RequestState& req = requests_[id];
    const loadgen::Conversation& conv = workload_.conversations[req.conversation];
    std::vector<std::string>& answers = conversations_[req.conversation].answers;
    answers.push_back(AnswerText(options_.workload.seed, req.conversation, req.turn, options_.output_len));
    if (req.turn + 1 < static_cast<int>(conv.user_turns.size())) {
      SendTurn(req.conversation, req.turn + 1);
    } else {
      answers = {};
      if (options_.request_rate <= 0) StartNextConversation();
    }
  }
  Push(now_, EventKind::kStepStart, r);
}

void Simulation::FlushKvEvents(int r) {
  std::vector<WireKvEvent> events = replicas_[r].TakeKvEvents();
  if (!precise_ || events.empty()) return;
  KvEventBatch batch;
  batch.timestamp = now_;
  batch.events = std::move(events);
  router_->ApplyKvEvents(r, batch);
}

void Simulation::OnScrape() {
  int max_active = 0;
  int64_t sum_active = 0;
  for (int r = 0; r < static_cast<int>(replicas_.size()); ++r) {
    const SimReplica& rep = replicas_[r];
    router_->ReportLoad(r, gateway::EndpointLoad{.waiting = static_cast<double>(rep.waiting()),
                                                 .running = static_cast<double>(rep.running()),
                                                 .kv_usage = rep.kv_usage(),
                                                 .num_blocks = rep.cache().num_blocks(),
                                                 .block_size = kSimBlockSize,
                                                 .prompt_tokens_total = prompt_tokens_sent_[r]});
    const int active = rep.waiting() + rep.running();
    max_active = std::max(max_active, active);
    sum_active += active;
  }
  if (sum_active > 0) {
    imbalance_sum_ += max_active / (static_cast<double>(sum_active) / replicas_.size());
    ++imbalance_samples_;
  }
  Push(now_ + options_.scrape_interval_s, EventKind::kScrape, 0);
}

PolicyResult Simulation::Run() {
  const auto wall_start = std::chrono::steady_clock::now();
  OnScrape();  // the router has metrics before the first request
  if (options_.request_rate > 0) {
    Push(0, EventKind::kConversationArrival, 0);
  } else {
    for (int c = 0; c < options_.concurrency; ++c) StartNextConversation();
  }
  while (completed_ < total_requests_) {
    OMNI_CHECK(!events_.empty()) << "the simulation stalled";
    const Event e = events_.top();
    events_.pop();
    AdvanceClockTo(e.time);
    switch (e.kind) {
      case EventKind::kScrape:
        OnScrape();
        break;
      case EventKind::kConversationArrival:
        StartNextConversation();
        if (next_conversation_ < static_cast<int>(workload_.conversations.size())) {
          Push(now_ - std::log1p(-Uniform01(arrivals_rng_)) / options_.request_rate, EventKind::kConversationArrival,
               0);
        }
        break;
      case EventKind::kStepStart:
        OnStepStart(e.index);
        break;
      case EventKind::kStepEnd:
        OnStepEnd(e.index);
        break;
    }
  }
  result_.requests = completed_;
  result_.hit_rate = result_.prompt_tokens > 0 ? static_cast<double>(result_.cached_tokens) / result_.prompt_tokens : 0;
  result_.load_imbalance = imbalance_samples_ > 0 ? imbalance_sum_ / imbalance_samples_ : 1.0;
  result_.ttft_s = loadgen::Summarize(std::move(ttfts_));
  result_.output_tokens_per_s = result_.duration_s > 0 ? result_.output_tokens / result_.duration_s : 0;
  result_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return std::move(result_);
}

}  // namespace

Status ValidateSimOptions(const SimOptions& o) {
  OMNI_RETURN_IF_ERROR(loadgen::ValidateWorkloadOptions(o.workload));
  if (o.output_len < 1) return InvalidArgument("--output-len must be >= 1");
  if (o.replicas < 1 || o.replicas > 4096) return InvalidArgument("--replicas must be in [1, 4096]");
  if ((o.concurrency > 0) == (o.request_rate > 0)) {
    return InvalidArgument("give one of --concurrency (closed loop) and --request-rate (open loop)");
  }
  if (o.concurrency < 0 || o.request_rate < 0 || !std::isfinite(o.request_rate)) {
    return InvalidArgument("--concurrency and --request-rate must be positive");
  }
  if (!(o.scrape_interval_s > 0)) return InvalidArgument("--scrape-interval-ms must be > 0");
  const ReplicaOptions& r = o.replica;
  if (r.max_num_batched_tokens < 1) return InvalidArgument("--max-batched-tokens must be >= 1");
  if (r.max_num_seqs < 1) return InvalidArgument("--max-num-seqs must be >= 1");
  const ServiceTimeModel& t = r.time;
  if (!(t.prefill_tokens_per_s > 0) || !(t.decode_tokens_per_s > 0) || !(t.decode_batch_slope >= 0) ||
      !(t.step_overhead_s >= 0)) {
    return InvalidArgument("--prefill-rate and --decode-rate must be > 0, --decode-batch-slope and "
                           "--step-overhead-ms >= 0");
  }
  const int need = SimReplica::BlocksFor(LongestPromptTokens(o), o.output_len);
  if (r.kv_blocks < need) {
    return InvalidArgument("--kv-blocks " + std::to_string(r.kv_blocks) + " cannot hold the longest request (" +
                           std::to_string(need) + " blocks of " + std::to_string(kSimBlockSize) + " tokens)");
  }
  return Status::Ok();
}

PolicyResult SimulatePolicy(const SimOptions& options, const loadgen::Workload& workload, Policy policy) {
  OMNI_CHECK(ValidateSimOptions(options).ok()) << ValidateSimOptions(options).ToString();
  Simulation sim(options, workload, policy);
  return sim.Run();
}

}  // namespace omni::routing_sim

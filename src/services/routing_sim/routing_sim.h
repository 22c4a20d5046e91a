// `omniserve bench simulate`: the gateway's real PoolRouter against simulated
// LLM replicas (SimReplica), a discrete-event simulation in virtual time, to
// plan fleets larger than one machine can host (docs/BENCH.md, "Routing
// simulator").
//
// Conversations come from the bench workloads (services/loadgen/workload.h);
// each turn resends the conversation so far, and the simulated answer of
// `output_len` words is part of the next turn. Every request is picked by
// the router (scorers, filters, picker of the policy's profile), served by
// the chosen replica, and finished on the router when its last token is out.
// Replicas report load to the router every scrape interval and send their KV
// events to it as they happen; the router's clock is a FakeClock that follows
// virtual time.
//
// Deterministic for (options, policy): no threads, no wall clock in the
// results except `wall_s`.
#pragma once

#include <cstdint>
#include <optional>

#include "core/status.h"
#include "services/loadgen/stats.h"
#include "services/loadgen/workload.h"
#include "services/routing_sim/routing_policy.h"
#include "services/routing_sim/sim_replica.h"

namespace omni::routing_sim {

struct SimOptions {
  loadgen::WorkloadOptions workload;  // shapes, lengths, num_requests, prompt seed
  int output_len = 128;               // tokens of every answer
  int replicas = 8;
  ReplicaOptions replica;
  int concurrency = 0;                // closed loop: conversations in flight
  double request_rate = 0;            // open loop: Poisson conversation arrivals per second
  double scrape_interval_s = 0.05;    // ReportLoad period
  uint64_t seed = 0;                  // router tie-breaks and arrival times
};

// Exactly one of concurrency / request_rate, positive sizes, and a KV budget
// that holds the longest request of the workload.
Status ValidateSimOptions(const SimOptions& options);

struct PolicyResult {
  Policy policy = Policy::kRoundRobin;
  int replicas = 0;
  int kv_blocks_per_replica = 0;
  int64_t requests = 0;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens the replicas' prefix caches supplied
  int64_t output_tokens = 0;
  double hit_rate = 0;        // cached_tokens / prompt_tokens
  // Mean over the scrapes that saw any request of max / mean active
  // (waiting + running) requests per replica; 1 is perfectly even.
  double load_imbalance = 0;
  loadgen::Distribution ttft_s;  // virtual seconds from send to first token
  double duration_s = 0;         // virtual: the last request's finish
  double output_tokens_per_s = 0;
  std::vector<int64_t> requests_per_replica;
  double wall_s = 0;             // real seconds the simulation took; not deterministic
};

// Runs one policy over `workload` (GenerateWorkload(options.workload)).
// kSingleReplica runs one replica with replicas x kv_blocks blocks (and as
// many sequences and batched tokens), for its hit rate; its times are not a
// fleet's.
PolicyResult SimulatePolicy(const SimOptions& options, const loadgen::Workload& workload, Policy policy);

}  // namespace omni::routing_sim

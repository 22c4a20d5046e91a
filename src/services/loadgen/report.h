// The outputs of `omniserve bench`: a table for people and a JSON document
// for scripts (schema in docs/BENCH.md). Pure formatting.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "services/loadgen/runner.h"
#include "services/loadgen/stats.h"
#include "services/loadgen/workload.h"

namespace omni::loadgen {

// Everything that defines a run, echoed into the report.
struct BenchConfig {
  std::string base_url;
  std::string label;  // free text naming the run, e.g. a routing policy
  WorkloadOptions workload;  // lengths in words, as generated
  LoadOptions load;
  // Set by --calibrate: the server's tokens per bench word, used to turn
  // token lengths into the word counts above.
  std::optional<double> tokens_per_word;
};

inline constexpr int kReportSchemaVersion = 1;

// The JSON report; `requests` (possibly empty) adds one entry per request.
std::string BenchReportJson(const BenchConfig& config, const BenchSummary& summary,
                            std::span<const RequestRecord> requests);
// The human-readable table printed on stdout.
std::string FormatSummaryTable(const BenchConfig& config, const BenchSummary& summary);

}  // namespace omni::loadgen

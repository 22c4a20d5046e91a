// The simulator's output: a text table (one row per policy) and a JSON
// report (docs/BENCH.md, "Routing simulator").
#pragma once

#include <span>
#include <string>

#include "services/routing_sim/routing_sim.h"

namespace omni::routing_sim {

// The header lines (fleet, workload, service-time model) and one row per
// policy. When a single-replica row is among `results`, every row also shows
// its hit rate over that ceiling.
std::string FormatSimTable(const SimOptions& options, std::span<const PolicyResult> results);
// {"schema_version": 1, "config": {...}, "results": [{...}, ...]}.
std::string SimReportJson(const SimOptions& options, std::span<const PolicyResult> results);

}  // namespace omni::routing_sim

#include "cli/role_registry.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <string_view>

#include "cli/bench_command.h"
#include "cli/demo_model_command.h"
#include "cli/gateway_command.h"
#include "cli/generate_command.h"
#include "cli/decoder_command.h"
#include "cli/encoder_command.h"
#include "cli/llm_command.h"
#include "cli/orchestrator_command.h"
#include "cli/roles.h"
#include "cli/simulate_command.h"
#include "cli/store_command.h"
#include "cli/up_command.h"
#include "cli/version.h"
#include "core/check.h"
#include "ops/cpu_info.h"

namespace omni::cli {
namespace {

// A role whose flags live in one struct, added and run by a pair of functions.
template <typename Flags>
RoleCommand FlagsRole(std::string name, CLI::App* (*add)(CLI::App&, Flags*), int (*run)(const Flags&)) {
  auto flags = std::make_shared<Flags>();
  return RoleCommand{std::move(name), [flags, add](CLI::App& app) { return add(app, flags.get()); },
                     [flags, run](const GlobalFlags&) { return run(*flags); }};
}

RoleCommand UpRole(const RoleInfo& info, std::string self_path) {
  auto up = std::make_shared<UpOptions>();
  up->self_path = std::move(self_path);
  auto start_timeout_s = std::make_shared<int>(600);
  return RoleCommand{std::string(info.name),
                     [up, info, start_timeout_s](CLI::App& app) {
                       CLI::App* sub = app.add_subcommand(std::string(info.name), std::string(info.summary));
                       sub->add_option("--host", up->host, "address for the client port")->capture_default_str();
                       sub->add_option("--port", up->port, "client port (0: the OS picks; up logs it)")
                           ->capture_default_str();
                       sub->add_option("--data-dir", up->data_dir, "models and objects (default $HOME/.cache/omniserve)");
                       sub->add_option("--llm-replicas", up->llm_replicas,
                                       "LLM servers behind the gateway (default: the config's llm.replicas, else 2)")
                           ->check(CLI::Range(1, 64));
                       sub->add_option("--config", up->config,
                                       "the stack's model folders, store and role flags (YAML; docs/CLI.md); "
                                       "default: the demo model on a local store")
                           ->check(CLI::ExistingFile);
                       sub->add_option("--start-timeout-s", *start_timeout_s,
                                       "how long each role may take to become healthy; the next starts after it")
                           ->capture_default_str()
                           ->check(CLI::Range(1, 86'400));
                       return sub;
                     },
                     [up, start_timeout_s](const GlobalFlags& global) {
                       up->log_level = global.log_level;  // passed on to every child
                       up->log_format = global.log_format;
                       up->start_timeout = std::chrono::seconds(*start_timeout_s);
                       return RunUp(*up);
                     }};
}

RoleCommand StoreRole() {
  auto flags = std::make_shared<StoreFlags>();
  auto sub = std::make_shared<CLI::App*>(nullptr);
  return RoleCommand{"store",
                     [flags, sub](CLI::App& app) { return *sub = AddStoreCommand(app, flags.get()); },
                     [flags, sub](const GlobalFlags&) { return RunStoreCommand(*sub, *flags); }};
}

// `bench` and its `bench simulate` subcommand.
RoleCommand BenchRole() {
  auto bench = std::make_shared<BenchFlags>();
  auto simulate = std::make_shared<SimulateFlags>();
  auto simulate_cmd = std::make_shared<CLI::App*>(nullptr);
  return RoleCommand{"bench",
                     [=](CLI::App& app) {
                       CLI::App* sub = AddBenchCommand(app, bench.get());
                       *simulate_cmd = AddSimulateCommand(*sub, simulate.get());
                       return sub;
                     },
                     [=](const GlobalFlags&) {
                       return (*simulate_cmd)->parsed() ? RunSimulateCommand(*simulate) : RunBenchCommand(*bench);
                     }};
}

RoleCommand VersionRole(const RoleInfo& info) {
  RoleCommand r{std::string(info.name),
                [info](CLI::App& app) { return app.add_subcommand(std::string(info.name), std::string(info.summary)); },
                [](const GlobalFlags&) {
                  std::printf("omniserve %s (%s, %s, %s)\n", OMNI_VERSION, OMNI_GIT_REVISION, OMNI_BUILD_TYPE,
                              OMNI_COMPILER);
                  std::printf("cpu kernels: %s\n", ops::GetCpuKernelsInfo().summary.c_str());
                  return 0;
                }};
  r.logs = false;
  return r;
}

// A planned role: listed in --help with where its work is tracked, and
// refused with that if run.
RoleCommand PlannedRole(const RoleInfo& info) {
  return RoleCommand{std::string(info.name),
                     [info](CLI::App& app) {
                       std::string summary = std::string(info.summary) + " [not in this build yet: " +
                                             std::string(info.tracked) + "]";
                       CLI::App* sub = app.add_subcommand(std::string(info.name), summary);
                       sub->allow_extras();
                       return sub;
                     },
                     [info](const GlobalFlags&) {
                       std::fprintf(stderr, "omniserve: the %.*s role is not in this build yet (%.*s)\n",
                                    static_cast<int>(info.name.size()), info.name.data(),
                                    static_cast<int>(info.tracked.size()), info.tracked.data());
                       return 2;
                     }};
}

}  // namespace

std::vector<RoleCommand> MakeRoleCommands(std::string self_path) {
  using Factory = std::function<RoleCommand(const RoleInfo&)>;
  const std::map<std::string_view, Factory> built = {
      {"up", [&](const RoleInfo& info) { return UpRole(info, self_path); }},
      {"gateway", [](const RoleInfo&) { return FlagsRole<GatewayFlags>("gateway", AddGatewayCommand, RunGatewayCommand); }},
      {"llm", [](const RoleInfo&) { return FlagsRole<LlmFlags>("llm", AddLlmCommand, RunLlmCommand); }},
      {"encoder",
       [](const RoleInfo&) { return FlagsRole<EncoderFlags>("encoder", AddEncoderCommand, RunEncoderCommand); }},
      {"decoder",
       [](const RoleInfo&) {
         // The decoder passes the global log flags on to its --sp ranks.
         auto flags = std::make_shared<DecoderFlags>();
         return RoleCommand{"decoder", [flags](CLI::App& app) { return AddDecoderCommand(app, flags.get()); },
                            [flags](const GlobalFlags& global) {
                              flags->log_level = global.log_level;
                              flags->log_format = global.log_format;
                              return RunDecoderCommand(*flags);
                            }};
       }},
      {"orchestrator",
       [](const RoleInfo&) {
         return FlagsRole<OrchestratorFlags>("orchestrator", AddOrchestratorCommand, RunOrchestratorCommand);
       }},
      {"generate",
       [](const RoleInfo&) { return FlagsRole<GenerateFlags>("generate", AddGenerateCommand, RunGenerateCommand); }},
      {"make-demo-model",
       [](const RoleInfo&) {
         return FlagsRole<DemoModelFlags>("make-demo-model", AddDemoModelCommand, RunDemoModelCommand);
       }},
      {"store", [](const RoleInfo&) { return StoreRole(); }},
      {"bench", [](const RoleInfo&) { return BenchRole(); }},
      {"version", VersionRole},
  };
  std::vector<RoleCommand> out;
  for (const RoleInfo& info : kRoles) {
    if (!info.built) {
      out.push_back(PlannedRole(info));
      continue;
    }
    auto it = built.find(info.name);
    OMNI_CHECK(it != built.end()) << "role " << info.name << " is marked built but has no command";
    out.push_back(it->second(info));
  }
  return out;
}

}  // namespace omni::cli

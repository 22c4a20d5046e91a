// omniserve: one binary, one role per subcommand (docs/CLI.md).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/bench_command.h"
#include "cli/demo_model_command.h"
#include "cli/generate_command.h"
#include "cli/gateway_command.h"
#include "cli/llm_command.h"
#include "cli/roles.h"
#include "cli/simulate_command.h"
#include "cli/store_command.h"
#include "cli/up_command.h"
#include "cli/version.h"
#include "core/log.h"

namespace {

struct GlobalFlags {
  std::string log_level = "info";
  std::string log_format = "text";
};

int InitLogging(const GlobalFlags& flags, std::string_view role) {
  omni::log::LogOptions opts;
  if (!omni::log::ParseLevel(flags.log_level, &opts.level)) {
    std::fprintf(stderr, "omniserve: --log-level: unknown level '%s' (debug|info|warn|error|off)\n",
                 flags.log_level.c_str());
    return 2;
  }
  opts.json = flags.log_format == "json";
  opts.role = std::string(role);
  omni::log::Init(opts);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"omniserve: disaggregated serving for omni-modal models"};
  app.require_subcommand(1);
  app.footer("Run `omniserve ROLE --help` for a role's flags. Docs: docs/CLI.md");
  GlobalFlags flags;
  app.add_option("--log-level", flags.log_level, "debug|info|warn|error|off")->capture_default_str();
  app.add_option("--log-format", flags.log_format, "text (logfmt) or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  omni::cli::UpOptions up;
  // The supervisor re-executes this binary for each role; /proc/self/exe
  // works however the binary was invoked (PATH, relative path, symlink).
  std::error_code ec;
  up.self_path = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) up.self_path = argv[0];
  omni::cli::StoreFlags store;
  omni::cli::DemoModelFlags demo;
  CLI::App* up_cmd = nullptr;
  CLI::App* store_cmd = nullptr;
  CLI::App* demo_cmd = nullptr;
  omni::cli::BenchFlags bench;
  CLI::App* bench_cmd = nullptr;
  omni::cli::SimulateFlags simulate;
  CLI::App* simulate_cmd = nullptr;
  omni::cli::LlmFlags llm;
  CLI::App* llm_cmd = nullptr;
  omni::cli::GatewayFlags gateway;
  CLI::App* gateway_cmd = nullptr;
  omni::cli::GenerateFlags generate;
  CLI::App* generate_cmd = nullptr;
  for (const auto& role : omni::cli::kRoles) {
    if (role.name == "store") {
      store_cmd = omni::cli::AddStoreCommand(app, &store);
      continue;
    }
    if (role.name == "bench") {
      bench_cmd = omni::cli::AddBenchCommand(app, &bench);
      simulate_cmd = omni::cli::AddSimulateCommand(*bench_cmd, &simulate);
      continue;
    }
    if (role.name == "gateway") {
      gateway_cmd = omni::cli::AddGatewayCommand(app, &gateway);
      continue;
    }
    if (role.name == "llm") {
      llm_cmd = omni::cli::AddLlmCommand(app, &llm);
      continue;
    }
    if (role.name == "generate") {
      generate_cmd = omni::cli::AddGenerateCommand(app, &generate);
      continue;
    }
    if (role.name == "make-demo-model") {
      demo_cmd = omni::cli::AddDemoModelCommand(app, &demo);
      continue;
    }
    std::string summary(role.summary);
    if (!role.built) summary += " [not in this build yet: " + std::string(role.tracked) + "]";
    CLI::App* sub = app.add_subcommand(std::string(role.name), summary);
    if (role.name == "up") {
      up_cmd = sub;
      sub->add_option("--host", up.host, "address for the client port")->capture_default_str();
      sub->add_option("--port", up.port, "client port (0: the OS picks; the llm role logs it)")->capture_default_str();
      sub->add_option("--data-dir", up.data_dir, "models and objects (default $HOME/.cache/omniserve)");
    } else if (!role.built) {
      sub->allow_extras();
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, so scripts can show it as is (CLI11 adds a second).
    std::fprintf(stderr, "omniserve: %s (see --help)\n", e.what());
    return e.get_exit_code() != 0 ? e.get_exit_code() : 2;
  }

  CLI::App* chosen = app.get_subcommands().front();
  const std::string role = chosen->get_name();
  if (role == "version") {
    std::printf("omniserve %s (%s, %s, %s)\n", OMNI_VERSION, OMNI_GIT_REVISION, OMNI_BUILD_TYPE, OMNI_COMPILER);
    return 0;
  }
  if (int rc = InitLogging(flags, role); rc != 0) return rc;
  if (chosen == up_cmd) {
    up.log_level = flags.log_level;
    up.log_format = flags.log_format;
    return omni::cli::RunUp(up);
  }
  if (chosen == store_cmd) return omni::cli::RunStoreCommand(store_cmd, store);
  if (chosen == demo_cmd) return omni::cli::RunDemoModelCommand(demo);
  if (chosen == bench_cmd) {
    if (simulate_cmd->parsed()) return omni::cli::RunSimulateCommand(simulate);
    return omni::cli::RunBenchCommand(bench);
  }
  if (chosen == llm_cmd) return omni::cli::RunLlmCommand(llm);
  if (chosen == gateway_cmd) return omni::cli::RunGatewayCommand(gateway);
  if (chosen == generate_cmd) return omni::cli::RunGenerateCommand(generate);
  for (const auto& r : omni::cli::kRoles) {
    if (r.name == role && !r.built) {
      std::fprintf(stderr, "omniserve: the %s role is not in this build yet (%.*s)\n", role.c_str(),
                   static_cast<int>(r.tracked.size()), r.tracked.data());
      return 2;
    }
  }
  return 0;
}

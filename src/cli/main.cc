// omniserve: one binary, one role per subcommand (docs/CLI.md). The roles
// are a table (role_registry.h); main parses and runs the chosen one.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/role_registry.h"
#include "core/log.h"

namespace {

int InitLogging(const omni::cli::GlobalFlags& flags, std::string_view role) {
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
  omni::cli::GlobalFlags flags;
  app.add_option("--log-level", flags.log_level, "debug|info|warn|error|off")->capture_default_str();
  app.add_option("--log-format", flags.log_format, "text (logfmt) or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  // The supervisor re-executes this binary for each role; /proc/self/exe
  // works however the binary was invoked (PATH, relative path, symlink).
  std::error_code ec;
  std::string self_path = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) self_path = argv[0];
  std::vector<omni::cli::RoleCommand> roles = omni::cli::MakeRoleCommands(std::move(self_path));
  std::vector<CLI::App*> subcommands;
  for (auto& role : roles) subcommands.push_back(role.add(app));

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
  for (size_t i = 0; i < roles.size(); ++i) {
    if (subcommands[i] != chosen) continue;
    if (roles[i].logs) {
      if (int rc = InitLogging(flags, roles[i].name); rc != 0) return rc;
    }
    return roles[i].run(flags);
  }
  std::fprintf(stderr, "omniserve: no role %s\n", chosen->get_name().c_str());
  return 2;
}

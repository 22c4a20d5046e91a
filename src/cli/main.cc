// omniserve: one binary, one role per subcommand (docs/CLI.md).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "cli/roles.h"
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
  up.self_path = argv[0];
  CLI::App* up_cmd = nullptr;
  std::string unbuilt;
  for (const auto& role : omni::cli::kRoles) {
    std::string summary(role.summary);
    if (!role.built) summary += " [not in this build yet: " + std::string(role.tracked) + "]";
    CLI::App* sub = app.add_subcommand(std::string(role.name), summary);
    if (role.name == "up") {
      up_cmd = sub;
      sub->add_option("--host", up.host, "address for the client port")->capture_default_str();
      sub->add_option("--port", up.port, "client port (0: the OS picks)")->capture_default_str();
    } else if (!role.built) {
      sub->allow_extras();
    }
  }

  CLI11_PARSE(app, argc, argv);

  CLI::App* chosen = app.get_subcommands().front();
  const std::string role = chosen->get_name();
  if (role == "version") {
    std::printf("omniserve %s (%s, %s, %s)\n", OMNI_VERSION, OMNI_GIT_REVISION, OMNI_BUILD_TYPE, OMNI_COMPILER);
    return 0;
  }
  if (int rc = InitLogging(flags, role); rc != 0) return rc;
  if (chosen == up_cmd) return omni::cli::RunUp(up);
  for (const auto& r : omni::cli::kRoles) {
    if (r.name == role && !r.built) {
      std::fprintf(stderr, "omniserve: the %s role is not in this build yet (%.*s)\n", role.c_str(),
                   static_cast<int>(r.tracked.size()), r.tracked.data());
      return 2;
    }
  }
  return 0;
}

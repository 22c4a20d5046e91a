// The roles of the binary as one table: each entry registers its
// subcommand and flags on the CLI11 app and runs once the command line is
// parsed. main() walks the table; adding a role is one entry here, not an
// edit of main's dispatch (docs/CLI.md).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace omni::cli {

// Flags every role shares (before the role's name on the command line).
struct GlobalFlags {
  std::string log_level = "info";
  std::string log_format = "text";
};

struct RoleCommand {
  std::string name;
  // Adds the subcommand (and its flags) to `app`; returns it.
  std::function<CLI::App*(CLI::App& app)> add;
  // Runs the parsed subcommand; returns the process exit code.
  std::function<int(const GlobalFlags& global)> run;
  // False for the version role: it prints and needs no logging.
  bool logs = true;
};

// One entry per role of kRoles (roles.h), in that order; roles this build
// does not have yet answer with where their work is tracked. `self_path`
// is this binary, which `up` starts again for each child role.
std::vector<RoleCommand> MakeRoleCommands(std::string self_path);

}  // namespace omni::cli

#include "cli/up_command.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "cli/demo_model_command.h"
#include "cli/roles.h"
#include "core/log.h"
#include "services/supervisor.h"

namespace omni::cli {
namespace {

constexpr char kDemoModelName[] = "omni-demo";

// The roles of the full stack, in start order; `up` starts the ones this
// build has and says which it lacks.
constexpr std::string_view kStackRoles[] = {"llm", "encoder", "decoder", "gateway", "orchestrator"};

bool IsBuilt(std::string_view role) {
  for (const auto& r : kRoles) {
    if (r.name == role) return r.built;
  }
  return false;
}

std::string DefaultDataDir() {
  const char* home = std::getenv("HOME");  // read here, at the process edge
  return home != nullptr && *home != '\0' ? std::string(home) + "/.cache/omniserve" : ".omniserve";
}

// Writes the demo LLM once; later starts reuse it.
StatusOr<std::string> EnsureDemoModel(const std::string& data_dir) {
  std::string dir = data_dir + "/models/" + kDemoModelName;
  if (std::filesystem::exists(dir + "/config.json")) return dir;
  OMNI_LOG(kInfo, "up: writing the demo model to {}", dir);
  DemoModelFlags flags;
  flags.out = dir;
  OMNI_RETURN_IF_ERROR(WriteDemoModel(flags));
  return dir;
}

std::vector<ChildSpec> StackChildren(const UpOptions& options, const std::string& model_dir) {
  // The llm role serves the client port until the orchestrator exists.
  return {ChildSpec{.name = "llm",
                    .argv = {options.self_path, "--log-level", options.log_level, "--log-format",
                             options.log_format, "llm", "--model", model_dir, "--host", options.host, "--port",
                             std::to_string(options.port), "--served-model-name", kDemoModelName}}};
}

// Blocks SIGTERM and SIGINT in this thread (children start with a clean
// mask) and waits for them while polling the supervisor.
int SuperviseUntilSignal(Supervisor& sup) {
  for (;;) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    timespec tick{0, 100'000'000};
    int sig = sigtimedwait(&set, nullptr, &tick);
    if (sig == SIGTERM || sig == SIGINT) {
      OMNI_LOG(kInfo, "up: signal {} received; stopping the roles", sig);
      return 0;
    }
    sup.Poll();
  }
}

}  // namespace

int RunUp(const UpOptions& options) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  std::string data_dir = options.data_dir.empty() ? DefaultDataDir() : options.data_dir;
  auto model_dir = EnsureDemoModel(data_dir);
  if (!model_dir.ok()) {
    OMNI_LOG(kError, "up: {}", model_dir.status().ToString());
    return 1;
  }
  std::vector<ChildSpec> children = StackChildren(options, *model_dir);
  // What runs is what was started; the rest of the stack is named as either
  // not started by `up` yet or not in this build.
  std::string started, not_started, missing;
  for (std::string_view role : kStackRoles) {
    bool runs = false;
    for (const ChildSpec& c : children) runs = runs || c.name == role;
    std::string& list = runs ? started : IsBuilt(role) ? not_started : missing;
    list += (list.empty() ? "" : ", ") + std::string(role);
  }
  Supervisor sup(SupervisorOptions{});
  if (Status s = sup.Start(std::move(children)); !s.ok()) {
    OMNI_LOG(kError, "up: {}", s.ToString());
    return 1;
  }
  OMNI_LOG(kInfo, "up: roles started: {}; built but not started by up yet: {}; not in this build yet: {}", started,
           not_started.empty() ? "none" : not_started, missing.empty() ? "none" : missing);
  OMNI_LOG(kInfo, "up: the OpenAI API (model {}) is served by the llm role on {}:{}", kDemoModelName, options.host,
           options.port);
  int rc = SuperviseUntilSignal(sup);
  sup.Stop();
  OMNI_LOG(kInfo, "up: stopped");
  return rc;
}

}  // namespace omni::cli

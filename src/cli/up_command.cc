#include "cli/up_command.h"

#include <atomic>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/roles.h"
#include "core/log.h"
#include "net/http_server.h"
#include "services/supervisor.h"

namespace omni::cli {
namespace {

// The roles `up` would start, in start order. Each starts only once this
// build has it (roles.h); until then `up` says which are missing.
constexpr std::string_view kStackRoles[] = {"llm", "encoder", "decoder", "gateway", "orchestrator"};

bool IsBuilt(std::string_view role) {
  for (const auto& r : kRoles) {
    if (r.name == role) return r.built;
  }
  return false;
}

nlohmann::json StackJson(const Supervisor& sup) {
  nlohmann::json roles = nlohmann::json::array();
  for (std::string_view role : kStackRoles) {
    nlohmann::json r = {{"role", role}, {"built", IsBuilt(role)}};
    for (const auto& c : sup.children()) {
      if (c.name == role) {
        r["pid"] = c.pid;
        r["restarts"] = c.restarts;
      }
    }
    roles.push_back(r);
  }
  return {{"object", "omniserve.stack"}, {"roles", roles}};
}

}  // namespace

int RunUp(const UpOptions& options) {
  std::vector<ChildSpec> children;  // filled as roles land in this build
  std::string missing;
  for (std::string_view role : kStackRoles) {
    if (!IsBuilt(role)) missing += (missing.empty() ? "" : ", ") + std::string(role);
  }

  Supervisor sup(SupervisorOptions{});
  if (Status s = sup.Start(std::move(children)); !s.ok()) {
    OMNI_LOG(kError, "up: {}", s.ToString());
    return 1;
  }

  HttpServerOptions http;
  http.host = options.host;
  http.port = options.port;
  HttpServer server(http);
  server.RouteInline(HttpMethod::kGet, "/v1/models", [](const HttpRequest&) {
    // No LLM role runs yet, so no model is served.
    return JsonResponse(200, R"({"object":"list","data":[]})");
  });
  server.RouteInline(HttpMethod::kGet, "/", [&sup](const HttpRequest&) {
    return JsonResponse(200, StackJson(sup).dump());
  });
  const std::string why = "no model is served: this build has no " + missing +
                          " role yet (GET / lists the roles of the stack)";
  for (const char* path : {"/v1/chat/completions", "/b/v1/chat/completions", "/v1/completions"}) {
    server.RouteInline(HttpMethod::kPost, path, [why](const HttpRequest&) {
      return ErrorResponse(Unavailable(why).WithErrorCode("no_model_served"));
    });
  }
  if (Status s = server.Start(); !s.ok()) {
    OMNI_LOG(kError, "up: cannot serve {}:{}: {}", options.host, options.port, s.ToString());
    sup.Stop();
    return 1;
  }
  OMNI_LOG(kInfo, "up: serving http://{}:{} (GET / for the stack, /health, /metrics, /v1/models)", options.host,
           server.port());
  OMNI_LOG(kInfo, "up: roles started: {}; not in this build yet: {}",
           sup.children().empty() ? std::string("none") : std::to_string(sup.children().size()), missing);

  std::atomic<bool> stop{false};
  std::thread poller([&] {
    while (!stop.load()) {
      sup.Poll();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  server.RunUntilSignal();  // drains the client port first
  stop = true;
  poller.join();
  sup.Stop();
  OMNI_LOG(kInfo, "up: stopped");
  return 0;
}

}  // namespace omni::cli

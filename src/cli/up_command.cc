#include "cli/up_command.h"

#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "cli/demo_model_command.h"
#include "cli/process_info.h"
#include "cli/roles.h"
#include "core/log.h"
#include "net/http_client.h"
#include "services/stack_config.h"
#include "services/supervisor.h"

namespace omni::cli {
namespace {

constexpr char kDemoModelName[] = "omni-demo";
constexpr char kDemoVisionEncoderName[] = "omni-demo-ve";
constexpr char kDemoAudioEncoderName[] = "omni-demo-ae";
constexpr char kDemoVisionDecoderName[] = "omni-demo-vd";
constexpr char kDemoAudioDecoderName[] = "omni-demo-ad";

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

// Writes a demo component folder once (an encoder's projector writes the
// demo LLM's width); later starts reuse it. `marker` is the file that shows
// the folder is complete.
StatusOr<std::string> EnsureDemoComponent(const std::string& data_dir, std::string_view name,
                                          std::string_view component, std::string_view marker) {
  std::string dir = data_dir + "/models/" + std::string(name);
  if (std::filesystem::exists(dir + "/" + std::string(marker))) return dir;
  OMNI_LOG(kInfo, "up: writing the demo {} to {}", component, dir);
  DemoModelFlags flags;
  flags.component = std::string(component);
  flags.out = dir;
  OMNI_RETURN_IF_ERROR(WriteDemoModel(flags));
  return dir;
}

// `n` distinct ports the OS reports free on `host` now (each bound to port 0,
// all held until the last is picked, then closed); the children bind them a
// moment later. `up` must know every child's port before the child starts:
// to gate on its /health and to point the roles that depend on it there.
// Another process could still take one in between; that child then fails to
// bind and the start fails naming it.
StatusOr<std::vector<uint16_t>> PickFreePorts(const std::string& host, int n) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* info = nullptr;
  if (int rc = getaddrinfo(host.c_str(), "0", &hints, &info); rc != 0) {
    return InvalidArgument("--host " + host + " is not an IP address: " + gai_strerror(rc));
  }
  std::vector<int> fds;
  std::vector<uint16_t> ports;
  for (int i = 0; i < n; ++i) {
    const int fd = socket(info->ai_family, SOCK_STREAM, 0);
    if (fd < 0) break;
    fds.push_back(fd);
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    if (bind(fd, info->ai_addr, info->ai_addrlen) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
      break;
    }
    const uint16_t port = bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                      : reinterpret_cast<sockaddr_in*>(&bound)->sin_port;
    ports.push_back(ntohs(port));
  }
  freeaddrinfo(info);
  for (int fd : fds) close(fd);
  if (static_cast<int>(ports.size()) != n) return Unavailable("cannot find free ports on " + host);
  return ports;
}

std::string HostPort(const std::string& host, uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string BaseUrl(const std::string& host, uint16_t port) { return "http://" + HostPort(host, port); }

// The cores each of `replicas` LLM servers computes on: the machine's cores
// shared out, at least one each. Each replica otherwise takes every core,
// and N spinning OpenMP teams on the same cores slow every step many times
// over (bench/orchestrator/prefix_hits.sh measured 26x on 2 cores).
int ThreadsPerReplica(int replicas) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, replicas));
}

// Ready once GET /health answers 200 (a role answers 503 while it loads).
std::function<bool()> HealthReady(HttpClient& client, std::string url) {
  return [&client, url = std::move(url)] {
    StatusOr<HttpClientResponse> r =
        client.Request(HttpClientRequest{.url = url, .timeout = std::chrono::milliseconds(1000)});
    return r.ok() && r->status == 200;
  };
}

// `s` as a YAML single-quoted scalar (a data dir may hold any character).
std::string YamlQuoted(std::string_view s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// One single-server pool behind the gateway: an encoder or a decoder.
struct SidePool {
  std::string role;   // the gateway's pool role, also the pool's name
  std::string model;  // served name
  uint16_t port = 0;
};

// The gateway's config for the stack: one LLM pool over the replicas, picked
// by llm-d's default weights (prefix 3, queue 2, KV utilization 2) after the
// health and saturation filters (docs/GATEWAY.md); one pool per encoder and
// decoder, picked by the gateway's own count of requests in flight. The
// stack's store lets a precise-prefix-cache-scorer (a hand-edited config)
// score media parts.
std::string GatewayYaml(const std::string& host, const std::vector<uint16_t>& llm_ports, const std::string& model,
                        const std::vector<SidePool>& side_pools, const std::string& store_uri) {
  std::string endpoints;
  for (uint16_t p : llm_ports) endpoints += (endpoints.empty() ? "\"" : ", \"") + HostPort(host, p) + "\"";
  std::string yaml = "# Written by `omniserve up` at every start.\n"
                     "store: " + YamlQuoted(store_uri) + "\n"
                     "plugins:\n"
                     "- {type: health-filter}\n"
                     "- {type: saturation-filter}\n"
                     "- {type: prefix-cache-scorer}\n"
                     "- {type: queue-scorer}\n"
                     "- {type: kv-cache-utilization-scorer}\n"
                     "- {type: active-request-scorer}\n"
                     "- {type: max-score-picker}\n"
                     "schedulingProfiles:\n"
                     "- name: default\n"
                     "  plugins:\n"
                     "  - {pluginRef: health-filter}\n"
                     "  - {pluginRef: saturation-filter}\n"
                     "  - {pluginRef: prefix-cache-scorer, weight: 3}\n"
                     "  - {pluginRef: queue-scorer, weight: 2}\n"
                     "  - {pluginRef: kv-cache-utilization-scorer, weight: 2}\n"
                     "  - {pluginRef: max-score-picker}\n"
                     "- name: encoder\n"
                     "  plugins:\n"
                     "  - {pluginRef: health-filter}\n"
                     "  - {pluginRef: active-request-scorer, weight: 1}\n"
                     "  - {pluginRef: max-score-picker}\n"
                     "pools:\n"
                     "- name: llm\n"
                     "  role: llm\n"
                     "  models: [" + YamlQuoted(model) + "]\n"
                     "  endpoints: [" + endpoints + "]\n"
                     "  schedulingProfile: default\n";
  for (const SidePool& p : side_pools) {
    yaml += "- name: " + p.role + "\n"
            "  role: " + p.role + "\n"
            "  models: [" + YamlQuoted(p.model) + "]\n"
            "  endpoints: [\"" + HostPort(host, p.port) + "\"]\n"
            "  schedulingProfile: encoder\n";
  }
  return yaml;
}

Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) return Internal("cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Internal("cannot write " + path + ": " + ec.message());
  return Status::Ok();
}

// ", voices: {name: {id: .., gender: .., age: ..}, ...}", or nothing.
std::string VoicesYaml(const std::map<std::string, orchestrator::SpeakerSpec, std::less<>>& voices) {
  if (voices.empty()) return "";
  std::string yaml = ", voices: {";
  bool first = true;
  for (const auto& [name, spec] : voices) {
    std::string fields;
    for (const auto& [key, value] : {std::pair<const char*, const std::string&>{"id", spec.id}, {"gender", spec.gender},
                                     {"age", spec.age}}) {
      if (!value.empty()) fields += (fields.empty() ? "" : ", ") + std::string(key) + ": " + YamlQuoted(value);
    }
    yaml += (first ? "" : ", ") + YamlQuoted(name) + ": {" + fields + "}";
    first = false;
  }
  return yaml + "}";
}

// The orchestrator's config for the stack: the gateway, the local store,
// and every child on its /health report.
std::string OrchestratorYaml(const std::string& gateway_url, const std::string& store_uri,
                             const orchestrator::OrchestratorTimeouts& t, const orchestrator::MediaConfig& media,
                             const orchestrator::ImagesConfig& images, const orchestrator::SpeechConfig& speech,
                             const std::vector<std::pair<std::string, std::string>>& components) {
  std::string yaml = "# Written by `omniserve up` at every start.\n"
                     "gateway: " + gateway_url + "\n"
                     "store: " + YamlQuoted(store_uri) + "\n"
                     "timeouts: {connect_ms: " + std::to_string(t.connect.count()) +
                     ", llm_s: " + std::to_string(t.llm.count() / 1000) +
                     ", models_ms: " + std::to_string(t.models.count()) +
                     ", probe_ms: " + std::to_string(t.probe.count()) + "}\n"
                     "media: {vision_encoder: " + YamlQuoted(media.vision_encoder) +
                     ", audio_encoder: " + YamlQuoted(media.audio_encoder) +
                     ", max_bytes: " + std::to_string(media.max_bytes) +
                     ", fetch_timeout_ms: " + std::to_string(media.fetch_timeout.count()) +
                     ", encode_s: " + std::to_string(media.encode_timeout.count() / 1000) +
                     ", max_parts: " + std::to_string(media.max_parts) +
                     ", max_pending: " + std::to_string(media.max_pending) +
                     (media.fetch_ca_file.empty() ? std::string() : ", fetch_ca_file: " + YamlQuoted(media.fetch_ca_file)) +
                     ", fetch_allow_loopback: " + (media.fetch_allow_loopback ? "true" : "false") +
                     ", fetch_allow_private: " + (media.fetch_allow_private ? "true" : "false") + "}\n"
                     "images: {vision_decoder: " + YamlQuoted(images.vision_decoder) +
                     ", llm_model: " + YamlQuoted(images.llm_model) +
                     ", decode_s: " + std::to_string(images.decode_timeout.count() / 1000) +
                     ", url_ttl_s: " + std::to_string(images.url_ttl.count()) +
                     ", max_concurrent: " + std::to_string(images.max_concurrent) +
                     (images.public_url.empty() ? std::string() : ", public_url: " + YamlQuoted(images.public_url)) +
                     "}\n"
                     "speech: {audio_decoder: " + YamlQuoted(speech.audio_decoder) +
                     ", decode_s: " + std::to_string(speech.decode_timeout.count() / 1000) +
                     ", url_ttl_s: " + std::to_string(speech.url_ttl.count()) +
                     ", chunk_units: " + std::to_string(speech.chunk_units) +
                     ", lookahead_units: " + std::to_string(speech.lookahead_units) +
                     ", max_concurrent: " + std::to_string(speech.max_concurrent) +
                     (speech.public_url.empty() ? std::string() : ", public_url: " + YamlQuoted(speech.public_url)) +
                     VoicesYaml(speech.voices) + "}\n"
                     "health:\n"
                     "  interval_ms: 1000\n"
                     "  components:\n";
  for (const auto& [name, url] : components) yaml += "  - {name: " + name + ", url: " + YamlQuoted(url) + "}\n";
  return yaml;
}

// The stack in start order: the LLM replicas and the gateway over them on
// ports the OS picked, then the orchestrator on the client port.
struct Stack {
  std::vector<ChildSpec> children;  // in start order
  std::vector<std::string> where;   // "llm-0 on http://127.0.0.1:PORT", one per child
};

// What the stack runs on: the demo model and the local store, or what
// `--config` names.
struct Plan {
  StackConfig config;
  std::string model_dir;
  std::string model_name;  // served
  int replicas = 2;
  std::string store;       // the orchestrator's and every replica's
  std::string encoder_dir;
  std::string encoder_name;  // served
  std::string audio_encoder_dir;
  std::string audio_encoder_name;  // served
  std::string decoder_dir;
  std::string decoder_name;  // served
  std::string audio_decoder_dir;
  std::string audio_decoder_name;  // served
};

// `ports`: one per replica, then the gateway's, the vision encoder's, the
// vision decoder's, the audio encoder's and the audio decoder's.
StatusOr<Stack> StackChildren(const UpOptions& options, uint16_t client_port, const std::vector<uint16_t>& ports,
                              const std::string& data_dir, const Plan& plan, HttpClient& health_client) {
  const std::vector<std::string> global = {options.self_path, "--log-level", options.log_level, "--log-format",
                                           options.log_format};
  Stack stack;
  std::vector<std::pair<std::string, std::string>> components;  // the children behind the orchestrator
  auto role = [&](std::string name, std::vector<std::string> args, const std::vector<std::string>& extra,
                  uint16_t port) {
    stack.where.push_back(name + " on " + BaseUrl(options.host, port));
    components.emplace_back(name, BaseUrl(options.host, port));
    std::vector<std::string> argv = global;
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {"--host", options.host, "--port", std::to_string(port)});
    return ChildSpec{.name = std::move(name),
                     .argv = std::move(argv),
                     .ready = HealthReady(health_client, BaseUrl(options.host, port) + "/health"),
                     .ready_timeout = options.start_timeout};
  };
  std::vector<ChildSpec>& children = stack.children;
  std::vector<uint16_t> llm_ports;
  const int threads = plan.config.llm.threads > 0 ? plan.config.llm.threads : ThreadsPerReplica(plan.replicas);
  for (int i = 0; i < plan.replicas; ++i) {
    const uint16_t port = ports[i];
    llm_ports.push_back(port);
    children.push_back(role("llm-" + std::to_string(i),
                            {"llm", "--model", plan.model_dir, "--served-model-name", plan.model_name, "--threads",
                             std::to_string(threads), "--store", plan.store},
                            plan.config.llm.args, port));
  }
  // The orchestrator hands the encoders media through the store: a file://
  // store's directory is where they may read.
  auto encoder = [&](std::string name, std::string_view modality, const std::string& dir, const std::string& served,
                     const StackConfig::Encoder& config, uint16_t port) {
    std::vector<std::string> args = {"encoder", "--modality", std::string(modality), "--model", dir,
                                     "--served-model-name", served, "--store", plan.store, "--threads",
                                     std::to_string(config.threads > 0 ? config.threads : threads)};
    if (plan.store.starts_with("file://")) {
      args.insert(args.end(), {"--media-root", plan.store.substr(std::string_view("file://").size())});
    }
    children.push_back(role(std::move(name), std::move(args), config.args, port));
  };
  const uint16_t encoder_port = ports[plan.replicas + 1];
  encoder("vision-encoder", "vision", plan.encoder_dir, plan.encoder_name, plan.config.vision_encoder, encoder_port);
  const uint16_t audio_encoder_port = ports[plan.replicas + 3];
  encoder("audio-encoder", "audio", plan.audio_encoder_dir, plan.audio_encoder_name, plan.config.audio_encoder,
          audio_encoder_port);
  const uint16_t decoder_port = ports[plan.replicas + 2];
  children.push_back(role("vision-decoder",
                          {"decoder", "--modality", "vision", "--model", plan.decoder_dir, "--served-model-name",
                           plan.decoder_name, "--store", plan.store, "--threads",
                           std::to_string(plan.config.vision_decoder.threads > 0 ? plan.config.vision_decoder.threads
                                                                                 : threads)},
                          plan.config.vision_decoder.args, decoder_port));
  const uint16_t audio_decoder_port = ports[plan.replicas + 4];
  children.push_back(role("audio-decoder",
                          {"decoder", "--modality", "audio", "--model", plan.audio_decoder_dir, "--served-model-name",
                           plan.audio_decoder_name, "--store", plan.store, "--threads",
                           std::to_string(plan.config.audio_decoder.threads > 0 ? plan.config.audio_decoder.threads
                                                                                : threads)},
                          plan.config.audio_decoder.args, audio_decoder_port));
  const std::string run_dir = data_dir + "/run";
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  if (ec) return Internal("cannot create " + run_dir + ": " + ec.message());
  const std::string gateway_config = run_dir + "/gateway.yaml";
  OMNI_RETURN_IF_ERROR(WriteFileAtomically(
      gateway_config, GatewayYaml(options.host, llm_ports, plan.model_name,
                                  {{"vision-encoder", plan.encoder_name, encoder_port},
                                   {"audio-encoder", plan.audio_encoder_name, audio_encoder_port},
                                   {"vision-decoder", plan.decoder_name, decoder_port},
                                   {"audio-decoder", plan.audio_decoder_name, audio_decoder_port}},
                                  plan.store)));
  const uint16_t gateway_port = ports[plan.replicas];
  children.push_back(role("gateway", {"gateway", "--config", gateway_config}, plan.config.gateway_args, gateway_port));

  // The gateway is the orchestrator's upstream; the rest are reported only.
  components.erase(components.end() - 1);
  const std::string orchestrator_config = run_dir + "/orchestrator.yaml";
  orchestrator::MediaConfig media = plan.config.orchestrator_media;
  media.vision_encoder = plan.encoder_name;
  media.audio_encoder = plan.audio_encoder_name;
  orchestrator::ImagesConfig images = plan.config.orchestrator_images;
  images.vision_decoder = plan.decoder_name;
  images.llm_model = plan.model_name;
  orchestrator::SpeechConfig speech = plan.config.orchestrator_speech;
  speech.audio_decoder = plan.audio_decoder_name;
  OMNI_RETURN_IF_ERROR(WriteFileAtomically(
      orchestrator_config, OrchestratorYaml(BaseUrl(options.host, gateway_port), plan.store,
                                            plan.config.orchestrator_timeouts, media, images, speech, components)));
  children.push_back(role("orchestrator", {"orchestrator", "--config", orchestrator_config},
                          plan.config.orchestrator_args, client_port));
  return stack;
}

// A component's folder and served name: the configured folder (which must
// hold `marker`) and its name, or the demo component, written on first start.
Status SettleComponent(const UpOptions& options, const std::string& data_dir, const StackConfig::Encoder& config,
                       std::string_view section, std::string_view demo_name, std::string_view demo_component,
                       std::string_view marker, std::string* dir, std::string* name) {
  if (config.model.empty()) {
    OMNI_ASSIGN_OR_RETURN(*dir, EnsureDemoComponent(data_dir, demo_name, demo_component, marker));
  } else {
    *dir = std::filesystem::absolute(config.model).lexically_normal().string();
    if (!std::filesystem::exists(*dir + "/" + std::string(marker))) {
      return InvalidArgument("--config " + options.config + ": " + std::string(section) + ".model: no " +
                             std::string(marker) + " in " + *dir);
    }
  }
  *name = config.served_model_name;
  if (name->empty()) {
    *name = config.model.empty() ? std::string(demo_name) : std::filesystem::path(*dir).filename().string();
  }
  return Status::Ok();
}

// Reads --config (if any) and settles the model, the replicas and the store;
// writes the demo model on first start when no model is named.
StatusOr<Plan> MakePlan(const UpOptions& options, const std::string& data_dir) {
  Plan plan;
  if (!options.config.empty()) {
    StatusOr<StackConfig> config = LoadStackConfig(options.config);
    if (!config.ok()) return Status(config.status()).Annotate("--config " + options.config);
    plan.config = std::move(config).value();
  }
  if (plan.config.llm.model.empty()) {
    OMNI_ASSIGN_OR_RETURN(plan.model_dir, EnsureDemoModel(data_dir));
  } else {
    plan.model_dir = std::filesystem::absolute(plan.config.llm.model).lexically_normal().string();
    if (!std::filesystem::exists(plan.model_dir + "/config.json")) {
      return InvalidArgument("--config " + options.config + ": llm.model: no config.json in " + plan.model_dir);
    }
  }
  plan.model_name = plan.config.llm.served_model_name;
  if (plan.model_name.empty()) {
    plan.model_name = plan.config.llm.model.empty()
                          ? std::string(kDemoModelName)
                          : std::filesystem::path(plan.model_dir).filename().string();
  }
  OMNI_RETURN_IF_ERROR(SettleComponent(options, data_dir, plan.config.vision_encoder, "vision_encoder",
                                       kDemoVisionEncoderName, "ve", "config.json", &plan.encoder_dir,
                                       &plan.encoder_name));
  OMNI_RETURN_IF_ERROR(SettleComponent(options, data_dir, plan.config.audio_encoder, "audio_encoder",
                                       kDemoAudioEncoderName, "ae", "config.json", &plan.audio_encoder_dir,
                                       &plan.audio_encoder_name));
  const StackConfig::Encoder decoder{.model = plan.config.vision_decoder.model,
                                     .served_model_name = plan.config.vision_decoder.served_model_name};
  OMNI_RETURN_IF_ERROR(SettleComponent(options, data_dir, decoder, "vision_decoder", kDemoVisionDecoderName, "vd",
                                       "model_index.json", &plan.decoder_dir, &plan.decoder_name));
  OMNI_RETURN_IF_ERROR(SettleComponent(options, data_dir, plan.config.audio_decoder, "audio_decoder",
                                       kDemoAudioDecoderName, "ad", "spk_list.txt", &plan.audio_decoder_dir,
                                       &plan.audio_decoder_name));
  plan.replicas = options.llm_replicas.value_or(plan.config.llm.replicas.value_or(2));
  plan.store = plan.config.store;
  if (plan.store.empty()) {
    const std::string objects_dir = data_dir + "/objects";
    std::error_code ec;
    std::filesystem::create_directories(objects_dir, ec);
    if (ec) return Internal("cannot create " + objects_dir + ": " + ec.message());
    plan.store = "file://" + std::filesystem::absolute(objects_dir).lexically_normal().string();
  }
  return plan;
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
  LogProcessInfo();

  std::string data_dir = options.data_dir.empty() ? DefaultDataDir() : options.data_dir;
  StatusOr<Plan> plan = MakePlan(options, data_dir);
  if (!plan.ok()) {
    OMNI_LOG(kError, "up: {}", plan.status().ToString());
    return plan.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  // The replicas', the gateway's, the vision encoder's, the vision
  // decoder's, the audio encoder's, the audio decoder's and (with --port 0) the client port.
  StatusOr<std::vector<uint16_t>> ports = PickFreePorts(options.host, plan->replicas + 5 + (options.port == 0));
  if (!ports.ok()) {
    OMNI_LOG(kError, "up: {}", ports.status().ToString());
    return 1;
  }
  const uint16_t port = options.port != 0 ? options.port : ports->back();
  HttpClient health_client(HttpClientOptions{.connect_timeout = std::chrono::milliseconds(1000)});
  StatusOr<Stack> stack = StackChildren(options, port, *ports, data_dir, *plan, health_client);
  if (!stack.ok()) {
    OMNI_LOG(kError, "up: {}", stack.status().ToString());
    return 1;
  }
  std::vector<ChildSpec> children = std::move(stack->children);
  // What runs is what was started; the rest of the stack is named as either
  // not started by `up` yet or not in this build.
  std::string started, not_started, missing;
  for (std::string_view role : kStackRoles) {
    bool runs = false;
    for (const ChildSpec& c : children) {
      runs = runs || c.name == role || c.name.starts_with(std::string(role) + "-") ||
             c.name.ends_with("-" + std::string(role));
    }
    std::string& list = runs ? started : IsBuilt(role) ? not_started : missing;
    list += (list.empty() ? "" : ", ") + std::string(role);
  }
  // SIGTERM/SIGINT stay blocked (pending) during the start; a pending one
  // aborts it, and the children started so far are stopped.
  Supervisor sup(SupervisorOptions{.abort_start = [] {
    sigset_t pending;
    sigpending(&pending);
    return sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1;
  }});
  if (Status s = sup.Start(std::move(children)); !s.ok()) {
    if (s.code() == StatusCode::kCancelled) {
      OMNI_LOG(kInfo, "up: signal received during the start ({}); stopped", s.message());
      return 0;
    }
    OMNI_LOG(kError, "up: {}", s.ToString());
    return 1;
  }
  OMNI_LOG(kInfo, "up: roles started: {}; built but not started by up yet: {}; not in this build yet: {}", started,
           not_started.empty() ? "none" : not_started, missing.empty() ? "none" : missing);
  for (const std::string& w : stack->where) OMNI_LOG(kInfo, "up: {}", w);
  OMNI_LOG(kInfo, "up: model {} from {}; objects in {}", plan->model_name, plan->model_dir, plan->store);
  OMNI_LOG(kInfo,
           "up: the OpenAI API (model {}) is served by the orchestrator on {}, through the gateway over {} llm "
           "replicas",
           plan->model_name, BaseUrl(options.host, port), plan->replicas);
  int rc = SuperviseUntilSignal(sup);
  sup.Stop();
  OMNI_LOG(kInfo, "up: stopped");
  return rc;
}

}  // namespace omni::cli

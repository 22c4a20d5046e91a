// Runs the real `omniserve` binary: --help, version, and `up` serving its
// client port until SIGTERM.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "net/http_client.h"
#include "child_process.h"

namespace omni {
namespace {

using testing::Child;

TEST(CliTest, HelpListsEveryRole) {
  Child c({"--help"});
  int status = c.Wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  for (const char* role : {"up", "orchestrator", "gateway", "llm", "encoder", "decoder", "make-demo-model",
                           "store", "bench", "generate", "version"}) {
    EXPECT_TRUE(std::regex_search(c.output(), std::regex(std::string("\n  ") + role + " "))) << role;
  }
}

TEST(CliTest, VersionPrintsSemver) {
  Child c({"version"});
  ASSERT_EQ(WEXITSTATUS(c.Wait()), 0);
  EXPECT_TRUE(std::regex_search(c.output(), std::regex(R"(^omniserve \d+\.\d+\.\d+ \()"))) << c.output();
}

TEST(CliTest, DecoderRefusesAnSpThatDoesNotDivideTheHeads) {
  const std::string dir = ::testing::TempDir() + "omni-vd-" + std::to_string(getpid());
  Child make({"make-demo-model", "--component", "vd", "--out", dir});
  ASSERT_EQ(WEXITSTATUS(make.Wait()), 0) << make.output();
  Child c({"decoder", "--model", dir, "--store", "file://" + dir + "/store", "--port", "0", "--sp", "3"});
  EXPECT_EQ(WEXITSTATUS(c.Wait()), 2);
  EXPECT_NE(c.output().find("--sp 3 does not divide the DiT's 4 attention heads"), std::string::npos) << c.output();
  std::filesystem::remove_all(dir);
}

// The --sp ranks log as the decoder does: with --log-format json, rank 1's
// lines are JSON too.
TEST(CliTest, DecoderRanksTakeTheGlobalLogFormat) {
  const std::string dir = ::testing::TempDir() + "omni-vd-log-" + std::to_string(getpid());
  Child make({"make-demo-model", "--component", "vd", "--out", dir});
  ASSERT_EQ(WEXITSTATUS(make.Wait()), 0) << make.output();
  Child c({"--log-format", "json", "decoder", "--model", dir, "--store", "file://" + dir + "/store", "--port", "0",
           "--sp", "2", "--threads", "1"});
  const std::string line = c.WaitForOutput(std::regex(R"((\n[^\n]*decoder rank 1 of 2: joined group[^\n]*))"));
  ASSERT_FALSE(line.empty()) << c.output();
  EXPECT_EQ(line.substr(0, 2), "\n{") << line;
  EXPECT_NE(line.find("\"msg\":"), std::string::npos) << line;
  ::kill(c.pid(), SIGTERM);
  EXPECT_EQ(WEXITSTATUS(c.Wait()), 0) << c.output();
  std::filesystem::remove_all(dir);
}

TEST(CliTest, AudioDecoderWithoutAModelExitsWithReason) {
  Child c({"decoder", "--modality", "audio", "--model", "/nonexistent"});
  int status = c.Wait();
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(c.output().find("cannot read /nonexistent/config.json"), std::string::npos) << c.output();
}

// `decoder --modality audio` on the demo vocoder: units in, a WAV in the
// store, and SIGTERM stops it cleanly.
TEST(CliTest, AudioDecoderServesUnitsAndStopsOnSigterm) {
  const std::string dir = ::testing::TempDir() + "omni-ad-" + std::to_string(getpid());
  Child make({"make-demo-model", "--component", "ad", "--out", dir + "/omni-ad"});
  ASSERT_EQ(WEXITSTATUS(make.Wait()), 0) << make.output();
  Child c({"decoder", "--modality", "audio", "--model", dir + "/omni-ad", "--store", "file://" + dir + "/store",
           "--port", "0", "--threads", "1"});
  const std::string port = c.WaitForOutput(std::regex(R"(decoder: listening on http://127\.0\.0\.1:(\d+))"));
  ASSERT_FALSE(port.empty()) << c.output();
  const std::string base = "http://127.0.0.1:" + port;
  HttpClient client;
  ASSERT_EQ(testing::WaitForHealth(client, base), 200) << c.output();
  auto r = client.Request({.method = HttpMethod::kPost,
                           .url = base + "/v1/decode",
                           .body = R"({"model": "omni-ad", "units": "<|audio1|><|audio20|><|audio300|><|audio4000|>"})",
                           .timeout = std::chrono::seconds(60)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->status, 200) << r->body;
  const nlohmann::json answer = nlohmann::json::parse(r->body);
  EXPECT_EQ(answer["samples"], 4 * 960);
  EXPECT_TRUE(std::filesystem::exists(dir + "/store/" + answer["key"].get<std::string>()));
  ::kill(c.pid(), SIGTERM);
  EXPECT_EQ(WEXITSTATUS(c.Wait()), 0) << c.output();
  std::filesystem::remove_all(dir);
}

TEST(UpTest, ServesTheOpenAiApiOnTheDemoModelAndStopsOnSigterm) {
  std::string data_dir = ::testing::TempDir() + "omni-up-" + std::to_string(getpid());
  Child up({"--log-format", "json", "up", "--port", "0", "--data-dir", data_dir});
  // up picks the client port and names it once the stack is healthy.
  std::string port = up.WaitForOutput(std::regex(R"(is served by the orchestrator on http://127\.0\.0\.1:(\d+))"));
  ASSERT_FALSE(port.empty()) << up.output();
  std::string base = "http://127.0.0.1:" + port;
  HttpClient client;
  ASSERT_EQ(testing::WaitForHealth(client, base), 200) << up.output();
  // Dependency order: both replicas were healthy before the gateway
  // started, and the gateway before the orchestrator.
  const std::string& log = up.output();
  EXPECT_LT(log.find("llm-0 (pid"), log.find("started llm-1")) << log;
  EXPECT_LT(log.find("llm-1 (pid"), log.find("started gateway")) << log;
  EXPECT_LT(log.find("gateway (pid"), log.find("started orchestrator")) << log;
  EXPECT_NE(log.find("up: roles started: llm, encoder, decoder, gateway, orchestrator;"), std::string::npos) << log;

  // The client port's /health reports every child.
  auto health = client.Request({.url = base + "/health"});
  ASSERT_TRUE(health.ok());
  auto hj = nlohmann::json::parse(health->body);
  EXPECT_EQ(hj["status"], "ok") << health->body;
  std::vector<std::string> reported;
  for (const auto& c : hj["components"]) {
    reported.push_back(c["name"].get<std::string>());
    EXPECT_EQ(c["status"], "ok") << health->body;
  }
  EXPECT_EQ(reported, (std::vector<std::string>{"gateway", "store", "llm-0", "llm-1", "vision-encoder", "audio-encoder",
                                                "vision-decoder", "audio-decoder"}))
      << health->body;

  auto models = client.Request({.url = base + "/v1/models"});
  ASSERT_TRUE(models.ok());
  auto mj = nlohmann::json::parse(models->body);
  ASSERT_EQ(mj["data"].size(), 1u);
  EXPECT_EQ(mj["data"][0]["id"], "omni-demo");

  auto chat = client.Request({.method = HttpMethod::kPost, .url = base + "/v1/chat/completions",
                              .body = R"({"model":"omni-demo","max_tokens":8,"temperature":0,
                                          "messages":[{"role":"user","content":"hi"}]})"});
  ASSERT_TRUE(chat.ok());
  ASSERT_EQ(chat->status, 200) << chat->body;
  auto cj = nlohmann::json::parse(chat->body);
  EXPECT_EQ(cj["object"], "chat.completion");
  EXPECT_GT(cj["usage"]["completion_tokens"].get<int>(), 0);
  // A prompt sent twice: the gateway sends the second to the replica holding
  // its prefix (its approximate index needs a few 64-character blocks), which
  // reports the cached blocks.
  const std::string twice = R"({"model":"omni-demo","max_tokens":4,"temperature":0,"messages":[
      {"role":"system","content":"You answer questions about the weather in the cities of the world, briefly."},
      {"role":"user","content":"What is the weather like in Seoul in December, and in Busan?"}]})";
  auto first = client.Request({.method = HttpMethod::kPost, .url = base + "/v1/chat/completions", .body = twice});
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->status, 200) << first->body;
  auto again = client.Request({.method = HttpMethod::kPost, .url = base + "/v1/chat/completions", .body = twice});
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->status, 200) << again->body;
  auto aj = nlohmann::json::parse(again->body);
  const int prompt_tokens = aj["usage"]["prompt_tokens"].get<int>();
  // Full blocks only, and the last prompt token is always computed (as vLLM).
  EXPECT_EQ(aj["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), (prompt_tokens - 1) / 16 * 16)
      << again->body;

  auto unknown = client.Request({.method = HttpMethod::kPost, .url = base + "/v1/chat/completions",
                                 .body = R"({"model":"gpt-9","messages":[{"role":"user","content":"hi"}]})"});
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(nlohmann::json::parse(unknown->body)["error"]["code"], "model_not_found");

  ASSERT_EQ(kill(up.pid(), SIGTERM), 0);
  int status = up.Wait();
  ASSERT_TRUE(WIFEXITED(status)) << "wait status " << status << "\n" << up.output();
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // Every line is one JSON log event; up and its llm child each say who they are.
  std::istringstream lines(up.output());
  std::string line;
  std::set<std::string> roles;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    roles.insert(j["role"].get<std::string>());
  }
  EXPECT_EQ(roles, (std::set<std::string>{"up", "llm", "encoder", "decoder", "gateway", "orchestrator"}));
  // Stopped in reverse start order: the orchestrator, the gateway, then the replicas.
  const std::string& out = up.output();
  const size_t stop = out.find("up: signal");
  ASSERT_NE(stop, std::string::npos) << out;
  const size_t orchestrator_exit = out.find("orchestrator (pid", stop);
  const size_t gateway_exit = out.find("gateway (pid", stop), llm_exit = out.find("llm-1 (pid", stop);
  ASSERT_NE(orchestrator_exit, std::string::npos) << out;
  ASSERT_NE(gateway_exit, std::string::npos) << out;
  ASSERT_NE(llm_exit, std::string::npos) << out;
  EXPECT_LT(orchestrator_exit, gateway_exit) << out;
  EXPECT_LT(gateway_exit, llm_exit) << out;
  EXPECT_LT(out.find("llm-1 (pid", stop), out.find("llm-0 (pid", stop)) << out;
  EXPECT_NE(up.output().find("up: stopped"), std::string::npos);
  std::filesystem::remove_all(data_dir);
}

TEST(UpTest, AConfigPointsTheStackAtAModelFolderAStoreAndRoleFlags) {
  const std::string dir = ::testing::TempDir() + "omni-up-config-" + std::to_string(getpid());
  std::filesystem::create_directories(dir + "/objects");
  Child model({"make-demo-model", "--out", dir + "/models/my-llm"});
  ASSERT_EQ(WEXITSTATUS(model.Wait()), 0) << model.output();
  {
    std::ofstream yaml(dir + "/stack.yaml");
    yaml << "store: file://" << dir << "/objects\n"
         << "llm: {model: " << dir << "/models/my-llm, served_model_name: my-llm, replicas: 1,\n"
         << "      args: [--max-model-len, '256']}\n"
         << "orchestrator: {timeouts: {llm_s: 30}}\n";
  }
  Child up({"up", "--port", "0", "--data-dir", dir + "/data", "--config", dir + "/stack.yaml"});
  std::string port = up.WaitForOutput(std::regex(R"(is served by the orchestrator on http://127\.0\.0\.1:(\d+))"));
  ASSERT_FALSE(port.empty()) << up.output();
  const std::string base = "http://127.0.0.1:" + port;
  HttpClient client;
  ASSERT_EQ(testing::WaitForHealth(client, base), 200) << up.output();

  auto models = client.Request({.url = base + "/v1/models"});
  ASSERT_TRUE(models.ok());
  EXPECT_EQ(nlohmann::json::parse(models->body)["data"][0]["id"], "my-llm") << models->body;
  auto health = client.Request({.url = base + "/health"});
  ASSERT_TRUE(health.ok());
  auto hj = nlohmann::json::parse(health->body);
  std::vector<std::string> reported;
  for (const auto& c : hj["components"]) reported.push_back(c["name"].get<std::string>());
  EXPECT_EQ(reported, (std::vector<std::string>{"gateway", "store", "llm-0", "vision-encoder", "audio-encoder",
                                                "vision-decoder", "audio-decoder"}))
      << health->body;
  EXPECT_EQ(hj["components"][1]["url"], "file://" + dir + "/objects") << health->body;
  auto chat = client.Request({.method = HttpMethod::kPost, .url = base + "/v1/chat/completions",
                              .body = R"({"model":"my-llm","max_tokens":4,"messages":[{"role":"user","content":"hi"}]})"});
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->status, 200) << chat->body;
  // The named folder is served; no demo LLM was written (the config names
  // no vision encoder, so the demo one is); the role flags and timeouts
  // reached the children.
  EXPECT_FALSE(std::filesystem::exists(dir + "/data/models/omni-demo")) << up.output();
  EXPECT_TRUE(std::filesystem::exists(dir + "/data/models/omni-demo-ve/config.json")) << up.output();
  std::ifstream written(dir + "/data/run/orchestrator.yaml");
  std::stringstream text;
  text << written.rdbuf();
  EXPECT_NE(text.str().find("llm_s: 30"), std::string::npos) << text.str();
  EXPECT_NE(up.output().find("llm: serving my-llm ("), std::string::npos) << up.output();
  EXPECT_NE(up.output().find("max_model_len 256)"), std::string::npos) << up.output();

  ASSERT_EQ(kill(up.pid(), SIGTERM), 0);
  EXPECT_EQ(WEXITSTATUS(up.Wait()), 0) << up.output();
  std::filesystem::remove_all(dir);
}

TEST(UpTest, ABadConfigStopsTheStartNamingTheField) {
  const std::string dir = ::testing::TempDir() + "omni-up-badconfig-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  {
    std::ofstream yaml(dir + "/stack.yaml");
    yaml << "llm: {replicas: 0}\n";
  }
  Child up({"up", "--port", "0", "--data-dir", dir + "/data", "--config", dir + "/stack.yaml"});
  EXPECT_EQ(WEXITSTATUS(up.Wait()), 2);
  EXPECT_NE(up.output().find("llm.replicas: must be in [1, 64]"), std::string::npos) << up.output();
  EXPECT_FALSE(std::filesystem::exists(dir + "/data/models")) << up.output();
  std::filesystem::remove_all(dir);
}

TEST(UpTest, SigtermDuringTheStartStopsWhatStartedAndExitsZero) {
  const std::string dir = ::testing::TempDir() + "omni-up-early-" + std::to_string(getpid());
  Child up({"up", "--port", "0", "--data-dir", dir});
  const std::string pid = up.WaitForOutput(std::regex(R"(started llm-0 pid=(\d+))"));
  ASSERT_FALSE(pid.empty()) << up.output();
  ASSERT_EQ(kill(up.pid(), SIGTERM), 0);
  EXPECT_EQ(WEXITSTATUS(up.Wait()), 0) << up.output();
  EXPECT_NE(up.output().find("signal received during the start"), std::string::npos) << up.output();
  EXPECT_EQ(up.output().find("started gateway"), std::string::npos) << up.output();
  // The replica up had started is gone (up reaped it, so the PID is free).
  EXPECT_NE(kill(std::stoi(pid), 0), 0) << up.output();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace omni

// The hostile-input corpus (tests/hostile/cases/*.http) replayed as raw
// bytes over TCP against the real binary: one `omniserve llm` of the demo
// model (with --store file://), and one `omniserve gateway` in front of it,
// both on 127.0.0.1 with OS-chosen ports. Each case on each server it names
// is its own test, `Corpus/HostileReplayTest.Case/<file stem>_<server>`, on
// a fresh connection; after every case the server must still answer
// GET /health with 200, and the gateway must still answer a proxied
// POST /tokenize as the llm server does. At the end both get SIGTERM and
// must exit 0 within 35 s (their drain timeout is 30 s).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "case_file.h"
#include "child_process.h"
#include "raw_exchange.h"

namespace omni::hostile {
namespace {

using omni::testing::Child;
namespace fs = std::filesystem;

constexpr char kHost[] = "127.0.0.1";
constexpr char kModel[] = "omni-demo";

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct CaseParam {
  fs::path file;
  Server server = Server::kLlm;
  std::string test_name;  // "<stem>_<server>"
};

// gtest prints a failing parameter with this instead of its raw bytes.
void PrintTo(const CaseParam& p, std::ostream* os) { *os << p.file.filename().string() << " on " << ServerName(p.server); }

// Every case file once per server it names. A file that does not parse
// still becomes a test (on the llm server), which then fails and says why.
std::vector<CaseParam> LoadCaseParams() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(OMNI_HOSTILE_CASES)) {
    if (entry.path().extension() == ".http") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<CaseParam> params;
  for (const fs::path& f : files) {
    const std::string stem = f.stem().string();
    StatusOr<HostileCase> c = ParseCaseFile(ReadFile(f), stem);
    std::vector<Server> servers = c.ok() ? c->servers : std::vector<Server>{Server::kLlm};
    for (Server s : servers) params.push_back({f, s, stem + "_" + std::string(ServerName(s))});
  }
  return params;
}

std::string TestName(const ::testing::TestParamInfo<CaseParam>& info) {
  std::string name = info.param.test_name;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

// The checks of one exchange, as a list of what went wrong (empty: passed).
std::vector<std::string> CheckExchange(const HostileCase& c, const Exchange& x) {
  std::vector<std::string> problems;
  const ParsedResponses& p = x.parsed;
  if (!p.error.empty()) problems.push_back("the reply is not HTTP: " + p.error);
  if (x.timed_out) problems.push_back("no complete answer (or no close) within 10 s");
  if (static_cast<int>(p.final.size()) != c.responses) {
    problems.push_back("expected " + std::to_string(c.responses) + " response(s), got " +
                       std::to_string(p.final.size()) +
                       (p.pending_bytes ? " and " + std::to_string(p.pending_bytes) + " bytes of an incomplete one" : ""));
  }
  for (size_t i = 0; i < p.final.size(); ++i) {
    const int status = p.final[i].status;
    if (std::none_of(c.status.begin(), c.status.end(), [&](const StatusPattern& s) { return s.Matches(status); })) {
      problems.push_back("response " + std::to_string(i + 1) + " has status " + std::to_string(status) +
                         ", expected one of the case's expect-status");
    }
  }
  if (!p.final.empty()) {
    const std::string& body = p.final.front().body;
    for (const std::string& want : c.body_contains) {
      if (body.find(want) == std::string::npos) problems.push_back("the body lacks '" + want + "'");
    }
    if (c.body_max_bytes && body.size() > *c.body_max_bytes) {
      problems.push_back("the body is " + std::to_string(body.size()) + " bytes, over the case's " +
                         std::to_string(*c.body_max_bytes));
    }
  }
  for (const std::string& bad : c.body_not_contains) {
    if (x.received.find(bad) != std::string::npos) problems.push_back("the reply contains '" + bad + "'");
  }
  if (c.close) {
    if (!p.final.empty() && !p.final.back().ConnectionClose()) {
      problems.push_back("the last response does not say 'connection: close'");
    }
    if (!x.peer_closed) problems.push_back("the server did not close the connection");
  }
  return problems;
}

std::string Describe(const HostileCase& c) {
  std::string s = "expect-status:";
  for (const StatusPattern& p : c.status) {
    s += ' ';
    s += p.any_of_class ? std::to_string(p.code / 100) + "xx" : std::to_string(p.code);
  }
  if (c.close) s += ", then close";
  return s;
}

class HostileReplayTest : public ::testing::TestWithParam<CaseParam> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::path(::testing::TempDir()) / ("omni-hostile-" + std::to_string(getpid())));
    fs::create_directories(*dir_ / "store");
    Child make({"make-demo-model", "--component", "llm", "--out", (*dir_ / "model").string()});
    ASSERT_EQ(WEXITSTATUS(make.Wait()), 0) << make.output();

    // One compute thread: the suite shares two cores with the gateway. Debug
    // level: each case's marker is a /health access line, which a success
    // logs at debug.
    llm_ = new Child({"--log-level", "debug", "llm", "--model", (*dir_ / "model").string(), "--served-model-name", kModel, "--port", "0",
                      "--store", "file://" + (*dir_ / "store").string(), "--num-kv-blocks", "64", "--threads", "1"});
    std::string llm_port = llm_->WaitForOutput(std::regex(R"(llm: listening on http://127\.0\.0\.1:(\d+))"));
    ASSERT_FALSE(llm_port.empty()) << llm_->output();
    llm_port_ = std::stoi(llm_port);
    ASSERT_TRUE(WaitHealthy(llm_port_)) << llm_->output();

    StartGateway();
    ASSERT_TRUE(gateway_ != nullptr && WaitHealthy(gateway_port_)) << (gateway_ ? gateway_->output() : "");
    ready_ = true;
  }

  // SIGTERM to both; each must exit with status 0 within 35 s.
  static void TearDownTestSuite() {
    if (gateway_ && gateway_->pid() > 0) kill(gateway_->pid(), SIGTERM);
    if (llm_ && llm_->pid() > 0) kill(llm_->pid(), SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(35);
    for (Child* child : {gateway_, llm_}) {
      if (child == nullptr || child->pid() <= 0) continue;
      const std::string name = child == llm_ ? "llm" : "gateway";
      int status = -1;
      // Child::Wait gives up after 20 s; ask again until the deadline.
      while (status == -1 && std::chrono::steady_clock::now() < deadline) status = child->Wait();
      if (status == -1 || std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << name << " did not exit within 35 s of SIGTERM; output tail:\n" << Tail(child->output());
      } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        ADD_FAILURE() << name << " ended with wait status " << status
                      << (WIFSIGNALED(status) ? " (signal " + std::to_string(WTERMSIG(status)) + ")" : "")
                      << "; output tail:\n" << Tail(child->output());
      }
    }
    delete gateway_;
    delete llm_;
    gateway_ = llm_ = nullptr;
    fs::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
  }

  // A gateway on an OS-chosen port in front of the llm server.
  static void StartGateway() {
    const fs::path config = *dir_ / "gateway.yaml";
    std::ofstream out(config);
    out << "pools:\n- name: llm\n  role: llm\n  models: [" << kModel << "]\n  endpoints: [\"" << kHost << ":"
        << llm_port_ << "\"]\n";
    out.close();
    gateway_ = new Child({"gateway", "--config", config.string(), "--port", "0", "--health-interval-ms", "200"});
    std::string port = gateway_->WaitForOutput(std::regex(R"(gateway: listening on http://127\.0\.0\.1:(\d+))"));
    if (port.empty()) {
      ADD_FAILURE() << "the gateway did not start: " << gateway_->output();
      delete gateway_;
      gateway_ = nullptr;
      return;
    }
    gateway_port_ = std::stoi(port);
  }

  void SetUp() override {
    if (!ready_) GTEST_SKIP() << "the servers did not start (see the suite's setup failure)";
  }

  static std::string Tail(const std::string& s) { return s.size() > 4000 ? s.substr(s.size() - 4000) : s; }

  static int PortOf(Server s) { return s == Server::kLlm ? llm_port_ : gateway_port_; }

  // GET /health on a fresh connection; `request_id` marks its access line.
  static Exchange Health(int port, const std::string& request_id) {
    const std::string request = "GET /health HTTP/1.1\r\nHost: " + std::string(kHost) + "\r\nx-request-id: " +
                                request_id + "\r\nConnection: close\r\n\r\n";
    return Replay({.host = kHost, .port = port, .request = request});
  }

  // POST /tokenize with `prompt` on a fresh connection; the body of the
  // answer ("" when there is none).
  static std::string Tokenize(int port, const std::string& prompt) {
    const std::string body = std::string(R"({"model":")") + kModel + R"(","prompt":")" + prompt + "\"}";
    const std::string request = "POST /tokenize HTTP/1.1\r\nHost: " + std::string(kHost) +
                                "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
    Exchange x = Replay({.host = kHost, .port = port, .request = request});
    return x.parsed.final.size() == 1 ? std::to_string(x.parsed.final[0].status) + " " + x.parsed.final[0].body : "";
  }

  static bool WaitHealthy(int port) {
    for (int i = 0; i < 600; ++i) {
      Exchange x = Health(port, "hostile-startup");
      if (x.parsed.final.size() == 1 && x.parsed.final[0].status == 200) return true;
      usleep(50'000);
    }
    return false;
  }

  static fs::path* dir_;
  static Child* llm_;
  static Child* gateway_;
  static int llm_port_;
  static int gateway_port_;
  static bool ready_;
};

fs::path* HostileReplayTest::dir_ = nullptr;
Child* HostileReplayTest::llm_ = nullptr;
Child* HostileReplayTest::gateway_ = nullptr;
int HostileReplayTest::llm_port_ = 0;
int HostileReplayTest::gateway_port_ = 0;
bool HostileReplayTest::ready_ = false;

TEST_P(HostileReplayTest, Case) {
  const CaseParam& param = GetParam();
  StatusOr<HostileCase> parsed = ParseCaseFile(ReadFile(param.file), param.file.stem().string());
  ASSERT_TRUE(parsed.ok()) << param.file << ": " << parsed.status().ToString();
  const HostileCase& c = *parsed;
  const int port = PortOf(param.server);
  StatusOr<std::string> request =
      ExpandPayload(c.payload, {.host = kHost, .port = port, .store = (*dir_ / "store").string()});
  ASSERT_TRUE(request.ok()) << param.file << ": " << request.status().ToString();

  Exchange x = Replay({.host = kHost,
                       .port = port,
                       .request = *request,
                       .half_close = c.half_close,
                       .responses = c.responses,
                       .grace = c.close ? std::chrono::milliseconds(1000) : std::chrono::milliseconds(0)});
  ASSERT_TRUE(x.connect_error.empty()) << "connect: " << x.connect_error;
  std::vector<std::string> problems = CheckExchange(c, x);
  if (!problems.empty()) {
    std::string list;
    for (const std::string& p : problems) list += "  - " + p + "\n";
    ADD_FAILURE() << param.file.filename().string() << " on " << ServerName(param.server) << " (" << Describe(c)
                  << "):\n" << list << "sent " << request->size() << " bytes"
                  << (x.send_error.empty() ? "" : " (send failed: " + x.send_error + ")") << "; got "
                  << x.received.size() << " bytes, " << (x.peer_closed ? (x.reset ? "then RST" : "then FIN")
                                                                       : "connection still open")
                  << ":\n" << Printable(x.received);
  }

  // The server keeps serving after every case.
  const std::string marker = "hostile-" + param.test_name;
  Exchange health = Health(port, marker);
  ASSERT_EQ(health.parsed.final.size(), 1u) << "GET /health after " << param.file.filename().string()
                                            << " got no answer: " << Printable(health.received);
  EXPECT_EQ(health.parsed.final[0].status, 200) << "GET /health after " << param.file.filename().string();
  // Through the gateway, a proxied request still gets its own answer: the
  // same as the llm server's when asked directly. A case that leaves an
  // unread response on a pooled upstream connection shows up here, at that
  // case or (it is a race) within the next few, rather than only as a wrong
  // answer to some unrelated later case.
  // The gateway is then restarted, so that the cases after this one are
  // judged on their own.
  if (param.server == Server::kGateway) {
    const std::string via_gateway = Tokenize(gateway_port_, marker);
    const std::string direct = Tokenize(llm_port_, marker);
    EXPECT_EQ(via_gateway, direct) << "after " << param.file.filename().string()
                                   << " the gateway answers POST /tokenize with something else; restarting it";
    if (via_gateway != direct) {
      delete gateway_;  // SIGKILL: its state is what is wrong
      StartGateway();
      ASSERT_TRUE(gateway_ != nullptr && WaitHealthy(gateway_port_));
    }
  }
  // The llm server's access log goes into a pipe that nobody else reads; a
  // full pipe would block the server. Read up to this case's marker (a
  // direct /health, so gateway cases get one too).
  if (param.server == Server::kGateway) Health(llm_port_, marker);
  EXPECT_FALSE(llm_->WaitForOutput(std::regex("request_id=" + marker + "\\b")).empty())
      << "the llm server's access line for " << marker << " did not appear";
}

INSTANTIATE_TEST_SUITE_P(Corpus, HostileReplayTest, ::testing::ValuesIn(LoadCaseParams()), TestName);

}  // namespace
}  // namespace omni::hostile

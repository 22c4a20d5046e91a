#include "services/decoder/sp_group.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "core/spawn.h"
#include "parallel/gloo_collective.h"

namespace omni::decoder {
namespace {

std::string Prefix(int generation) { return fmt::format("vd-g{}", generation); }

std::string DescribeWait(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {}", WTERMSIG(status));
  return "stopped";
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string EncodeSpRequest(const models::VisionGenerateRequest& r) {
  return nlohmann::json{{"ids", r.ids},           {"width", r.width}, {"height", r.height}, {"steps", r.steps},
                        {"guidance", r.guidance}, {"seed", r.seed}}
      .dump();
}

StatusOr<models::VisionGenerateRequest> DecodeSpRequest(std::string_view line) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("sequence-parallel request: not a JSON object");
  try {
    return models::VisionGenerateRequest{.ids = j.at("ids").get<std::vector<int32_t>>(),
                                         .width = j.at("width").get<int>(),
                                         .height = j.at("height").get<int>(),
                                         .steps = j.at("steps").get<int>(),
                                         .guidance = j.at("guidance").get<float>(),
                                         .seed = j.at("seed").get<uint64_t>()};
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(fmt::format("sequence-parallel request: {}", e.what()));
  }
}

SpGroup::SpGroup(const models::VisionDecoder* model, SpGroupOptions options)
    : model_(model), options_(std::move(options)) {}

StatusOr<std::unique_ptr<SpGroup>> SpGroup::Start(const models::VisionDecoder* model, SpGroupOptions options) {
  OMNI_RETURN_IF_ERROR(model->CheckSequenceParallel(options.sp));
  std::unique_ptr<SpGroup> g(new SpGroup(model, std::move(options)));
  std::string dir = (std::filesystem::temp_directory_path() / "omniserve-sp.XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) return Internal(fmt::format("cannot create {}: {}", dir, std::strerror(errno)));
  g->rendezvous_dir_ = dir;
  OMNI_RETURN_IF_ERROR(g->Build());
  return g;
}

SpGroup::~SpGroup() {
  Teardown();
  std::error_code ec;
  if (!rendezvous_dir_.empty()) std::filesystem::remove_all(rendezvous_dir_, ec);
}

Status SpGroup::Build() {
  ++generation_;
  for (int rank = 1; rank < options_.sp; ++rank) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return Internal(fmt::format("pipe: {}", std::strerror(errno)));
    std::vector<std::string> args = options_.child_argv;
    for (std::string a : {std::string("--rank"), std::to_string(rank), std::string("--sp"),
                          std::to_string(options_.sp), std::string("--rendezvous"), rendezvous_dir_,
                          std::string("--generation"), std::to_string(generation_)}) {
      args.push_back(std::move(a));
    }
    // Their own process group: a terminal's Ctrl-C reaches rank 0, which
    // drains and then stops them.
    StatusOr<pid_t> spawned = SpawnProcess(args, {.stdin_fd = fds[0], .own_process_group = true});
    ::close(fds[0]);
    if (!spawned.ok()) {
      ::close(fds[1]);
      Teardown();
      return Internal(fmt::format("cannot start rank {}: {}", rank, spawned.status().message()));
    }
    const pid_t pid = *spawned;
    pids_.push_back(pid);
    stdin_fds_.push_back(fds[1]);
  }
  auto group = parallel::ConnectGloo({.rank = 0,
                                      .size = options_.sp,
                                      .rendezvous_dir = rendezvous_dir_,
                                      .prefix = Prefix(generation_),
                                      .timeout = options_.timeout});
  if (!group.ok()) {
    const std::string gone = ReapExitedNow();
    Teardown();
    return Unavailable(fmt::format("the sequence-parallel group did not form: {}{}", group.status().message(),
                                   gone.empty() ? "" : "; " + gone));
  }
  group_ = std::move(group).value();
  OMNI_LOG(kInfo, "decoder: sequence-parallel group {} formed ({} ranks)", generation_, options_.sp);
  return Status::Ok();
}

void SpGroup::Teardown() {
  group_.reset();
  for (int fd : stdin_fds_) ::close(fd);  // an idle rank reads EOF and exits
  stdin_fds_.clear();
  for (pid_t pid : pids_) ::kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (pid_t pid : pids_) {
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  pids_.clear();
}

std::string SpGroup::ReapExited(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::string out = ReapExitedNow();
  while (out.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    out = ReapExitedNow();
  }
  return out;
}

std::string SpGroup::ReapExitedNow() {
  std::string out;
  for (size_t i = 0; i < pids_.size(); ++i) {
    int status = 0;
    if (pids_[i] > 0 && ::waitpid(pids_[i], &status, WNOHANG) == pids_[i]) {
      if (!out.empty()) out += "; ";
      out += fmt::format("rank {} (pid {}) {}", i + 1, pids_[i], DescribeWait(status));
      pids_[i] = -1;  // reaped: never signalled again
    }
  }
  std::erase(pids_, pid_t{-1});
  return out;
}

StatusOr<Tensor> SpGroup::Generate(const models::VisionGenerateRequest& request,
                                   const models::VisionGenerateHooks& hooks, models::VisionGenerateTimings* timings) {
  if (request.noise) return InvalidArgument("a sequence-parallel group draws its own noise from the seed");
  if (const std::string gone = ReapExitedNow(); !gone.empty() || group_ == nullptr) {
    OMNI_LOG(kWarn, "decoder: rebuilding the sequence-parallel group{}", gone.empty() ? "" : ": " + gone);
    Teardown();
    OMNI_RETURN_IF_ERROR(Build());
  }
  const std::string line = EncodeSpRequest(request) + "\n";
  for (int fd : stdin_fds_) {
    if (!WriteAll(fd, line)) {
      const std::string gone = ReapExited(std::chrono::seconds(1));
      Teardown();  // the next request rebuilds
      return Unavailable(fmt::format("sequence-parallel rank failed before the request: {}",
                                     gone.empty() ? "its input closed" : gone))
          .WithErrorCode("decoder_rank_failed");
    }
  }
  StatusOr<Tensor> image = Internal("sequence-parallel generation did not run");
  try {
    image = model_->GenerateSharded(request, group_.get(), hooks, timings);
  } catch (const std::exception& e) {
    image = Internal(fmt::format("sequence-parallel generation failed: {}", e.what()));
  }
  if (image.ok() || image.status().code() == StatusCode::kCancelled) return image;  // every rank agreed
  // Any other failure may leave the other ranks inside a collective: the
  // group is torn down now and rebuilt by the next request, so this error
  // goes back at once.
  const std::string gone =
      image.status().code() == StatusCode::kUnavailable ? ReapExited(std::chrono::seconds(1)) : ReapExitedNow();
  Teardown();
  OMNI_LOG(kWarn, "decoder: sequence-parallel group {} failed ({}{}); the next request rebuilds it", generation_,
           image.status().message(), gone.empty() ? "" : "; " + gone);
  if (image.status().code() != StatusCode::kUnavailable) return image.status();
  return Unavailable(fmt::format("{}{}", image.status().message(), gone.empty() ? "" : " (" + gone + ")"))
      .WithErrorCode("decoder_rank_failed");
}

int RunSpRank(const models::VisionDecoder& model, int rank, int sp, const std::string& rendezvous_dir,
              int generation, std::chrono::milliseconds timeout) {
  auto group = parallel::ConnectGloo({.rank = rank,
                                      .size = sp,
                                      .rendezvous_dir = rendezvous_dir,
                                      .prefix = Prefix(generation),
                                      .timeout = timeout});
  if (!group.ok()) {
    OMNI_LOG(kError, "decoder rank {}: cannot join group {}: {}", rank, generation, group.status().ToString());
    return 3;
  }
  OMNI_LOG(kInfo, "decoder rank {} of {}: joined group {}", rank, sp, generation);
  std::string line;
  while (std::getline(std::cin, line)) {
    auto request = DecodeSpRequest(line);
    if (!request.ok()) {
      OMNI_LOG(kError, "decoder rank {}: {}", rank, request.status().ToString());
      return 3;
    }
    StatusOr<Tensor> done = model.GenerateSharded(*request, group->get());
    if (!done.ok() && done.status().code() != StatusCode::kCancelled) {
      OMNI_LOG(kError, "decoder rank {}: {}", rank, done.status().ToString());
      return 3;  // the group is broken; rank 0 rebuilds it
    }
  }
  OMNI_LOG(kInfo, "decoder rank {}: input closed, exiting", rank);
  return 0;
}

}  // namespace omni::decoder

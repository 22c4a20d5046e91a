#include "engine/engine.h"

#include "core/log.h"

namespace omni {

StatusOr<std::unique_ptr<Engine>> Engine::Start(const EngineConfig& config,
                                                std::unique_ptr<ModelRunner> runner,
                                                KvEventSink* sink) {
  OMNI_ASSIGN_OR_RETURN(std::unique_ptr<EngineCore> core,
                        EngineCore::Create(config, std::move(runner), sink));
  std::unique_ptr<Engine> engine(new Engine(std::move(core)));
  engine->thread_ = std::thread([e = engine.get()] { e->Run(); });
  return engine;
}

Engine::Engine(std::unique_ptr<EngineCore> core) : core_(std::move(core)) {
  metrics_ = core_->Metrics();
}

Engine::~Engine() { Stop(); }

Status Engine::Submit(EngineRequest request, OutputCallback on_output) {
  OMNI_RETURN_IF_ERROR(core_->ValidateRequest(request));
  return SubmitValidated(std::move(request), std::move(on_output));
}

Status Engine::SubmitValidated(EngineRequest request, OutputCallback on_output) {
  std::lock_guard lock(mu_);
  if (stopping_) return Unavailable("engine is shutting down");
  inbox_.push_back(AddCommand{std::move(request), std::move(on_output)});
  cv_.notify_one();
  return Status::Ok();
}

void Engine::Cancel(std::string request_id) { Finish(std::move(request_id), FinishReason::kAbort); }

void Engine::Finish(std::string request_id, FinishReason reason) {
  Enqueue(FinishCommand{std::move(request_id), reason});
}

void Engine::Enqueue(Command&& command) {
  std::lock_guard lock(mu_);
  if (stopping_) return;
  inbox_.push_back(std::move(command));
  cv_.notify_one();
}

void Engine::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

EngineMetrics Engine::Metrics() const {
  std::lock_guard lock(mu_);
  return metrics_;
}

void Engine::Apply(Command&& command) {
  if (auto* add = std::get_if<AddCommand>(&command)) {
    // Validated in Submit; what can still fail here is a duplicate id.
    OutputCallback cb = add->on_output;
    const std::string id = add->request.request_id;
    Status s = core_->AddValidatedRequest(std::move(add->request), std::move(add->on_output));
    if (!s.ok()) {
      log::RequestLog(id).Warn("rejected: {}", s.ToString());
      TokenOutput out;
      out.request_id = id;
      out.finish_reason = FinishReason::kError;
      if (cb) cb(out);
    }
    return;
  }
  const auto& finish = std::get<FinishCommand>(command);
  core_->FinishRequest(finish.request_id, finish.reason);
}

void Engine::Run() {
  bool has_work = false;
  for (;;) {
    std::deque<Command> commands;
    bool stop = false;
    {
      std::unique_lock lock(mu_);
      if (!has_work) cv_.wait(lock, [&] { return stopping_ || !inbox_.empty(); });
      commands.swap(inbox_);
      stop = stopping_;
    }
    for (Command& c : commands) Apply(std::move(c));
    if (stop) core_->AbortAll();
    if (!stop && core_->HasWork()) {
      Status s = core_->Step();
      if (!s.ok()) OMNI_LOG(kError, "engine step failed: {}", s.ToString());
    }
    has_work = core_->HasWork();
    std::lock_guard lock(mu_);
    metrics_ = core_->Metrics();
    if (stop) return;
  }
}

}  // namespace omni

#include "services/orchestrator/image_stage.h"

#include <future>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "services/orchestrator/client_url.h"
#include "services/orchestrator/orchestrator_service.h"

namespace omni::orchestrator {
namespace {

constexpr std::string_view kRatioPrefix = "<|vision_ratio_";
constexpr std::string_view kBlockStart = "<|discrete_image_start|>";

// `tokens` with its ratio token replaced by `ratio` (inserted after the
// block start when it has none).
std::string WithRatio(std::string_view tokens, std::string_view ratio) {
  const std::string token = std::string(kRatioPrefix) + std::string(ratio) + "|>";
  std::string out(tokens);
  if (size_t at = out.find(kRatioPrefix); at != std::string::npos) {
    const size_t end = out.find("|>", at + kRatioPrefix.size());
    if (end != std::string::npos) return out.replace(at, end + 2 - at, token);
  }
  const size_t start = out.find(kBlockStart);
  return out.insert(start == std::string::npos ? 0 : start + kBlockStart.size(), token);
}

}  // namespace

void ImageCancels::Cancel() {
  std::vector<std::weak_ptr<HttpCallHandle>> calls;
  {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    calls.swap(calls_);
  }
  for (auto& weak : calls) {
    if (auto call = weak.lock()) call->Cancel();
  }
}

bool ImageCancels::Register(std::shared_ptr<HttpCallHandle> call) {
  {
    std::lock_guard lock(mu_);
    if (!cancelled_) {
      // Calls that ended are forgotten here, so a long-lived set stays small.
      std::erase_if(calls_, [](const std::weak_ptr<HttpCallHandle>& c) { return c.expired(); });
      calls_.push_back(call);
      return true;
    }
  }
  call->Cancel();
  return false;
}

bool ImageCancels::cancelled() const {
  std::lock_guard lock(mu_);
  return cancelled_;
}

ImageStage::ImageStage(const OrchestratorConfig& config, Upstream& upstream, ObjectStore* store,
                       const ObjectUrlSigner* signer, const Clock& clock, MetricsRegistry& metrics)
    : config_(config),
      upstream_(upstream),
      store_(store),
      signer_(signer),
      clock_(clock),
      images_(&metrics.AddCounter("orchestrator_images_total",
                                  "Images the LLM asked for, by result: ok (decoded and stored), error, cancelled (the client left).", {"result"})),
      seconds_(&metrics
                    .AddHistogram("orchestrator_image_decode_seconds", "One image through the vision decoder.", {},
                                  {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600})
                    .Get()),
      pool_(static_cast<size_t>(config.images.max_concurrent)) {}

ImageStage::~ImageStage() = default;

void ImageStage::Stop() { stopping_.Cancel(); }

bool ImageStage::enabled() const { return !config_.images.vision_decoder.empty() && store_ != nullptr; }

StatusOr<std::string> ImageStage::PublicBase(const HttpRequest& request) const {
  return orchestrator::PublicBase(request, config_.images.public_url);
}

StatusOr<std::string> ImageStage::ClientUrl(const std::string& key, const std::string& public_base) const {
  return orchestrator::ClientUrl(*store_, signer_, clock_, key, config_.images.url_ttl, public_base);
}

StatusOr<GeneratedImage> ImageStage::Decode(std::string_view tokens, const ImageOptions& options,
                                            const std::string& public_base, const std::string& request_id,
                                            ImageCancels* cancels) {
  const auto start = clock_.Now();
  auto failed = [&](Status s) -> StatusOr<GeneratedImage> {
    images_->WithLabels({"error"}).Inc();
    log::RequestLog(request_id).Warn("orchestrator: image: {}", s.ToString());
    return s;
  };
  if (!enabled()) return failed(Unavailable("images.vision_decoder is not configured").WithErrorCode("decoder_unavailable"));
  nlohmann::json body = {{"model", config_.images.vision_decoder},
                         {"tokens", options.ratio.empty() ? std::string(tokens) : WithRatio(tokens, options.ratio)},
                         {"format", options.format},
                         {"response_format", options.data_url ? "b64_json" : "url"}};
  if (options.seed) body["seed"] = *options.seed;
  if (options.steps) body["steps"] = *options.steps;
  if (options.guidance) body["guidance"] = *options.guidance;
  HttpClientRequest up{.method = HttpMethod::kPost,
                       .url = config_.gateway + "/v1/decode",
                       .body = body.dump(),
                       .timeout = config_.images.decode_timeout};
  up.headers.Set("content-type", "application/json");
  up.headers.Set("x-request-id", request_id);
  // Asynchronous, so that a client who leaves cancels it: the decoder sees
  // the connection close and stops between steps.
  auto response = std::make_shared<HttpClientResponse>();
  auto finished = std::make_shared<std::promise<Status>>();
  std::future<Status> result = finished->get_future();
  HttpStreamCallbacks callbacks;
  callbacks.on_headers = [response](int status, const HttpHeaders& headers) {
    response->status = status;
    response->headers = headers;
    return true;
  };
  callbacks.on_body = [response](std::string_view chunk) {
    response->body.append(chunk);
    return true;
  };
  std::shared_ptr<HttpCallHandle> call = upstream_.StreamAsync(
      std::move(up), std::move(callbacks),
      [finished](StatusOr<int> status) { finished->set_value(status.ok() ? Status::Ok() : status.status()); });
  if (cancels != nullptr) cancels->Register(call);
  stopping_.Register(call);
  // The exchange has its own timeout; this bound only guards against a done
  // callback that never comes (the client's io threads stopped under it).
  if (result.wait_for(config_.images.decode_timeout + std::chrono::seconds(10)) != std::future_status::ready) {
    call->Cancel();
    return failed(DeadlineExceeded("the vision decoder's answer never completed").WithErrorCode("image_decode_timeout"));
  }
  const Status exchange = result.get();
  StatusOr<HttpClientResponse> r = exchange.ok() ? StatusOr<HttpClientResponse>(std::move(*response)) : exchange;
  if (stopping_.cancelled()) {
    return failed(Unavailable("the orchestrator is shutting down: the image's decode was stopped at the drain deadline")
                      .WithErrorCode("server_shutdown"));
  }
  if (cancels != nullptr && cancels->cancelled()) {
    images_->WithLabels({"cancelled"}).Inc();
    log::RequestLog(request_id).Info("orchestrator: image: the client went away; its decode was cancelled");
    return Cancelled("the client went away; the image's decode was cancelled");
  }
  if (std::optional<Status> f = DecoderCallFailure(r, {.decoder = "the vision decoder",
                                                       .timeout_setting = "images.decode_s",
                                                       .timeout = config_.images.decode_timeout,
                                                       .busy_code = "decoder_busy",
                                                       .unavailable_code = "decoder_unavailable",
                                                       .timeout_code = "image_decode_timeout"})) {
    return failed(*f);
  }
  if (r->status != 200) {
    return failed(Internal(fmt::format("the vision decoder could not draw the model's image ({}): {}", r->status,
                                       DecoderMessage(*r)))
                      .WithErrorCode("image_decode_failed"));
  }
  const nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
  GeneratedImage image;
  try {
    image.key = j.at("key").get<std::string>();
    image.width = j.at("width").get<int>();
    image.height = j.at("height").get<int>();
    image.seed = j.at("seed").get<uint64_t>();
    if (j.contains("warnings")) image.warnings = j["warnings"].get<std::vector<std::string>>();
    if (options.data_url) image.url = "data:" + j.at("mime").get<std::string>() + ";base64," + j.at("b64_json").get<std::string>();
  } catch (const nlohmann::json::exception&) {
    return failed(Internal("the vision decoder's answer is not the /v1/decode shape").WithErrorCode("image_decode_failed"));
  }
  if (!options.data_url) {
    StatusOr<std::string> url = ClientUrl(image.key, public_base);
    if (!url.ok()) return failed(Internal("cannot make the image's URL: " + url.status().message()));
    image.url = std::move(url).value();
  }
  images_->WithLabels({"ok"}).Inc();
  seconds_->Observe(std::chrono::duration<double>(clock_.Now() - start).count());
  return image;
}

void ImageStage::DecodeAsync(std::string tokens, ImageOptions options, std::string public_base, std::string request_id,
                             std::function<void(StatusOr<GeneratedImage>)> done,
                             std::shared_ptr<ImageCancels> cancels) {
  auto shared_done = std::make_shared<std::function<void(StatusOr<GeneratedImage>)>>(std::move(done));
  const bool posted = pool_.Post([this, tokens = std::move(tokens), options = std::move(options),
                                  public_base = std::move(public_base), request_id = std::move(request_id),
                                  shared_done, cancels]() {
    StatusOr<GeneratedImage> image = Internal("the image decode failed");
    try {
      image = cancels != nullptr && cancels->cancelled()
                  ? StatusOr<GeneratedImage>(Cancelled("the client went away before the image's decode started"))
                  : Decode(tokens, options, public_base, request_id, cancels.get());
    } catch (const std::exception& e) {  // bad_alloc
      image = Internal(std::string("the image decode failed: ") + e.what());
    }
    (*shared_done)(std::move(image));
  });
  if (!posted) {
    (*shared_done)(Unavailable("the orchestrator is shutting down").WithErrorCode("server_shutdown"));
  }
}

}  // namespace omni::orchestrator

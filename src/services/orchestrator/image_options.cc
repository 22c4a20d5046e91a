#include "services/orchestrator/image_options.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "api/json_body.h"

namespace omni::orchestrator {
namespace {

// The ratios the vision decoder draws (spec/omni-model.md, "Vision decoder
// details"); its own table gives their sizes.
constexpr std::string_view kRatios[] = {"1:1", "1:2", "2:1", "3:4", "4:3", "3:5", "5:3",
                                        "4:5", "5:4", "6:9", "9:6", "9:16", "16:9"};

Status OptionError(std::string_view field, std::string what) {
  return JsonFieldError("image_generation." + std::string(field), std::move(what));
}

}  // namespace

StatusOr<ImageOptions> ParseImageOptions(std::string_view body) {
  ImageOptions o;
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("image_generation") || j["image_generation"].is_null()) return o;
  const nlohmann::json& g = j["image_generation"];
  if (!g.is_object()) return JsonFieldError("image_generation", "an object");
  for (const auto& [key, v] : g.items()) {
    if (key == "response_format") {
      if (!v.is_string() || (v != "url" && v != "b64_json")) return OptionError(key, "\"url\" or \"b64_json\"");
      o.data_url = v == "b64_json";
    } else if (key == "output_format") {
      if (!v.is_string() || (v != "png" && v != "webp" && v != "jpeg")) {
        return OptionError(key, "\"png\", \"webp\" or \"jpeg\"");
      }
      o.format = v.get<std::string>();
    } else if (key == "seed") {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (int64_t{1} << 53)) {
        return OptionError(key, "an integer in [0, 2^53]");
      }
      o.seed = v.get<uint64_t>();
    } else if (key == "num_inference_steps") {
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 200) {
        return OptionError(key, "an integer in [1, 200]");
      }
      o.steps = v.get<int>();
    } else if (key == "guidance_scale") {
      if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 2)) return OptionError(key, "in [0, 2]");
      o.guidance = v.get<double>();
    } else if (key == "ratio") {
      bool known = false;
      for (std::string_view r : kRatios) known = known || (v.is_string() && v == r);
      if (!known) return OptionError(key, "one of the decoder's ratios (1:1, 3:4, 4:3, 9:16, 16:9, ...)");
      o.ratio = v.get<std::string>();
    } else if (key == "on_error") {
      if (!v.is_string() || (v != "error" && v != "text")) return OptionError(key, "\"error\" or \"text\"");
      o.errors_as_text = v == "text";
    } else {
      return InvalidArgument("'image_generation." + ShownValue(key) +
                             "' is not a field of image_generation (response_format, output_format, seed, "
                             "num_inference_steps, guidance_scale, ratio, on_error)")
          .WithParam("image_generation");
    }
  }
  return o;
}

std::string NearestImageRatio(int width, int height) {
  const double want = std::log(static_cast<double>(std::max(width, 1)) / std::max(height, 1));
  std::string_view best = kRatios[0];
  double best_diff = std::numeric_limits<double>::infinity();
  for (std::string_view r : kRatios) {
    const size_t colon = r.find(':');
    const double w = std::stod(std::string(r.substr(0, colon))), h = std::stod(std::string(r.substr(colon + 1)));
    const double diff = std::abs(std::log(w / h) - want);
    if (diff < best_diff - 1e-12) {
      best = r;
      best_diff = diff;
    }
  }
  return std::string(best);
}

}  // namespace omni::orchestrator

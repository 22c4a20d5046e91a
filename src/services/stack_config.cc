#include "services/stack_config.h"

#include <initializer_list>
#include <string_view>

namespace omni {
namespace {

// Extra flags for a role, minus the ones `up` sets itself (a second --port
// would silently win or lose depending on the role's parser).
Status ReadArgs(ObjectReader& r, std::initializer_list<std::string_view> owned, std::vector<std::string>* out) {
  OMNI_RETURN_IF_ERROR(r.GetStringList("args", out));
  for (const std::string& arg : *out) {
    for (std::string_view flag : owned) {
      const bool same = arg == flag || (arg.starts_with(flag) && arg.size() > flag.size() && arg[flag.size()] == '=');
      OMNI_RETURN_IF_ERROR(r.Require(!same, "args", std::string(flag) + " is set by up itself"));
    }
  }
  return Status::Ok();
}

Status ReadLlm(const ConfigNode& node, StackConfig::Llm* llm) {
  ObjectReader r(node, "llm");
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  OMNI_RETURN_IF_ERROR(r.GetString("model", &llm->model));
  OMNI_RETURN_IF_ERROR(r.GetString("served_model_name", &llm->served_model_name));
  if (r.Has("replicas")) {
    int replicas = 0;
    OMNI_RETURN_IF_ERROR(r.GetInt("replicas", &replicas));
    OMNI_RETURN_IF_ERROR(r.Require(replicas >= 1 && replicas <= 64, "replicas", "must be in [1, 64]"));
    llm->replicas = replicas;
  }
  OMNI_RETURN_IF_ERROR(r.GetInt("threads", &llm->threads));
  OMNI_RETURN_IF_ERROR(r.Require(llm->threads >= 0 && llm->threads <= 1024, "threads", "must be in [0, 1024]"));
  OMNI_RETURN_IF_ERROR(ReadArgs(r, {"--host", "--port", "--model", "--served-model-name", "--threads", "--store"},
                                &llm->args));
  return r.Finish();
}

Status ReadEncoder(const ConfigNode& node, const char* section, StackConfig::Encoder* ve) {
  ObjectReader r(node, section);
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  OMNI_RETURN_IF_ERROR(r.GetString("model", &ve->model));
  OMNI_RETURN_IF_ERROR(r.GetString("served_model_name", &ve->served_model_name));
  OMNI_RETURN_IF_ERROR(r.GetInt("threads", &ve->threads));
  OMNI_RETURN_IF_ERROR(r.Require(ve->threads >= 0 && ve->threads <= 1024, "threads", "must be in [0, 1024]"));
  OMNI_RETURN_IF_ERROR(ReadArgs(r,
                                {"--host", "--port", "--model", "--served-model-name", "--threads", "--store",
                                 "--modality", "--media-root"},
                                &ve->args));
  return r.Finish();
}

Status ReadVisionDecoder(const ConfigNode& node, StackConfig::VisionDecoder* vd) {
  ObjectReader r(node, "vision_decoder");
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  OMNI_RETURN_IF_ERROR(r.GetString("model", &vd->model));
  OMNI_RETURN_IF_ERROR(r.GetString("served_model_name", &vd->served_model_name));
  OMNI_RETURN_IF_ERROR(r.GetInt("threads", &vd->threads));
  OMNI_RETURN_IF_ERROR(r.Require(vd->threads >= 0 && vd->threads <= 1024, "threads", "must be in [0, 1024]"));
  OMNI_RETURN_IF_ERROR(ReadArgs(
      r, {"--host", "--port", "--model", "--served-model-name", "--threads", "--store", "--modality", "--rank"},
      &vd->args));
  return r.Finish();
}

}  // namespace

StatusOr<StackConfig> ParseStackConfig(const ConfigNode& root) {
  StackConfig c;
  ObjectReader r(root, "");
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  OMNI_RETURN_IF_ERROR(r.GetString("store", &c.store));
  OMNI_RETURN_IF_ERROR(r.Require(c.store.empty() || c.store.starts_with("file://") || c.store.starts_with("s3://"),
                                 "store", "expected a file:// or s3:// URI"));
  if (const ConfigNode* llm = r.GetNode("llm")) OMNI_RETURN_IF_ERROR(ReadLlm(*llm, &c.llm));
  if (const ConfigNode* ve = r.GetNode("vision_encoder")) {
    OMNI_RETURN_IF_ERROR(ReadEncoder(*ve, "vision_encoder", &c.vision_encoder));
  }
  if (const ConfigNode* ae = r.GetNode("audio_encoder")) {
    OMNI_RETURN_IF_ERROR(ReadEncoder(*ae, "audio_encoder", &c.audio_encoder));
  }
  if (const ConfigNode* vd = r.GetNode("vision_decoder")) OMNI_RETURN_IF_ERROR(ReadVisionDecoder(*vd, &c.vision_decoder));
  if (const ConfigNode* ad = r.GetNode("audio_decoder")) {
    OMNI_RETURN_IF_ERROR(ReadEncoder(*ad, "audio_decoder", &c.audio_decoder));
  }
  if (const ConfigNode* gateway = r.GetNode("gateway")) {
    ObjectReader g(*gateway, "gateway");
    OMNI_RETURN_IF_ERROR(g.CheckIsMap());
    OMNI_RETURN_IF_ERROR(ReadArgs(g, {"--host", "--port", "--config"}, &c.gateway_args));
    OMNI_RETURN_IF_ERROR(g.Finish());
  }
  if (const ConfigNode* orchestrator = r.GetNode("orchestrator")) {
    ObjectReader o(*orchestrator, "orchestrator");
    OMNI_RETURN_IF_ERROR(o.CheckIsMap());
    if (const ConfigNode* t = o.GetNode("timeouts")) {
      OMNI_RETURN_IF_ERROR(orchestrator::ReadOrchestratorTimeouts(*t, o.ChildPath("timeouts"), &c.orchestrator_timeouts));
    }
    if (const ConfigNode* m = o.GetNode("media")) {
      OMNI_RETURN_IF_ERROR(orchestrator::ReadMediaConfig(*m, o.ChildPath("media"), &c.orchestrator_media));
      OMNI_RETURN_IF_ERROR(o.Require(c.orchestrator_media.vision_encoder.empty() &&
                                         c.orchestrator_media.audio_encoder.empty(),
                                     "media",
                                     "media.vision_encoder and media.audio_encoder are set by up itself (the "
                                     "encoders' served_model_name)"));
    }
    if (const ConfigNode* i = o.GetNode("images")) {
      OMNI_RETURN_IF_ERROR(orchestrator::ReadImagesConfig(*i, o.ChildPath("images"), &c.orchestrator_images));
      OMNI_RETURN_IF_ERROR(o.Require(c.orchestrator_images.vision_decoder.empty() && c.orchestrator_images.llm_model.empty(),
                                     "images",
                                     "images.vision_decoder and images.llm_model are set by up itself (the served "
                                     "model names)"));
    }
    if (const ConfigNode* sp = o.GetNode("speech")) {
      OMNI_RETURN_IF_ERROR(orchestrator::ReadSpeechConfig(*sp, o.ChildPath("speech"), &c.orchestrator_speech));
      OMNI_RETURN_IF_ERROR(o.Require(c.orchestrator_speech.audio_decoder.empty(), "speech",
                                     "speech.audio_decoder is set by up itself (the audio decoder's served name)"));
    }
    OMNI_RETURN_IF_ERROR(ReadArgs(o, {"--host", "--port", "--config"}, &c.orchestrator_args));
    OMNI_RETURN_IF_ERROR(o.Finish());
  }
  OMNI_RETURN_IF_ERROR(r.Finish());
  return c;
}

StatusOr<StackConfig> LoadStackConfig(const std::string& path) {
  OMNI_ASSIGN_OR_RETURN(ConfigNode root, LoadConfigFile(path));
  return ParseStackConfig(root);
}

}  // namespace omni

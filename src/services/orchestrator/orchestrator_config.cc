#include "services/orchestrator/orchestrator_config.h"

#include "net/url.h"

namespace omni::orchestrator {
namespace {

// A base URL the orchestrator appends paths to: http, a host and port, no
// path, query or fragment.
Status CheckBaseUrl(const ConfigNode& node, const std::string& path, const std::string& url) {
  StatusOr<Url> parsed = ParseUrl(url);
  if (!parsed.ok()) return ConfigError(node, path, parsed.status().message());
  if (parsed->target != "/" || url.ends_with('/')) {
    return ConfigError(node, path, "expected a base URL without a path, like http://127.0.0.1:8001");
  }
  return Status::Ok();
}

// Milliseconds in [1, max_ms] under `key`, into *out.
Status GetMillis(ObjectReader& r, std::string_view key, int64_t scale, int64_t max, std::chrono::milliseconds* out) {
  if (!r.Has(key)) return Status::Ok();
  int64_t v = 0;
  OMNI_RETURN_IF_ERROR(r.GetInt(key, &v));
  OMNI_RETURN_IF_ERROR(r.Require(v >= 1 && v <= max, key, "must be in [1, " + std::to_string(max) + "]"));
  *out = std::chrono::milliseconds(v * scale);
  return Status::Ok();
}

}  // namespace

Status ReadOrchestratorTimeouts(const ConfigNode& node, const std::string& path, OrchestratorTimeouts* t) {
  ObjectReader r(node, path);
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  OMNI_RETURN_IF_ERROR(GetMillis(r, "connect_ms", 1, 600'000, &t->connect));
  OMNI_RETURN_IF_ERROR(GetMillis(r, "llm_s", 1000, 86'400, &t->llm));
  OMNI_RETURN_IF_ERROR(GetMillis(r, "models_ms", 1, 600'000, &t->models));
  OMNI_RETURN_IF_ERROR(GetMillis(r, "probe_ms", 1, 600'000, &t->probe));
  return r.Finish();
}

namespace {

Status ReadHealth(const ConfigNode& node, const std::string& path, OrchestratorConfig* c) {
  ObjectReader r(node, path);
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  OMNI_RETURN_IF_ERROR(GetMillis(r, "interval_ms", 1, 3'600'000, &c->probe_interval));
  if (const ConfigNode* list = r.GetNode("components")) {
    const std::string list_path = r.ChildPath("components");
    if (list->kind != ConfigNode::Kind::kList) {
      return ConfigError(*list, list_path, "expected a list, got " + std::string(list->KindName()));
    }
    for (size_t i = 0; i < list->list.size(); ++i) {
      const std::string item_path = list_path + "[" + std::to_string(i) + "]";
      ObjectReader item(list->list[i], item_path);
      OMNI_RETURN_IF_ERROR(item.CheckIsMap());
      Component component;
      OMNI_RETURN_IF_ERROR(item.GetString("name", &component.name, /*required=*/true));
      OMNI_RETURN_IF_ERROR(item.GetString("url", &component.url, /*required=*/true));
      OMNI_RETURN_IF_ERROR(item.Require(!component.name.empty(), "name", "must not be empty"));
      OMNI_RETURN_IF_ERROR(
          item.Require(component.name != "gateway" && component.name != "store", "name",
                       "`gateway` and `store` are reported already; give this component another name"));
      for (const Component& seen : c->components) {
        OMNI_RETURN_IF_ERROR(item.Require(seen.name != component.name, "name", "is listed twice"));
      }
      OMNI_RETURN_IF_ERROR(CheckBaseUrl(*item.GetNode("url"), item.ChildPath("url"), component.url));
      OMNI_RETURN_IF_ERROR(item.Finish());
      c->components.push_back(std::move(component));
    }
  }
  return r.Finish();
}

}  // namespace

Status ReadMediaConfig(const ConfigNode& node, const std::string& path, MediaConfig* m) {
  ObjectReader r(node, path);
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  OMNI_RETURN_IF_ERROR(r.GetString("vision_encoder", &m->vision_encoder));
  OMNI_RETURN_IF_ERROR(r.GetString("audio_encoder", &m->audio_encoder));
  OMNI_RETURN_IF_ERROR(r.GetInt("max_bytes", &m->max_bytes));
  OMNI_RETURN_IF_ERROR(r.Require(m->max_bytes >= 1 && m->max_bytes <= (int64_t{1} << 34), "max_bytes",
                                 "must be in [1, 2^34]"));
  OMNI_RETURN_IF_ERROR(GetMillis(r, "fetch_timeout_ms", 1, 3'600'000, &m->fetch_timeout));
  OMNI_RETURN_IF_ERROR(GetMillis(r, "encode_s", 1000, 86'400, &m->encode_timeout));
  OMNI_RETURN_IF_ERROR(r.GetInt("max_parts", &m->max_parts));
  OMNI_RETURN_IF_ERROR(r.Require(m->max_parts >= 1 && m->max_parts <= 256, "max_parts", "must be in [1, 256]"));
  OMNI_RETURN_IF_ERROR(r.GetInt("max_pending", &m->max_pending));
  OMNI_RETURN_IF_ERROR(
      r.Require(m->max_pending >= 1 && m->max_pending <= 100'000, "max_pending", "must be in [1, 100000]"));
  OMNI_RETURN_IF_ERROR(r.GetBool("fetch_allow_loopback", &m->fetch_allow_loopback));
  OMNI_RETURN_IF_ERROR(r.GetBool("fetch_allow_private", &m->fetch_allow_private));
  OMNI_RETURN_IF_ERROR(r.GetString("fetch_ca_file", &m->fetch_ca_file));
  return r.Finish();
}

Status ReadImagesConfig(const ConfigNode& node, const std::string& path, ImagesConfig* m) {
  ObjectReader r(node, path);
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  OMNI_RETURN_IF_ERROR(r.GetString("vision_decoder", &m->vision_decoder));
  OMNI_RETURN_IF_ERROR(r.GetString("llm_model", &m->llm_model));
  OMNI_RETURN_IF_ERROR(GetMillis(r, "decode_s", 1000, 86'400, &m->decode_timeout));
  std::chrono::milliseconds ttl = m->url_ttl;
  OMNI_RETURN_IF_ERROR(GetMillis(r, "url_ttl_s", 1000, 7 * 86'400, &ttl));  // S3's presign limit: 7 days
  m->url_ttl = std::chrono::duration_cast<std::chrono::seconds>(ttl);
  OMNI_RETURN_IF_ERROR(r.GetString("public_url", &m->public_url));
  if (!m->public_url.empty()) OMNI_RETURN_IF_ERROR(CheckBaseUrl(*r.GetNode("public_url"), r.ChildPath("public_url"), m->public_url));
  OMNI_RETURN_IF_ERROR(r.GetInt("max_concurrent", &m->max_concurrent));
  OMNI_RETURN_IF_ERROR(
      r.Require(m->max_concurrent >= 1 && m->max_concurrent <= 1024, "max_concurrent", "must be in [1, 1024]"));
  return r.Finish();
}

Status ReadSpeechConfig(const ConfigNode& node, const std::string& path, SpeechConfig* m) {
  ObjectReader r(node, path);
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  OMNI_RETURN_IF_ERROR(r.GetString("audio_decoder", &m->audio_decoder));
  OMNI_RETURN_IF_ERROR(GetMillis(r, "decode_s", 1000, 86'400, &m->decode_timeout));
  std::chrono::milliseconds ttl = m->url_ttl;
  OMNI_RETURN_IF_ERROR(GetMillis(r, "url_ttl_s", 1000, 7 * 86'400, &ttl));
  m->url_ttl = std::chrono::duration_cast<std::chrono::seconds>(ttl);
  OMNI_RETURN_IF_ERROR(r.GetString("public_url", &m->public_url));
  if (!m->public_url.empty()) OMNI_RETURN_IF_ERROR(CheckBaseUrl(*r.GetNode("public_url"), r.ChildPath("public_url"), m->public_url));
  OMNI_RETURN_IF_ERROR(r.GetInt("chunk_units", &m->chunk_units));
  OMNI_RETURN_IF_ERROR(r.Require(m->chunk_units >= 3 && m->chunk_units <= 2000, "chunk_units", "must be in [3, 2000]"));
  OMNI_RETURN_IF_ERROR(r.GetInt("lookahead_units", &m->lookahead_units));
  OMNI_RETURN_IF_ERROR(
      r.Require(m->lookahead_units >= 0 && m->lookahead_units <= 2000, "lookahead_units", "must be in [0, 2000]"));
  OMNI_RETURN_IF_ERROR(r.GetInt("max_concurrent", &m->max_concurrent));
  OMNI_RETURN_IF_ERROR(
      r.Require(m->max_concurrent >= 1 && m->max_concurrent <= 1024, "max_concurrent", "must be in [1, 1024]"));
  if (const ConfigNode* voices = r.GetNode("voices")) {
    ObjectReader v(*voices, r.ChildPath("voices"));
    OMNI_RETURN_IF_ERROR(v.CheckIsMap());
    for (const ConfigEntry& entry : voices->map) {
      const std::string& name = entry.key;
      ObjectReader one(*v.GetNode(name), v.ChildPath(name));
      OMNI_RETURN_IF_ERROR(one.CheckIsMap());
      SpeakerSpec spec;
      OMNI_RETURN_IF_ERROR(one.GetString("id", &spec.id));
      OMNI_RETURN_IF_ERROR(one.GetString("gender", &spec.gender));
      OMNI_RETURN_IF_ERROR(one.GetString("age", &spec.age));
      OMNI_RETURN_IF_ERROR(one.Require(spec.gender.empty() || spec.gender == "f" || spec.gender == "m", "gender",
                                       "must be f or m"));
      OMNI_RETURN_IF_ERROR(one.Require(!spec.id.empty() || !spec.gender.empty() || !spec.age.empty(), "id",
                                       "a voice needs an id, a gender or an age"));
      OMNI_RETURN_IF_ERROR(one.Finish());
      m->voices[name] = std::move(spec);
    }
    OMNI_RETURN_IF_ERROR(v.Finish());
  }
  return r.Finish();
}

StatusOr<OrchestratorConfig> ParseOrchestratorConfig(const ConfigNode& root) {
  OrchestratorConfig c;
  ObjectReader r(root, "");
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  OMNI_RETURN_IF_ERROR(r.GetString("gateway", &c.gateway, /*required=*/true));
  OMNI_RETURN_IF_ERROR(CheckBaseUrl(*r.GetNode("gateway"), "gateway", c.gateway));
  OMNI_RETURN_IF_ERROR(r.GetString("store", &c.store));
  OMNI_RETURN_IF_ERROR(r.Require(c.store.empty() || c.store.starts_with("file://") || c.store.starts_with("s3://"),
                                 "store", "expected a file:// or s3:// URI"));
  if (const ConfigNode* t = r.GetNode("timeouts")) OMNI_RETURN_IF_ERROR(ReadOrchestratorTimeouts(*t, "timeouts", &c.timeouts));
  if (const ConfigNode* h = r.GetNode("health")) OMNI_RETURN_IF_ERROR(ReadHealth(*h, "health", &c));
  if (const ConfigNode* m = r.GetNode("media")) OMNI_RETURN_IF_ERROR(ReadMediaConfig(*m, "media", &c.media));
  OMNI_RETURN_IF_ERROR(r.Require(c.media.vision_encoder.empty() || !c.store.empty(), "media",
                                 "media.vision_encoder needs a store: encoders write their objects there"));
  OMNI_RETURN_IF_ERROR(r.Require(c.media.audio_encoder.empty() || !c.store.empty(), "media",
                                 "media.audio_encoder needs a store: encoders write their objects there"));
  if (const ConfigNode* i = r.GetNode("images")) OMNI_RETURN_IF_ERROR(ReadImagesConfig(*i, "images", &c.images));
  OMNI_RETURN_IF_ERROR(r.Require(c.images.vision_decoder.empty() || !c.store.empty(), "images",
                                 "images.vision_decoder needs a store: the decoder writes its images there"));
  if (const ConfigNode* sp = r.GetNode("speech")) OMNI_RETURN_IF_ERROR(ReadSpeechConfig(*sp, "speech", &c.speech));
  OMNI_RETURN_IF_ERROR(r.Require(c.speech.audio_decoder.empty() || !c.store.empty(), "speech",
                                 "speech.audio_decoder needs a store: the decoder writes its audio there"));
  OMNI_RETURN_IF_ERROR(r.Finish());
  return c;
}

StatusOr<OrchestratorConfig> LoadOrchestratorConfig(const std::string& path) {
  OMNI_ASSIGN_OR_RETURN(ConfigNode root, LoadConfigFile(path));
  return ParseOrchestratorConfig(root);
}

}  // namespace omni::orchestrator

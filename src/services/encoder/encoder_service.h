// The encoder server's logic (vision or audio), without sockets: a medium's
// URL in, an embedding object in the store out (DESIGN.md, "Life of a
// request", step 2).
//
//   fetch     media::MediaFetcher: data:, http(s) under the fetch policy,
//             s3://, file:// under a root; kind sniffed, bytes hashed
//   cache     key emb/<model>/<sha256>.safetensors; if the store holds it
//             (HEAD, its metadata describes it) the answer is immediate,
//             with "cached": true
//   encode    images: decode (pixel limit from the header), the model's
//             Encode; videos (bytes that sniff as a video, whatever the
//             request called them): decode the sampled frames (duration and
//             frame-size limits from the header), the model's EncodeVideo;
//             audio: decode to 16 kHz mono (duration limit from the header),
//             the model's Encode
//   store     the object ("rows" [N, D] bf16, "ids" [M] i32, metadata)
//             written atomically, with the answer's fields as object
//             metadata so a later HEAD can answer alone
//
// Errors are Status with the codes of media/ and storage/: 400 corrupt or
// malformed, 413 too large, 415 not an image, 404 unknown model or object,
// 403 expired URL, 503/504 the store or a fetch failed. An audio encoder
// answers 415 for an image or a video, a vision encoder for audio (and for
// a video when it was built without a VideoEncodeFn), either one for a
// video without a video stream.
// Thread-safety: Encode is const and thread-safe (the model, store and
// fetcher are).
#pragma once

#include <chrono>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "media/audio.h"
#include "media/image.h"
#include "media/media_fetch.h"
#include "media/video.h"
#include "models/audio_encoder/omni_audio_encoder.h"
#include "models/omni_vision/omni_vision_encoder.h"
#include "net/metrics.h"
#include "storage/object_store.h"

namespace omni::encoder {

// The model behind the service (OmniVisionEncoder::Encode or
// OmniAudioEncoder::Encode, through a batcher; tests inject one). A service
// has one of the two.
using ImageEncodeFn = std::function<StatusOr<models::VisionEncoding>(const media::Image&)>;
using AudioEncodeFn = std::function<StatusOr<models::AudioEncoding>(std::span<const float> samples_16k)>;
// A video's sampled frames (media::DecodeVideo's) -> continuous rows only
// (OmniVisionEncoder::EncodeVideo).
using VideoEncodeFn = std::function<StatusOr<models::VisionEncoding>(std::span<const media::Image> frames)>;

struct EncoderServiceOptions {
  std::string model_id;  // the served name: requests' "model", and the key's model segment
  ObjectStore* store = nullptr;                    // required; outlives the service
  std::string store_uri;                           // its URI (for the objects' s3:// / file:// URIs)
  const media::MediaFetcher* fetcher = nullptr;    // required; outlives the service
  media::ImageDecodeOptions decode;
  media::AudioDecodeOptions audio_decode;          // sample_rate is the model's: 16000
  media::VideoDecodeOptions video_decode;          // max_seconds (600 by default), max_pixels per frame
  std::chrono::seconds url_ttl{3600};              // presigned URLs in answers
  MetricsRegistry* metrics = nullptr;              // required
};

struct EncodeRequest {
  std::string model;  // empty: the served model
  std::string url;    // data:, http(s)://, s3://, file://
};

struct EncodeStageTimes {
  double fetch_ms = 0, decode_ms = 0, encode_ms = 0, store_ms = 0;
};

struct EncodeResult {
  bool cached = false;
  std::string key, uri, url, sha256;
  std::string type = "image";            // "image", "video" or "audio"
  std::string mime;                      // sniffed
  int64_t rows = 0, width = 0, ids = 0;  // the object's tensors
  // images and videos
  int64_t image_width = 0, image_height = 0;   // after the EXIF orientation (a video: its rotation)
  int64_t resized_width = 0, resized_height = 0;
  models::PatchGrid grid;
  // audio and videos
  double seconds = 0;  // the duration as decoded (the prompt's audio_duration / video_duration)
  // videos
  int64_t frames = 0;  // sampled frames (2 per second, 4 to 128)
  EncodeStageTimes times;
};

// Request bodies. /v1/encode: {"model": "...", "media": {"url": "..."}};
// OmniServe's /process_image_or_video and /process_audio: {"media_url":
// "..."} (also a URL written in URL-safe base64, as OmniServe's audio encoder
// accepts) or {"media_base64": "<base64 bytes>" or a data: URL} (other fields
// ignored). InvalidArgument names the field at fault.
StatusOr<EncodeRequest> ParseEncodeRequest(std::string_view body);
StatusOr<EncodeRequest> ParseOmniServeEncodeRequest(std::string_view body);

// The answer's JSON (docs/ENCODER.md).
std::string EncodeResultJson(const EncodeResult& result, std::string_view model);

class EncoderService {
 public:
  EncoderService(EncoderServiceOptions options, ImageEncodeFn encode);
  EncoderService(EncoderServiceOptions options, AudioEncodeFn encode);
  // A vision encoder that also takes videos.
  EncoderService(EncoderServiceOptions options, ImageEncodeFn image, VideoEncodeFn video);

  StatusOr<EncodeResult> Encode(const EncodeRequest& request) const;

  const std::string& model_id() const { return options_.model_id; }

 private:
  EncoderService(EncoderServiceOptions options, ImageEncodeFn image, VideoEncodeFn video, AudioEncodeFn audio);
  StatusOr<EncodeResult> FromStoredObject(const std::string& key, const ObjectInfo& info) const;
  Status Describe(EncodeResult* result) const;
  // Decode and encode the fetched bytes; fills the result's description and
  // the object's modality-specific metadata.
  StatusOr<models::VisionEncoding> EncodeImage(const media::FetchedMedia& media, EncodeResult* r,
                                               ObjectMetadata* meta) const;
  StatusOr<models::VisionEncoding> EncodeVideo(const media::FetchedMedia& media, EncodeResult* r,
                                               ObjectMetadata* meta) const;
  StatusOr<models::AudioEncoding> EncodeAudio(const media::FetchedMedia& media, EncodeResult* r,
                                              ObjectMetadata* meta) const;

  EncoderServiceOptions options_;
  ImageEncodeFn encode_image_;
  VideoEncodeFn encode_video_;  // empty: videos are refused as images are
  AudioEncodeFn encode_audio_;
  Counter* cache_hits_;
  Counter* encoded_;
  HistogramFamily* stage_seconds_;
};

}  // namespace omni::encoder

#include "media/video.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/core.h>

#include "media/ffmpeg_io.h"

extern "C" {
#include <libavutil/display.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

namespace omni::media {
namespace {

using internal::AvFormatPtr;
using internal::AvFramePtr;
using internal::AvPacketPtr;
using internal::AvStatus;

// The containers read as video (FFmpeg demuxer names). GIF is here because
// an animated GIF is a video to decord and the reference; elementary streams
// (raw H.264, ...) are not: their frame counts are guesses.
constexpr std::string_view kVideoDemuxers =
    "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,flv,mpegts,mpeg,ogg,asf,gif,ivf,nut";

// Bicubic is the scaler decord's and the ffmpeg CLI's filter graphs pick by
// default (it only matters when a frame's size changes mid-stream); accurate
// rounding and bit-exactness make the conversion the same on every CPU.
constexpr int kSwsFlags = SWS_BICUBIC | SWS_ACCURATE_RND | SWS_BITEXACT;

Status UnsupportedMedia(std::string message) { return {StatusCode::kUnsupportedMedia, std::move(message)}; }

// Bytes that are plainly something else are refused before FFmpeg sees
// them. Ogg and M4A may carry video, so FFmpeg decides for those.
Status CheckKind(std::string_view bytes, MediaKind kind) {
  if (bytes.empty()) return InvalidArgument("the video is empty");
  const MediaKindDescription& d = MediaKindInfo(kind);
  if (d.cls == MediaClass::kImage && kind != MediaKind::kGif) {
    return UnsupportedMedia(fmt::format("the video is a {} image, not a video", d.name));
  }
  if (d.cls == MediaClass::kAudio && kind != MediaKind::kOgg && kind != MediaKind::kM4a) {
    return UnsupportedMedia(fmt::format("the video is an audio file ({}), not a video", d.name));
  }
  if (kind == MediaKind::kUnknown) {
    const std::string_view what = DescribeUnknownBytes(bytes);
    if (what == "text" || what == "HTML") return UnsupportedMedia(fmt::format("the video is {}, not a video", what));
  }
  return Status::Ok();
}

struct OpenedVideo {
  AvFormatPtr input;
  AVStream* stream = nullptr;
};

// FFmpeg's best video stream, skipping cover art (an attached picture).
StatusOr<OpenedVideo> OpenVideo(std::string_view bytes, const VideoDecodeOptions& options) {
  OMNI_ASSIGN_OR_RETURN(AvFormatPtr input, internal::OpenAvInput(bytes, {.format_whitelist = kVideoDemuxers,
                                                                          .what = "video",
                                                                          .max_pixels = options.max_pixels}));
  auto is_video = [&](int i) {
    const AVStream* s = input->streams[i];
    return s->codecpar->codec_type == AVMEDIA_TYPE_VIDEO && (s->disposition & AV_DISPOSITION_ATTACHED_PIC) == 0;
  };
  int index = av_find_best_stream(input.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (index < 0 || !is_video(index)) {
    index = -1;
    for (int i = 0; i < static_cast<int>(input->nb_streams) && index < 0; ++i) {
      if (is_video(i)) index = i;
    }
  }
  if (index < 0) return UnsupportedMedia("the video has no video stream");
  AVStream* stream = input->streams[index];
  return OpenedVideo{std::move(input), stream};
}

// Clockwise degrees to turn the frames, as decord's GetRotation reads them.
int StreamRotation(const AVStream& stream) {
  double theta = 0;
  if (const AVDictionaryEntry* tag = av_dict_get(stream.metadata, "rotate", nullptr, 0); tag != nullptr) {
    theta = std::atof(tag->value);
  }
  size_t size = 0;
  const uint8_t* matrix = av_stream_get_side_data(&stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
  if (theta == 0 && matrix != nullptr && size >= 9 * sizeof(int32_t)) {
    theta = -av_display_rotation_get(reinterpret_cast<const int32_t*>(matrix));
  }
  if (!std::isfinite(theta)) return 0;
  theta = std::fmod(theta, 360);
  if (theta < 0) theta += 360;
  const int degrees = static_cast<int>(std::lround(theta)) % 360;
  return degrees % 90 == 0 ? degrees : 0;
}

double Seconds(int64_t ticks, AVRational time_base) { return static_cast<double>(ticks) * av_q2d(time_base); }

// decord's get_avg_fps; where the container gives no average rate, the
// nominal one, else frames over the duration.
double StreamFps(const AVStream& stream, const AVFormatContext& input, int64_t total_frames) {
  for (AVRational r : {stream.avg_frame_rate, stream.r_frame_rate}) {
    if (r.num > 0 && r.den > 0) return av_q2d(r);
  }
  double seconds = stream.duration > 0 ? Seconds(stream.duration, stream.time_base) : 0;
  if (seconds <= 0 && input.duration > 0) seconds = static_cast<double>(input.duration) / AV_TIME_BASE;
  return seconds > 0 ? static_cast<double>(total_frames) / seconds : 0;
}

// The header's claims, checked before any packet is read.
Status CheckHeader(const AVFormatContext& input, const AVStream& stream, const VideoDecodeOptions& options) {
  const AVCodecParameters& par = *stream.codecpar;
  if (avcodec_find_decoder(par.codec_id) == nullptr) {
    return UnsupportedMedia(
        fmt::format("omniserve cannot decode the video codec '{}'", avcodec_get_name(par.codec_id)));
  }
  if (par.width <= 0 || par.height <= 0) {
    return InvalidArgument(fmt::format("the video is corrupt: it declares {}x{} pixels", par.width, par.height));
  }
  if (static_cast<int64_t>(par.width) * par.height > options.max_pixels) {
    return PayloadTooLarge(fmt::format("the video's frames are {}x{} pixels, over the limit of {} pixels", par.width,
                                       par.height, options.max_pixels));
  }
  double seconds = stream.duration > 0 ? Seconds(stream.duration, stream.time_base) : 0;
  if (input.duration > 0) seconds = std::max(seconds, static_cast<double>(input.duration) / AV_TIME_BASE);
  if (seconds > options.max_seconds) {
    return PayloadTooLarge(
        fmt::format("the video lasts {:.1f} s, over the limit of {} s", seconds, options.max_seconds));
  }
  return Status::Ok();
}

// The demuxing pass: the reference's total_frames (packets of the stream),
// bounded by the packets' own timestamps and count. A read error ends the
// stream, as it ends the decoding pass that follows.
StatusOr<int64_t> CountFrames(AVFormatContext* input, const AVStream& stream, const VideoDecodeOptions& options) {
  AvPacketPtr packet = internal::MakeAvPacket();
  int64_t count = 0;
  double earliest = INFINITY, latest = -INFINITY;  // seconds
  while (av_read_frame(input, packet.get()) >= 0) {
    if (packet->stream_index == stream.index) {
      if (++count > options.max_total_frames) {
        return PayloadTooLarge(fmt::format("the video has over {} frames", options.max_total_frames));
      }
      const int64_t ts = packet->pts != AV_NOPTS_VALUE ? packet->pts : packet->dts;
      if (ts != AV_NOPTS_VALUE) {
        earliest = std::min(earliest, Seconds(ts, stream.time_base));
        latest = std::max(latest, Seconds(ts, stream.time_base));
        if (latest - earliest > options.max_seconds) {
          return PayloadTooLarge(fmt::format("the video lasts over the limit of {} s", options.max_seconds));
        }
      }
    }
    av_packet_unref(packet.get());
  }
  return count;
}

// Turns an RGB image by 90, 180 or 270 degrees clockwise (transpose=clock,
// two of them, transpose=cclock in decord's filter graph).
Image Rotate(const Image& in, int degrees) {
  if (degrees == 0) return in;
  Image out;
  const bool swap = degrees != 180;
  out.width = swap ? in.height : in.width;
  out.height = swap ? in.width : in.height;
  out.rgb.resize(in.rgb.size());
  for (int y = 0; y < in.height; ++y) {
    for (int x = 0; x < in.width; ++x) {
      int ox = 0, oy = 0;
      if (degrees == 90) {
        ox = in.height - 1 - y, oy = x;
      } else if (degrees == 180) {
        ox = in.width - 1 - x, oy = in.height - 1 - y;
      } else {
        ox = y, oy = in.width - 1 - x;
      }
      std::copy_n(in.Pixel(x, y), 3, out.rgb.data() + (static_cast<size_t>(oy) * out.width + ox) * 3);
    }
  }
  return out;
}

bool IsFullRangeFormat(AVPixelFormat f) {
  return f == AV_PIX_FMT_YUVJ420P || f == AV_PIX_FMT_YUVJ422P || f == AV_PIX_FMT_YUVJ444P ||
         f == AV_PIX_FMT_YUVJ440P || f == AV_PIX_FMT_YUVJ411P;
}

// Any decoded frame -> RGB24 at the stream's size, then rotated.
class RgbConverter {
 public:
  RgbConverter(int width, int height, int rotation) : width_(width), height_(height), rotation_(rotation) {}
  ~RgbConverter() { sws_freeContext(sws_); }
  RgbConverter(const RgbConverter&) = delete;
  RgbConverter& operator=(const RgbConverter&) = delete;

  StatusOr<Image> Convert(const AVFrame& frame) {
    const auto format = static_cast<AVPixelFormat>(frame.format);
    const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
    if (desc == nullptr || frame.width <= 0 || frame.height <= 0) {
      return InvalidArgument("the video is corrupt: a frame has no pixel format or size");
    }
    sws_ = sws_getCachedContext(sws_, frame.width, frame.height, format, width_, height_, AV_PIX_FMT_RGB24, kSwsFlags,
                                nullptr, nullptr, nullptr);
    if (sws_ == nullptr) {
      return UnsupportedMedia(fmt::format("omniserve cannot convert the video's pixel format '{}'", desc->name));
    }
    // YUV input: the matrix the frame declares (swscale's BT.601 table when
    // unspecified) and its range; gray and RGB keep swscale's defaults.
    if ((desc->flags & AV_PIX_FMT_FLAG_RGB) == 0 && desc->nb_components >= 3) {
      const bool full = frame.color_range == AVCOL_RANGE_JPEG || IsFullRangeFormat(format);
      sws_setColorspaceDetails(sws_, sws_getCoefficients(frame.colorspace), full ? 1 : 0,
                               sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16);
    }
    Image image;
    image.width = width_;
    image.height = height_;
    image.rgb.resize(static_cast<size_t>(width_) * height_ * 3);
    uint8_t* dst[4] = {image.rgb.data(), nullptr, nullptr, nullptr};
    int dst_stride[4] = {width_ * 3, 0, 0, 0};
    if (sws_scale(sws_, frame.data, frame.linesize, 0, frame.height, dst, dst_stride) != height_) {
      return Internal("libswscale did not convert a whole frame");
    }
    return Rotate(image, rotation_);
  }

 private:
  SwsContext* sws_ = nullptr;
  int width_ = 0;
  int height_ = 0;
  int rotation_ = 0;
};

// The decoding pass: frames in order, the sampled ones converted.
class FrameSampler {
 public:
  FrameSampler(const AVStream& stream, const std::vector<int64_t>& wanted, double fps, int rotation,
               VideoFrames* out)
      : stream_(stream), wanted_(wanted), fps_(fps), converter_(stream.codecpar->width, stream.codecpar->height,
                                                                rotation), out_(out) {}

  bool done() const { return next_ >= wanted_.size(); }
  int64_t decoded() const { return decoded_; }

  Status OnFrame(AVFrame* frame) {
    while (!done() && wanted_[next_] == decoded_) OMNI_RETURN_IF_ERROR(Keep(*frame, decoded_));
    ++decoded_;
    av_frame_unref(last_.get());
    if (av_frame_ref(last_.get(), frame) < 0) return ResourceExhausted("out of memory holding a video frame");
    return Status::Ok();
  }

  // Indices past the last decoded frame repeat it.
  Status Finish() {
    if (decoded_ == 0) return InvalidArgument("the video is corrupt: no frame of it could be decoded");
    while (!done()) OMNI_RETURN_IF_ERROR(Keep(*last_, decoded_ - 1));
    return Status::Ok();
  }

 private:
  Status Keep(const AVFrame& frame, int64_t index) {
    OMNI_ASSIGN_OR_RETURN(Image image, converter_.Convert(frame));
    double start = stream_.start_time != AV_NOPTS_VALUE ? Seconds(stream_.start_time, stream_.time_base) : 0;
    double t = static_cast<double>(index) / fps_;
    if (frame.best_effort_timestamp != AV_NOPTS_VALUE) {
      t = std::max(0.0, Seconds(frame.best_effort_timestamp, stream_.time_base) - start);
    }
    out_->frames.push_back(std::move(image));
    out_->frame_indices.push_back(wanted_[next_]);
    out_->timestamps.push_back(t);
    ++next_;
    return Status::Ok();
  }

  const AVStream& stream_;
  const std::vector<int64_t>& wanted_;
  double fps_;
  RgbConverter converter_;
  VideoFrames* out_;
  AvFramePtr last_ = internal::MakeAvFrame();
  size_t next_ = 0;
  int64_t decoded_ = 0;
};

Status DecodeSampled(const OpenedVideo& video, const VideoDecodeOptions& options, FrameSampler& sampler) {
  OMNI_ASSIGN_OR_RETURN(internal::AvCodecPtr decoder,
                        internal::OpenAvDecoder(*video.stream, {.threads = options.decoder_threads,
                                                                .max_pixels = options.max_pixels}));
  AvPacketPtr packet = internal::MakeAvPacket();
  AvFramePtr frame = internal::MakeAvFrame();
  // Drains the decoder; corrupt data in one packet skips its frames only.
  auto receive = [&]() -> Status {
    for (int failures = 0; !sampler.done();) {
      const int r = avcodec_receive_frame(decoder.get(), frame.get());
      if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return Status::Ok();
      if (r == AVERROR(ENOMEM)) return AvStatus(r, "video", "decoding a frame");
      if (r < 0) {
        if (++failures > 16) return Status::Ok();  // let the next packet go on
        continue;
      }
      if (sampler.decoded() >= options.max_total_frames) {
        return PayloadTooLarge(fmt::format("the video has over {} frames", options.max_total_frames));
      }
      const Status s = sampler.OnFrame(frame.get());
      av_frame_unref(frame.get());
      OMNI_RETURN_IF_ERROR(s);
    }
    return Status::Ok();
  };
  while (!sampler.done() && av_read_frame(video.input.get(), packet.get()) >= 0) {
    if (packet->stream_index == video.stream->index) {
      const int r = avcodec_send_packet(decoder.get(), packet.get());
      if (r == AVERROR(ENOMEM)) return AvStatus(r, "video", "decoding a packet");
      av_packet_unref(packet.get());
      OMNI_RETURN_IF_ERROR(receive());
    } else {
      av_packet_unref(packet.get());
    }
  }
  if (!sampler.done() && avcodec_send_packet(decoder.get(), nullptr) >= 0) OMNI_RETURN_IF_ERROR(receive());
  return sampler.Finish();
}

// IEEE single-precision operations, written so that no compiler can fuse
// them (a float product is exact in double; a cast rounds once).
float MulF(float a, float b) { return static_cast<float>(static_cast<double>(a) * b); }
float SubF(float a, float b) { return static_cast<float>(static_cast<double>(a) - b); }
float DivF(float a, float b) { return static_cast<float>(static_cast<double>(a) / b); }

}  // namespace

StatusOr<int> SampledFrameCount(int64_t total_frames, double video_fps, const VideoDecodeOptions& options) {
  if (total_frames < 1) return InvalidArgument("the video is corrupt: it has no frames");
  if (!(video_fps > 0) || !std::isfinite(video_fps)) return InvalidArgument("the video has no frame rate");
  const double total = static_cast<double>(total_frames);
  const double min_frames = std::ceil(options.min_frames / 2.0) * 2;
  const double max_frames = std::floor(std::min<double>(options.max_frames, total) / 2.0) * 2;
  double n = total / video_fps * options.fps;
  n = std::min(std::min(std::max(n, min_frames), max_frames), total);
  n = std::floor(n / 2.0) * 2;
  if (n < 2) {
    return InvalidArgument(fmt::format("the video has {} frame(s); at least 2 are needed", total_frames));
  }
  return static_cast<int>(n);
}

std::vector<int64_t> SampledFrameIndices(int64_t total_frames, int n) {
  if (n <= 0 || total_frames <= 0) return {};
  if (n == 1) return {0};
  // ATen's linspace kernel for float: step = (end - start) / (steps - 1);
  // the first half start + step * i, the second end - step * (steps - 1 - i).
  const float start = 0.0f, end = static_cast<float>(total_frames - 1);
  const float step = DivF(SubF(end, start), static_cast<float>(n - 1));
  const int halfway = n / 2;
  std::vector<int64_t> indices(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const float v = i < halfway ? start + MulF(step, static_cast<float>(i))
                                : SubF(end, MulF(step, static_cast<float>(n - 1 - i)));
    const float rounded = std::nearbyint(v);  // torch.round: half to even
    indices[static_cast<size_t>(i)] = std::clamp<int64_t>(static_cast<int64_t>(rounded), 0, total_frames - 1);
  }
  return indices;
}

StatusOr<VideoFrames> DecodeVideo(std::string_view bytes, const VideoDecodeOptions& options, VideoInfo* info) {
  const MediaKind kind = SniffMediaKind(bytes);
  OMNI_RETURN_IF_ERROR(CheckKind(bytes, kind));
  OMNI_ASSIGN_OR_RETURN(OpenedVideo counted, OpenVideo(bytes, options));
  const AVStream& stream = *counted.stream;
  OMNI_RETURN_IF_ERROR(CheckHeader(*counted.input, stream, options));
  const int rotation = StreamRotation(stream);
  if (info != nullptr) {
    *info = VideoInfo{.kind = kind,
                      .container = counted.input->iformat->name,
                      .codec = avcodec_get_name(stream.codecpar->codec_id),
                      .width = stream.codecpar->width,
                      .height = stream.codecpar->height,
                      .rotation = rotation};
  }
  OMNI_ASSIGN_OR_RETURN(const int64_t total, CountFrames(counted.input.get(), stream, options));
  const double fps = StreamFps(stream, *counted.input, total);
  OMNI_ASSIGN_OR_RETURN(const int n, SampledFrameCount(total, fps, options));
  const std::vector<int64_t> wanted = SampledFrameIndices(total, n);

  VideoFrames out;
  out.total_frames = total;
  out.source_fps = fps;
  out.sample_fps = n / static_cast<double>(total) * fps;
  out.seconds = static_cast<double>(total) / fps;
  out.frames.reserve(wanted.size());
  // The decoding pass reads the bytes afresh: reopening is simpler and surer
  // than seeking back in every container.
  OMNI_ASSIGN_OR_RETURN(OpenedVideo decoding, OpenVideo(bytes, options));
  if (decoding.stream->index != stream.index) return Internal("the video's stream changed between passes");
  FrameSampler sampler(*decoding.stream, wanted, fps, rotation, &out);
  OMNI_RETURN_IF_ERROR(DecodeSampled(decoding, options, sampler));
  return out;
}

}  // namespace omni::media

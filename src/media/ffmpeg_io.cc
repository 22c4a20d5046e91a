#include "media/ffmpeg_io.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include <fmt/core.h>

extern "C" {
#include <libavutil/avstring.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/mem.h>
}

namespace omni::media::internal {
namespace {

// FFmpeg's own default AVIOContext buffer size.
constexpr int kIoBufferSize = 32 * 1024;
// av_probe_input_buffer2 reads at most this much (its own PROBE_BUF_MAX).
constexpr int64_t kMaxProbeBytes = 1 << 20;
// A real video or audio file has a handful of streams; each costs a codec
// context during analysis.
constexpr int kMaxStreams = 64;

// The read position in the caller's bytes; owned by the AVIOContext (opaque).
struct MemoryReader {
  std::string_view bytes;
  int64_t at = 0;  // 0 <= at <= bytes.size()
};

int ReadMemory(void* opaque, uint8_t* out, int size) {
  auto* r = static_cast<MemoryReader*>(opaque);
  const int64_t left = static_cast<int64_t>(r->bytes.size()) - r->at;
  if (left <= 0) return AVERROR_EOF;
  if (size <= 0) return AVERROR(EINVAL);
  const int n = static_cast<int>(std::min<int64_t>(left, size));
  std::memcpy(out, r->bytes.data() + r->at, static_cast<size_t>(n));
  r->at += n;
  return n;
}

int64_t SeekMemory(void* opaque, int64_t offset, int whence) {
  auto* r = static_cast<MemoryReader*>(opaque);
  const int64_t size = static_cast<int64_t>(r->bytes.size());
  int64_t base = 0;
  switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return size;
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = r->at; break;
    case SEEK_END: base = size; break;
    default: return AVERROR(EINVAL);
  }
  // base + offset in [0, size], written so that no sum can overflow.
  if (offset < -base || offset > size - base) return AVERROR(EINVAL);
  r->at = base + offset;
  return r->at;
}

// Every nested open (HLS segments, concat entries, QuickTime data
// references, image sequences) is refused: the input is the bytes we hold.
int RefuseNestedOpen(AVFormatContext*, AVIOContext**, const char*, int, AVDictionary**) {
  return AVERROR(EPERM);
}

void FreeIo(AVIOContext* io) {
  if (io == nullptr) return;
  delete static_cast<MemoryReader*>(io->opaque);
  av_freep(&io->buffer);  // FFmpeg may have replaced the buffer we gave it
  avio_context_free(&io);
}

StatusOr<AVIOContext*> MakeMemoryIo(std::string_view bytes) {
  auto* buffer = static_cast<uint8_t*>(av_malloc(kIoBufferSize));
  if (buffer == nullptr) return ResourceExhausted("out of memory for an FFmpeg I/O buffer");
  auto* reader = new MemoryReader{bytes, 0};
  AVIOContext* io = avio_alloc_context(buffer, kIoBufferSize, /*write_flag=*/0, reader, ReadMemory, nullptr,
                                       SeekMemory);
  if (io == nullptr) {
    av_free(buffer);
    delete reader;
    return ResourceExhausted("out of memory for an FFmpeg I/O context");
  }
  return io;
}

Status UnsupportedMedia(std::string message) { return {StatusCode::kUnsupportedMedia, std::move(message)}; }

// avformat_find_stream_info with per-stream decoder options.
Status FindStreamInfo(AVFormatContext* context, const AvInputOptions& options) {
  std::vector<AVDictionary*> per_stream(context->nb_streams, nullptr);
  for (AVDictionary*& d : per_stream) {
    av_dict_set(&d, "threads", "1", 0);
    if (options.max_pixels > 0) av_dict_set_int(&d, "max_pixels", options.max_pixels, 0);
  }
  const int r = avformat_find_stream_info(context, per_stream.empty() ? nullptr : per_stream.data());
  for (AVDictionary*& d : per_stream) av_dict_free(&d);
  if (r < 0) return AvStatus(r, options.what, "reading the stream headers");
  return Status::Ok();
}

}  // namespace

void AvFormatDeleter::operator()(AVFormatContext* context) const {
  AVIOContext* io = context->pb;  // ours (AVFMT_FLAG_CUSTOM_IO): close_input leaves it
  avformat_close_input(&context);
  FreeIo(io);
}

void QuietFfmpegLogging() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_level(AV_LOG_QUIET); });
}

std::string AvErrorString(int error) {
  char text[AV_ERROR_MAX_STRING_SIZE] = "";
  if (av_strerror(error, text, sizeof(text)) < 0) return fmt::format("FFmpeg error {}", error);
  return text;
}

Status AvStatus(int error, std::string_view what, std::string_view doing) {
  const std::string detail = fmt::format("{}: {}", doing, AvErrorString(error));
  if (error == AVERROR_DECODER_NOT_FOUND || error == AVERROR_DEMUXER_NOT_FOUND || error == AVERROR_PATCHWELCOME ||
      error == AVERROR(ENOSYS)) {
    return UnsupportedMedia(fmt::format("the {} uses a feature FFmpeg cannot decode ({})", what, detail));
  }
  if (error == AVERROR(ENOMEM)) {
    return ResourceExhausted(fmt::format("out of memory decoding the {} ({})", what, detail));
  }
  return InvalidArgument(fmt::format("the {} is corrupt or truncated ({})", what, detail));
}

StatusOr<AvFormatPtr> OpenAvInput(std::string_view bytes, const AvInputOptions& options) {
  QuietFfmpegLogging();
  if (bytes.empty()) return InvalidArgument(fmt::format("the {} is empty", options.what));
  OMNI_ASSIGN_OR_RETURN(AVIOContext * io, MakeMemoryIo(bytes));

  const int64_t probe_bytes = std::clamp<int64_t>(options.probesize, 2048, kMaxProbeBytes);
  const AVInputFormat* format = nullptr;
  int r = av_probe_input_buffer2(io, &format, "", nullptr, 0, static_cast<unsigned>(probe_bytes));
  if (r < 0 || format == nullptr) {
    FreeIo(io);
    if (r == AVERROR_INVALIDDATA || format == nullptr) {
      return UnsupportedMedia(fmt::format("the {} is in no format FFmpeg recognises", options.what));
    }
    return AvStatus(r, options.what, "probing the format");
  }
  if (options.format_whitelist.empty() ||
      av_match_list(format->name, std::string(options.format_whitelist).c_str(), ',') <= 0) {
    FreeIo(io);
    return UnsupportedMedia(fmt::format("the {} is {} ({}), not a format omniserve reads as {}", options.what,
                                        format->long_name != nullptr ? format->long_name : format->name,
                                        format->name, options.what));
  }

  AVFormatContext* context = avformat_alloc_context();
  if (context == nullptr) {
    FreeIo(io);
    return ResourceExhausted("out of memory for an FFmpeg format context");
  }
  context->pb = io;
  context->flags |= AVFMT_FLAG_CUSTOM_IO;
  context->probesize = std::max<int64_t>(options.probesize, 32);
  context->max_analyze_duration = std::max<int64_t>(options.max_analyze_duration_us, 0);
  context->max_streams = kMaxStreams;
  context->io_open = RefuseNestedOpen;
  // "none" matches no protocol, and no demuxer but the whitelisted ones runs.
  context->protocol_whitelist = av_strdup("none");
  context->format_whitelist = av_strdup(std::string(options.format_whitelist).c_str());
  r = avformat_open_input(&context, "", format, nullptr);
  if (r < 0) {  // avformat_open_input has freed `context`, never our `io`
    FreeIo(io);
    return AvStatus(r, options.what, "opening the container");
  }
  AvFormatPtr input(context);
  if (options.find_stream_info) OMNI_RETURN_IF_ERROR(FindStreamInfo(input.get(), options));
  return input;
}

StatusOr<AvCodecPtr> OpenAvDecoder(const AVStream& stream, const AvDecoderOptions& options) {
  const AVCodecID id = stream.codecpar->codec_id;
  const AVCodec* codec = id == AV_CODEC_ID_NONE ? nullptr : avcodec_find_decoder(id);
  if (codec == nullptr) {
    return UnsupportedMedia(fmt::format("omniserve has no decoder for the codec '{}'", avcodec_get_name(id)));
  }
  AvCodecPtr decoder(avcodec_alloc_context3(codec));
  if (decoder == nullptr) return ResourceExhausted("out of memory for an FFmpeg decoder");
  int r = avcodec_parameters_to_context(decoder.get(), stream.codecpar);
  if (r < 0) return AvStatus(r, "stream", "reading the codec parameters");
  decoder->pkt_timebase = stream.time_base;
  decoder->thread_count = std::max(options.threads, 1);
  if (options.max_pixels > 0) decoder->max_pixels = options.max_pixels;
  r = avcodec_open2(decoder.get(), codec, nullptr);
  if (r < 0) return AvStatus(r, fmt::format("{} stream", avcodec_get_name(id)), "opening the decoder");
  return decoder;
}

AvFramePtr MakeAvFrame() {
  AvFramePtr frame(av_frame_alloc());
  OMNI_CHECK(frame != nullptr) << "out of memory allocating an AVFrame";
  return frame;
}

AvPacketPtr MakeAvPacket() {
  AvPacketPtr packet(av_packet_alloc());
  OMNI_CHECK(packet != nullptr) << "out of memory allocating an AVPacket";
  return packet;
}

}  // namespace omni::media::internal

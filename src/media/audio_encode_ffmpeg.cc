// FLAC, MP3, Ogg Opus and ADTS AAC through libavcodec and libavformat
// (FFmpeg 5.1), written to memory:
//  - the muxer writes through an AVIOContext whose callback appends to a
//    string; a stream hands the string out after each Push (the context
//    flushed), a whole file also answers seeks so that muxers go back to
//    fill in their headers;
//  - samples wait in a float buffer until they fill the encoder's frame
//    (1024 for AAC, 20 ms for Opus, 576/1152 for MP3, FLAC's block); the
//    last frame goes out short where the encoder allows it, zero-padded
//    where not;
//  - the encoder gets the first sample format of kSampleFormatPreference it
//    takes, converted here (mono, so planar and packed are the same bytes);
//  - a rate the encoder does not take is resampled by libsoxr (HQ) to the
//    nearest it does (libswresample is not among the media library's
//    dependencies; soxr is, and is what DecodeAudio resamples with);
//  - AVFMT_FLAG_BITEXACT and AV_CODEC_FLAG_BITEXACT keep library versions
//    out of the bytes and the Ogg serial number fixed, so the same samples
//    give the same file.
#include "media/audio_encode_ffmpeg.h"

#include <soxr.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <fmt/core.h>

extern "C" {
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/mem.h>
#include <libavutil/samplefmt.h>
}

#include "media/ffmpeg_io.h"

namespace omni::media::internal {
namespace {

struct CodecRecipe {
  const char* encoder;  // avcodec_find_encoder_by_name
  const char* muxer;    // avformat_alloc_output_context2's format_name
  int64_t bit_rate;     // bits per second; 0 for lossless
};

CodecRecipe RecipeFor(AudioFormat format) {
  switch (format) {
    case AudioFormat::kFlac: return {"flac", "flac", 0};
    case AudioFormat::kMp3: return {"libmp3lame", "mp3", 128'000};
    case AudioFormat::kOpus: return {"libopus", "ogg", 64'000};
    case AudioFormat::kAac: return {"aac", "adts", 96'000};
    case AudioFormat::kWav:
    case AudioFormat::kPcm16: break;
  }
  OMNI_CHECK(false) << "no FFmpeg encoder for " << AudioFormatName(format);
  return {};
}

// Exact formats first (FLAC keeps the 16-bit samples), then the float ones
// lossy encoders work in.
constexpr AVSampleFormat kSampleFormatPreference[] = {AV_SAMPLE_FMT_S16, AV_SAMPLE_FMT_S16P, AV_SAMPLE_FMT_FLT,
                                                     AV_SAMPLE_FMT_FLTP, AV_SAMPLE_FMT_S32, AV_SAMPLE_FMT_S32P};

// Opus's frame, and the block of encoders that take any frame size.
constexpr int kFrameMilliseconds = 20;
// Samples converted and encoded at a time.
constexpr size_t kPushBlock = 16 * 1024;
// The muxer's write buffer; a stream flushes it after every Push anyway.
constexpr int kIoBufferSize = 32 * 1024;
// An Ogg page closes after this much audio (the muxer's default is 1 s):
// a listener waits at most this long for the next page.
constexpr const char* kOggPageMicroseconds = "100000";

Status FfmpegFailure(int error, std::string_view doing) {
  return Internal(fmt::format("FFmpeg failed {}: {}", doing, AvErrorString(error)));
}

// The muxer's bytes: a stream's not yet handed out, or the whole file.
struct ByteSink {
  std::string bytes;
  int64_t at = 0;  // kWholeFile: where the next write goes (after a seek back)
};

int AppendToSink(void* opaque, uint8_t* data, int size) {
  static_cast<ByteSink*>(opaque)->bytes.append(reinterpret_cast<const char*>(data), static_cast<size_t>(size));
  return size;
}

int WriteAtSink(void* opaque, uint8_t* data, int size) {
  auto* sink = static_cast<ByteSink*>(opaque);
  const size_t end = static_cast<size_t>(sink->at) + static_cast<size_t>(size);
  if (end > sink->bytes.size()) sink->bytes.resize(end);
  std::memcpy(sink->bytes.data() + sink->at, data, static_cast<size_t>(size));
  sink->at = static_cast<int64_t>(end);
  return size;
}

int64_t SeekSink(void* opaque, int64_t offset, int whence) {
  auto* sink = static_cast<ByteSink*>(opaque);
  const auto size = static_cast<int64_t>(sink->bytes.size());
  int64_t base = 0;
  switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return size;
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = sink->at; break;
    case SEEK_END: base = size; break;
    default: return AVERROR(EINVAL);
  }
  if (offset < -base || offset > size - base) return AVERROR(EINVAL);
  sink->at = base + offset;
  return sink->at;
}

// An output context and the AVIOContext we gave it (freed together).
struct AvOutputDeleter {
  void operator()(AVFormatContext* context) const {
    AVIOContext* io = context->pb;
    avformat_free_context(context);
    if (io != nullptr) {
      av_freep(&io->buffer);
      avio_context_free(&io);
    }
  }
};
using AvOutputPtr = std::unique_ptr<AVFormatContext, AvOutputDeleter>;

struct SoxrDeleter {
  void operator()(soxr* s) const { soxr_delete(s); }
};

// Streaming mono resampling, int16 in, float (-1..1) out.
class StreamResampler {
 public:
  static StatusOr<StreamResampler> Create(int in_rate, int out_rate) {
    const soxr_io_spec_t io = soxr_io_spec(SOXR_INT16_I, SOXR_FLOAT32_I);
    const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
    const soxr_runtime_spec_t runtime = soxr_runtime_spec(1);
    soxr_error_t error = nullptr;
    std::unique_ptr<soxr, SoxrDeleter> s(soxr_create(in_rate, out_rate, 1, &error, &io, &quality, &runtime));
    if (s == nullptr || error != nullptr) {
      return Internal(fmt::format("libsoxr could not start ({} Hz to {} Hz): {}", in_rate, out_rate,
                                  soxr_strerror(error)));
    }
    return StreamResampler(std::move(s), static_cast<double>(out_rate) / in_rate);
  }

  // Appends what `in` releases to `out`; an empty `in` flushes the filter.
  Status Push(std::span<const int16_t> in, std::vector<float>& out) {
    const bool flush = in.empty();
    size_t used = 0;
    while (true) {
      const size_t room = static_cast<size_t>(static_cast<double>(in.size() - used) * ratio_) + 1024;
      const size_t at = out.size();
      out.resize(at + room);
      size_t idone = 0, odone = 0;
      const soxr_error_t error = soxr_process(soxr_.get(), flush ? nullptr : in.data() + used, in.size() - used,
                                              &idone, out.data() + at, room, &odone);
      out.resize(at + odone);
      if (error != nullptr) return Internal(fmt::format("libsoxr failed: {}", error));
      used += idone;
      if (flush ? odone == 0 : used == in.size()) return Status::Ok();
    }
  }

 private:
  StreamResampler(std::unique_ptr<soxr, SoxrDeleter> s, double ratio) : soxr_(std::move(s)), ratio_(ratio) {}
  std::unique_ptr<soxr, SoxrDeleter> soxr_;
  double ratio_;  // out_rate / in_rate
};

// The rate the encoder runs at: `want` if it takes it, else the lowest rate
// above it that it takes, else its highest.
int EncoderRate(const AVCodec& codec, int want) {
  if (codec.supported_samplerates == nullptr) return want;
  int above = 0, highest = 0;
  for (const int* r = codec.supported_samplerates; *r != 0; ++r) {
    if (*r == want) return want;
    if (*r > want && (above == 0 || *r < above)) above = *r;
    highest = std::max(highest, *r);
  }
  return above != 0 ? above : highest;
}

AVSampleFormat EncoderSampleFormat(const AVCodec& codec) {
  if (codec.sample_fmts == nullptr) return AV_SAMPLE_FMT_S16;
  for (AVSampleFormat preferred : kSampleFormatPreference) {
    for (const AVSampleFormat* f = codec.sample_fmts; *f != AV_SAMPLE_FMT_NONE; ++f) {
      if (*f == preferred) return preferred;
    }
  }
  return AV_SAMPLE_FMT_NONE;
}

// Samples in -1..1 as T's full range, rounded and clipped.
template <typename T>
void ToIntegers(std::span<const float> in, uint8_t* plane) {
  constexpr double kLow = std::numeric_limits<T>::min(), kHigh = std::numeric_limits<T>::max();
  auto* out = reinterpret_cast<T*>(plane);
  for (size_t i = 0; i < in.size(); ++i) {
    out[i] = static_cast<T>(std::clamp(std::nearbyint(-kLow * in[i]), kLow, kHigh));
  }
}

// Mono samples into the frame's one plane, in its format.
void FillPlane(std::span<const float> in, AVSampleFormat format, uint8_t* plane) {
  switch (av_get_packed_sample_fmt(format)) {
    case AV_SAMPLE_FMT_S16: ToIntegers<int16_t>(in, plane); break;
    case AV_SAMPLE_FMT_S32: ToIntegers<int32_t>(in, plane); break;
    case AV_SAMPLE_FMT_FLT: std::memcpy(plane, in.data(), in.size_bytes()); break;
    default: OMNI_CHECK(false) << "unexpected sample format " << format;
  }
}

class FfmpegAudioEncoder final : public AudioStreamEncoder {
 public:
  explicit FfmpegAudioEncoder(EncodeOutput output) : output_(output) {}
  FfmpegAudioEncoder(const FfmpegAudioEncoder&) = delete;  // the AVIOContext points at sink_
  FfmpegAudioEncoder& operator=(const FfmpegAudioEncoder&) = delete;

  Status Open(AudioFormat format, int sample_rate);

  StatusOr<std::string> Push(std::span<const int16_t> pcm) override {
    if (finished_) return FailedPrecondition("the audio encoder was used after Finish");
    // In blocks, so that a long one-shot input is never all held as floats.
    for (size_t at = 0; at < pcm.size(); at += kPushBlock) {
      const std::span<const int16_t> block = pcm.subspan(at, std::min(kPushBlock, pcm.size() - at));
      if (resampler_.has_value()) {
        OMNI_RETURN_IF_ERROR(resampler_->Push(block, pending_));
      } else {
        for (int16_t s : block) pending_.push_back(static_cast<float>(s) / 32768.0f);
      }
      OMNI_RETURN_IF_ERROR(EncodePending(/*last=*/false));
    }
    return TakeBytes();
  }

  StatusOr<std::string> Finish() override {
    if (finished_) return FailedPrecondition("the audio encoder was used after Finish");
    finished_ = true;
    if (resampler_.has_value()) OMNI_RETURN_IF_ERROR(resampler_->Push({}, pending_));
    OMNI_RETURN_IF_ERROR(EncodePending(/*last=*/true));
    OMNI_RETURN_IF_ERROR(SendFrame(nullptr));  // drains the encoder
    if (const int r = av_write_trailer(muxer_.get()); r < 0) return FfmpegFailure(r, "closing the container");
    if (output_ == EncodeOutput::kWholeFile) {
      avio_flush(muxer_->pb);
      return std::move(sink_.bytes);
    }
    return TakeBytes();
  }

 private:
  Status OpenEncoder(const AVCodec& codec, const CodecRecipe& recipe, int rate, bool global_header);
  Status OpenMuxer(const CodecRecipe& recipe);

  // Encodes every whole frame of pending_, and on the last call the rest.
  Status EncodePending(bool last) {
    size_t used = 0;
    while (pending_.size() - used >= frame_size_) {
      OMNI_RETURN_IF_ERROR(EncodeFrame(std::span(pending_).subspan(used, frame_size_)));
      used += frame_size_;
    }
    if (last && used < pending_.size()) {
      // An encoder that wants whole frames gets the tail padded with silence.
      if (!small_last_frame_) pending_.resize(used + frame_size_, 0.0f);
      OMNI_RETURN_IF_ERROR(EncodeFrame(std::span(pending_).subspan(used)));
      used = pending_.size();
    }
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(used));
    return Status::Ok();
  }

  Status EncodeFrame(std::span<const float> samples) {
    // A fresh buffer each time: the encoder may still hold the last one.
    av_frame_unref(frame_.get());
    frame_->format = encoder_->sample_fmt;
    frame_->sample_rate = encoder_->sample_rate;
    frame_->nb_samples = static_cast<int>(samples.size());
    if (const int r = av_channel_layout_copy(&frame_->ch_layout, &encoder_->ch_layout); r < 0) {
      return FfmpegFailure(r, "setting the channel layout");
    }
    if (const int r = av_frame_get_buffer(frame_.get(), 0); r < 0) return FfmpegFailure(r, "allocating a frame");
    FillPlane(samples, encoder_->sample_fmt, frame_->extended_data[0]);
    frame_->pts = next_pts_;
    next_pts_ += frame_->nb_samples;
    return SendFrame(frame_.get());
  }

  // Hands `frame` (nullptr: the end) to the encoder, and every packet it
  // releases to the muxer.
  Status SendFrame(const AVFrame* frame) {
    if (const int r = avcodec_send_frame(encoder_.get(), frame); r < 0) return FfmpegFailure(r, "encoding audio");
    while (true) {
      const int r = avcodec_receive_packet(encoder_.get(), packet_.get());
      if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return Status::Ok();
      if (r < 0) return FfmpegFailure(r, "encoding audio");
      packet_->stream_index = 0;
      av_packet_rescale_ts(packet_.get(), encoder_->time_base, muxer_->streams[0]->time_base);
      const int w = av_write_frame(muxer_.get(), packet_.get());
      av_packet_unref(packet_.get());
      if (w < 0) return FfmpegFailure(w, "writing an audio packet");
    }
  }

  std::string TakeBytes() {
    if (output_ == EncodeOutput::kWholeFile) return {};
    avio_flush(muxer_->pb);
    return std::exchange(sink_.bytes, {});
  }

  const EncodeOutput output_;
  ByteSink sink_;  // before muxer_: its AVIOContext writes here until freed
  std::optional<StreamResampler> resampler_;
  AvCodecPtr encoder_;
  AvOutputPtr muxer_;
  AvFramePtr frame_ = MakeAvFrame();
  AvPacketPtr packet_ = MakeAvPacket();
  size_t frame_size_ = 0;          // samples per frame the encoder takes
  bool small_last_frame_ = false;  // the encoder takes a short last frame
  std::vector<float> pending_;     // [samples] at the encoder's rate, under a frame
  int64_t next_pts_ = 0;           // in samples at the encoder's rate
  bool finished_ = false;
};

Status FfmpegAudioEncoder::Open(AudioFormat format, int sample_rate) {
  const CodecRecipe recipe = RecipeFor(format);
  const AVCodec* codec = avcodec_find_encoder_by_name(recipe.encoder);
  if (codec == nullptr) {
    return Unavailable(fmt::format("this FFmpeg build has no '{}' encoder, needed for {} audio", recipe.encoder,
                                   AudioFormatName(format)));
  }
  const AVOutputFormat* muxer = av_guess_format(recipe.muxer, nullptr, nullptr);
  if (muxer == nullptr) {
    return Unavailable(fmt::format("this FFmpeg build has no '{}' muxer, needed for {} audio", recipe.muxer,
                                   AudioFormatName(format)));
  }
  const int rate = EncoderRate(*codec, sample_rate);
  if (rate != sample_rate) {
    OMNI_ASSIGN_OR_RETURN(resampler_, StreamResampler::Create(sample_rate, rate));
  }
  OMNI_RETURN_IF_ERROR(OpenEncoder(*codec, recipe, rate, (muxer->flags & AVFMT_GLOBALHEADER) != 0));
  return OpenMuxer(recipe);
}

Status FfmpegAudioEncoder::OpenEncoder(const AVCodec& codec, const CodecRecipe& recipe, int rate,
                                       bool global_header) {
  encoder_.reset(avcodec_alloc_context3(&codec));
  if (encoder_ == nullptr) return Internal("FFmpeg failed allocating an encoder");
  encoder_->sample_fmt = EncoderSampleFormat(codec);
  if (encoder_->sample_fmt == AV_SAMPLE_FMT_NONE) {
    return Internal(fmt::format("the '{}' encoder takes no sample format omniserve writes", recipe.encoder));
  }
  encoder_->sample_rate = rate;
  av_channel_layout_default(&encoder_->ch_layout, 1);
  encoder_->time_base = AVRational{1, rate};
  encoder_->bit_rate = recipe.bit_rate;
  encoder_->flags |= AV_CODEC_FLAG_BITEXACT;
  if (global_header) encoder_->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  encoder_->thread_count = 1;
  AVDictionary* options = nullptr;
  if (std::string_view(recipe.encoder) == "libopus") {
    av_dict_set_int(&options, "frame_duration", kFrameMilliseconds, 0);
  }
  const int r = avcodec_open2(encoder_.get(), &codec, &options);
  av_dict_free(&options);
  if (r < 0) return FfmpegFailure(r, fmt::format("opening the '{}' encoder at {} Hz", recipe.encoder, rate));
  const bool any_size = (codec.capabilities & AV_CODEC_CAP_VARIABLE_FRAME_SIZE) != 0;
  frame_size_ = encoder_->frame_size > 0 && !any_size ? static_cast<size_t>(encoder_->frame_size)
                                                       : static_cast<size_t>(rate * kFrameMilliseconds / 1000);
  small_last_frame_ = any_size || (codec.capabilities & AV_CODEC_CAP_SMALL_LAST_FRAME) != 0;
  return Status::Ok();
}

Status FfmpegAudioEncoder::OpenMuxer(const CodecRecipe& recipe) {
  AVFormatContext* context = nullptr;
  int r = avformat_alloc_output_context2(&context, nullptr, recipe.muxer, nullptr);
  if (r < 0 || context == nullptr) return FfmpegFailure(r, fmt::format("creating the '{}' muxer", recipe.muxer));
  muxer_.reset(context);
  muxer_->flags |= AVFMT_FLAG_BITEXACT | AVFMT_FLAG_CUSTOM_IO;

  const bool whole = output_ == EncodeOutput::kWholeFile;
  auto* buffer = static_cast<uint8_t*>(av_malloc(kIoBufferSize));
  if (buffer == nullptr) return Internal("FFmpeg failed allocating an output buffer");
  muxer_->pb = avio_alloc_context(buffer, kIoBufferSize, /*write_flag=*/1, &sink_, nullptr,
                                  whole ? WriteAtSink : AppendToSink, whole ? SeekSink : nullptr);
  if (muxer_->pb == nullptr) {
    av_free(buffer);
    return Internal("FFmpeg failed allocating an output context");
  }

  AVStream* stream = avformat_new_stream(muxer_.get(), nullptr);
  if (stream == nullptr) return Internal("FFmpeg failed adding an audio stream");
  r = avcodec_parameters_from_context(stream->codecpar, encoder_.get());
  if (r < 0) return FfmpegFailure(r, "describing the audio stream");
  stream->time_base = encoder_->time_base;

  AVDictionary* options = nullptr;
  if (std::string_view(recipe.muxer) == "ogg") av_dict_set(&options, "page_duration", kOggPageMicroseconds, 0);
  if (std::string_view(recipe.muxer) == "mp3") av_dict_set(&options, "id3v2_version", "0", 0);  // no tag
  r = avformat_write_header(muxer_.get(), &options);
  av_dict_free(&options);
  if (r < 0) return FfmpegFailure(r, fmt::format("writing the '{}' header", recipe.muxer));
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<AudioStreamEncoder>> CreateFfmpegAudioEncoder(AudioFormat format, int sample_rate,
                                                                       EncodeOutput output) {
  QuietFfmpegLogging();
  auto encoder = std::make_unique<FfmpegAudioEncoder>(output);
  OMNI_RETURN_IF_ERROR(encoder->Open(format, sample_rate));
  return std::unique_ptr<AudioStreamEncoder>(std::move(encoder));
}

}  // namespace omni::media::internal

// Audio through FFmpeg's libraries (ffmpeg_io.h): Ogg (Vorbis, Opus),
// M4A/AAC, WebM and Matroska, the soundtrack of an MP4/QuickTime/AVI video,
// and whatever libsndfile would not open. What librosa's audioread fallback gets from the
// ffmpeg command line, decoded in-process:
//  - the demuxer must be the one the sniffed kind names (an M4A is never
//    read as anything but ISO BMFF), and no stream analysis runs: the rate
//    and channels come from the decoded frames, so no video frame is
//    decoded to read a soundtrack;
//  - the best audio stream (av_find_best_stream) is decoded, every other
//    stream is discarded by the demuxer;
//  - the codec must be a common one (kAllowed below): fewer decoders for
//    hostile bytes to reach;
//  - a packet the decoder rejects is skipped, as the ffmpeg command line
//    does, unless nothing decodes at all;
//  - the encoder's priming and padding are dropped by libavcodec (skip
//    samples from the container), as the command line drops them.
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include <fmt/core.h>

#include "media/audio_codecs.h"
#include "media/ffmpeg_io.h"

namespace omni::media::internal {
namespace {

// The demuxers a sniffed kind may open as (AVInputFormat names). An ID3 tag
// fronts AAC streams as well as MP3 ones.
std::string_view DemuxersFor(MediaKind kind) {
  switch (kind) {
    case MediaKind::kWav: return "wav";
    case MediaKind::kFlac: return "flac";
    case MediaKind::kOgg: return "ogg";
    case MediaKind::kMp3: return "mp3,aac";
    case MediaKind::kAac: return "aac";
    case MediaKind::kM4a:
    case MediaKind::kMp4:
    case MediaKind::kQuickTime: return "mov";
    case MediaKind::kWebm:
    case MediaKind::kMatroska: return "matroska";
    case MediaKind::kAvi: return "avi";
    default: return "";
  }
}

bool IsAllowedCodec(AVCodecID id) {
  // Every PCM variant (plain sample conversions) sits below the first ADPCM id.
  if (id >= AV_CODEC_ID_FIRST_AUDIO && id < AV_CODEC_ID_ADPCM_IMA_QT) return true;
  switch (id) {
    case AV_CODEC_ID_AAC:
    case AV_CODEC_ID_AAC_LATM:
    case AV_CODEC_ID_MP1:
    case AV_CODEC_ID_MP2:
    case AV_CODEC_ID_MP3:
    case AV_CODEC_ID_VORBIS:
    case AV_CODEC_ID_OPUS:
    case AV_CODEC_ID_FLAC:
    case AV_CODEC_ID_ALAC:
    case AV_CODEC_ID_AC3:
    case AV_CODEC_ID_EAC3:
    case AV_CODEC_ID_AMR_NB:
    case AV_CODEC_ID_AMR_WB:
    case AV_CODEC_ID_WMAV1:
    case AV_CODEC_ID_WMAV2:
    case AV_CODEC_ID_ADPCM_IMA_WAV:
    case AV_CODEC_ID_ADPCM_MS:
    case AV_CODEC_ID_GSM_MS: return true;
    default: return false;
  }
}

// The duration the container claims, in seconds; negative when it claims
// none or only estimated one from the bit rate (a guess, not a claim).
double ClaimedSeconds(const AVFormatContext& input, const AVStream& stream) {
  if (input.duration_estimation_method == AVFMT_DURATION_FROM_BITRATE) return -1;
  if (stream.duration > 0 && stream.time_base.num > 0 && stream.time_base.den > 0) {
    return static_cast<double>(stream.duration) * av_q2d(stream.time_base);
  }
  if (input.duration > 0) return static_cast<double>(input.duration) / AV_TIME_BASE;
  return -1;
}

// One sample as float, scaled as libsndfile and the ffmpeg command line
// scale integers (by 1 / 2^(bits - 1)).
template <typename T>
float SampleAt(const uint8_t* plane, size_t i) {
  T v;
  std::memcpy(&v, plane + i * sizeof(T), sizeof(T));
  if constexpr (std::is_same_v<T, uint8_t>) return (static_cast<float>(v) - 128.0f) / 128.0f;
  if constexpr (std::is_same_v<T, int16_t>) return static_cast<float>(v) / 32768.0f;
  if constexpr (std::is_same_v<T, int32_t>) return static_cast<float>(static_cast<double>(v) / 2147483648.0);
  if constexpr (std::is_same_v<T, int64_t>) return static_cast<float>(static_cast<double>(v) / 9223372036854775808.0);
  if constexpr (std::is_same_v<T, float>) return v;
  if constexpr (std::is_same_v<T, double>) return static_cast<float>(v);
}

template <typename T>
void Downmix(const AVFrame& frame, int channels, bool planar, std::vector<float>& mono) {
  const size_t n = static_cast<size_t>(frame.nb_samples);
  mono.resize(n);
  for (size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int c = 0; c < channels; ++c) {
      sum += planar ? SampleAt<T>(frame.extended_data[c], i) : SampleAt<T>(frame.extended_data[0], i * channels + c);
    }
    mono[i] = static_cast<float>(sum / channels);
  }
}

// The frame's channels averaged into `mono`; false for a sample format no
// audio decoder produces.
bool FrameToMono(const AVFrame& frame, int channels, std::vector<float>& mono) {
  const auto format = static_cast<AVSampleFormat>(frame.format);
  const bool planar = av_sample_fmt_is_planar(format) != 0;
  switch (av_get_packed_sample_fmt(format)) {
    case AV_SAMPLE_FMT_U8: Downmix<uint8_t>(frame, channels, planar, mono); return true;
    case AV_SAMPLE_FMT_S16: Downmix<int16_t>(frame, channels, planar, mono); return true;
    case AV_SAMPLE_FMT_S32: Downmix<int32_t>(frame, channels, planar, mono); return true;
    case AV_SAMPLE_FMT_S64: Downmix<int64_t>(frame, channels, planar, mono); return true;
    case AV_SAMPLE_FMT_FLT: Downmix<float>(frame, channels, planar, mono); return true;
    case AV_SAMPLE_FMT_DBL: Downmix<double>(frame, channels, planar, mono); return true;
    default: return false;
  }
}

// The decode of one stream into an accumulator.
class StreamDecoder {
 public:
  StreamDecoder(AVCodecContext* decoder, MonoAccumulator& acc, double claimed_seconds)
      : decoder_(decoder), acc_(acc), claimed_seconds_(claimed_seconds) {}

  // Sends one packet (nullptr: the end) and takes every frame it releases.
  Status Decode(const AVPacket* packet) {
    const int sent = avcodec_send_packet(decoder_, packet);
    if (sent < 0 && sent != AVERROR(EAGAIN) && sent != AVERROR_EOF) NoteError(sent);
    while (true) {
      const int r = avcodec_receive_frame(decoder_, frame_.get());
      if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return Status::Ok();
      if (r < 0) {
        NoteError(r);
        return Status::Ok();
      }
      const Status s = TakeFrame(*frame_);
      av_frame_unref(frame_.get());
      OMNI_RETURN_IF_ERROR(s);
    }
  }

  int errors() const { return errors_; }
  int last_error() const { return last_error_; }

 private:
  void NoteError(int error) {
    ++errors_;
    last_error_ = error;
  }

  Status TakeFrame(const AVFrame& frame) {
    const int channels = frame.ch_layout.nb_channels;
    if (frame.nb_samples <= 0) return Status::Ok();
    if (!acc_.started()) {
      OMNI_RETURN_IF_ERROR(acc_.Start(frame.sample_rate, channels, claimed_seconds_));
    } else if (frame.sample_rate != acc_.source_rate()) {
      return CorruptAudio(acc_.label(), fmt::format("its sample rate changes from {} Hz to {} Hz mid-stream",
                                                    acc_.source_rate(), frame.sample_rate));
    }
    if (channels < 1 || channels > kMaxChannels) {
      return CorruptAudio(acc_.label(), fmt::format("a frame has {} channels", channels));
    }
    if (!FrameToMono(frame, channels, mono_)) {
      return CorruptAudio(acc_.label(), fmt::format("the decoder gave samples in format {}", frame.format));
    }
    return acc_.AddMono(mono_);
  }

  AVCodecContext* decoder_;
  MonoAccumulator& acc_;
  double claimed_seconds_;
  AvFramePtr frame_ = MakeAvFrame();
  std::vector<float> mono_;  // scratch: one frame, averaged
  int errors_ = 0;
  int last_error_ = 0;
};

StatusOr<int> PickAudioStream(AVFormatContext& input, MediaKind kind, std::string_view label) {
  int best = av_find_best_stream(&input, AVMEDIA_TYPE_AUDIO, -1, -1, nullptr, 0);
  // av_find_best_stream passes over streams whose rate and channels only
  // decoding would tell (raw ADTS; no stream analysis ran): take the first.
  for (unsigned i = 0; best < 0 && i < input.nb_streams; ++i) {
    if (input.streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) best = static_cast<int>(i);
  }
  if (best < 0) {
    const MediaKindDescription& d = MediaKindInfo(kind);
    if (d.cls == MediaClass::kVideo) {
      return UnsupportedAudio(fmt::format("the {} video has no audio stream", d.name));
    }
    return UnsupportedAudio(fmt::format("the {} holds no audio stream FFmpeg can read", label));
  }
  const AVCodecID codec = input.streams[best]->codecpar->codec_id;
  if (codec == AV_CODEC_ID_NONE) {
    return UnsupportedAudio(fmt::format("the {} is in a codec FFmpeg does not know (tag 0x{:x})", label,
                                        input.streams[best]->codecpar->codec_tag));
  }
  if (!IsAllowedCodec(codec)) {
    return UnsupportedAudio(fmt::format("the {} is in the codec '{}', which omniserve does not decode; send {}",
                                        label, avcodec_get_name(codec),
                                        "AAC, MP3, Opus, Vorbis, FLAC, ALAC, AC-3, AMR, WMA or PCM"));
  }
  return best;
}

// OpenAvInput over the kind's demuxers. The bytes carry the kind's
// signature, so a probe that finds no format (or another one) means a
// damaged or cut header, not a foreign format.
StatusOr<AvFormatPtr> OpenInput(std::string_view bytes, std::string_view demuxers, std::string_view label) {
  StatusOr<AvFormatPtr> opened =
      OpenAvInput(bytes, {.format_whitelist = demuxers, .what = label, .find_stream_info = false});
  if (!opened.ok() && opened.status().code() == StatusCode::kUnsupportedMedia) {
    return CorruptAudio(label, "its header cannot be read (cut short or damaged)");
  }
  return opened;
}

}  // namespace

StatusOr<DecodedAudio> DecodeWithFfmpeg(std::string_view bytes, MediaKind kind, std::string_view label,
                                        const AudioDecodeOptions& options) {
  const std::string_view demuxers = DemuxersFor(kind);
  if (demuxers.empty()) return UnsupportedAudio(fmt::format("the {} is not something omniserve reads", label));
  OMNI_ASSIGN_OR_RETURN(AvFormatPtr input, OpenInput(bytes, demuxers, label));
  OMNI_ASSIGN_OR_RETURN(const int index, PickAudioStream(*input, kind, label));
  for (unsigned i = 0; i < input->nb_streams; ++i) {
    if (static_cast<int>(i) != index) input->streams[i]->discard = AVDISCARD_ALL;
  }
  const AVStream& stream = *input->streams[index];
  const double claimed = ClaimedSeconds(*input, stream);
  OMNI_RETURN_IF_ERROR(CheckClaimedDuration(label, claimed, options));
  OMNI_ASSIGN_OR_RETURN(AvCodecPtr decoder, OpenAvDecoder(stream, {.threads = 1}));

  MonoAccumulator acc{std::string(label), options};
  StreamDecoder stream_decoder(decoder.get(), acc, claimed);
  AvPacketPtr packet = MakeAvPacket();
  int read_error = 0;
  while (true) {
    const int r = av_read_frame(input.get(), packet.get());
    if (r < 0) {
      if (r != AVERROR_EOF) read_error = r;
      break;
    }
    const Status s = packet->stream_index == index ? stream_decoder.Decode(packet.get()) : Status::Ok();
    av_packet_unref(packet.get());
    OMNI_RETURN_IF_ERROR(s);
  }
  OMNI_RETURN_IF_ERROR(stream_decoder.Decode(nullptr));  // the frames the decoder still holds

  if (acc.frames() == 0 && stream_decoder.errors() > 0) {
    return CorruptAudio(label, AvErrorString(stream_decoder.last_error()));
  }
  if (read_error != 0 && acc.frames() == 0) {
    return input->pb->eof_reached ? TruncatedAudio(label) : CorruptAudio(label, AvErrorString(read_error));
  }
  // Well short of the container's duration (by more than 10% and 50 ms, so
  // an encoder's priming or rounding never counts): the data stops early.
  if (acc.started() && claimed > 0 &&
      static_cast<double>(acc.frames()) / acc.source_rate() < 0.9 * claimed - 0.05) {
    return TruncatedAudio(label);
  }
  if (!acc.started()) return InvalidArgument(fmt::format("the {} contains no audio (0 samples)", label));
  return std::move(acc).Finish(avcodec_get_name(stream.codecpar->codec_id));
}

}  // namespace omni::media::internal

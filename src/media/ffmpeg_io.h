// FFmpeg over bytes in memory, shared by the audio and video decoders; not
// for use outside src/media, and included only by .cc files, so that no
// public media header pulls in FFmpeg's.
//
//   OMNI_ASSIGN_OR_RETURN(AvFormatPtr input, OpenAvInput(bytes, {.format_whitelist = "matroska,webm"}));
//   OMNI_ASSIGN_OR_RETURN(AvCodecPtr decoder, OpenAvDecoder(*input->streams[i], {}));
//
// The contract, written for untrusted bytes (libavformat 59 / FFmpeg 5.1):
//  - the demuxer reads only `bytes`, through an AVIOContext whose read and
//    seek callbacks are bounds-checked (AVSEEK_SIZE answered); no file or
//    network protocol is ever opened: the context's io_open refuses every
//    nested open (HLS playlists, DASH manifests, concat lists, QuickTime
//    external data references) and its protocol whitelist names none;
//  - the format is probed once with a bounded probe size, and refused with
//    UnsupportedMedia unless its demuxer is in the caller's whitelist (the
//    demuxer names of `ffmpeg -demuxers`), so a PNG never opens as a
//    one-frame "video" and a text file never as "tty" art;
//  - stream analysis (avformat_find_stream_info) reads at most probesize
//    bytes and max_analyze_duration of media;
//  - FFmpeg's own logging is silenced once per process (it would print the
//    detail of every hostile input to stderr); errors come back as Status.
// `bytes` must outlive the returned context (it is read, not copied).
// Thread-safety: every function is safe to call concurrently; a context is
// used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/frame.h>
}

#include "core/status.h"

namespace omni::media::internal {

// Closes the input and frees our AVIOContext, its buffer and reader state.
struct AvFormatDeleter {
  void operator()(AVFormatContext* context) const;
};
struct AvCodecDeleter {
  void operator()(AVCodecContext* context) const { avcodec_free_context(&context); }
};
struct AvFrameDeleter {
  void operator()(AVFrame* frame) const { av_frame_free(&frame); }
};
struct AvPacketDeleter {
  void operator()(AVPacket* packet) const { av_packet_free(&packet); }
};

using AvFormatPtr = std::unique_ptr<AVFormatContext, AvFormatDeleter>;
using AvCodecPtr = std::unique_ptr<AVCodecContext, AvCodecDeleter>;
using AvFramePtr = std::unique_ptr<AVFrame, AvFrameDeleter>;
using AvPacketPtr = std::unique_ptr<AVPacket, AvPacketDeleter>;

struct AvInputOptions {
  // Comma-separated demuxer names (AVInputFormat::name), e.g.
  // "mov,mp4,matroska,webm,avi"; the probed format must match one. Required:
  // an empty whitelist refuses everything.
  std::string_view format_whitelist;
  // The medium named in messages: "video", "audio".
  std::string_view what = "media";
  // FFmpeg's defaults (5,000,000 bytes, 5 s); both bound the work done
  // before the first packet is read.
  int64_t probesize = 5'000'000;
  int64_t max_analyze_duration_us = 5'000'000;
  // Run avformat_find_stream_info (fills codec parameters and durations for
  // containers whose header lacks them, e.g. MPEG-TS, raw streams).
  bool find_stream_info = true;
  // Passed to the decoders avformat_find_stream_info opens (which decode a
  // few frames), so a lying header cannot make the analysis allocate a huge
  // frame. 0: FFmpeg's default.
  int64_t max_pixels = 0;
};

// Opens a demuxer over `bytes`. Errors: InvalidArgument for empty, truncated
// or corrupt data; UnsupportedMedia when the probed format is not in the
// whitelist or no format is recognised.
StatusOr<AvFormatPtr> OpenAvInput(std::string_view bytes, const AvInputOptions& options);

struct AvDecoderOptions {
  // Decoder threads (frame and slice threading). Small: a server decodes
  // many requests at once and each thread costs a frame of memory.
  int threads = 2;
  // The decoder refuses frames over this many pixels (AVCodecContext::
  // max_pixels), a bound that holds even when the container header lies.
  int64_t max_pixels = 0;  // 0: FFmpeg's default (INT_MAX)
};

// A decoder opened for `stream`'s codec parameters, with pkt_timebase set.
// Errors: UnsupportedMedia when Debian's FFmpeg has no decoder for the codec;
// InvalidArgument when the parameters are rejected.
StatusOr<AvCodecPtr> OpenAvDecoder(const AVStream& stream, const AvDecoderOptions& options);

AvFramePtr MakeAvFrame();    // never null (aborts on out of memory)
AvPacketPtr MakeAvPacket();  // never null

// av_strerror's text for an AVERROR code: "Invalid data found when
// processing input".
std::string AvErrorString(int error);

// An FFmpeg failure as a Status: AVERROR_INVALIDDATA, AVERROR_EOF and other
// data errors -> InvalidArgument ("the <what> is corrupt: <detail>"),
// AVERROR_DECODER_NOT_FOUND / AVERROR_PATCHWELCOME / AVERROR(ENOSYS) ->
// UnsupportedMedia, AVERROR(ENOMEM) -> ResourceExhausted.
Status AvStatus(int error, std::string_view what, std::string_view doing);

// Sets FFmpeg's log level to quiet, once per process (OpenAvInput does it).
void QuietFfmpegLogging();

}  // namespace omni::media::internal

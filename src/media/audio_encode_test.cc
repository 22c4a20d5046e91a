// EncodeAudio and AudioStreamEncoder, checked by reading the bytes back
// with code that is not the encoder's:
//  - media::DecodeAudio (libsndfile for WAV/FLAC/MP3, FFmpeg's decoders for
//    Ogg Opus and ADTS): the length, the samples themselves for the
//    lossless formats, and for every format that a 440 Hz sine comes back
//    as a 440 Hz sine of the same amplitude;
//  - the ffprobe command line (installed with ffmpeg by scripts/setup.sh):
//    sample rate, channels and duration as another reader sees the file;
//  - streaming in uneven pieces against the one-shot file;
//  - every error with its status code.
#include "media/audio_encode.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numbers>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "media/audio.h"

namespace omni::media {
namespace {

constexpr int kRate = 24000;
constexpr double kHz = 440;
constexpr double kAmplitude = 0.5;

// How much longer than its input a file may play, in seconds, when the
// codec runs at `codec_rate`. `trimmed`: the reader honours the gapless
// information the container carries.
//  - Opus: Ogg's pre-skip and final granule position (RFC 7845 4.2, 4.5)
//    say what to drop; DecodeAudio drops it (measured: exact), ffprobe 5.1's
//    duration still holds the pre-skip (312 samples at 48 kHz, 6.5 ms).
//  - MP3: a whole file's Xing/LAME header tells the delay and padding; the
//    decoder of DecodeAudio (libsndfile's mpg123) honours it (measured:
//    exact). A stream has no such header and ffprobe 5.1 ignores it: both
//    play the LAME delay (576 + 529 samples) and the last frame's padding
//    (under 576 samples at 24 kHz and below, 1152 above), 70 ms at 24 kHz.
//  - AAC in ADTS: no field for the priming, so every reader plays the
//    encoder's 1024 priming samples and up to 1023 of padding: 85 ms at
//    24 kHz.
double MaxExcess(AudioFormat format, int codec_rate, bool trimmed) {
  switch (format) {
    case AudioFormat::kOpus: return 0.02;
    case AudioFormat::kMp3: {
      const int frame = codec_rate <= 24000 ? 576 : 1152;
      return trimmed ? 0.02 : (576 + 529 + frame - 1) / static_cast<double>(codec_rate);
    }
    case AudioFormat::kAac: return 2047.0 / codec_rate;
    default: return 0;
  }
}

bool Lossless(AudioFormat format) {
  return format == AudioFormat::kWav || format == AudioFormat::kFlac || format == AudioFormat::kPcm16;
}

std::vector<int16_t> Sine(double seconds, int rate = kRate) {
  std::vector<int16_t> s(static_cast<size_t>(std::lround(seconds * rate)));
  for (size_t i = 0; i < s.size(); ++i) {
    s[i] = static_cast<int16_t>(std::lround(32767 * kAmplitude * std::sin(2 * std::numbers::pi * kHz * i / rate)));
  }
  return s;
}

// The amplitude of `x`'s component at `hz` (a single DFT bin, not
// restricted to the FFT's grid).
double AmplitudeAt(const std::vector<float>& x, int rate, double hz) {
  double re = 0, im = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double phase = 2 * std::numbers::pi * hz * i / rate;
    re += x[i] * std::cos(phase);
    im += x[i] * std::sin(phase);
  }
  return 2 * std::hypot(re, im) / static_cast<double>(x.size());
}

// The decoded audio is our 440 Hz sine of `input_seconds`: its amplitude
// there is the input's (within 10% for lossy coding; the silence a codec
// adds around it dilutes it by input_seconds / decoded seconds), and its
// octaves above and below hold almost nothing.
void ExpectSine(const Audio& audio, double input_seconds) {
  const double at440 = AmplitudeAt(audio.samples, audio.sample_rate, kHz);
  EXPECT_NEAR(at440, kAmplitude * input_seconds / audio.seconds(), 0.1 * kAmplitude);
  EXPECT_LT(AmplitudeAt(audio.samples, audio.sample_rate, 2 * kHz), 0.01 * at440);
  EXPECT_LT(AmplitudeAt(audio.samples, audio.sample_rate, kHz / 2), 0.01 * at440);
}

// `seconds` of audio played back as `input` seconds: no shorter (but for
// 1 ms of rounding), and no longer than the codec pads.
void ExpectLength(double seconds, double input, double max_excess) {
  EXPECT_GE(seconds, input - 1e-3);
  EXPECT_LE(seconds, input + std::max(max_excess, 1e-6));
}

struct Probe {
  int sample_rate = 0;
  int channels = 0;
  double seconds = -1;
};

// ffprobe's view of `bytes`, written to a temporary file.
Probe FfProbe(const std::string& bytes, AudioFormat format) {
  const std::filesystem::path path = std::filesystem::path(testing::TempDir()) /
                                     ("omni_audio_encode_" + std::to_string(getpid()) + "." +
                                      std::string(AudioFormatName(format)));
  std::ofstream(path, std::ios::binary) << bytes;
  const std::string command = "ffprobe -v error -show_entries stream=sample_rate,channels:format=duration -of json '" +
                              path.string() + "' 2>&1";
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run ffprobe";
    return {};
  }
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) out.append(buffer, n);
  const int status = pclose(pipe);
  std::filesystem::remove(path);
  if (status != 0) {
    ADD_FAILURE() << "ffprobe failed (is it installed? scripts/setup.sh installs ffmpeg): " << out;
    return {};
  }
  const nlohmann::json j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.contains("streams") || j["streams"].size() != 1) {
    ADD_FAILURE() << "unexpected ffprobe output: " << out;
    return {};
  }
  Probe p;
  p.sample_rate = std::stoi(j["streams"][0].value("sample_rate", "0"));
  p.channels = j["streams"][0].value("channels", 0);
  if (j.contains("format") && j["format"].contains("duration")) {
    p.seconds = std::stod(j["format"]["duration"].get<std::string>());
  }
  return p;
}

Audio Decode(const std::string& bytes, int rate = kRate) {
  StatusOr<Audio> audio = DecodeAudio(bytes, {.sample_rate = rate});
  EXPECT_TRUE(audio.ok()) << audio.status().ToString();
  return audio.ok() ? *std::move(audio) : Audio{};
}

std::string Stream(AudioFormat format, const std::vector<int16_t>& pcm, const std::vector<size_t>& pieces,
                   std::string* first_push = nullptr) {
  StatusOr<std::unique_ptr<AudioStreamEncoder>> encoder = AudioStreamEncoder::Create(format, kRate);
  EXPECT_TRUE(encoder.ok()) << encoder.status().ToString();
  if (!encoder.ok()) return {};
  std::string out;
  size_t at = 0;
  for (size_t piece : pieces) {
    const size_t n = std::min(piece, pcm.size() - at);
    StatusOr<std::string> bytes = (*encoder)->Push(std::span(pcm).subspan(at, n));
    EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
    if (first_push != nullptr && at == 0) *first_push = *bytes;
    out += *bytes;
    at += n;
  }
  EXPECT_EQ(at, pcm.size());
  StatusOr<std::string> rest = (*encoder)->Finish();
  EXPECT_TRUE(rest.ok()) << rest.status().ToString();
  return out + *rest;
}

class AudioEncodeTest : public testing::TestWithParam<AudioFormat> {};

TEST_P(AudioEncodeTest, OneShotDecodesToTheSameSine) {
  const AudioFormat format = GetParam();
  for (double seconds : {1.0, 2.0}) {
    SCOPED_TRACE(seconds);
    const std::vector<int16_t> pcm = Sine(seconds);
    StatusOr<std::string> bytes = EncodeAudio(pcm, kRate, format);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    if (format == AudioFormat::kPcm16) {
      ASSERT_EQ(bytes->size(), 2 * pcm.size());
      EXPECT_EQ(0, std::memcmp(bytes->data(), pcm.data(), bytes->size()));  // little-endian host
      continue;
    }
    const Audio audio = Decode(*bytes);
    ASSERT_EQ(audio.sample_rate, kRate);
    if (Lossless(format)) {
      ASSERT_EQ(audio.samples.size(), pcm.size());
      for (size_t i = 0; i < pcm.size(); ++i) ASSERT_EQ(audio.samples[i], pcm[i] / 32768.0f) << "at " << i;
    }
    ExpectLength(audio.seconds(), seconds, MaxExcess(format, kRate, /*trimmed=*/true));
    ExpectSine(audio, seconds);
    const Probe probe = FfProbe(*bytes, format);
    std::printf("  %-5s %.0f s: %7zu bytes, decodes to %.4f s, ffprobe %.4f s\n", AudioFormatName(format).data(),
                seconds, bytes->size(), audio.seconds(), probe.seconds);
    // Ogg Opus always decodes at 48 kHz (RFC 7845 5.1).
    EXPECT_EQ(probe.sample_rate, format == AudioFormat::kOpus ? 48000 : kRate);
    EXPECT_EQ(probe.channels, 1);
    ExpectLength(probe.seconds, seconds, MaxExcess(format, kRate, /*trimmed=*/false));
  }
}

TEST_P(AudioEncodeTest, UnevenPushesGiveTheOneShotAudio) {
  const AudioFormat format = GetParam();
  const std::vector<int16_t> pcm = Sine(1.0);
  StatusOr<std::string> whole = EncodeAudio(pcm, kRate, format);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  const std::string streamed = Stream(format, pcm, {1, 100, 4799, pcm.size()});
  switch (format) {
    case AudioFormat::kPcm16:
    case AudioFormat::kOpus:
    case AudioFormat::kAac:
      // No header is filled in afterwards: the very same bytes.
      EXPECT_EQ(streamed, *whole);
      return;
    case AudioFormat::kMp3:
      // The same frames, less the Xing/LAME frame a stream cannot go back for.
      EXPECT_LT(streamed.size(), whole->size());
      EXPECT_TRUE(whole->ends_with(streamed));
      break;
    case AudioFormat::kWav:
    case AudioFormat::kFlac: EXPECT_NE(streamed, *whole); break;  // sizes unknown in the stream
  }
  const Audio a = Decode(*whole);
  const Audio b = Decode(streamed);
  std::printf("  %-5s streamed decodes to %.4f s, whole to %.4f s\n", AudioFormatName(format).data(), b.seconds(),
              a.seconds());
  if (Lossless(format)) {
    EXPECT_EQ(a.samples, b.samples);
  }
  ExpectLength(b.seconds(), 1.0, MaxExcess(format, kRate, /*trimmed=*/false));
  ExpectSine(b, 1.0);
  const Probe probe = FfProbe(streamed, format);
  EXPECT_EQ(probe.sample_rate, kRate);
  EXPECT_EQ(probe.channels, 1);
}

TEST_P(AudioEncodeTest, FirstPushAlreadyStreams) {
  const AudioFormat format = GetParam();
  const std::vector<int16_t> pcm = Sine(1.0);
  std::string first;
  const std::string all = Stream(format, pcm, {pcm.size()}, &first);
  // Most of the file leaves with the second of audio, not at Finish (which
  // adds only what the codec held back: a frame or two, FLAC's last block).
  EXPECT_GT(first.size(), all.size() / 2) << first.size() << " of " << all.size();
}

TEST_P(AudioEncodeTest, PushAndFinishAfterFinishFail) {
  StatusOr<std::unique_ptr<AudioStreamEncoder>> encoder = AudioStreamEncoder::Create(GetParam(), kRate);
  ASSERT_TRUE(encoder.ok()) << encoder.status().ToString();
  const std::vector<int16_t> pcm = Sine(0.1);
  ASSERT_TRUE((*encoder)->Push(pcm).ok());
  ASSERT_TRUE((*encoder)->Finish().ok());
  EXPECT_EQ((*encoder)->Push(pcm).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ((*encoder)->Finish().status().code(), StatusCode::kFailedPrecondition);
}

TEST_P(AudioEncodeTest, NoSamplesDoNotCrash) {
  StatusOr<std::string> whole = EncodeAudio({}, kRate, GetParam());
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  StatusOr<std::unique_ptr<AudioStreamEncoder>> encoder = AudioStreamEncoder::Create(GetParam(), kRate);
  ASSERT_TRUE(encoder.ok()) << encoder.status().ToString();
  ASSERT_TRUE((*encoder)->Push({}).ok());
  ASSERT_TRUE((*encoder)->Finish().ok());
}

TEST_P(AudioEncodeTest, SameSamplesSameBytes) {
  const std::vector<int16_t> pcm = Sine(0.5);
  StatusOr<std::string> a = EncodeAudio(pcm, kRate, GetParam());
  StatusOr<std::string> b = EncodeAudio(pcm, kRate, GetParam());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

// Rates the codecs do not all take: Opus resamples 44.1 kHz to 48 kHz, MP3
// 192 kHz to 48 kHz, AAC 192 kHz to 96 kHz; the sine stays a sine, decoded
// at the rate it went in.
TEST_P(AudioEncodeTest, EveryRateInRangeEncodes) {
  const AudioFormat format = GetParam();
  for (int rate : {8000, 11025, 22050, 44100, 48000, 192000}) {
    SCOPED_TRACE(rate);
    const std::vector<int16_t> pcm = Sine(0.5, rate);
    StatusOr<std::string> bytes = EncodeAudio(pcm, rate, format);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    if (format == AudioFormat::kPcm16) {  // no codec, no header: the samples at any rate
      ASSERT_EQ(bytes->size(), 2 * pcm.size());
      EXPECT_EQ(std::memcmp(bytes->data(), pcm.data(), bytes->size()), 0);
      continue;
    }
    const Audio audio = Decode(*bytes, rate);
    if (Lossless(format)) {
      EXPECT_EQ(audio.samples.size(), pcm.size());
    } else {
      const int codec_rate = format == AudioFormat::kAac ? std::min(rate, 96000) : std::min(rate, 48000);
      ExpectLength(audio.seconds(), 0.5, MaxExcess(format, codec_rate, /*trimmed=*/true));
    }
    ExpectSine(audio, 0.5);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, AudioEncodeTest,
                         testing::Values(AudioFormat::kWav, AudioFormat::kFlac, AudioFormat::kMp3, AudioFormat::kOpus,
                                         AudioFormat::kAac, AudioFormat::kPcm16),
                         [](const testing::TestParamInfo<AudioFormat>& info) {
                           return std::string(AudioFormatName(info.param));
                         });

TEST(AudioEncode, EmptyWavAndFlacAreValidFiles) {
  StatusOr<std::string> wav = EncodeAudio({}, kRate, AudioFormat::kWav);
  ASSERT_TRUE(wav.ok());
  ASSERT_EQ(wav->size(), 44u);
  EXPECT_EQ(wav->substr(0, 16), std::string("RIFF\x24\0\0\0WAVEfmt ", 16));
  EXPECT_EQ(wav->substr(36), std::string("data\0\0\0\0", 8));
  // A stream that ends before its first sample says so exactly too.
  EXPECT_EQ(Stream(AudioFormat::kWav, {}, {}), *wav);
  for (AudioFormat format : {AudioFormat::kWav, AudioFormat::kFlac}) {
    SCOPED_TRACE(AudioFormatName(format));
    StatusOr<std::string> bytes = EncodeAudio({}, kRate, format);
    ASSERT_TRUE(bytes.ok());
    const Probe probe = FfProbe(*bytes, format);
    EXPECT_EQ(probe.sample_rate, kRate);
    EXPECT_EQ(probe.channels, 1);
    // A decoder reads the file and finds no samples (not a corrupt file).
    StatusOr<Audio> audio = DecodeAudio(*bytes, {.sample_rate = kRate});
    ASSERT_FALSE(audio.ok());
    EXPECT_NE(audio.status().message().find("no audio"), std::string::npos) << audio.status().ToString();
  }
}

TEST(AudioEncode, StreamedWavSaysItsSizesAreUnknown) {
  const std::vector<int16_t> pcm = Sine(0.1);
  const std::string wav = Stream(AudioFormat::kWav, pcm, {10, pcm.size()});
  ASSERT_EQ(wav.size(), 44 + 2 * pcm.size());
  EXPECT_EQ(wav.substr(4, 4), "\xff\xff\xff\xff");
  EXPECT_EQ(wav.substr(36, 8), "data\xff\xff\xff\xff");
  StatusOr<std::string> whole = EncodeAudio(pcm, kRate, AudioFormat::kWav);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(wav.substr(44), whole->substr(44));
}

TEST(AudioEncode, FormatNames) {
  const std::pair<std::string_view, AudioFormat> names[] = {
      {"wav", AudioFormat::kWav},   {"flac", AudioFormat::kFlac}, {"mp3", AudioFormat::kMp3},
      {"opus", AudioFormat::kOpus}, {"aac", AudioFormat::kAac},   {"pcm16", AudioFormat::kPcm16},
      {"pcm", AudioFormat::kPcm16},
  };
  for (const auto& [name, format] : names) {
    StatusOr<AudioFormat> parsed = ParseAudioFormat(name);
    ASSERT_TRUE(parsed.ok()) << name;
    EXPECT_EQ(*parsed, format);
  }
  EXPECT_EQ(AudioFormatName(AudioFormat::kPcm16), "pcm16");
  EXPECT_EQ(AudioMimeType(AudioFormat::kWav), "audio/wav");
  EXPECT_EQ(AudioMimeType(AudioFormat::kFlac), "audio/flac");
  EXPECT_EQ(AudioMimeType(AudioFormat::kMp3), "audio/mpeg");
  EXPECT_EQ(AudioMimeType(AudioFormat::kOpus), "audio/ogg");
  EXPECT_EQ(AudioMimeType(AudioFormat::kAac), "audio/aac");
  EXPECT_EQ(AudioMimeType(AudioFormat::kPcm16), "audio/pcm");
  for (std::string_view bad : {"", "WAV", "ogg", "mp4", "pcm24", "wav "}) {
    StatusOr<AudioFormat> parsed = ParseAudioFormat(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().param(), "response_format");
    EXPECT_NE(parsed.status().message().find("'pcm16'"), std::string::npos) << parsed.status().message();
  }
}

TEST(AudioEncode, RatesOutOfRangeAreRefused) {
  const std::vector<int16_t> pcm = Sine(0.01);
  for (int rate : {-1, 0, 7999, 192001, 1'000'000}) {
    for (AudioFormat format : {AudioFormat::kWav, AudioFormat::kOpus, AudioFormat::kPcm16}) {
      EXPECT_EQ(AudioStreamEncoder::Create(format, rate).status().code(), StatusCode::kInvalidArgument) << rate;
      EXPECT_EQ(EncodeAudio(pcm, rate, format).status().code(), StatusCode::kInvalidArgument) << rate;
    }
  }
  EXPECT_TRUE(EncodeAudio(pcm, 8000, AudioFormat::kWav).ok());
  EXPECT_TRUE(EncodeAudio(pcm, 192000, AudioFormat::kWav).ok());
}

}  // namespace
}  // namespace omni::media

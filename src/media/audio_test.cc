// DecodeAudio against references made without our code:
//  - every fixture of tests/data/media/audio against reference.json, which
//    tools/reference/audio_resample_ref.py computes as librosa.load(sr=16000)
//    would (soundfile or the ffmpeg command line to decode, np.mean to
//    downmix) with torchaudio's Kaiser-windowed sinc as the resampler:
//    lengths exact (but for one Vorbis fixture, see below), waveforms within
//    the resamplers' measured differences;
//  - synthetic WAVs built here: exact 16-bit samples, a stereo mean, a
//    440 Hz tone resampled against the ideal sine;
//  - every bad input with its precise status code.
#include "media/audio.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numbers>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "media/audio_resample.h"
#include "media/media_test_util.h"

namespace omni::media {
namespace {

// How far soxr HQ may be from the reference's resampler (torchaudio's
// Kaiser-windowed sinc, 64 zero crossings, beta 14.77, rolloff 0.948). The
// decoders are the same libraries on both sides (libsndfile, libavcodec:
// the samples at the source rate are equal), so the differences are the two
// filters'. Measured over every output sample of every fixture:
//  - away from the ends: at most 1.1e-4 for the tones (the passbands differ
//    by a few 1e-5, plus the decaying ripple of the ends), 2.5e-4 and 4.7e-4
//    for the AAC files, whose coding noise reaches the 7.3..7.6 kHz band
//    that soxr HQ (91% passband) cuts and the Kaiser filter (94.8%) keeps;
//    the RMS of the difference at most 2.8e-5;
//  - within 2 ms of either end, where the signal starts or stops abruptly
//    and each filter rings its own way: up to 8.4e-3 (the MP4's AAC track).
// The bounds leave room for other builds of the libraries; a wrong rate,
// offset or gain misses them by orders of magnitude.
constexpr double kInteriorTolerance = 1e-3;
constexpr double kEdgeTolerance = 1.5e-2;
constexpr double kRmsTolerance = 1e-4;  // over the probes away from the ends
constexpr size_t kEdge = 32;  // samples, 2 ms at 16 kHz

std::string Fixture(const std::string& name) { return ReadTestFile("audio/" + name); }

void PutLe(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// A canonical 44-byte-header WAV: format 1 (integer PCM) or 3 (IEEE float).
// `data_size` overrides the size the 'data' chunk claims.
std::string MakeWav(const void* samples, size_t bytes, int rate, int channels, int bits, int format,
                    int64_t data_size = -1) {
  std::string w = "RIFF";
  PutLe(w, 36 + bytes, 4);
  w += "WAVEfmt ";
  PutLe(w, 16, 4);
  PutLe(w, format, 2);
  PutLe(w, channels, 2);
  PutLe(w, rate, 4);
  PutLe(w, static_cast<uint64_t>(rate) * channels * bits / 8, 4);
  PutLe(w, channels * bits / 8, 2);
  PutLe(w, bits, 2);
  w += "data";
  PutLe(w, data_size >= 0 ? static_cast<uint64_t>(data_size) : bytes, 4);
  w.append(static_cast<const char*>(samples), bytes);
  return w;
}

std::string Pcm16Wav(const std::vector<int16_t>& s, int rate, int channels, int64_t data_size = -1) {
  return MakeWav(s.data(), s.size() * 2, rate, channels, 16, 1, data_size);
}

std::string FloatWav(const std::vector<float>& s, int rate) { return MakeWav(s.data(), s.size() * 4, rate, 1, 32, 3); }

TEST(DecodeAudio, MatchesTheLibrosaReferenceOnEveryFixture) {
  const nlohmann::json ref = nlohmann::json::parse(Fixture("reference.json"));
  ASSERT_GE(ref["decode"].size(), 10u);
  for (const auto& entry : ref["decode"]) {
    const std::string name = entry["file"];
    SCOPED_TRACE(name);
    AudioInfo info;
    StatusOr<Audio> audio = DecodeAudio(Fixture(name), {}, &info);
    ASSERT_TRUE(audio.ok()) << audio.status().ToString();
    EXPECT_EQ(audio->sample_rate, 16000);
    EXPECT_EQ(info.source_rate, entry["source_rate"].get<int>());
    EXPECT_EQ(info.channels, entry["channels"].get<int>());
    const int64_t frames = entry["source_frames"];
    // librosa reads Ogg with libsndfile, we with FFmpeg (audio.cc), whose
    // Vorbis decode stops 128 samples (one short block / 2, 2.9 ms) short of
    // the stream's end here: 47 samples at 16 kHz. Otherwise the lengths are
    // librosa's exactly.
    const int64_t want = entry["samples"];
    const int64_t short_by = info.codec == "vorbis" ? 47 : 0;
    ASSERT_LE(static_cast<int64_t>(audio->samples.size()), want);
    ASSERT_GE(static_cast<int64_t>(audio->samples.size()), want - short_by);
    if (short_by == 0) {
      EXPECT_NEAR(info.source_seconds, static_cast<double>(frames) / info.source_rate, 1e-9);
    }
    const size_t n = audio->samples.size();
    const bool exact = info.source_rate == 16000;  // no resampling: the decoder's samples themselves
    double interior = 0, edge = 0, sq = 0;
    size_t inside = 0;
    const size_t probes = entry["probe_index"].size();
    for (size_t i = 0; i < probes; ++i) {
      const size_t at = entry["probe_index"][i];
      const double value = entry["probe_value"][i];
      if (at >= n) continue;
      if (exact) {
        EXPECT_EQ(audio->samples[at], static_cast<float>(value)) << "at " << at;
      }
      const double d = std::abs(audio->samples[at] - value);
      const bool near_end = at < kEdge || at + kEdge >= n;
      double& worst = near_end ? edge : interior;
      worst = std::max(worst, d);
      if (!near_end) sq += d * d, ++inside;
    }
    const double rms = std::sqrt(sq / std::max<size_t>(inside, 1));
    double sum = 0, sum_sq = 0;
    for (float v : audio->samples) sum += v, sum_sq += static_cast<double>(v) * v;
    if (exact) {
      EXPECT_EQ(sum, entry["sum"].get<double>());
      EXPECT_EQ(sum_sq, entry["sum_sq"].get<double>());
    } else {
      EXPECT_LE(interior, kInteriorTolerance);
      EXPECT_LE(edge, kEdgeTolerance);
      EXPECT_LE(rms, kRmsTolerance);
      // The energy, less what a shorter Vorbis decode leaves out.
      const double energy = entry["sum_sq"];
      EXPECT_NEAR(sum_sq, energy, (1e-3 + static_cast<double>(short_by) / want) * energy);
    }
    std::printf("  %-24s %-9s %6d Hz x%d -> %5zu samples; probe differences: interior %.1e, ends %.1e, rms %.1e\n",
                name.c_str(), info.codec.c_str(), info.source_rate, info.channels, n, interior, edge, rms);
  }
}

TEST(DecodeAudio, ReportsKindAndCodec) {
  AudioInfo info;
  ASSERT_TRUE(DecodeAudio(Fixture("stereo_44k_aac.m4a"), {}, &info).ok());
  EXPECT_EQ(info.kind, MediaKind::kM4a);
  EXPECT_EQ(info.codec, "aac");
  ASSERT_TRUE(DecodeAudio(Fixture("video_aac.mp4"), {}, &info).ok());
  EXPECT_EQ(info.kind, MediaKind::kMp4);
  ASSERT_TRUE(DecodeAudio(Fixture("stereo_48k_opus.webm"), {}, &info).ok());
  EXPECT_EQ(info.kind, MediaKind::kWebm);
  EXPECT_EQ(info.codec, "opus");
  ASSERT_TRUE(DecodeAudio(Fixture("stereo_44k.mp3"), {}, &info).ok());
  EXPECT_EQ(info.kind, MediaKind::kMp3);
  EXPECT_EQ(info.codec, "mp3");
  ASSERT_TRUE(DecodeAudio(Fixture("stereo_44k.flac"), {}, &info).ok());
  EXPECT_EQ(info.codec, "flac");
}

TEST(DecodeAudio, Pcm16At16kIsTheSamplesOver32768) {
  std::vector<int16_t> s = {0, 1, -1, 32767, -32768, 12345, -23456, 2, 3};
  std::mt19937 rng(7);
  for (int i = 0; i < 4000; ++i) s.push_back(static_cast<int16_t>(rng()));
  StatusOr<Audio> audio = DecodeAudio(Pcm16Wav(s, 16000, 1));
  ASSERT_TRUE(audio.ok()) << audio.status().ToString();
  ASSERT_EQ(audio->samples.size(), s.size());
  for (size_t i = 0; i < s.size(); ++i) ASSERT_EQ(audio->samples[i], s[i] / 32768.0f) << "at " << i;
  EXPECT_DOUBLE_EQ(audio->seconds(), s.size() / 16000.0);
}

TEST(DecodeAudio, StereoBecomesTheMeanOfTheChannels) {
  const std::vector<int16_t> s = {100, 300, -32768, 32767, 5, 6, -7, 8};  // L R L R ...
  StatusOr<Audio> audio = DecodeAudio(Pcm16Wav(s, 16000, 2));
  ASSERT_TRUE(audio.ok()) << audio.status().ToString();
  ASSERT_EQ(audio->samples.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(audio->samples[i], (s[2 * i] / 32768.0f + s[2 * i + 1] / 32768.0f) / 2) << i;
  }
}

// A 440 Hz tone at 44.1 kHz resampled to 16 kHz is the same tone: the right
// length, frequency, phase (soxr's delay taken out) and amplitude.
TEST(DecodeAudio, ResampledSineKeepsFrequencyAmplitudeAndLength) {
  constexpr int kIn = 44100, kN = 44100 + 4410 + 7;  // 1.1 s and an odd remainder
  constexpr double kAmp = 0.5, kHz = 440;
  std::vector<float> tone(kN);
  for (int i = 0; i < kN; ++i) tone[i] = static_cast<float>(kAmp * std::sin(2 * std::numbers::pi * kHz * i / kIn));
  StatusOr<Audio> audio = DecodeAudio(FloatWav(tone, kIn));
  ASSERT_TRUE(audio.ok()) << audio.status().ToString();
  const auto& y = audio->samples;
  EXPECT_NEAR(static_cast<double>(y.size()), std::round(kN * 16000.0 / kIn), 1.0);
  EXPECT_EQ(y.size(), static_cast<size_t>(std::ceil(kN * 16000.0 / kIn)));  // librosa's length
  // Correlation with the ideal sine, away from the two edges where the
  // signal starts and stops abruptly.
  double xy = 0, xx = 0, yy = 0;
  for (size_t i = 200; i + 200 < y.size(); ++i) {
    const double ideal = kAmp * std::sin(2 * std::numbers::pi * kHz * i / 16000.0);
    xy += ideal * y[i], xx += ideal * ideal, yy += static_cast<double>(y[i]) * y[i];
  }
  EXPECT_GT(xy / std::sqrt(xx * yy), 0.99999);
  EXPECT_NEAR(std::sqrt(yy / xx), 1.0, 1e-3);  // amplitude
  float peak = 0;
  for (float v : y) peak = std::max(peak, std::abs(v));
  EXPECT_NEAR(peak, kAmp, 0.01);
}

TEST(DecodeAudio, OtherTargetRates) {
  std::vector<float> tone(16000);
  for (size_t i = 0; i < tone.size(); ++i) {
    tone[i] = static_cast<float>(0.25 * std::sin(2 * std::numbers::pi * 1000 * i / 16000.0));
  }
  StatusOr<Audio> audio = DecodeAudio(FloatWav(tone, 16000), {.sample_rate = 24000});
  ASSERT_TRUE(audio.ok()) << audio.status().ToString();
  EXPECT_EQ(audio->sample_rate, 24000);
  EXPECT_EQ(audio->samples.size(), 24000u);
  EXPECT_NEAR(audio->samples[6000], 0.25 * std::sin(2 * std::numbers::pi * 1000 * 6000 / 24000.0), 1e-3);
  EXPECT_EQ(DecodeAudio(FloatWav(tone, 16000), {.sample_rate = 0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeAudio(FloatWav(tone, 16000), {.max_seconds = -1}).status().code(), StatusCode::kInvalidArgument);
}

TEST(SoxrResampler, BlocksGiveTheSamplesOfOneCall) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> noise(-1, 1);
  std::vector<float> x(30011);
  for (float& v : x) v = noise(rng);
  for (auto [in, out] : {std::pair{44100, 16000}, {48000, 16000}, {8000, 16000}, {22050, 16000}, {16000, 22050}}) {
    SCOPED_TRACE(::testing::Message() << in << " -> " << out);
    StatusOr<std::vector<float>> whole = ResampleMono(x, in, out);
    ASSERT_TRUE(whole.ok());
    EXPECT_EQ(static_cast<int64_t>(whole->size()), (static_cast<int64_t>(x.size()) * out + in - 1) / in);
    StatusOr<SoxrResampler> r = SoxrResampler::Create(in, out);
    ASSERT_TRUE(r.ok());
    for (size_t at = 0; at < x.size();) {
      const size_t n = std::min<size_t>(1 + rng() % 5000, x.size() - at);
      ASSERT_TRUE(r->Push(std::span<const float>(x).subspan(at, n)).ok());
      at += n;
    }
    StatusOr<std::vector<float>> blocks = std::move(*r).Finish();
    ASSERT_TRUE(blocks.ok());
    EXPECT_EQ(*blocks, *whole);
  }
  EXPECT_TRUE(ResampleMono({}, 44100, 16000).ok());
  EXPECT_TRUE(ResampleMono({}, 44100, 16000)->empty());
  EXPECT_FALSE(ResampleMono(x, 0, 16000).ok());
}

void ExpectCode(const std::string& bytes, StatusCode code, const std::string& says = "",
                const AudioDecodeOptions& options = {}) {
  StatusOr<Audio> audio = DecodeAudio(bytes, options);
  ASSERT_FALSE(audio.ok()) << "decoded " << audio->samples.size() << " samples";
  EXPECT_EQ(audio.status().code(), code) << audio.status().ToString();
  EXPECT_NE(audio.status().message().find(says), std::string::npos) << audio.status().message();
}

TEST(DecodeAudio, EmptyTruncatedAndCorruptDataAreInvalidArgument) {
  const auto invalid = StatusCode::kInvalidArgument;
  ExpectCode("", invalid, "empty");
  const std::string wav = Fixture("stereo_44k_s16.wav");
  ExpectCode(wav.substr(0, wav.size() / 2), invalid, "the WAV audio is truncated");
  ExpectCode(wav.substr(0, 30), invalid, "the WAV audio is truncated");
  ExpectCode(wav.substr(0, 44), invalid, "the WAV audio is truncated");  // the header and no sample
  const std::string flac = Fixture("stereo_44k.flac");
  ExpectCode(flac.substr(0, flac.size() / 2), invalid, "the FLAC audio is truncated");
  ExpectCode(flac.substr(0, 60), invalid, "the FLAC audio is corrupt or truncated");
  ExpectCode(flac.substr(0, 20), invalid, "the FLAC audio is corrupt");
  const std::string mp3 = Fixture("stereo_44k.mp3");
  ExpectCode(mp3.substr(0, mp3.size() / 2), invalid, "the MP3 audio is truncated");
  ExpectCode(mp3.substr(0, 60), invalid, "the MP3 audio is corrupt");
  ExpectCode(mp3.substr(0, 20), invalid, "the MP3 audio is corrupt");
  // The other containers, cut in half and in the header.
  for (const char* name : {"stereo_44k_vorbis.ogg", "stereo_48k_opus.ogg", "stereo_44k_aac.m4a",
                           "stereo_48k_opus.webm", "video_aac.mp4"}) {
    SCOPED_TRACE(name);
    const std::string bytes = Fixture(name);
    ExpectCode(bytes.substr(0, bytes.size() / 2), invalid);
    ExpectCode(bytes.substr(0, 20), invalid);
  }
  // A valid header over no samples at all.
  ExpectCode(Pcm16Wav({}, 16000, 1), invalid, "contains no audio");
  // Float samples that are not numbers.
  ExpectCode(FloatWav({0.5f, NAN, 0.1f}, 16000), invalid, "non-finite");
  ExpectCode(FloatWav({0.5f, INFINITY, 0.1f}, 44100), invalid, "non-finite");
  // The FLAC stream's frames replaced by noise after the header.
  std::string noisy = flac;
  std::mt19937 rng(11);
  for (size_t i = 200; i < noisy.size(); ++i) noisy[i] = static_cast<char>(rng());
  ExpectCode(noisy, invalid, "FLAC audio");
}

TEST(DecodeAudio, BytesThatAreNotAudioAreUnsupportedMedia) {
  const auto unsupported = StatusCode::kUnsupportedMedia;
  std::string random(4096, '\0');
  std::mt19937 rng(5);
  for (char& c : random) c = static_cast<char>(rng() | 1);  // no leading 0xff 0xf?
  random[0] = 0x13;
  ExpectCode(random, unsupported, "binary data");
  ExpectCode(ReadTestFile("bilevel.png"), unsupported, "an image (PNG)");
  ExpectCode("hello, this is not a sound\n", unsupported, "(text)");
  ExpectCode("<!DOCTYPE html><html></html>", unsupported, "(HTML)");
  ExpectCode(Fixture("video_silent.mp4"), unsupported, "the MP4 video has no audio stream");
  ExpectCode(Fixture("unsupported_wavpack.mkv"), unsupported, "'wavpack'");
  // A WAV whose format tag no decoder knows (0x7777).
  std::string odd = Fixture("mono_16k_s16.wav");
  odd[20] = 0x77, odd[21] = 0x77;
  ExpectCode(odd, unsupported, "WAV audio");
}

TEST(DecodeAudio, OverTheLimitIsPayloadTooLarge) {
  const auto too_large = StatusCode::kPayloadTooLarge;
  // A header claiming 10 hours over one second of samples: refused from the
  // header (36000 s), not found truncated after reading it.
  const std::vector<int16_t> second(16000, 1000);
  ExpectCode(Pcm16Wav(second, 16000, 1, int64_t{36000} * 16000 * 2), too_large,
             "the WAV audio lasts 36000.0 s, over the limit of 600 s");
  // Real audio over a smaller limit, through each library.
  for (const char* name : {"mono_16k_s16.wav", "stereo_44k.flac", "stereo_44k.mp3", "stereo_44k_vorbis.ogg",
                           "stereo_44k_aac.m4a", "stereo_48k_opus.webm", "video_aac.mp4"}) {
    SCOPED_TRACE(name);
    ExpectCode(Fixture(name), too_large, "over the limit of 0.2 s", {.max_seconds = 0.2});
  }
  // Raw ADTS has no duration in any header: the limit holds while decoding.
  ExpectCode(Fixture("stereo_22k.aac"), too_large, "the AAC audio lasts more than the limit of 0.2 s",
             {.max_seconds = 0.2});
  ASSERT_TRUE(DecodeAudio(Fixture("stereo_22k.aac"), {.max_seconds = 0.6}).ok());
}

TEST(DecodeAudio, ConcurrentDecodesAgree) {
  const std::vector<std::string> names = {"stereo_44k.mp3", "stereo_44k_aac.m4a", "stereo_48k_opus.webm",
                                          "stereo_44k_vorbis.ogg"};
  std::vector<std::vector<float>> expected;
  for (const auto& n : names) expected.push_back(DecodeAudio(Fixture(n))->samples);
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        for (size_t i = 0; i < names.size(); ++i) {
          StatusOr<Audio> a = DecodeAudio(Fixture(names[i]));
          if (!a.ok() || a->samples != expected[i]) ++mismatches[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

// The committed fuzz seeds decode or fail with a client error; none crashes.
TEST(DecodeAudio, FuzzCorpusDecodesOrFailsCleanly) {
  const std::filesystem::path dir = std::filesystem::path(OMNI_MEDIA_TESTDATA) / "../../../fuzz/corpus/audio";
  int files = 0, decoded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    StatusOr<Audio> audio = DecodeAudio(bytes, {.max_seconds = 30});
    ++files;
    if (audio.ok()) {
      ++decoded;
      continue;
    }
    const StatusCode code = audio.status().code();
    EXPECT_TRUE(code == StatusCode::kInvalidArgument || code == StatusCode::kUnsupportedMedia ||
                code == StatusCode::kPayloadTooLarge)
        << entry.path() << ": " << audio.status().ToString();
  }
  EXPECT_GE(files, 5);
  EXPECT_GE(decoded, 4);
}

}  // namespace
}  // namespace omni::media

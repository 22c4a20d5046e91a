// The per-level CPU kernel tables side by side: every level this CPU can run
// is called directly (not through the active one) against double-precision
// references written here, so one ctest run covers them all. The ops and
// model tests cover the levels end to end through OMNI_CPU_ISA.
#include "backend/cpu/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_isa.h"
#include "tensor/dtype.h"

namespace omni::cpu {
namespace {

// The tables this CPU can run, lowest level first.
std::vector<const CpuKernels*> RunnableTables() {
  std::vector<const CpuKernels*> out;
  const CpuIsa best = ActiveIsa().best;
  for (int l = 0; l <= static_cast<int>(best); ++l) {
    const CpuKernels* k = KernelsFor(static_cast<CpuIsa>(l));
    if (k != nullptr) out.push_back(k);
  }
  return out;
}

std::string Level(const CpuKernels* k) { return std::string(IsaName(k->isa)); }

std::vector<float> RandomFloats(int64_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(CpuIsaTest, ParsesEveryLevelName) {
  for (int l = 0; l <= static_cast<int>(CpuIsa::kAmx); ++l) {
    const CpuIsa isa = static_cast<CpuIsa>(l);
    EXPECT_EQ(ParseIsa(IsaName(isa)), isa);
  }
  EXPECT_FALSE(ParseIsa("avx512f").has_value());
  EXPECT_FALSE(ParseIsa("").has_value());
}

TEST(CpuIsaTest, BestLevelNeedsTheOsToSaveTheRegisters) {
  CpuFeatures f{.avx2 = true, .fma = true, .f16c = true, .avx512f = true, .avx512bw = true, .avx512dq = true,
                .avx512vl = true, .avx512bf16 = true, .amx_tile = true, .amx_bf16 = true,
                .os_ymm = true, .os_zmm = true, .os_tiles = true};
  EXPECT_EQ(BestIsa(f, true), CpuIsa::kAmx);
  EXPECT_EQ(BestIsa(f, false), CpuIsa::kAvx512Bf16);  // Linux refused the tile state
  f.os_tiles = false;
  EXPECT_EQ(BestIsa(f, true), CpuIsa::kAvx512Bf16);
  f.avx512bf16 = false;
  EXPECT_EQ(BestIsa(f, true), CpuIsa::kAvx512);
  f.os_zmm = false;  // an OS (or hypervisor) that does not save zmm state
  EXPECT_EQ(BestIsa(f, true), CpuIsa::kAvx2);
  f.f16c = false;
  EXPECT_EQ(BestIsa(f, true), CpuIsa::kGeneric);
}

TEST(CpuIsaTest, RequestedLevelCapsAndFallsBackWithAWarning) {
  IsaChoice c = ChooseIsa(CpuIsa::kAvx512Bf16, nullptr);
  EXPECT_EQ(c.selected, CpuIsa::kAvx512Bf16);
  EXPECT_TRUE(c.warning.empty());
  c = ChooseIsa(CpuIsa::kAvx512Bf16, "avx2");
  EXPECT_EQ(c.selected, CpuIsa::kAvx2);
  EXPECT_TRUE(c.warning.empty());
  c = ChooseIsa(CpuIsa::kAvx2, "amx");
  EXPECT_EQ(c.selected, CpuIsa::kAvx2);
  EXPECT_NE(c.warning.find("no amx"), std::string::npos) << c.warning;
  c = ChooseIsa(CpuIsa::kAvx2, "sse9");
  EXPECT_EQ(c.selected, CpuIsa::kAvx2);
  EXPECT_NE(c.warning.find("not a level"), std::string::npos) << c.warning;
}

TEST(CpuIsaTest, EveryLevelUpToTheBestHasATable) {
  const IsaChoice& c = ActiveIsa();
  EXPECT_LE(c.selected, c.best);
  for (int l = 0; l <= static_cast<int>(c.best); ++l) {
    const CpuKernels* k = KernelsFor(static_cast<CpuIsa>(l));
    ASSERT_NE(k, nullptr) << IsaName(static_cast<CpuIsa>(l));
    EXPECT_EQ(k->isa, static_cast<CpuIsa>(l));
    // The bf16 pair attention exists exactly from avx512bf16 up, AMX at amx.
    EXPECT_EQ(k->attention.score_bf16 != nullptr, l >= static_cast<int>(CpuIsa::kAvx512Bf16));
    EXPECT_EQ(k->attention.score_keys_amx != nullptr, l == static_cast<int>(CpuIsa::kAmx));
  }
  EXPECT_EQ(Kernels().isa, c.selected);
}

TEST(CpuKernelsTest, Bf16ConversionsAreExactAtEveryLevel) {
  // Normal values, ties, infinities and a NaN; 37 elements for the tails.
  std::vector<float> src = RandomFloats(37, -1e4f, 1e4f, 1);
  src[3] = 1.00390625f;  // exactly between two bf16 values: rounds to even
  src[4] = 1.01171875f;  // the other tie direction
  src[5] = std::numeric_limits<float>::infinity();
  src[6] = -std::numeric_limits<float>::infinity();
  src[7] = std::numeric_limits<float>::quiet_NaN();
  src[8] = 3.4e38f;  // rounds up to inf
  for (const CpuKernels* k : RunnableTables()) {
    std::vector<uint16_t> h(src.size());
    k->f32_to_bf16(src.data(), h.data(), static_cast<int64_t>(src.size()));
    for (size_t i = 0; i < src.size(); ++i) {
      if (std::isnan(src[i])) {
        EXPECT_TRUE(std::isnan(BF16ToF32(bf16_t{h[i]}))) << Level(k);
        continue;
      }
      EXPECT_EQ(h[i], F32ToBF16(src[i]).bits) << Level(k) << " element " << i << " = " << src[i];
    }
    std::vector<float> back(src.size());
    k->bf16_to_f32(h.data(), back.data(), static_cast<int64_t>(src.size()));
    for (size_t i = 0; i < src.size(); ++i) {
      const float want = BF16ToF32(bf16_t{h[i]});
      EXPECT_EQ(std::memcmp(&back[i], &want, 4), 0) << Level(k) << " element " << i;
    }
    // Strided rows: a paged K/V run, 3 rows of 37 at a stride of 53.
    std::vector<uint16_t> strided(3 * 53, 0x7fc1);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 37; ++c) strided[r * 53 + c] = h[(r * 11 + c) % h.size()];
    std::vector<float> rows(3 * 37);
    k->bf16_rows_to_f32(strided.data(), 53, 3, 37, rows.data());
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 37; ++c) {
        const float want = BF16ToF32(bf16_t{strided[r * 53 + c]});
        EXPECT_EQ(std::memcmp(&rows[r * 37 + c], &want, 4), 0) << Level(k) << " row " << r << " col " << c;
      }
  }
}

TEST(CpuKernelsTest, ExpSiluAndSumsMatchDoubleAtEveryLevel) {
  const int64_t n = 1000 + 13;
  std::vector<float> x = RandomFloats(n, -95.f, 30.f, 2);
  x[0] = -std::numeric_limits<float>::infinity();
  for (const CpuKernels* k : RunnableTables()) {
    std::vector<float> e = x;
    const float shift = 2.5f;
    const double sum = k->exp_shifted(e.data(), n, shift);
    double want_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      // The kernel's argument is x - shift rounded to float.
      const float arg = x[i] - shift;
      const double want = arg < -87 ? 0.0 : std::exp(static_cast<double>(arg));
      want_sum += static_cast<float>(want);
      EXPECT_NEAR(e[i], want, 2e-7 * want + 1e-37) << Level(k) << " x = " << x[i];
    }
    EXPECT_NEAR(sum, want_sum, 1e-6 * want_sum) << Level(k);

    std::vector<float> a = RandomFloats(n, -20.f, 20.f, 3), mul = RandomFloats(n, -2.f, 2.f, 4);
    std::vector<float> s = a;
    k->silu_row(s.data(), mul.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double want = a[i] / (1 + std::exp(-static_cast<double>(a[i]))) * mul[i];
      EXPECT_NEAR(s[i], want, 1e-6 * std::abs(want) + 1e-7) << Level(k) << " x = " << a[i];
    }

    double want_ss = 0;
    for (float v : a) want_ss += static_cast<double>(v) * v;
    EXPECT_NEAR(k->sum_squares(a.data(), n), want_ss, 1e-12 * want_ss) << Level(k);
  }
}

// Packs w [n][k] (row-major, as a checkpoint stores it) into the BA16a64b2a
// layout by its definition: (32 k x 64 n) blocks, k-blocks of one n-block
// adjacent, each [16 k-pairs][64 n][2], zero padding.
std::vector<uint16_t> PackReference(const std::vector<uint16_t>& w, int64_t n, int64_t k, PackedBf16Layout* l) {
  l->k_padded = (k + 31) / 32 * 32;
  l->n_padded = (n + 63) / 64 * 64;
  l->k_block = 32 * 64;
  l->n_block = l->k_padded * 64;
  std::vector<uint16_t> p(l->k_padded * l->n_padded, 0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) {
      const int64_t at = (r / 64) * l->n_block + (c / 32) * l->k_block + ((c % 32) / 2) * 128 + (r % 64) * 2 + c % 2;
      p[at] = w[r * k + c];
    }
  return p;
}

TEST(CpuKernelsTest, PackedLinearMatchesDoubleAndRowsDoNotDependOnTheBatch) {
  const int64_t n = 200, k = 150, max_m = 19;  // neither a multiple of a block
  std::vector<uint16_t> w(n * k), x(max_m * k);
  std::vector<float> wf = RandomFloats(n * k, -1.f, 1.f, 5), xf = RandomFloats(max_m * k, -1.f, 1.f, 6);
  for (size_t i = 0; i < w.size(); ++i) w[i] = F32ToBF16(wf[i]).bits;
  for (size_t i = 0; i < x.size(); ++i) x[i] = F32ToBF16(xf[i]).bits;
  const std::vector<float> bias = RandomFloats(n, -1.f, 1.f, 7);
  PackedBf16Layout l;
  const std::vector<uint16_t> packed = PackReference(w, n, k, &l);
  std::vector<uint16_t> xp(max_m * l.k_padded, 0);
  for (int64_t r = 0; r < max_m; ++r) std::memcpy(&xp[r * l.k_padded], &x[r * k], k * 2);

  for (const CpuKernels* kt : RunnableTables()) {
    for (bool out_bf16 : {false, true}) {
      std::vector<float> all(max_m * n);
      std::vector<uint16_t> all_h(max_m * n);
      PackedLinearArgs a{.w = packed.data(), .layout = l, .x = xp.data(), .m = max_m, .n = n, .bias = bias.data(),
                         .out_bf16 = out_bf16, .out = out_bf16 ? static_cast<void*>(all_h.data()) : all.data(),
                         .threads = 2};
      kt->packed_linear(a);
      for (int64_t r = 0; r < max_m; ++r)
        for (int64_t c = 0; c < n; ++c) {
          double want = bias[c];
          for (int64_t i = 0; i < k; ++i) want += double(BF16ToF32(bf16_t{x[r * k + i]})) * BF16ToF32(bf16_t{w[c * k + i]});
          const double got = out_bf16 ? BF16ToF32(bf16_t{all_h[r * n + c]}) : all[r * n + c];
          EXPECT_NEAR(got, want, (out_bf16 ? 4e-3 : 1e-5) * (std::abs(want) + 1)) << Level(kt) << " row " << r;
        }
      // Each row alone, and every batch size: bit for bit the batched rows.
      for (int64_t m : {1, 2, 3, 5, 16, 17}) {
        std::vector<float> part(m * n);
        std::vector<uint16_t> part_h(m * n);
        a.m = m;
        a.out = out_bf16 ? static_cast<void*>(part_h.data()) : part.data();
        kt->packed_linear(a);
        const bool same = out_bf16 ? std::memcmp(part_h.data(), all_h.data(), m * n * 2) == 0
                                   : std::memcmp(part.data(), all.data(), m * n * 4) == 0;
        EXPECT_TRUE(same) << Level(kt) << ": the first " << m << " rows differ from the same rows in a batch of "
                          << max_m;
      }
    }
  }
}

}  // namespace
}  // namespace omni::cpu

// Helpers for the layer tests: a checkpoint made from tensors in memory, and
// naive double-precision references written from the math (loops, no ops),
// rounding where the runtime rounds (bf16 at every matmul input).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "modelfile/checkpoint.h"
#include "modelfile/safetensors.h"
#include "ops/test_util.h"
#include "tensor/tensor.h"

namespace omni::models::layers::testing {

using ops::testing::RandomTensor;
using ops::testing::RelError;
using ops::testing::ToDoubles;
using Vec = std::vector<double>;

// Writes `tensors` to a fresh safetensors file, opens it and removes the
// file (the mapping outlives it).
inline Checkpoint MakeCheckpoint(const std::vector<NamedTensor>& tensors) {
  static std::atomic<int> counter{0};
  const std::filesystem::path path = std::filesystem::path(::testing::TempDir()) /
                                     ("omni_layers_" + std::to_string(::getpid()) + "_" +
                                      std::to_string(counter++) + ".safetensors");
  OMNI_CHECK(WriteSafetensors(path.string(), tensors).ok());
  StatusOr<Checkpoint> ckpt = Checkpoint::OpenFile(path.string());
  OMNI_CHECK(ckpt.ok()) << ckpt.status().ToString();
  std::filesystem::remove(path);
  return std::move(ckpt).value();
}

inline double Bf16(double v) { return BF16ToF32(F32ToBF16(static_cast<float>(v))); }
inline Vec RoundBf16(Vec v) {
  for (double& x : v) x = Bf16(x);
  return v;
}

// y [rows, out] = bf16(x) [rows, in] . w^T (w [out, in] row-major) + b.
inline Vec NaiveLinear(const Vec& x, int64_t rows, const Vec& w, int64_t out, int64_t in, const Vec& b = {}) {
  Vec y(rows * out);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double acc = b.empty() ? 0.0 : b[o];
      for (int64_t i = 0; i < in; ++i) acc += Bf16(x[r * in + i]) * w[o * in + i];
      y[r * out + o] = acc;
    }
  }
  return y;
}

inline double NaiveGelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
inline double NaiveSilu(double x) { return x / (1.0 + std::exp(-x)); }

// Over rows of `dim`: x / sqrt(mean(x^2) + eps) * w.
inline Vec NaiveRmsNorm(const Vec& x, int64_t dim, const Vec& w, double eps) {
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / dim; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += x[r * dim + i] * x[r * dim + i];
    const double inv = 1.0 / std::sqrt(ss / dim + eps);
    for (int64_t i = 0; i < dim; ++i) y[r * dim + i] = x[r * dim + i] * inv * (w.empty() ? 1.0 : w[i]);
  }
  return y;
}

inline Vec NaiveLayerNorm(const Vec& x, int64_t dim, const Vec& w, const Vec& b, double eps) {
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / dim; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < dim; ++i) mean += x[r * dim + i];
    mean /= dim;
    for (int64_t i = 0; i < dim; ++i) var += (x[r * dim + i] - mean) * (x[r * dim + i] - mean);
    const double inv = 1.0 / std::sqrt(var / dim + eps);
    for (int64_t i = 0; i < dim; ++i) {
      y[r * dim + i] = (x[r * dim + i] - mean) * inv * (w.empty() ? 1.0 : w[i]) + (b.empty() ? 0.0 : b[i]);
    }
  }
  return y;
}

// Softmax attention of one head over rows: q [sq, d], k/v [skv, d] with
// `visible(i, j)`; returns [sq, d].
template <typename Visible>
Vec NaiveHeadAttention(const Vec& q, const Vec& k, const Vec& v, int64_t sq, int64_t skv, int64_t d, double scale,
                       Visible visible) {
  Vec out(sq * d, 0.0);
  for (int64_t i = 0; i < sq; ++i) {
    std::vector<double> s(skv, -INFINITY);
    double mx = -INFINITY;
    for (int64_t j = 0; j < skv; ++j) {
      if (!visible(i, j)) continue;
      double dot = 0;
      for (int64_t c = 0; c < d; ++c) dot += q[i * d + c] * k[j * d + c];
      s[j] = dot * scale;
      mx = std::max(mx, s[j]);
    }
    double sum = 0;
    for (int64_t j = 0; j < skv; ++j) sum += s[j] == -INFINITY ? 0.0 : std::exp(s[j] - mx);
    for (int64_t j = 0; j < skv; ++j) {
      if (s[j] == -INFINITY) continue;
      const double p = std::exp(s[j] - mx) / sum;
      for (int64_t c = 0; c < d; ++c) out[i * d + c] += p * v[j * d + c];
    }
  }
  return out;
}

// Columns [h * d, (h + 1) * d) of a [rows, width] matrix, as [rows, d].
inline Vec Head(const Vec& x, int64_t rows, int64_t width, int64_t h, int64_t d) {
  Vec out(rows * d);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < d; ++c) out[r * d + c] = x[r * width + h * d + c];
  }
  return out;
}

inline void SetHead(Vec* x, int64_t rows, int64_t width, int64_t h, int64_t d, const Vec& head) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < d; ++c) (*x)[r * width + h * d + c] = head[r * d + c];
  }
}

// A bf16 weight as the checkpoint stores it, and its exact values.
struct Weight {
  Tensor tensor;
  Vec values;
};
inline Weight RandomWeight(const Shape& shape, uint32_t seed, float range = 0.5f) {
  Tensor t = RandomTensor(shape, DType::kBF16, seed, -range, range);
  return {t, ToDoubles(t)};
}

}  // namespace omni::models::layers::testing

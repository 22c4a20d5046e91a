#include "ops/conv.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <thread>
#include <vector>

#include "ops/test_util.h"

namespace omni::ops {
namespace {

using testing::ConcurrentMismatches;
using testing::RandomTensor;
using testing::RelError;
using testing::ToDoubles;

// Direct convolution in double over 3 spatial dims (1-D/2-D cases pad the
// shape with 1s). Transposed conv scatters each input into the output.
struct Geometry {
  int64_t n, ci, co, g;
  int64_t in[3], k[3], s[3], p[3], d[3], op[3], out[3];
};

std::vector<double> RefConv(const Tensor& x, const Tensor& w, const Tensor& b, const Geometry& q, bool transposed) {
  std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w), bv = b.defined() ? ToDoubles(b) : std::vector<double>();
  const int64_t cig = q.ci / q.g, cog = q.co / q.g;
  const int64_t on = q.out[0] * q.out[1] * q.out[2], in_n = q.in[0] * q.in[1] * q.in[2], kn = q.k[0] * q.k[1] * q.k[2];
  std::vector<double> y(q.n * q.co * on, 0.0);
  for (int64_t n = 0; n < q.n; ++n)
    for (int64_t co = 0; co < q.co; ++co)
      for (int64_t o = 0; o < on; ++o) y[(n * q.co + co) * on + o] = bv.empty() ? 0 : bv[co];
  for (int64_t n = 0; n < q.n; ++n)
    for (int64_t ci = 0; ci < q.ci; ++ci)
      for (int64_t i = 0; i < in_n; ++i)
        for (int64_t kk = 0; kk < kn; ++kk)
          for (int64_t col = 0; col < cog; ++col) {
            const int64_t grp = ci / cig, co = grp * cog + col;
            const int64_t ipos[3] = {i / (q.in[1] * q.in[2]), i / q.in[2] % q.in[1], i % q.in[2]};
            const int64_t kpos[3] = {kk / (q.k[1] * q.k[2]), kk / q.k[2] % q.k[1], kk % q.k[2]};
            int64_t opos[3];
            bool ok = true;
            for (int a = 0; a < 3; ++a) {
              if (transposed) {
                opos[a] = ipos[a] * q.s[a] - q.p[a] + kpos[a] * q.d[a];
              } else {  // input index = o*s - p + k*d  =>  o = (i + p - k*d) / s
                const int64_t num = ipos[a] + q.p[a] - kpos[a] * q.d[a];
                if (num % q.s[a] != 0) ok = false;
                opos[a] = num / q.s[a];
                if (num < 0) ok = false;
              }
              if (opos[a] < 0 || opos[a] >= q.out[a]) ok = false;
            }
            if (!ok) continue;
            const double wt = transposed ? wv[(ci * cog + col) * kn + kk] : wv[(co * cig + ci % cig) * kn + kk];
            y[(n * q.co + co) * on + (opos[0] * q.out[1] + opos[1]) * q.out[2] + opos[2]] +=
                wt * xv[(n * q.ci + ci) * in_n + i];
          }
  return y;
}

void RunCase(int dims, Geometry q, bool transposed, DType dt, uint32_t seed) {
  for (int a = 0; a < 3; ++a) {
    const int64_t ext = (q.k[a] - 1) * q.d[a] + 1;
    q.out[a] = transposed ? (q.in[a] - 1) * q.s[a] - 2 * q.p[a] + ext + q.op[a] : (q.in[a] + 2 * q.p[a] - ext) / q.s[a] + 1;
  }
  Shape xs = {q.n, q.ci}, ws = transposed ? Shape{q.ci, q.co / q.g} : Shape{q.co, q.ci / q.g};
  ConvParams p;
  p.groups = q.g;
  p.transposed = transposed;
  for (int a = 3 - dims; a < 3; ++a) {
    xs.push_back(q.in[a]);
    ws.push_back(q.k[a]);
    p.stride.push_back(q.s[a]);
    p.padding.push_back(q.p[a]);
    p.dilation.push_back(q.d[a]);
    p.output_padding.push_back(q.op[a]);
  }
  Tensor x = RandomTensor(xs, dt, seed), w = RandomTensor(ws, dt, seed + 1), b = RandomTensor({q.co}, DType::kF32, seed + 2);
  Conv conv(w, b, p);
  Tensor y = conv.Forward(x);
  EXPECT_EQ(y.dim(1), q.co);
  EXPECT_LE(RelError(y, RefConv(x, w, b, q, transposed)), testing::Tolerance(dt))
      << dims << "-D transposed=" << transposed << " seed=" << seed;
}

Geometry G(int64_t n, int64_t ci, int64_t co, int64_t g, std::array<int64_t, 3> in, std::array<int64_t, 3> k,
           std::array<int64_t, 3> s, std::array<int64_t, 3> p, std::array<int64_t, 3> d, std::array<int64_t, 3> op) {
  Geometry q{n, ci, co, g, {}, {}, {}, {}, {}, {}, {}};
  for (int a = 0; a < 3; ++a) q.in[a] = in[a], q.k[a] = k[a], q.s[a] = s[a], q.p[a] = p[a], q.d[a] = d[a], q.op[a] = op[a];
  return q;
}

TEST(ConvTest, ForwardMatchesDirectReference) {
  uint32_t seed = 1;
  for (DType dt : {DType::kF32, DType::kBF16}) {
    RunCase(1, G(1, 1, 1, 1, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}), false, dt, seed += 3);
    RunCase(1, G(2, 6, 4, 2, {1, 1, 37}, {1, 1, 5}, {1, 1, 2}, {0, 0, 2}, {1, 1, 3}, {0, 0, 0}), false, dt, seed += 3);
    RunCase(1, G(1, 8, 8, 8, {1, 1, 20}, {1, 1, 7}, {1, 1, 1}, {0, 0, 3}, {1, 1, 1}, {0, 0, 0}), false, dt, seed += 3);
    RunCase(2, G(1, 3, 5, 1, {1, 9, 11}, {1, 3, 3}, {1, 2, 1}, {0, 1, 1}, {1, 1, 2}, {0, 0, 0}), false, dt, seed += 3);
    RunCase(2, G(2, 4, 6, 2, {1, 7, 6}, {1, 2, 3}, {1, 1, 3}, {0, 0, 1}, {1, 1, 1}, {0, 0, 0}), false, dt, seed += 3);
    RunCase(3, G(1, 3, 4, 1, {4, 6, 5}, {2, 3, 3}, {2, 2, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}), false, dt, seed += 3);
  }
}

TEST(ConvTest, TransposedMatchesScatterReference) {
  uint32_t seed = 100;
  for (DType dt : {DType::kF32, DType::kBF16}) {
    RunCase(1, G(1, 4, 3, 1, {1, 1, 9}, {1, 1, 4}, {1, 1, 2}, {0, 0, 1}, {1, 1, 1}, {0, 0, 0}), true, dt, seed += 3);
    RunCase(1, G(2, 6, 4, 2, {1, 1, 13}, {1, 1, 16}, {1, 1, 8}, {0, 0, 4}, {1, 1, 1}, {0, 0, 0}), true, dt, seed += 3);
    RunCase(1, G(1, 2, 2, 1, {1, 1, 5}, {1, 1, 3}, {1, 1, 3}, {0, 0, 1}, {1, 1, 2}, {0, 0, 1}), true, dt, seed += 3);
    RunCase(2, G(1, 3, 5, 1, {1, 5, 4}, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}, {1, 1, 1}, {0, 1, 0}), true, dt, seed += 3);
    RunCase(2, G(1, 4, 4, 4, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}), true, dt, seed += 3);
  }
}

// Forward is const and documented thread-safe: one Conv run from several
// threads at once gives every thread the single-threaded result, bit for bit
// (the cached oneDNN primitive is shared, its scratchpad must not be).
TEST(ConvTest, ConcurrentForwardMatchesSerial) {
  struct Case {
    Shape w, x;
    ConvParams p;
  };
  ConvParams strided;
  strided.stride = {2};
  strided.padding = {1};
  ConvParams same2d;
  same2d.padding = {1};
  ConvParams up;
  up.transposed = true;
  up.stride = {4};
  up.padding = {2};
  const Case cases[] = {
      {{128, 64, 3}, {1, 64, 512}, strided},
      {{32, 32, 3, 3}, {2, 32, 24, 24}, same2d},
      {{64, 32, 8}, {1, 64, 128}, up},
  };
  uint32_t seed = 500;
  for (DType dt : {DType::kBF16, DType::kF32}) {
    for (const Case& c : cases) {
      Tensor w = RandomTensor(c.w, dt, seed++), b = RandomTensor({c.p.transposed ? c.w[1] : c.w[0]}, DType::kF32, seed++);
      Tensor x = RandomTensor(c.x, dt, seed++);
      Conv conv(w, b, c.p);
      const std::vector<float> want = conv.Forward(x).ToFloats();
      const std::vector<int> mismatches = ConcurrentMismatches([&] { return conv.Forward(x).ToFloats(); }, want);
      for (size_t t = 0; t < mismatches.size(); ++t) {
        EXPECT_EQ(mismatches[t], 0) << DTypeName(dt) << " weight " << ShapeToString(c.w) << " thread " << t << ": "
                                    << mismatches[t] << " results differ from the serial one";
      }
    }
  }
}

}  // namespace
}  // namespace omni::ops

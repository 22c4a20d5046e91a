// BigVGAN's anti-aliased SnakeBeta on one row, per ISA level (the front end
// is ops/anti_alias.h, the loop over rows backend/cpu/anti_alias_cpu.cc).
// kernels_isa.cc includes this fragment once per ISA level, inside its
// anonymous namespace, after simd.h; it is not a header of its own.
//
// The 2x upsampled row u is kept as its even and odd samples (ue[n] = u[2n],
// uo[n] = u[2n+1]), so both filters are plain vector FIRs over adjacent
// samples with the taps broadcast:
//   ue[n] = 2 sum_{d=-3..2} x[n+d] f[5-2d],  uo[n] = 2 sum_{d=-2..3} x[n+d] f[6-2d]
//   (x replicate-padded by 3),
//   u += inv_beta sin^2(alpha u),
//   out[n] = sum_{m=-2..3} ue[n+m] f[2m+5] + sum_{m=-3..2} uo[n+m] f[2m+6]
//   (u replicate-padded by 5 on the left and 6 on the right: ue[-2], ue[-1],
//   uo[-3..-1] are u[0]; ue[t..t+2] and uo[t..t+1] are u[2t-1]).
// Every output lane sums its taps in one order whatever its position, so a
// sample does not depend on where its row was cut.

// sin^2 x: x reduced by the nearest multiple of pi (sin^2 has period pi) in
// four Cody-Waite parts, then sin r by its Taylor series to r^11 on
// |r| <= pi/2 (error below 6e-8).
inline V SinSquared(V x) {
  const V n = RoundNearest(Mul(x, Set1(0.318309886183790671538f)));
  V r = NegMulAdd(n, Set1(3.140625f), x);
  r = NegMulAdd(n, Set1(0.0009670257568359375f), r);
  r = NegMulAdd(n, Set1(6.2771141529083251953e-07f), r);
  r = NegMulAdd(n, Set1(1.2154201256553420762e-10f), r);
  const V r2 = Mul(r, r);
  V p = Set1(-1.f / 39916800);
  p = MulAdd(p, r2, Set1(1.f / 362880));
  p = MulAdd(p, r2, Set1(-1.f / 5040));
  p = MulAdd(p, r2, Set1(1.f / 120));
  p = MulAdd(p, r2, Set1(-1.f / 6));
  const V s = MulAdd(Mul(p, r2), r, r);
  return Mul(s, s);
}

// in [t] -> out [t]; scratch holds 3 t + 24 floats.
void AntiAliasedSnakeRow(const float* in, int64_t t, float alpha, float inv_beta, const float* f, float* out,
                         float* scratch) {
  float* xp = scratch + 3;            // xp[-3 .. t+3)
  float* ue = scratch + t + 6 + 2;    // ue[-2 .. t+3)
  float* uo = scratch + 2 * t + 11 + 3;  // uo[-3 .. t+2)
  // (No std::clamp: the per-level objects share no inline code, simd.h.)
  for (int64_t i = -3; i < t + 3; ++i) xp[i] = in[i < 0 ? 0 : (i >= t ? t - 1 : i)];
  const V two = Set1(2.f), a = Set1(alpha), ib = Set1(inv_beta);
  for (int64_t n = 0; n < t; n += kLanes) {
    const int64_t k = t - n;
    V even = Zero(), odd = Zero();
    for (int d = -3; d <= 2; ++d) even = MulAdd(LoadN(xp + n + d, k), Set1(f[5 - 2 * d]), even);
    for (int d = -2; d <= 3; ++d) odd = MulAdd(LoadN(xp + n + d, k), Set1(f[6 - 2 * d]), odd);
    even = Mul(even, two);
    odd = Mul(odd, two);
    StoreN(ue + n, MulAdd(SinSquared(Mul(a, even)), ib, even), k);
    StoreN(uo + n, MulAdd(SinSquared(Mul(a, odd)), ib, odd), k);
  }
  const float first = ue[0], last = uo[t - 1];
  ue[-2] = ue[-1] = first;
  uo[-3] = uo[-2] = uo[-1] = first;
  ue[t] = ue[t + 1] = ue[t + 2] = last;
  uo[t] = uo[t + 1] = last;
  for (int64_t n = 0; n < t; n += kLanes) {
    const int64_t k = t - n;
    V acc = Zero();
    for (int m = -3; m <= 2; ++m) {
      acc = MulAdd(LoadN(uo + n + m, k), Set1(f[2 * m + 6]), acc);
      acc = MulAdd(LoadN(ue + n + m + 1, k), Set1(f[2 * m + 7]), acc);
    }
    StoreN(out + n, acc, k);
  }
}

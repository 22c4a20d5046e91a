// Conversions and row math (exp, SiLU, sums), per ISA level.
// kernels_isa.cc includes this fragment once per ISA level, inside its
// anonymous namespace, after simd.h (the vector vocabulary) and its
// OMNI_ISA_BF16 / OMNI_ISA_AMX switches; it is not a header of its own.

// Conversions and row math.

void Bf16ToF32(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) Store(d + i, LoadBf16(s + i));
  for (; i < n; ++i) d[i] = Bf16Value(s[i]);
}

// rows rows of n bf16, src_stride elements apart, into dst [rows][n]: a run
// of paged K/V rows of one head in one call (was a call per row).
void Bf16RowsToF32(const uint16_t* s, int64_t src_stride, int64_t rows, int64_t n, float* d) {
  for (int64_t r = 0; r < rows; ++r) Bf16ToF32(s + r * src_stride, d + r * n, n);
}

inline void F32ToBf16(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
#if OMNI_ISA_BF16
  for (; i + 16 <= n; i += 16) {
    __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(s + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), reinterpret_cast<__m256i&>(h));
  }
#else
  for (; i + kLanes <= n; i += kLanes) StoreBf16(d + i, Load(s + i));
#endif
  for (; i < n; ++i) d[i] = RoundToBf16(s[i]);
}

// x * sigmoid(x) = x / (1 + e^-x).
void SiluRow(float* a, const float* mul, int64_t n) {
  for (int64_t i = 0; i < n; i += kLanes) {
    const V x = LoadN(a + i, n - i);
    V y = Div(x, Add(Set1(1.f), Exp(Sub(Zero(), x))));
    if (mul) y = Mul(y, LoadN(mul + i, n - i));
    StoreN(a + i, y, n - i);
  }
}

double ExpShifted(float* v, int64_t n, float shift) {
  const V s = Set1(shift);
  DSum sum;
  for (int64_t i = 0; i < n; i += kLanes) {
    const V e = KeepFirstN(Exp(Sub(LoadN(v + i, n - i), s)), n - i);
    StoreN(v + i, e, n - i);
    sum.Add(e);
  }
  return sum.Total();
}

double SumSquares(const float* v, int64_t n) {
  DSum sum;
  for (int64_t i = 0; i < n; i += kLanes) sum.AddSquares(LoadN(v + i, n - i));
  return sum.Total();
}

uint64_t StreamRead(const void* p, int64_t bytes) {
  const char* b = static_cast<const char*>(p);
  constexpr int64_t kStep = sizeof(VI);
  VI s0 = ZeroI(), s1 = s0, s2 = s0, s3 = s0;
  for (int64_t i = 0; i + 4 * kStep <= bytes; i += 4 * kStep) {
    s0 = OrI(s0, LoadI(b + i));
    s1 = OrI(s1, LoadI(b + i + kStep));
    s2 = OrI(s2, LoadI(b + i + 2 * kStep));
    s3 = OrI(s3, LoadI(b + i + 3 * kStep));
  }
  return ReduceOr(OrI(OrI(s0, s1), OrI(s2, s3)));
}

// Flash-style attention: for each query tile (up to kBq rows) walk the key
// blocks of kBk keys, keeping a running max m, sum l and unnormalised output
// O per query, so memory is O(kBq x kBk + kBq x d) per thread and the
// [sq, skv] score matrix never exists.
//
// Layout choice: scores are kept transposed, S^T [kBk keys][kBq queries].
// Q^T [d][kBq] is built once per query tile, so the score micro-kernel
// broadcasts K[j][c] and multiplies a vector of queries with no per-tile
// transpose, and the softmax statistics of a vector of queries stay in one
// register. The loops over a tile are the ISA level's kernels (kernels.h).
// K and V rows are read in place (f32) or converted per tile (bf16), from a
// contiguous tensor or straight from a paged cache.
//
// Tile shapes: prefill tiles are 64 tokens of one head. A decode step has a
// query or a few per sequence, so padding each to 64 rows wasted most of the
// work; instead a 16-row tile holds every head that shares a KV head (GQA),
// which also reads each K/V tile once for the group. A query row's
// arithmetic never depends on its tile: each lane of the score, softmax and
// P x V kernels accumulates on its own, over the same kBk-key tiles in the
// same order, and key tiles a row cannot see only add exact zeros (p = 0,
// correction 1). So a token decoded alone and the same token recomputed in
// a prefill (after preemption) give bit-identical outputs.
#include "backend/cpu/attention_cpu.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/parallel.h"

namespace omni::cpu {
namespace {

constexpr int kBq = 64;       // rows of a prefill tile
constexpr int kSmallBq = 16;  // rows of a decode tile (a multiple of every level's lanes)
constexpr int kBk = 64;       // keys per block; fixes every query's summation order
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

enum class TileKind { kSkip, kFull, kPartial };

// Which keys a query sees; see AttentionProblem.
class Visibility {
 public:
  explicit Visibility(const AttentionProblem& p) : p_(p) {
    if (p.block_size > 0) nkb_ = (p.skv + p.block_size - 1) / p.block_size;
  }

  bool Allowed(int64_t i, int64_t j) const {
    const int64_t pos = p_.q_offset + i;
    if (p_.causal && j > pos) return false;
    if (p_.window > 0 && pos - j >= p_.window) return false;
    if (p_.q_segments && p_.q_segments[i] != p_.kv_segments[j]) return false;
    if (p_.block_size > 0 && !(*p_.block_visible)[(i / p_.block_size) * nkb_ + j / p_.block_size]) return false;
    return true;
  }

  // Causal and nothing else: query i sees keys j <= q_offset + i.
  bool CausalOnly() const { return p_.causal && p_.window <= 0 && !p_.q_segments && p_.block_size <= 0; }
  int64_t q_offset() const { return p_.q_offset; }

  // Keys [begin, end) that any query in [i0, i1) may see, from causal/window.
  void KeyRange(int64_t i0, int64_t i1, int64_t* begin, int64_t* end) const {
    *begin = 0;
    *end = p_.skv;
    if (p_.causal) *end = std::clamp<int64_t>(p_.q_offset + i1, 0, p_.skv);
    if (p_.window > 0) *begin = std::clamp<int64_t>(p_.q_offset + i0 - p_.window + 1, 0, p_.skv);
  }

  TileKind Classify(int64_t i0, int64_t i1, int64_t j0, int64_t j1) const {
    bool full = true;
    if (p_.causal) {
      if (j0 > p_.q_offset + i1 - 1) return TileKind::kSkip;
      if (j1 - 1 > p_.q_offset + i0) full = false;
    }
    if (p_.window > 0) {
      if (p_.q_offset + i0 - (j1 - 1) >= p_.window) return TileKind::kSkip;
      if (p_.q_offset + i1 - 1 - j0 >= p_.window) full = false;
    }
    if (p_.q_segments) {
      auto [qa, qb] = std::minmax_element(p_.q_segments + i0, p_.q_segments + i1);
      auto [ka, kb] = std::minmax_element(p_.kv_segments + j0, p_.kv_segments + j1);
      if (*qb < *ka || *kb < *qa) return TileKind::kSkip;
      if (!(*qa == *qb && *ka == *kb && *qa == *ka)) full = false;
    }
    if (p_.block_size > 0) {
      bool any = false, all = true;
      for (int64_t bi = i0 / p_.block_size; bi <= (i1 - 1) / p_.block_size; ++bi)
        for (int64_t bj = j0 / p_.block_size; bj <= (j1 - 1) / p_.block_size; ++bj) {
          bool vis = (*p_.block_visible)[bi * nkb_ + bj];
          any |= vis;
          all &= vis;
        }
      if (!any) return TileKind::kSkip;
      if (!all) full = false;
    }
    return full ? TileKind::kFull : TileKind::kPartial;
  }

 private:
  const AttentionProblem& p_;
  int64_t nkb_ = 0;
};

// Per-thread scratch for tiles of kBq rows, allocated once per call. The
// pair buffers (qtb, pp, vp) serve the bf16 path, the f32 ones (qt, k, v)
// the f32 path; keys (16 key rows gathered when they are not 16 in a row
// of the cache) and pa (pp transposed) the AMX form of the bf16 path.
template <int kBq>
struct Scratch {
  std::vector<float> qt, k, v, st, o, m, l, corr;
  std::vector<uint32_t> qtb, pp, vp, pa;
  std::vector<uint16_t> keys;
  Scratch(int64_t d, bool bf16)
      : qt(bf16 ? 0 : d * kBq), k(bf16 ? 0 : kBk * d), v(bf16 ? 0 : kBk * d), st(kBk * kBq), o(kBq * d), m(kBq),
        l(kBq), corr(kBq), qtb(bf16 ? (d / 2) * kBq : 0), pp(bf16 ? kBk / 2 * kBq : 0),
        vp(bf16 ? kBk / 2 * ((d + 15) / 16 * 16) : 0), pa(bf16 ? kBq * kBk / 2 : 0), keys(bf16 ? 16 * d : 0) {}
};

// The bf16 path needs the level's pair kernels (vdpbf16ps) and an even head
// dim (pairs along d); elsewhere bf16 K/V tiles are converted to f32.
bool UseBf16Path(const AttentionProblem& p) {
  return Kernels().attention.score_bf16 != nullptr && p.dtype == DType::kBF16 && p.d % 2 == 0;
}
// Its AMX form takes d in steps of 32. Decode and prefill tiles of one
// problem take the same form, so they stay bit-identical.
bool UseAmx(const AttentionProblem& p) {
  return UseBf16Path(p) && p.d % 32 == 0 && Kernels().attention.score_keys_amx != nullptr;
}

// Online-softmax update of one tile: st [kn][kBq] scores in, probabilities
// out, and the output rows so far scaled by the correction.
template <int kBq>
void SoftmaxTile(float* st, int64_t kn, Scratch<kBq>& w, int rows, float* o, int64_t d) {
  Kernels().attention.softmax_tile(st, kn, kBq, w.m.data(), w.l.data(), w.corr.data());
  for (int i = 0; i < rows; ++i) {
    const float c = w.corr[i];
    if (c == 1.f) continue;
    float* orow = o + i * d;
    for (int64_t x = 0; x < d; ++x) orow[x] *= c;
  }
}

// The query rows of one tile: tokens [i0, i0 + tokens) x heads
// [h0, h0 + heads), row r = (token i0 + r / heads, head h0 + r % heads). The
// heads share one KV head.
struct TileRows {
  int64_t h0 = 0, i0 = 0;
  int heads = 1, tokens = 1;

  int rows() const { return heads * tokens; }
  int64_t token(int r) const { return i0 + r / heads; }
  int64_t head(int r) const { return h0 + r % heads; }
};

template <int kBq>
class BlockRunner {
 public:
  BlockRunner(const AttentionProblem& p, const Visibility& vis)
      : p_(p), vis_(vis), k_(Kernels().attention), bf16_(UseBf16Path(p)), amx_(UseAmx(p)) {}

  void Run(const TileRows& t, Scratch<kBq>& w) const {
    const int64_t d = p_.d;
    const int rows = t.rows();
    const int64_t kvh = t.h0 / (p_.hq / p_.hkv);
    if (bf16_) {
      LoadQueryPairs(t, w);
    } else {
      LoadQueries(t, w);
    }
    std::fill(w.o.begin(), w.o.end(), 0.f);
    std::fill(w.m.begin(), w.m.end(), kNegInf);
    std::fill(w.l.begin(), w.l.end(), 0.f);
    const int64_t i0 = t.i0, i1 = t.i0 + t.tokens;
    int64_t kbegin, kend;
    vis_.KeyRange(i0, i1, &kbegin, &kend);
    const int64_t first = kbegin - kbegin % kBk;
    if (first < kend) PrefetchTile(kvh, first, kend);
    for (int64_t j0 = first; j0 < kend; j0 += kBk) {
      const int64_t kn = std::min<int64_t>(kBk, p_.skv - j0);
      if (j0 + kBk < kend) PrefetchTile(kvh, j0 + kBk, kend);
      TileKind kind = vis_.Classify(i0, i1, j0, j0 + kn);
      if (kind == TileKind::kSkip) continue;
      if (bf16_) {
        TileBf16(t, kvh, j0, kn, kind, w);
        continue;
      }
      int64_t k_stride, v_stride;
      const float* k = Rows(p_.k, p_.k_row, p_.k_head, kvh, j0, kn, w.k.data(), &k_stride);
      const float* v = Rows(p_.v, p_.v_row, p_.v_head, kvh, j0, kn, w.v.data(), &v_stride);
      float* st = w.st.data();
      k_.score_f32(k, k_stride, kn, w.qt.data(), d, kBq, st);
      if (kind == TileKind::kPartial) MaskTile(t, j0, kn, st);
      SoftmaxTile(st, kn, w, rows, w.o.data(), d);
      k_.accumulate_pv_f32(st, kn, kBq, v, v_stride, w.o.data(), d, rows);
    }
    StoreOutput(t, w);
  }

 private:
  // Element offset of key j's row (before the head offset) in k or v.
  int64_t KeyRow(int64_t j, int64_t row) const {
    if (p_.kv_block_size == 0) return j * row;
    const int64_t bs = p_.kv_block_size;
    return (static_cast<int64_t>(p_.kv_block_table[j / bs]) * bs + j % bs) * row;
  }

  // Asks for the K and V rows of head kvh's tile at j0 (up to key end) to
  // be brought into cache. Behind a decode step's weight stream they come
  // from DRAM, and asking for the whole tile at once overlaps those misses
  // with the work on the tile before it instead of waiting row by row.
  void PrefetchTile(int64_t kvh, int64_t j0, int64_t end) const {
    const int64_t elt = static_cast<int64_t>(DTypeSize(p_.dtype)), bytes = p_.d * elt;
    const char* k = static_cast<const char*>(p_.k);
    const char* v = static_cast<const char*>(p_.v);
    for (int64_t j = j0; j < std::min<int64_t>(j0 + kBk, end); ++j) {
      const char* kr = k + (KeyRow(j, p_.k_row) + kvh * p_.k_head) * elt;
      const char* vr = v + (KeyRow(j, p_.v_row) + kvh * p_.v_head) * elt;
      for (int64_t b = 0; b < bytes; b += 64) {
        __builtin_prefetch(kr + b);
        __builtin_prefetch(vr + b);
      }
    }
  }

  // Keys [j, j + run) with run <= n stored at a fixed row stride: all n
  // when K/V are contiguous, else up to the end of j's cache block.
  int64_t RunLength(int64_t j, int64_t n) const {
    if (p_.kv_block_size == 0) return n;
    return std::min(n, p_.kv_block_size - j % p_.kv_block_size);
  }

  // One tile on the bf16 path: K and V are read as raw bf16, scores and
  // softmax stay f32, probabilities are rounded to bf16 for P x V. Runs of
  // a paged cache start at even keys (even block size), so no value pair
  // straddles two blocks.
  void TileBf16(const TileRows& t, int64_t kvh, int64_t j0, int64_t kn, TileKind kind, Scratch<kBq>& w) const {
    const int64_t d = p_.d, dpad = (d + 15) / 16 * 16;
    float* st = w.st.data();
    if (amx_) ScoreTileAmx(kvh, j0, kn, w);
    for (int64_t j = 0, run; j < kn; j += run) {
      run = RunLength(j0 + j, kn - j);
      const uint16_t* k = KeyPtr(kvh, j0 + j);
      const uint16_t* v = static_cast<const uint16_t*>(p_.v) + KeyRow(j0 + j, p_.v_row) + kvh * p_.v_head;
      if (!amx_) k_.score_bf16(k, p_.k_row, run, w.qtb.data(), d / 2, p_.scale, kBq, st + j * kBq);
      k_.pack_values(v, p_.v_row, run, d, dpad, w.vp.data() + (j / 2) * dpad);
    }
    if (kind == TileKind::kPartial) MaskTile(t, j0, kn, st);
    SoftmaxTile(st, kn, w, t.rows(), w.o.data(), d);
    k_.pack_probabilities(st, kn, kBq, w.pp.data());
    if (amx_) {
      k_.accumulate_pv_amx(w.pp.data(), w.vp.data(), w.pa.data(), kn, kBq, w.o.data(), d, t.rows());
    } else {
      k_.accumulate_pv_bf16(w.pp.data(), (kn + 1) / 2, kBq, w.vp.data(), dpad, w.o.data(), d, t.rows());
    }
  }

  const uint16_t* KeyPtr(int64_t kvh, int64_t j) const {
    return static_cast<const uint16_t*>(p_.k) + KeyRow(j, p_.k_row) + kvh * p_.k_head;
  }

  // Scaled scores st [kn][kBq] of one tile, 16 keys per AMX pass; a group
  // of keys that is not 16 rows at one stride in the cache (the tile's
  // tail, a block boundary) is gathered into w.keys, zero-padded.
  void ScoreTileAmx(int64_t kvh, int64_t j0, int64_t kn, Scratch<kBq>& w) const {
    const int64_t d = p_.d;
    float* st = w.st.data();
    for (int64_t g = 0; g < kn; g += 16) {
      const int64_t count = std::min<int64_t>(16, kn - g);
      const uint16_t* k = KeyPtr(kvh, j0 + g);
      int64_t stride = p_.k_row;
      if (count < 16 || RunLength(j0 + g, 16) < 16) {
        std::fill(w.keys.begin(), w.keys.end(), uint16_t{0});
        for (int64_t r = 0; r < count; ++r) std::memcpy(&w.keys[r * d], KeyPtr(kvh, j0 + g + r), d * 2);
        k = w.keys.data();
        stride = d;
      }
      k_.score_keys_amx(k, stride, w.qtb.data(), d, kBq, st + g * kBq);
    }
    for (int64_t i = 0; i < kn * kBq; ++i) st[i] *= p_.scale;
  }

  const void* QueryRow(const TileRows& t, int r) const {
    return AddElems(p_.q, t.token(r) * p_.q_row + t.head(r) * p_.q_head, p_.dtype);
  }

  // Pair layout [d/2][kBq] of the raw bf16 query rows (unscaled: the scale
  // is applied to the f32 scores); padding rows are zero.
  void LoadQueryPairs(const TileRows& t, Scratch<kBq>& w) const {
    std::fill(w.qtb.begin(), w.qtb.end(), 0u);
    for (int r = 0; r < t.rows(); ++r) {
      const uint16_t* q = static_cast<const uint16_t*>(QueryRow(t, r));
      for (int64_t cp = 0; cp < p_.d / 2; ++cp) std::memcpy(&w.qtb[cp * kBq + r], q + 2 * cp, 4);
    }
  }

  // Q^T [d][kBq], pre-multiplied by the scale; padding rows are zero.
  void LoadQueries(const TileRows& t, Scratch<kBq>& w) const {
    std::fill(w.qt.begin(), w.qt.end(), 0.f);
    float* tmp = w.o.data();  // free until the tile loop starts
    for (int r = 0; r < t.rows(); ++r) {
      ToF32(QueryRow(t, r), p_.dtype, tmp, p_.d);
      for (int64_t c = 0; c < p_.d; ++c) w.qt[c * kBq + r] = tmp[c] * p_.scale;
    }
  }

  // kn rows of head kvh starting at key j0, as f32 with a row stride: in
  // place when K/V are contiguous f32, else converted or gathered into buf.
  const float* Rows(const void* base, int64_t row, int64_t head, int64_t kvh, int64_t j0, int64_t kn,
                    float* buf, int64_t* stride) const {
    if (p_.dtype == DType::kF32 && p_.kv_block_size == 0) {
      *stride = row;
      return static_cast<const float*>(base) + j0 * row + kvh * head;
    }
    if (p_.dtype == DType::kBF16) {
      for (int64_t j = 0, run; j < kn; j += run) {  // one call per run of rows at one stride
        run = RunLength(j0 + j, kn - j);
        Kernels().bf16_rows_to_f32(static_cast<const uint16_t*>(base) + KeyRow(j0 + j, row) + kvh * head, row, run,
                                   p_.d, buf + j * p_.d);
      }
    } else {
      for (int64_t j = 0; j < kn; ++j) {
        ToF32(AddElems(base, KeyRow(j0 + j, row) + kvh * head, p_.dtype), p_.dtype, buf + j * p_.d, p_.d);
      }
    }
    *stride = p_.d;
    return buf;
  }

  void MaskTile(const TileRows& t, int64_t j0, int64_t kn, float* st) const {
    if (vis_.CausalOnly()) {  // the diagonal tiles of every prefill
      for (int r = 0; r < t.rows(); ++r) {
        const int64_t first_hidden = std::max<int64_t>(0, vis_.q_offset() + t.token(r) + 1 - j0);
        for (int64_t j = first_hidden; j < kn; ++j) st[j * kBq + r] = kNegInf;
      }
      return;
    }
    for (int64_t j = 0; j < kn; ++j)
      for (int r = 0; r < t.rows(); ++r)
        if (!vis_.Allowed(t.token(r), j0 + j)) st[j * kBq + r] = kNegInf;
  }

  void StoreOutput(const TileRows& t, Scratch<kBq>& w) const {
    for (int r = 0; r < t.rows(); ++r) {
      // A query that sees no key at all gets zeros (PyTorch SDPA gives NaN).
      const float inv = w.l[r] > 0 ? 1.f / w.l[r] : 0.f;
      float* orow = w.o.data() + r * p_.d;
      for (int64_t c = 0; c < p_.d; ++c) orow[c] *= inv;
      FromF32(orow, p_.out_dtype, AddElems(p_.out, (t.token(r) * p_.hq + t.head(r)) * p_.d, p_.out_dtype), p_.d);
    }
  }

  const AttentionProblem& p_;
  const Visibility& vis_;
  const AttentionKernels& k_;
  const bool bf16_;
  const bool amx_;
};

// One tile of one problem; `cost` (rows x keys in range) orders the work.
struct Task {
  int64_t problem = 0, cost = 0;
  TileRows tile;
  bool small = false;  // a kSmallBq-row tile
};

// Cuts a problem into tiles: few queries per head (decode) become one
// kSmallBq-row tile per KV head holding its whole query group, anything
// larger 64-token tiles of one head.
void AppendTasks(int64_t index, const AttentionProblem& p, const Visibility& vis, std::vector<Task>* tasks) {
  const int64_t group = p.hq / p.hkv;
  const bool small = p.sq * group <= kSmallBq;
  const int heads = small ? static_cast<int>(group) : 1;
  const int64_t tokens = small ? p.sq : kBq;
  for (int64_t i0 = 0; i0 < p.sq; i0 += tokens) {
    for (int64_t h0 = 0; h0 < p.hq; h0 += heads) {
      const TileRows t{.h0 = h0, .i0 = i0, .heads = heads, .tokens = static_cast<int>(std::min(tokens, p.sq - i0))};
      int64_t kbegin, kend;
      vis.KeyRange(t.i0, t.i0 + t.tokens, &kbegin, &kend);
      tasks->push_back({.problem = index, .cost = t.rows() * std::max<int64_t>(kend - kbegin, 1), .tile = t,
                        .small = small});
    }
  }
}

}  // namespace

void Attention(std::span<const AttentionProblem> problems) {
  std::vector<Visibility> vis;
  vis.reserve(problems.size());
  std::vector<Task> tasks;
  for (size_t i = 0; i < problems.size(); ++i) {
    // Per-thread scratch is sized once, for the first problem.
    OMNI_CHECK(problems[i].d == problems[0].d && problems[i].dtype == problems[0].dtype)
        << "attention problems of one call must share head dim and dtype";
    vis.emplace_back(problems[i]);
    if (problems[i].sq > 0) AppendTasks(static_cast<int64_t>(i), problems[i], vis.back(), &tasks);
  }
  if (tasks.empty()) return;
  // Longest tiles first (under a causal mask the last query blocks), so
  // dynamic scheduling balances the short ones at the end.
  std::stable_sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) { return a.cost > b.cost; });
  const int64_t n = static_cast<int64_t>(tasks.size());
  // Each thread's scratch, made when it first needs it.
  struct Worker {
    std::optional<Scratch<kBq>> large;
    std::optional<Scratch<kSmallBq>> small;
  };
  struct Loop {
    std::span<const AttentionProblem> problems;
    const std::vector<Visibility>& vis;
    const std::vector<Task>& tasks;
    std::vector<Worker> workers;
  } loop{problems, vis, tasks, std::vector<Worker>(static_cast<size_t>(NumThreads()))};
  auto run = [](void* l, int64_t i, int thread) {
    Loop& loop = *static_cast<Loop*>(l);
    Worker& w = loop.workers[static_cast<size_t>(thread)];
    const Task& t = loop.tasks[static_cast<size_t>(i)];
    const AttentionProblem& p = loop.problems[static_cast<size_t>(t.problem)];
    if (t.small) {
      if (!w.small) w.small.emplace(p.d, UseBf16Path(p));
      BlockRunner<kSmallBq>(p, loop.vis[static_cast<size_t>(t.problem)]).Run(t.tile, *w.small);
    } else {
      if (!w.large) w.large.emplace(p.d, UseBf16Path(p));
      BlockRunner<kBq>(p, loop.vis[static_cast<size_t>(t.problem)]).Run(t.tile, *w.large);
    }
  };
  const AttentionKernels& kernels = Kernels().attention;
  if (Kernels().team_loops) {
    ParallelFor(n, true, /*max_run=*/1, [&](int64_t i, int thread) { run(&loop, i, thread); });
    return;
  }
  // AMX: each thread configures its tiles around its share.
#pragma omp parallel num_threads(static_cast<int>(std::min<int64_t>(NumThreads(), n)))
  {
    if (kernels.amx_begin) kernels.amx_begin();
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < n; ++i) run(&loop, i, omp_get_thread_num());
    if (kernels.amx_end) kernels.amx_end();
  }
}

}  // namespace omni::cpu

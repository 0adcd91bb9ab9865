// SGEMM driver: argument checks, ISA dispatch, cache blocking (BLIS loop order), per-thread
// packing scratch, and the split of C into tiles for the thread pool.
#include "kernels/cpu/gemm/sgemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>  // _mm_sfence (SSE, every x86-64)
#endif

#include "core/buffer.h"
#include "core/str_util.h"
#include "core/thread_scratch.h"
#include "kernels/cpu/gemm/sgemm_ukernel.h"

namespace kestrel::kernels::cpu {

using core::Isa;
using gemm_detail::MacroTile;
using gemm_detail::UkernelTable;

namespace {

// ---------------------------------------------------------------------------------------------
// ISA tables and blocking.

const UkernelTable* table_for(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return gemm_detail::ukernel_table_scalar();
#if defined(__x86_64__) || defined(_M_X64)
    case Isa::kAvx2:
      return gemm_detail::ukernel_table_avx2();
    case Isa::kAvx512:
      return gemm_detail::ukernel_table_avx512();
#else
    default:
      return nullptr;
#endif
  }
  return nullptr;
}

Result<const UkernelTable*> resolve(std::optional<Isa> want) {
  Isa isa = want ? *want : core::active_isa();
  if (isa > core::detected_isa())
    return core::unsupported(core::str_cat("sgemm: ", core::isa_name(isa), " requested but this CPU supports only ",
                                           core::isa_name(core::detected_isa())));
  const UkernelTable* t = table_for(isa);
  if (!t) return core::unsupported(core::str_cat("sgemm: no ", core::isa_name(isa), " kernels in this build"));
  return t;
}

struct Blocking {
  int64_t mc, nc, kc;
  // Whether this ISA's tiles may read a B panel in place at all (see b_in_place_for_rows).
  bool b_in_place = true;
};

// Whether a block of `rows` rows of C may read a non-transposed B in place rather than pack it (the
// stride and shape conditions come on top, in run_block and in the split cost model). The 16-column
// slivers of the AVX2 tile are one 64-byte line per k step, every step a line of a new row: measured
// on AMD Zen 2 (kestrel_kernel_bench, interleaved runs), packing was 8-18% faster on the
// MobileNetV2 1x1 conv GEMMs (28x28 144 -> 32 58 -> 69 GFLOP/s, 14x14 64 -> 384 62 -> 70, 7x7
// 160 -> 960 50 -> 56) and SqueezeNet's classifier (64 -> 72). The AVX-512 tile (32 columns, two
// lines per step) reads in place (measured on Zen 5: faster than packing on the conv shapes). Blocks
// of at most 16 rows read in place on every ISA: each packed element would serve too few rows to
// repay its copy (MobileNetV2's 112x112 32 -> 16 on Zen 2: 56 -> 52 GFLOP/s packed).
bool b_in_place_for_rows(const Blocking& blk, double rows) {
  return blk.b_in_place || rows <= 16;
}

int64_t round_down_to(int64_t x, int64_t unit) {
  return std::max(unit, x / unit * unit);
}

// The macro-kernel keeps one packed A sliver (MR x KC) in L1 while a B panel (KC x NC) streams
// past it from L2, and the A block (MC x KC) is streamed once per B panel from L3. So: KC fills
// ~60% of L1 with the A sliver (deep K blocks also mean fewer passes over C), NC makes the B panel
// half of L2, and MC keeps the A block within an eighth of L3 (VMs report unreliable L3 sizes, so
// MC is capped). Measured on a 48 KiB L1 / 1 MiB L2 AVX-512 core: KC 512, NC 256, MC 1024-2048
// beat their neighbours (KC 256/384/768/1024, NC 512/1024, MC 256/512) on square and conv shapes.
Blocking default_blocking(const UkernelTable& t) {
  const auto& f = core::cpu_features();
  const int64_t l1 = std::clamp<int64_t>(f.l1d_bytes, 16 << 10, 128 << 10);
  const int64_t l2 = std::clamp<int64_t>(f.l2_bytes, 128 << 10, 4 << 20);
  const int64_t l3 = std::clamp<int64_t>(f.l3_bytes, 1 << 20, 64 << 20);
  Blocking b;
  b.kc = std::clamp<int64_t>(round_down_to(l1 * 6 / 10 / (4 * t.mr), 64), 128, 512);
  b.nc = std::clamp<int64_t>(round_down_to(l2 / 2 / (4 * b.kc), t.nr), t.nr, 4096);
  b.mc = std::clamp<int64_t>(round_down_to(l3 / 8 / (4 * b.kc), t.mr), t.mr, 2048);
  b.b_in_place = t.isa != Isa::kAvx2;
  return b;
}

const Blocking& blocking_for(const UkernelTable& t) {
  static const Blocking scalar = default_blocking(*gemm_detail::ukernel_table_scalar());
#if defined(__x86_64__) || defined(_M_X64)
  static const Blocking avx2 = default_blocking(*gemm_detail::ukernel_table_avx2());
  static const Blocking avx512 = default_blocking(*gemm_detail::ukernel_table_avx512());
  static const Blocking avx512_small_m = default_blocking(*gemm_detail::ukernel_table_avx512_small_m());
  if (t.isa == Isa::kAvx2) return avx2;
  if (&t == gemm_detail::ukernel_table_avx512_small_m()) return avx512_small_m;
  if (t.isa == Isa::kAvx512) return avx512;
#endif
  return scalar;
}

// Splits [0, total) into ceil(total / max_block) near-equal blocks that are multiples of unit.
int64_t even_block(int64_t total, int64_t max_block, int64_t unit) {
  if (total <= max_block) return total;
  int64_t blocks = (total + max_block - 1) / max_block;
  int64_t per = (total + blocks - 1) / blocks;
  return std::min(max_block, (per + unit - 1) / unit * unit);
}

// True when rows ld floats apart fall into fewer than 16 distinct 64-byte slots of a 4 KiB page
// (the L1 set index) and a block of `rows` rows puts more than 8 of them on one slot, so a tall,
// narrow panel read in place would fight over a few sets (power-of-two strides, deep K blocks).
// Shallow blocks (conv GEMMs with K = 16..32, row strides like 12544) stay in place: fewer rows
// than ways share a set, and packing them cost 35% on MobileNetV2's 32 -> 16 1x1 conv.
bool aliasing_stride(int64_t ld, int64_t rows) {
  const int64_t bytes = (ld * 4) % 4096;
  const int64_t g = bytes == 0 ? 4096 : std::gcd<int64_t>(bytes, 4096);
  if (g <= 256) return false;
  const int64_t distinct = 4096 / g;
  return (rows + distinct - 1) / distinct > 8;
}

// ---------------------------------------------------------------------------------------------
// Per-thread packing scratch (core/thread_scratch.h): grows to the largest request, then is reused.

core::ScratchSlot g_pack_scratch;

float* scratch_floats(size_t floats) { return g_pack_scratch.get_as<float>(floats); }

// ---------------------------------------------------------------------------------------------
// One GEMM problem, all pointers resolved for one batch entry.

struct Operands {
  const float* a = nullptr;
  const float* b = nullptr;
  const int8_t* b_i8 = nullptr;  // weight-only int8 B (then b is null)
  float* c = nullptr;
  const float* residual = nullptr;
};

struct Problem {
  const UkernelTable* uk = nullptr;
  Blocking blk{};
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.f, beta = 0.f;
  int64_t lda = 0, ldb = 0, ldc = 0;
  bool trans_a = false, trans_b = false;
  const PackedA* packed_a = nullptr;
  const PackedB* packed_b = nullptr;
  const float* b_scale = nullptr;  // int8 B: per-column scale
  const GemmEpilogue* ep = nullptr;
  bool stream_c = false;  // see kStreamCBytes
  // Columns n .. n + extra_columns - 1 of C (past the n tiled columns) are computed sliver by
  // sliver in the macro-kernel by the tasks whose tiles end at column n (see sgemm_impl: N = 49 on
  // 7x7 planes, 196 on 14x14).
  int extra_columns = 0;
};

// With threads, a C of at least this many bytes (all batch entries) is written with non-temporal
// stores (whole aligned vectors of the last K block; fenced at the end of each task's block): with
// the GEMM split by output rows both cores read all of a 1x1 conv's input, so activation lines end
// a run shared, and ordinary stores there next run wait for the other core's copy to be invalidated
// (docs/architecture.md). Only when the activation is applied in the store (none, Relu, Clip): the
// others re-read the tile. 2 threads, same binary, ABBA: mnasnet -2.8%, mobilenet_v2 -4.2%,
// squeezenet and regnet 0; 1 thread keeps ordinary stores.
constexpr int64_t kStreamCBytes = int64_t{1} << 18;

// The serial loops over C[m0:m1, n0:n1] (m0 a multiple of MR, n0 of NR). Order: K blocks, then
// M blocks (A block packed once), then N panels (B panel packed, sized for L2); inside the
// macro-kernel each A sliver stays in L1 while the B panel streams past it, so C is written
// along its rows.
constexpr int64_t kSinglePanelMc = 128;

bool run_block(const Problem& p, const Operands& o, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  const UkernelTable& uk = *p.uk;
  const int64_t mr = uk.mr, nr = uk.nr;
  const int64_t kc_max = even_block(std::max<int64_t>(p.k, 1), p.blk.kc, 8);
  const int64_t nc_max = even_block(n1 - n0, p.blk.nc, nr);
  // With a single N panel each packed A block is used once, right after packing: small blocks
  // keep it in L2 between the two (a 512-row block of a deep K is 1 MiB, past L2).
  const bool one_panel = n1 - n0 <= nc_max;
  const int64_t mc_cap = one_panel ? std::min<int64_t>(p.blk.mc, kSinglePanelMc) : p.blk.mc;
  const int64_t mc_max = p.packed_a ? m1 - m0 : even_block(m1 - m0, std::max<int64_t>(mc_cap / mr * mr, mr), mr);
  // B is read in place (no packing) when it is not transposed, every B panel meets a single A
  // block anyway, and its rows do not alias to a few cache sets (row strides that are multiples of
  // 512 bytes or more, as in power-of-two matrices, thrash L1/L2 when a panel is walked down its
  // rows). Measured faster than packing on the conv shapes, 2-5% slower on square 1024-2048 (AVX-512
  // on Zen 5; AVX2 packs blocks of more than 16 rows, see b_in_place_for_rows).
  const bool direct_b = b_in_place_for_rows(p.blk, static_cast<double>(m1 - m0)) && !p.packed_b && !o.b_i8 &&
                        !p.trans_b && (m1 - m0 <= mc_max || one_panel) && !aliasing_stride(p.ldb, kc_max);

  auto round16 = [](size_t x) { return (x + 15) / 16 * 16; };
  const size_t a_floats = p.packed_a ? 0 : round16(static_cast<size_t>((mc_max + mr - 1) / mr * mr * kc_max));
  const size_t b_floats = round16(static_cast<size_t>(direct_b     ? nr * kc_max
                                                      : p.packed_b ? 0
                                                                   : (nc_max + nr - 1) / nr * nr * kc_max));
  const int extra_columns = n1 == p.n ? p.extra_columns : 0;
  const size_t col_floats = round16(static_cast<size_t>(kc_max * extra_columns));
  float* ws = scratch_floats(a_floats + b_floats + col_floats + 16);
  if (!ws) return false;
  float* a_buf = ws;
  float* b_buf = ws + a_floats;
  float* col_buf = b_buf + b_floats;

  const GemmEpilogue& ep = *p.ep;
  // Which (K block, N panel) b_buf holds: with a single N panel every A block of a K block meets
  // the same B panel, which is then packed once instead of once per A block (square 256: three
  // A blocks re-packed the whole of B three times).
  int64_t b_buf_pc = -1, b_buf_jc = -1;
  for (int64_t pc = 0; pc == 0 || pc < p.k; pc += kc_max) {
    const int64_t kc = std::min(kc_max, p.k - pc);
    MacroTile t;
    t.kc = kc;
    t.ldc = p.ldc;
    t.alpha = p.alpha;
    t.beta = pc == 0 ? p.beta : 1.f;
    t.last_k = pc + kc >= p.k;
    t.stream_c = p.stream_c && t.last_k;
    if (t.last_k) {
      t.activation = ep.activation;
      t.act_alpha = ep.act_alpha;
      t.act_beta = ep.act_beta;
      t.ldr = ep.ldr;
    }
    for (int64_t ic = m0; ic < m1; ic += mc_max) {
      const int64_t mc = std::min(mc_max, m1 - ic);
      t.mc = mc;
      if (kc == 0) {
        t.a = a_buf;  // nothing is read
        t.a_sliver_stride = 0;
      } else if (p.packed_a) {
        t.a = p.packed_a->data() + (ic / mr) * p.k * mr + pc * mr;
        t.a_sliver_stride = p.k * mr;
      } else {
        const float* src = p.trans_a ? o.a + pc * p.lda + ic : o.a + ic * p.lda + pc;
        uk.pack_a(src, p.lda, p.trans_a, mc, kc, a_buf, kc * mr);
        t.a = a_buf;
        t.a_sliver_stride = kc * mr;
      }
      for (int64_t jc = n0; jc < n1; jc += nc_max) {
        const int64_t nc = std::min(nc_max, n1 - jc);
        t.nc = nc;
        if (kc == 0) {
          t.b = b_buf;
          t.b_sliver_stride = 0;
          t.b_row_stride = nr;
        } else if (p.packed_b) {
          t.b = p.packed_b->data() + (jc / nr) * p.k * nr + pc * nr;
          t.b_sliver_stride = p.k * nr;
          t.b_row_stride = nr;
          t.b_prepacked = true;
          // The next panel's first sliver: along N in this K block, else back at n0 in the next.
          if (jc + nc < n1) {
            t.b_next_panel = p.packed_b->data() + ((jc + nc) / nr) * p.k * nr + pc * nr;
          } else if (pc + kc < p.k) {
            t.b_next_panel = p.packed_b->data() + (n0 / nr) * p.k * nr + (pc + kc) * nr;
          } else {
            t.b_next_panel = nullptr;
          }
        } else if (o.b_i8) {
          if (b_buf_pc != pc || b_buf_jc != jc)
            uk.unpack_b_i8(o.b_i8 + pc * p.ldb + jc, p.ldb, p.b_scale + jc, kc, nc, b_buf, kc * nr);
          b_buf_pc = pc, b_buf_jc = jc;
          t.b = b_buf;
          t.b_sliver_stride = kc * nr;
          t.b_row_stride = nr;
        } else if (direct_b) {
          t.b = o.b + pc * p.ldb + jc;
          t.b_sliver_stride = nr;
          t.b_row_stride = p.ldb;
          t.b_direct = true;
          t.b_edge_buf = b_buf;
          // The next panel in place: along N in this K block, else the first of the next K block.
          if (jc + nc < n1) {
            t.b_next_panel = o.b + pc * p.ldb + jc + nc;
            t.b_next_panel_cols = std::min(nc_max, n1 - jc - nc);
          } else if (pc + kc < p.k && std::min(kc_max, p.k - pc - kc) == kc) {
            t.b_next_panel = o.b + (pc + kc) * p.ldb + n0;
            t.b_next_panel_cols = std::min(nc_max, n1 - n0);
          } else {
            t.b_next_panel = nullptr;
          }
        } else {
          const float* src = p.trans_b ? o.b + jc * p.ldb + pc : o.b + pc * p.ldb + jc;
          if (b_buf_pc != pc || b_buf_jc != jc) uk.pack_b(src, p.ldb, p.trans_b, kc, nc, b_buf, kc * nr);
          b_buf_pc = pc, b_buf_jc = jc;
          t.b = b_buf;
          t.b_sliver_stride = kc * nr;
          t.b_row_stride = nr;
        }
        t.c = o.c + ic * p.ldc + jc;
        t.col_b = nullptr;
        if (extra_columns && jc + nc == n1 && kc > 0) {
          // Copied once per block: read in place, each of their values would be a line of its own,
          // fetched again from L2 for every sliver (22 of 185 us on 400 x 49 x 400).
          if (ic == m0) {
            const int64_t ld = p.trans_b ? 1 : p.ldb;
            for (int j = 0; j < extra_columns; ++j) {
              const float* src = p.trans_b ? o.b + (p.n + j) * p.ldb + pc : o.b + pc * p.ldb + p.n + j;
              for (int64_t q = 0; q < kc; ++q) col_buf[j * kc + q] = src[q * ld];
            }
          }
          t.col_b = col_buf;
          t.col_n = extra_columns;
          t.col_c = o.c + ic * p.ldc + p.n;
          t.col_accum = pc > 0;
        }
        if (t.last_k) {
          t.bias_col = ep.bias_kind == GemmBias::kPerColumn ? ep.bias + jc : nullptr;
          t.bias_row = ep.bias_kind == GemmBias::kPerRow ? ep.bias + ic : nullptr;
          t.residual = o.residual ? o.residual + ic * ep.ldr + jc : nullptr;
        }
        uk.macro(t);
      }
    }
  }
#if defined(__x86_64__) || defined(_M_X64)
  if (p.stream_c) _mm_sfence();  // the non-temporal stores before the pool's completion signal
#endif
  if (extra_columns && p.k > 0) {
    // The extra columns hold the bare products: their epilogue (alpha 1, beta 0, no column bias).
    float* col = o.c + p.n;
    for (int64_t i = m0; i < m1; ++i) {
      for (int j = 0; j < extra_columns; ++j) {
        float x = col[i * p.ldc + j];
        if (ep.bias_kind == GemmBias::kPerRow) x += ep.bias[i];
        if (o.residual) x += o.residual[i * ep.ldr + p.n + j];
        col[i * p.ldc + j] = x;
      }
    }
    uk.activate(col + m0 * p.ldc, p.ldc, m1 - m0, extra_columns, ep.activation, ep.act_alpha, ep.act_beta);
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Thread split: C is cut into tm x tn tiles (multiples of MR x NR); tasks are taken dynamically,
// so a few more tiles than threads also absorb a thread that gets descheduled.

struct Split {
  int64_t tm = 1, tn = 1;
};

Split choose_split(const Problem& p, int threads, bool split_columns) {
  Split best;
  if (threads <= 1) return best;
  const int64_t mr = p.uk->mr, nr = p.uk->nr;
  const int64_t sm = (p.m + mr - 1) / mr, sn = (p.n + nr - 1) / nr;
  const double kk = static_cast<double>(std::max<int64_t>(p.k, 1));
  // Below ~1 MFLOP a second thread costs more to wake than it saves.
  if (static_cast<double>(p.m) * static_cast<double>(p.n) * kk < 5.0e5) return best;
  if (split_columns && p.n >= kSplitColumnsMinN && sn >= threads) return Split{1, threads};
  // One task per thread is tried first and wins ties (more tasks must be 3% cheaper): task 0 runs
  // on the calling thread, so with one range of rows per thread the C rows (a conv's output
  // channels) land in the cache of the thread whose depthwise / activation ranges read them next.
  // Many small tasks scatter them over both cores, and a line takes 50-250 ns between the cores.
  double best_cost = std::numeric_limits<double>::max();
  for (int64_t tasks = threads; tasks <= 4 * threads; tasks += threads) {
    for (int64_t tm = 1; tm <= tasks; ++tm) {
      if (tasks % tm) continue;
      const int64_t tn = tasks / tm;
      if (tm > sm || tn > sn) continue;
      // Estimated cycles of the largest tile: padded multiply-adds at 32 per cycle, packing its
      // A rows once (a transpose, ~1/4 cycle per element) and its B columns once per M block
      // (a copy, skipped when B is pre-packed or read in place), plus a fixed cost per task.
      const double tile_m = static_cast<double>((sm + tm - 1) / tm * mr);
      const double tile_n = static_cast<double>((sn + tn - 1) / tn * nr);
      double cycles = tile_m * tile_n * kk / 32.0 + 3000.0;
      if (!p.packed_a) cycles += 0.25 * tile_m * kk;
      // Splitting N when rows of C do not start on a cache line puts one line of every row in
      // two threads' tiles: it moves between the cores at each store and again when the
      // epilogue reads it back (a 1x1 conv over 7x7 pixels ran 3-4x slower on 2 threads).
      if (tn > 1 && p.ldc % 16 != 0) cycles += 400.0 * tile_m;
      const bool b_in_place = b_in_place_for_rows(p.blk, tile_m) && !p.b_scale && !p.trans_b &&
                              tile_m <= static_cast<double>(p.blk.mc) &&
                              !aliasing_stride(p.ldb, std::min(p.k, p.blk.kc));
      if (!p.packed_b && !b_in_place) cycles += 0.1 * tile_n * kk * std::ceil(tile_m / static_cast<double>(p.blk.mc));
      const double total = std::ceil(static_cast<double>(tasks) / threads) * cycles;
      if (total < best_cost * 0.97) {
        best_cost = total;
        best = {tm, tn};
      }
    }
  }
  return best;
}

Operands operands_for(const SgemmA& a, const SgemmB& b, float* c, const GemmEpilogue& ep, const SgemmBatch& batch,
                      int64_t i) {
  Operands o;
  if (!a.packed) o.a = batch.a_ptrs ? batch.a_ptrs[i] : a.data + i * batch.stride_a;
  if (!b.packed) o.b = batch.b_ptrs ? batch.b_ptrs[i] : b.data + i * batch.stride_b;
  o.c = batch.c_ptrs ? batch.c_ptrs[i] : c + i * batch.stride_c;
  if (ep.residual || batch.residual_ptrs)
    o.residual = batch.residual_ptrs ? batch.residual_ptrs[i] : ep.residual + i * batch.stride_residual;
  return o;
}

// ---------------------------------------------------------------------------------------------
// Argument checks.

bool fits(int64_t rows, int64_t cols, int64_t ld) {
  // (rows - 1) * ld + cols must not overflow.
  if (rows == 0 || cols == 0) return true;
  int64_t t;
  return !__builtin_mul_overflow(rows - 1, ld, &t) && !__builtin_add_overflow(t, cols, &t);
}

Status check_matrix(const char* name, const float* data, int64_t rows, int64_t cols, int64_t ld, bool has_ptrs) {
  if (ld < cols || ld < 0)
    return core::invalid_argument(
        core::str_cat("sgemm: ld", name, " = ", ld, " is smaller than the row length ", cols));
  if (rows > 0 && cols > 0 && !data && !has_ptrs)
    return core::invalid_argument(core::str_cat("sgemm: ", name, " is null"));
  if (!fits(rows, cols, ld)) return core::out_of_range(core::str_cat("sgemm: ", name, " extent overflows"));
  return Status::ok();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

namespace {
// The same ISA's table with other tiles for small M, or null (AVX-512: the 8 x 48 kernel).
const UkernelTable* small_m_table(const UkernelTable* t) {
#if defined(__x86_64__) || defined(_M_X64)
  if (t->isa == Isa::kAvx512) return gemm_detail::ukernel_table_avx512_small_m();
#endif
  (void)t;
  return nullptr;
}

constexpr int64_t kSmallMTableMaxK = 64;
constexpr int64_t kShallowMaxK = 24;

// M = 15..16 fits two 8-row tiles better than 14 + 1..2 rows (on MobileNetV2's 112x112 32 -> 16 1x1
// conv 170 against 145 GFLOP/s). So does M = 32 with K <= kSmallMTableMaxK (four 8-row tiles against
// 14 + 14 + 4; RegNet-X's 32 -> 32 convs at 112 and 56): kestrel_kernel_bench, A pre-packed, 3
// interleaved runs, 32 x 32 x 12544 155 -> 142 us at 1 thread, 84 -> 74 at 2. With a deeper K the
// 14-row tiles win (32 x 144 x 784: 8 x 48 1.07x the time), and M = 24 (14 + 10) keeps them too
// (1.02-1.04x with 8 x 48 at K = 48..96).
// At K <= kShallowMaxK (the expand convs after a 16- or 24-channel layer) every M of whole 8-row tiles
// that the 14-row ones would end with a partial sliver takes the 8 x 48 tiles: 20 interleaved rounds
// on Zen 5, 1 | 2 threads, the ratio of the fastest runs: 16 -> 48 at 112x112 0.94 | 0.98, 16 -> 96
// 0.96 | 0.95, 24 -> 72 at 56x56 0.95 | 0.95, 24 -> 144 0.90 | 0.95 (per-round medians 0.87-0.99
// with a neighbour loading the host). At K = 32 (32 -> 192 at 28x28) it was even, at K = 64 (64 -> 384
// at 14x14) 1.02x the time.
const UkernelTable* table_for_m(const UkernelTable* t, int64_t m, int64_t k) {
  const UkernelTable* s = small_m_table(t);
  if (!s) return t;
  const bool shallow = k <= kShallowMaxK && m % s->mr == 0 && m % t->mr != 0;
  return m == 15 || m == 16 || (m == 32 && k <= kSmallMTableMaxK) || shallow ? s : t;
}
}  // namespace

Result<SgemmTileShape> sgemm_tile_shape(core::Isa isa) {
  KESTREL_ASSIGN_OR_RETURN(const UkernelTable* t, resolve(isa));
  return SgemmTileShape{t->mr, t->nr};
}

Result<PackedA> pack_a(int64_t m, int64_t k, const float* a, int64_t lda, bool trans_a, std::optional<core::Isa> isa) {
  KESTREL_ASSIGN_OR_RETURN(const UkernelTable* t, resolve(isa));
  if (m < 0 || k < 0) return core::invalid_argument("pack_a: negative size");
  t = table_for_m(t, m, k);
  KESTREL_RETURN_IF_ERROR(check_matrix("a", a, trans_a ? k : m, trans_a ? m : k, lda, false));
  const int64_t slivers = (m + t->mr - 1) / t->mr;
  int64_t floats;
  if (__builtin_mul_overflow(slivers * t->mr, k, &floats) || floats > (int64_t{1} << 40))
    return core::out_of_range("pack_a: too large");
  PackedA p;
  KESTREL_ASSIGN_OR_RETURN(p.storage_, core::allocate_aligned(static_cast<size_t>(std::max<int64_t>(floats, 1)) * 4));
  float* dst = static_cast<float*>(p.storage_.get());
  if (m > 0 && k > 0) t->pack_a(a, lda, trans_a, m, k, dst, k * t->mr);
  p.data_ = dst;
  p.m_ = m;
  p.k_ = k;
  p.mr_ = t->mr;
  p.bytes_ = static_cast<size_t>(floats) * 4;
  p.isa_ = t->isa;
  return p;
}

Result<PackedA> PackedA::slice_rows(int64_t m0, int64_t m1) const {
  if (m0 < 0 || m1 < m0 || m1 > m_ || m0 % mr_ != 0)
    return core::invalid_argument(
        core::str_cat("PackedA::slice_rows: rows [", m0, ", ", m1, ") of ", m_, " (tile height ", mr_, ")"));
  PackedA s = *this;
  s.data_ = data_ + (m0 / mr_) * k_ * mr_;
  s.m_ = m1 - m0;
  s.bytes_ = static_cast<size_t>((m1 - m0 + mr_ - 1) / mr_ * mr_ * k_) * 4;
  return s;
}

Result<PackedB> pack_b(int64_t k, int64_t n, const float* b, int64_t ldb, bool trans_b, std::optional<core::Isa> isa) {
  KESTREL_ASSIGN_OR_RETURN(const UkernelTable* t, resolve(isa));
  if (n < 0 || k < 0) return core::invalid_argument("pack_b: negative size");
  KESTREL_RETURN_IF_ERROR(check_matrix("b", b, trans_b ? n : k, trans_b ? k : n, ldb, false));
  const int64_t slivers = (n + t->nr - 1) / t->nr;
  int64_t floats;
  if (__builtin_mul_overflow(slivers * t->nr, k, &floats) || floats > (int64_t{1} << 40))
    return core::out_of_range("pack_b: too large");
  PackedB p;
  KESTREL_ASSIGN_OR_RETURN(p.storage_, core::allocate_aligned(static_cast<size_t>(std::max<int64_t>(floats, 1)) * 4));
  float* dst = static_cast<float*>(p.storage_.get());
  if (n > 0 && k > 0) t->pack_b(b, ldb, trans_b, k, n, dst, k * t->nr);
  p.data_ = dst;
  p.k_ = k;
  p.n_ = n;
  p.nr_ = t->nr;
  p.bytes_ = static_cast<size_t>(floats) * 4;
  p.isa_ = t->isa;
  return p;
}

Result<PackedB> PackedB::slice_cols(int64_t n0, int64_t n1) const {
  if (n0 < 0 || n1 < n0 || n1 > n_ || n0 % nr_ != 0)
    return core::invalid_argument(
        core::str_cat("PackedB::slice_cols: columns [", n0, ", ", n1, ") of ", n_, " (tile width ", nr_, ")"));
  PackedB s = *this;
  s.data_ = data_ + (n0 / nr_) * k_ * nr_;
  s.n_ = n1 - n0;
  s.bytes_ = static_cast<size_t>((n1 - n0 + nr_ - 1) / nr_ * nr_ * k_) * 4;
  return s;
}

Status sgemm(int64_t m, int64_t n, int64_t k, float alpha, const SgemmA& a, const SgemmB& b, float beta, float* c,
             int64_t ldc, const GemmEpilogue& epilogue, const SgemmContext& ctx) {
  return sgemm_batched(m, n, k, alpha, a, b, beta, c, ldc, SgemmBatch{}, epilogue, ctx);
}

namespace {

// M <= 4 (a classifier head, batch-1 projections) against int8 B or pre-packed float B: the
// register-blocked path would compute MR (14) rows for the one or few that exist (a 1280 x 1000
// head took 0.23 ms, 10 GFLOP/s), and widening a whole int8 panel into scratch costs more than
// the products. So B is read once, straight from its int8 rows (gemv_b_i8) or its packed slivers
// (gemv_packed_b), into a per-call buffer; then the epilogue. Columns are split over the pool in
// steps of `step` (a multiple of the sliver width for packed B).
Status small_m(const Problem& p, const SgemmA& a, const SgemmBInt8* b_i8, const PackedB* b_packed, float* c,
               const GemmEpilogue& ep, const SgemmContext& ctx) {
  const UkernelTable& uk = *p.uk;
  const int64_t m = p.m, n = p.n;
  // Packed B with C = A * B (+ a per-column bias), then any activation: straight into C.
  const bool direct = b_packed && p.alpha == 1.f && p.beta == 0.f && !ep.residual &&
                      ep.bias_kind != GemmBias::kPerRow;
  static core::ScratchSlot s_tmp;
  float* tmp = direct ? nullptr : s_tmp.get_as<float>(static_cast<size_t>(m * n));
  if (!direct && !tmp) return Status(core::StatusCode::kOutOfMemory, "sgemm: out of memory for the small-M product");
  const int threads = ctx.pool ? ctx.pool->num_threads() : 1;
  const int64_t step = b_i8 ? 64 : uk.nr;
  const int64_t tasks =
      threads > 1 && n * p.k >= (int64_t{1} << 16) ? std::min<int64_t>(2 * threads, (n + step - 1) / step) : 1;
  const bool clamp = gemm_detail::activation_is_clamp(ep.activation);
  auto run_task = [&](int64_t t) {
    const int64_t j0 = (n * t / tasks) / step * step, j1 = t + 1 == tasks ? n : (n * (t + 1) / tasks) / step * step;
    if (j0 >= j1) return;
    if (b_i8) {
      uk.gemv_b_i8(m, j1 - j0, p.k, a.data, a.ld, a.trans, b_i8->data + j0, b_i8->ld, b_i8->scale + j0, tmp + j0, n);
    } else {
      const float* bp = b_packed->data() + (j0 / step) * p.k * step;
      if (direct) {
        const float* bias = ep.bias_kind == GemmBias::kPerColumn ? ep.bias + j0 : nullptr;
        uk.gemv_packed_b(m, j1 - j0, p.k, a.data, a.ld, a.trans, bp, bias, c + j0, p.ldc);
        uk.activate(c + j0, p.ldc, m, j1 - j0, ep.activation, ep.act_alpha, ep.act_beta);
        return;
      }
      uk.gemv_packed_b(m, j1 - j0, p.k, a.data, a.ld, a.trans, bp, nullptr, tmp + j0, n);
    }
    for (int64_t i = 0; i < m; ++i) {
      float* crow = c + i * p.ldc;
      const float* trow = tmp + i * n;
      const float* rrow = ep.residual ? ep.residual + i * ep.ldr : nullptr;
      for (int64_t j = j0; j < j1; ++j) {
        float x = p.alpha * trow[j];
        if (p.beta != 0.f) x += p.beta * crow[j];
        if (ep.bias_kind == GemmBias::kPerColumn) x += ep.bias[j];
        if (ep.bias_kind == GemmBias::kPerRow) x += ep.bias[i];
        if (rrow) x += rrow[j];
        if (ep.activation == GemmActivation::kRelu) x = std::max(x, 0.f);
        if (ep.activation == GemmActivation::kClip) x = std::min(std::max(x, ep.act_alpha), ep.act_beta);
        crow[j] = x;
      }
      if (!clamp) uk.activate(crow + j0, p.ldc, 1, j1 - j0, ep.activation, ep.act_alpha, ep.act_beta);
    }
  };
  if (tasks > 1) {
    ctx.pool->run(tasks, run_task);
  } else {
    run_task(0);
  }
  return Status::ok();
}

// N = 1 against pre-packed A (a 1x1 conv on a 1x1 plane: the squeeze-excite convs) or row-major
// A with a contiguous column: the tiled path pads the one column to NR (32) and took 15-45 us at
// 1-5 GFLOP/s for weights the size of L2. Row slivers are split over the pool (min_work: fewer
// multiply-adds run on the caller); C = A * b (+ per-row bias, + residual column), then the
// activation. `a`: the plain A when not pre-packed.
Status single_column(const Problem& p, const float* a_plain, const float* b, float* c, const GemmEpilogue& ep,
                     const SgemmContext& ctx, int64_t min_work = int64_t{1} << 16) {
  const UkernelTable& uk = *p.uk;
  const int64_t m = p.m, mr = uk.mr;
  const int threads = ctx.pool ? ctx.pool->num_threads() : 1;
  const int64_t slivers = (m + mr - 1) / mr;
  const int64_t tasks = threads > 1 && m * p.k >= min_work ? std::min<int64_t>(threads, slivers) : 1;
  const float* bias = ep.bias_kind == GemmBias::kPerRow ? ep.bias : nullptr;
  auto run_task = [&](int64_t t) {
    const int64_t i0 = slivers * t / tasks * mr, i1 = std::min(m, slivers * (t + 1) / tasks * mr);
    if (i0 >= i1) return;
    const float* r = ep.residual ? ep.residual + i0 * ep.ldr : nullptr;
    if (p.packed_a) {
      const float* a = p.packed_a->data() + (i0 / mr) * p.k * mr;
      uk.gemv_packed_a(i1 - i0, p.k, a, b, p.trans_b ? 1 : p.ldb, bias ? bias + i0 : nullptr, r, ep.ldr,
                       c + i0 * p.ldc, p.ldc);
    } else {
      uk.gemv_rows(i1 - i0, p.k, a_plain + i0 * p.lda, p.lda, b, bias ? bias + i0 : nullptr, r, ep.ldr, c + i0 * p.ldc,
                   p.ldc);
    }
    if (p.ldc == 1) {
      uk.activate(c + i0, i1 - i0, 1, i1 - i0, ep.activation, ep.act_alpha, ep.act_beta);
    } else {
      uk.activate(c + i0 * p.ldc, p.ldc, i1 - i0, 1, ep.activation, ep.act_alpha, ep.act_beta);
    }
  };
  if (tasks > 1) {
    ctx.pool->run(tasks, run_task);
  } else {
    run_task(0);
  }
  return Status::ok();
}

// sgemm_batched with, when b_i8 is given, that int8 B instead of b (then b is unused).
Status sgemm_impl(int64_t m, int64_t n, int64_t k, float alpha, const SgemmA& a, const SgemmB& b,
                  const SgemmBInt8* b_i8, float beta, float* c, int64_t ldc, const SgemmBatch& batch,
                  const GemmEpilogue& ep, const SgemmContext& ctx) {
  if (m < 0 || n < 0 || k < 0 || batch.count < 0)
    return core::invalid_argument(
        core::str_cat("sgemm: negative size m=", m, " n=", n, " k=", k, " batch=", batch.count));
  // Which instruction set: pre-packed operands fix it; an explicit request must agree.
  std::optional<Isa> isa = ctx.isa;
  for (std::optional<Isa> packed_isa : {a.packed ? std::optional<Isa>(a.packed->isa()) : std::nullopt,
                                        b.packed ? std::optional<Isa>(b.packed->isa()) : std::nullopt}) {
    if (!packed_isa) continue;
    if (isa && *isa != *packed_isa)
      return core::invalid_argument(core::str_cat("sgemm: operand packed for ", core::isa_name(*packed_isa),
                                                  " used with ", core::isa_name(*isa)));
    isa = packed_isa;
  }
  KESTREL_ASSIGN_OR_RETURN(const UkernelTable* uk, resolve(isa));
  // A packed A fixes the tile height it was packed for; otherwise M picks it, unless B is packed
  // (for the default tile width).
  if (a.packed) {
    const UkernelTable* s = small_m_table(uk);
    if (s && a.packed->mr() == s->mr) uk = s;
    if (a.packed->mr() != uk->mr || (b.packed && uk == s))
      return core::invalid_argument(core::str_cat("sgemm: packed A has slivers of ", a.packed->mr(),
                                                  " rows, which no kernel with this B takes"));
  } else if (!b.packed) {
    uk = table_for_m(uk, m, k);
  }

  if (a.packed) {
    if (a.packed->empty() || a.packed->m() != m || a.packed->k() != k)
      return core::invalid_argument(
          core::str_cat("sgemm: packed A is ", a.packed->m(), "x", a.packed->k(), ", the call needs ", m, "x", k));
  } else {
    KESTREL_RETURN_IF_ERROR(check_matrix("a", a.data, a.trans ? k : m, a.trans ? m : k, a.ld, batch.a_ptrs != nullptr));
  }
  if (b_i8) {
    if (b_i8->ld < n || (k > 0 && n > 0 && (!b_i8->data || !b_i8->scale)))
      return core::invalid_argument(core::str_cat("sgemm: int8 B needs data, a scale per column and ld >= ", n));
    if (!fits(k, n, b_i8->ld)) return core::out_of_range("sgemm: b extent overflows");
    if (batch.count != 1 || batch.b_ptrs || batch.stride_b)
      return core::invalid_argument("sgemm: int8 B is not batched");
  } else if (b.packed) {
    if (b.packed->empty() || b.packed->k() != k || b.packed->n() != n)
      return core::invalid_argument(
          core::str_cat("sgemm: packed B is ", b.packed->k(), "x", b.packed->n(), ", the call needs ", k, "x", n));
  } else {
    KESTREL_RETURN_IF_ERROR(check_matrix("b", b.data, b.trans ? n : k, b.trans ? k : n, b.ld, batch.b_ptrs != nullptr));
  }
  KESTREL_RETURN_IF_ERROR(check_matrix("c", c, m, n, ldc, batch.c_ptrs != nullptr));
  if (ep.bias_kind != GemmBias::kNone && !ep.bias)
    return core::invalid_argument("sgemm: bias kind set but bias is null");
  if (ep.residual || batch.residual_ptrs) {
    KESTREL_RETURN_IF_ERROR(check_matrix("r", ep.residual, m, n, ep.ldr, batch.residual_ptrs != nullptr));
  }
  if ((a.packed && (batch.a_ptrs || batch.stride_a)) || (b.packed && (batch.b_ptrs || batch.stride_b)))
    return core::invalid_argument("sgemm: a pre-packed operand is shared by the batch (no stride or pointer array)");
  for (int64_t stride : {batch.stride_a, batch.stride_b, batch.stride_c, batch.stride_residual}) {
    int64_t extent;
    if (stride < 0 || (batch.count > 0 && __builtin_mul_overflow(batch.count - 1, stride, &extent)))
      return core::out_of_range(
          core::str_cat("sgemm: batch stride ", stride, " invalid for ", batch.count, " entries"));
  }
  if (batch.count == 0 || m == 0 || n == 0) return Status::ok();

  Problem p;
  p.uk = uk;
  p.blk = blocking_for(*uk);
  p.m = m;
  p.n = n;
  // alpha == 0: A and B are not read (BLAS convention), only beta * C and the epilogue remain.
  p.k = alpha == 0.f ? 0 : k;
  p.alpha = alpha;
  p.beta = beta;
  p.lda = a.ld;
  p.ldb = b_i8 ? b_i8->ld : b.ld;
  p.b_scale = b_i8 ? b_i8->scale : nullptr;
  p.ldc = ldc;
  p.trans_a = a.trans;
  p.trans_b = b.trans;
  p.packed_a = p.k > 0 ? a.packed : nullptr;
  p.packed_b = p.k > 0 ? b.packed : nullptr;
  p.ep = &ep;
  if (b_i8 && p.k > 0 && m <= 4 && !a.packed) return small_m(p, a, b_i8, nullptr, c, ep, ctx);
  if (p.packed_b && m <= 4 && !a.packed && batch.count == 1 && !batch.a_ptrs && !batch.c_ptrs &&
      !batch.residual_ptrs)
    return small_m(p, a, nullptr, p.packed_b, c, ep, ctx);
  const bool column_path = p.k > 0 && !b_i8 && !b.packed && batch.count == 1 && !batch.a_ptrs && !batch.b_ptrs &&
                           !batch.c_ptrs && !batch.residual_ptrs && p.alpha == 1.f && p.beta == 0.f &&
                           ep.bias_kind != GemmBias::kPerColumn;
  // Plain A qualifies when its rows and the column are contiguous.
  if (column_path && n == 1 && (p.packed_a || (!a.trans && (b.trans || b.ld == 1))))
    return single_column(p, a.data, b.data, c, ep, ctx);
  // A few columns past a whole number of vectors (7x7 planes: N = 49 = 3 x 16 + 1; 14x14: 196 =
  // 12 x 16 + 4) would take a whole vector of every tile row (an MR x 1-vector edge tile costs MR
  // FMAs a k step, half a full tile, for 1-4 of 16 columns): the tiles cover the whole vectors and
  // the macro-kernel adds the rest with each A sliver while it is in L1, one pass over the sliver
  // per column (a second pass over a pre-packed A after the tiles read it from L3 again: 30 of
  // 187 us on 400 x 49 x 400). Up to a quarter of a vector: 4 columns on AVX-512, 2 on AVX2.
  const int64_t rest = uk->width > 1 ? n % uk->width : 0;
  if (column_path && n > uk->width && rest > 0 && rest <= uk->width / 4) {
    p.n = n - rest;
    p.extra_columns = static_cast<int>(rest);
  }

  const int threads = ctx.pool ? ctx.pool->num_threads() : 1;
  const int64_t count = batch.count;
  const int64_t vec_bytes = int64_t{4} * uk->width;
  p.stream_c = threads > 1 && p.k > 0 && beta == 0.f && uk->width > 1 && m * n * count * 4 >= kStreamCBytes &&
               (ep.activation == GemmActivation::kNone || ep.activation == GemmActivation::kRelu ||
                ep.activation == GemmActivation::kClip) &&
               !batch.c_ptrs && reinterpret_cast<uintptr_t>(c) % vec_bytes == 0 && ldc % uk->width == 0 &&
               batch.stride_c % uk->width == 0;
  // Batch entries are independent tasks; split each GEMM only when there are too few of them.
  const Split split = choose_split(p, count >= 2 * threads ? 1 : threads, ctx.split_columns);
  const int64_t sm = (m + uk->mr - 1) / uk->mr, sn = (p.n + uk->nr - 1) / uk->nr;
  const int64_t tiles = split.tm * split.tn;

  std::atomic<bool> failed{false};
  auto run_task = [&](int64_t task) {
    const int64_t bi = task / tiles, ti = task % tiles;
    const int64_t tmi = ti / split.tn, tni = ti % split.tn;
    const int64_t m0 = std::min(m, sm * tmi / split.tm * uk->mr), m1 = std::min(m, sm * (tmi + 1) / split.tm * uk->mr);
    const int64_t n0 = std::min(p.n, sn * tni / split.tn * uk->nr);
    const int64_t n1 = std::min(p.n, sn * (tni + 1) / split.tn * uk->nr);
    if (m0 >= m1 || n0 >= n1) return;
    Operands o = operands_for(a, b, c, ep, batch, bi);
    if (b_i8) o.b_i8 = b_i8->data;
    if (!run_block(p, o, m0, m1, n0, n1)) failed.store(true);
  };
  const int64_t tasks = count * tiles;
  core::run_tasks(ctx.pool, tasks, run_task);
  if (failed.load()) return Status(core::StatusCode::kOutOfMemory, "sgemm: cannot allocate packing scratch");
  return Status::ok();
}

}  // namespace

Status sgemm_batched(int64_t m, int64_t n, int64_t k, float alpha, const SgemmA& a, const SgemmB& b, float beta,
                     float* c, int64_t ldc, const SgemmBatch& batch, const GemmEpilogue& ep, const SgemmContext& ctx) {
  return sgemm_impl(m, n, k, alpha, a, b, nullptr, beta, c, ldc, batch, ep, ctx);
}

Status sgemm_b_int8(int64_t m, int64_t n, int64_t k, float alpha, const SgemmA& a, const SgemmBInt8& b, float beta,
                    float* c, int64_t ldc, const GemmEpilogue& ep, const SgemmContext& ctx) {
  return sgemm_impl(m, n, k, alpha, a, SgemmB(nullptr, n), &b, beta, c, ldc, SgemmBatch{}, ep, ctx);
}

}  // namespace kestrel::kernels::cpu

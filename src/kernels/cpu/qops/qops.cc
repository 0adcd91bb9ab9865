// Int8 element-wise and pooling kernels (see qops.h).
#include "kernels/cpu/qops/qops.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/str_util.h"
#include "core/thread_scratch.h"
#include "kernels/cpu/qops/qops_table.h"

namespace kestrel::kernels::cpu {

using core::Status;

namespace qops_detail {

const QopsFns& qops_fns(core::Isa isa) {
  static const QopsFns scalar = qops_fns_scalar(), avx2 = qops_fns_avx2(), avx512 = qops_fns_avx512();
  switch (isa) {
    case core::Isa::kAvx512:
      return avx512;
    case core::Isa::kAvx2:
      return avx2;
    default:
      return scalar;
  }
}

}  // namespace qops_detail

namespace {

constexpr int64_t kGrain = 1 << 14;

void run_ranges(core::ThreadPool* pool, int64_t n, int64_t grain, core::FunctionRef<void(int64_t, int64_t)> fn) {
  if (pool && pool->num_threads() > 1 && n >= 2 * grain)
    pool->parallel_for(n, grain, fn);
  else
    fn(0, n);
}

}  // namespace

Status qbinary_u8(const QBinaryParams& p, const uint8_t* a, std::span<const int64_t> a_dims, const uint8_t* b,
                  std::span<const int64_t> b_dims, uint8_t* y, std::span<const int64_t> y_dims, core::ThreadPool* pool,
                  core::Isa isa) {
  const size_t r = y_dims.size();
  if (r > kQMaxRank || a_dims.size() > r || b_dims.size() > r)
    return core::unsupported(core::str_cat("qbinary: rank above ", kQMaxRank, " or inputs of higher rank than y"));
  if (!(p.y_scale > 0.f) || !std::isfinite(p.a_scale) || !std::isfinite(p.b_scale) || !std::isfinite(p.y_scale))
    return core::invalid_argument("qbinary: scales must be finite and y_scale > 0");
  // Output dims with per-operand element strides (0 where broadcast), then merged runs.
  int64_t dims[kQMaxRank], sa[kQMaxRank], sb[kQMaxRank];
  int64_t acc_a = 1, acc_b = 1, total = 1;
  for (size_t i = r; i-- > 0;) {
    const int64_t d = y_dims[i];
    const size_t off_a = r - a_dims.size(), off_b = r - b_dims.size();
    const int64_t da = i >= off_a ? a_dims[i - off_a] : 1, db = i >= off_b ? b_dims[i - off_b] : 1;
    if ((da != d && da != 1) || (db != d && db != 1) || d < 0)
      return core::invalid_argument("qbinary: input shapes do not broadcast to the output");
    dims[i] = d;
    sa[i] = da == 1 ? 0 : acc_a;
    sb[i] = db == 1 ? 0 : acc_b;
    acc_a *= da;
    acc_b *= db;
    total *= d;
  }
  if (total == 0) return Status::ok();
  // Merge dims i-1 into i where both operands continue contiguously (or stay broadcast).
  int64_t md[kQMaxRank], ma[kQMaxRank], mb[kQMaxRank];
  size_t m = 0;
  for (size_t i = 0; i < r; ++i) {
    if (dims[i] == 1) continue;
    if (m > 0 && ma[m - 1] == sa[i] * dims[i] && mb[m - 1] == sb[i] * dims[i]) {
      md[m - 1] *= dims[i];
      ma[m - 1] = sa[i];
      mb[m - 1] = sb[i];
      continue;
    }
    md[m] = dims[i];
    ma[m] = sa[i];
    mb[m] = sb[i];
    ++m;
  }
  if (m == 0) {
    md[0] = 1;
    ma[0] = mb[0] = 0;
    m = 1;
  }
  const int64_t inner = md[m - 1], ia = ma[m - 1], ib = mb[m - 1];
  const qops_detail::QopsFns& fns = qops_detail::qops_fns(isa);
  const int64_t rows = total / inner;
  // [rows, inner] against one value per row (a per-channel scale or bias on NCHW): whole row
  // ranges per call, no per-row index arithmetic.
  if (m == 2 && ((ia == 1 && ib == 0 && ma[0] == inner && mb[0] == 1) ||
                 (ia == 0 && ib == 1 && ma[0] == 1 && mb[0] == inner))) {
    const bool x_is_a = ia == 1;
    const uint8_t* x = x_is_a ? a : b;
    const uint8_t* v = x_is_a ? b : a;
    run_ranges(pool, rows, std::max<int64_t>(1, kGrain / inner), [&](int64_t r0, int64_t r1) {
      fns.binary_rows(p, x + r0 * inner, v + r0, y + r0 * inner, r1 - r0, inner, x_is_a);
    });
    return Status::ok();
  }
  auto do_rows = [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      int64_t rem = row, oa = 0, ob = 0;
      for (size_t d = m - 1; d-- > 0;) {
        const int64_t idx = rem % md[d];
        rem /= md[d];
        oa += idx * ma[d];
        ob += idx * mb[d];
      }
      fns.binary(p, a + oa, b + ob, y + row * inner, inner, static_cast<int>(ia), static_cast<int>(ib));
    }
  };
  const int64_t grain_rows = std::max<int64_t>(1, kGrain / std::max<int64_t>(inner, 1));
  run_ranges(pool, rows, grain_rows, do_rows);
  return Status::ok();
}

namespace {

void lookup_scalar(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

#if defined(__x86_64__) && defined(__GNUC__)
// The 256-byte table in four registers: vpermi2b picks from two of them by the low 7 bits of
// each byte, the top bit chooses between the two halves. 64 bytes per 3 instructions instead of
// a load per byte. Compiled for AVX-512 VBMI here only; called only when the CPU has it.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void lookup_vbmi(const uint8_t* table, const uint8_t* x,
                                                                        uint8_t* y, int64_t n) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  int64_t i = 0;
  for (; i < n; i += 64) {
    const int64_t left = n - i;
    const __mmask64 m = left >= 64 ? ~__mmask64{0} : (__mmask64{1} << left) - 1;
    const __m512i v = _mm512_maskz_loadu_epi8(m, x + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
    _mm512_mask_storeu_epi8(y + i, m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
  }
}
#endif

}  // namespace

void qlookup_u8(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n, core::ThreadPool* pool, core::Isa isa) {
  void (*fn)(const uint8_t*, const uint8_t*, uint8_t*, int64_t) = lookup_scalar;
#if defined(__x86_64__) && defined(__GNUC__)
  if (isa >= core::Isa::kAvx512 && core::cpu_features().avx512_vbmi) fn = lookup_vbmi;
#else
  (void)isa;
#endif
  run_ranges(pool, n, kGrain, [&](int64_t i0, int64_t i1) { fn(table, x + i0, y + i0, i1 - i0); });
}

void qrequant_table(double xs, int32_t xz, double ys, int32_t yz, int32_t lo, int32_t hi, uint8_t table[256]) {
  lo = std::max(lo, 0);
  hi = std::min(hi, 255);
  for (int v = 0; v < 256; ++v) {
    double q = std::nearbyint((v - xz) * xs / ys) + yz;
    q = std::min<double>(std::max<double>(q, lo), hi);
    table[v] = static_cast<uint8_t>(q);
  }
}

Status qglobal_avg_pool_u8(const uint8_t* x, int64_t nc, int64_t hw, float x_scale, int32_t x_zp, float y_scale,
                           int32_t y_zp, uint8_t* y, core::ThreadPool* pool, core::Isa isa) {
  if (hw <= 0 || hw > (int64_t{1} << 23)) return core::invalid_argument("qglobal_avg_pool: plane size out of range");
  if (!(y_scale > 0.f)) return core::invalid_argument("qglobal_avg_pool: y_scale must be > 0");
  const double k = static_cast<double>(x_scale) / static_cast<double>(y_scale) / static_cast<double>(hw);
  const qops_detail::QopsFns& fns = qops_detail::qops_fns(isa);
  run_ranges(pool, nc, std::max<int64_t>(1, kGrain / hw), [&](int64_t c0, int64_t c1) {
    constexpr int64_t kChunk = 256;
    uint32_t sums[kChunk];
    for (int64_t b = c0; b < c1; b += kChunk) {
      const int64_t n = std::min(kChunk, c1 - b);
      fns.plane_sums(x + b * hw, n, hw, sums);
      for (int64_t c = 0; c < n; ++c) {
        const double f = (static_cast<double>(sums[c]) - static_cast<double>(x_zp) * static_cast<double>(hw)) * k;
        const double q = std::nearbyint(f) + y_zp;
        y[b + c] = static_cast<uint8_t>(std::min(255.0, std::max(0.0, q)));
      }
    }
  });
  return Status::ok();
}

Status qmax_pool_u8(const QMaxPoolShape& s, const uint8_t* x, uint8_t* y, core::ThreadPool* pool, core::Isa isa) {
  if (s.kh < 1 || s.kw < 1 || s.sh < 1 || s.sw < 1 || s.dh < 1 || s.dw < 1 || s.oh < 0 || s.ow < 0 || s.pad_top < 0 ||
      s.pad_left < 0)
    return core::invalid_argument("qmax_pool: bad window");
  if (s.oh == 0 || s.ow == 0 || s.planes == 0) return Status::ok();
  const qops_detail::QopsFns& fns = qops_detail::qops_fns(isa);
  const int64_t plane_in = s.ih * s.iw;
  // The padded row of the horizontal pass, per thread (core/thread_scratch.h).
  static core::ScratchSlot s_row;
  const size_t row_bytes = static_cast<size_t>((s.ow - 1) * s.sw + (s.kw - 1) * s.dw + 1);
  std::atomic<bool> no_memory{false};
  run_ranges(pool, s.planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(plane_in, 1)),
             [&](int64_t p0, int64_t p1) {
               uint8_t* row = s_row.get_as<uint8_t>(row_bytes);
               if (!row) {
                 no_memory.store(true);
                 return;
               }
               fns.maxpool(s, x, y, p0, p1, row);
             });
  if (no_memory.load()) return Status(core::StatusCode::kOutOfMemory, "qmax_pool: cannot allocate the row buffer");
  return Status::ok();
}

void quantize_f32_u8(const float* x, int64_t n, float scale, int32_t zp, uint8_t* y, core::ThreadPool* pool,
                     core::Isa isa) {
  const qops_detail::QopsFns& fns = qops_detail::qops_fns(isa);
  run_ranges(pool, n, kGrain, [&](int64_t i0, int64_t i1) { fns.quantize(x + i0, i1 - i0, scale, zp, y + i0); });
}

void dequantize_u8_f32(const uint8_t* x, int64_t n, float scale, int32_t zp, float* y, core::ThreadPool* pool) {
  run_ranges(pool, n, kGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - zp) * scale;
  });
}

}  // namespace kestrel::kernels::cpu

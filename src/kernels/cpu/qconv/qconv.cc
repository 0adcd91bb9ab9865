// Int8 NCHW convolution driver: weight packing, the choice between the NCHW gemm path and the
// direct depthwise kernel, u8 im2col panels, and the thread split.
#include "kernels/cpu/qconv/qconv.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/str_util.h"
#include "core/thread_scratch.h"

namespace kestrel::kernels::cpu {

namespace qconv_detail {

int64_t qdw_scratch_floats(int64_t oh, int64_t ow, int kh, int kw, int sh, int sw, int dh, int dw) {
  const int64_t ph = (oh - 1) * sh + (kh - 1) * dh + 1;
  const int64_t pw = (ow - 1) * sw + (kw - 1) * dw + 1;
  const int64_t len = (pw + sw - 1) / sw;
  const int64_t flt = std::max(ow, oh * len) + 16 + ph * sw * len + sw * len + 64;  // sums, plane, padded row, slack
  // Integer kernels: two slots of (flat int32 sums, u8 padded plane + 128 bytes slack), 64-byte rounded.
  const int64_t ints = (2 * ((4 * (oh * pw + 16) + 63) / 64 * 64 + (ph * pw + 128 + 63) / 64 * 64) + 3) / 4;
  return std::max(flt, ints);
}

namespace {
bool dw_vnni_usable(core::Isa isa, bool vnni) {
  const auto& f = core::cpu_features();
  return vnni && (isa == core::Isa::kAvx512 ? f.avx512_vnni : f.avx_vnni);
}
}  // namespace

QDwFn qdw_fn(core::Isa isa, bool vnni) {
#if defined(__x86_64__) || defined(_M_X64)
  const bool v = dw_vnni_usable(isa, vnni);
  switch (isa) {
    case core::Isa::kAvx512:
      return v ? qdw_fn_avx512vnni() : qdw_fn_avx512();
    case core::Isa::kAvx2:
      return v ? qdw_fn_avxvnni() : qdw_fn_avx2();
    default:
      break;
  }
#else
  (void)vnni;
#endif
  (void)isa;
  return qdw_fn_scalar();
}

const char* qdw_fn_name(core::Isa isa, bool vnni) {
#if defined(__x86_64__) || defined(_M_X64)
  const bool v = dw_vnni_usable(isa, vnni);
  switch (isa) {
    case core::Isa::kAvx512:
      return v ? "qconv.dw.avx512vnni" : "qconv.dw.avx512";
    case core::Isa::kAvx2:
      return v ? "qconv.dw.avxvnni" : "qconv.dw.avx2";
    default:
      break;
  }
#else
  (void)isa;
  (void)vnni;
#endif
  return "qconv.dw.scalar";
}

}  // namespace qconv_detail

namespace {

using core::Status;

int64_t ceil_div(int64_t a, int64_t d) {  // d > 0, a of any sign
  return a >= 0 ? (a + d - 1) / d : -((-a) / d);
}

// Rows of at most this many bytes are built in one byte loop: three library calls (memset, copy,
// memset) per row of 7-14 bytes made the phase planes cost more than the multiply-adds of
// RegNet's stride-2 grouped convs (400 channels x 15 rows x 2 phases for a 7x7 output). Longer
// rows copy with the library or 16 bytes at a time: the byte loop on rows of 29-30 (28x28 and
// 56x56 inputs) took 2/3 of `BM_QConv/64/64/56/3/2/4` (170 -> 141 us with the vector copy).
constexpr int64_t kShortPhaseRow = 15;

// One channel's phase planes for QcIm2col: rows [0, ph) of the window's reach, padded column q
// of phase j at dst[(j * ph + r) * pws + q] = input (r - pad_top, q * sw + j - pad_left), or the
// zero point outside the input (it then adds 0). x_end: the end of the whole input (vector loads
// may run past a row into the next one, never past x_end).
// Only what the window reads is written: with one kernel row, rows r = oy * sh; phases j that are
// some (kx * dw) % sw (a 1x1 stride-2 conv reads a quarter of its input).
void phase_planes_u8(const uint8_t* x, const uint8_t* x_end, const QConvShape& s, int64_t kh, int64_t kw, int64_t ph,
                     int64_t pws, uint8_t zp, uint8_t* dst) {
  const int64_t sw = s.sw, pl = s.pad_left;
  const int64_t row_step = kh == 1 ? s.sh : 1;
  uint64_t used = 0;  // bit j: some tap reads phase j (phases from 64 on are always written)
  for (int64_t kx = 0; kx < kw; ++kx) used |= uint64_t{1} << ((kx * s.dw) % sw % 64);
  for (int64_t r = 0; r < ph; r += row_step) {
    const int64_t iy = r - s.pad_top;
    for (int64_t j = 0; j < sw; ++j) {
      if (j < 64 && !(used >> j & 1)) continue;
      uint8_t* d = dst + (j * ph + r) * pws;
      if (iy < 0 || iy >= s.ih) {
        std::memset(d, zp, static_cast<size_t>(pws));
        continue;
      }
      if (pws <= kShortPhaseRow) {  // short rows (7x7, 14x14 outputs): one pass, no library calls
        const uint8_t* xr = x + iy * s.iw;
        const int64_t iw = s.iw;
        for (int64_t q = 0, col = j - pl; q < pws; ++q, col += sw) d[q] = col >= 0 && col < iw ? xr[col] : zp;
        continue;
      }
      // q with 0 <= q * sw + j - pl < iw
      const int64_t lo = std::clamp<int64_t>(ceil_div(pl - j, sw), 0, pws);
      const int64_t hi = std::clamp<int64_t>(ceil_div(s.iw + pl - j, sw), lo, pws);
      std::memset(d, zp, static_cast<size_t>(lo));
      const uint8_t* src = x + iy * s.iw + lo * sw + j - pl;
      const int64_t n = hi - lo;
      int64_t q = 0;
      if (sw == 1) {
        std::memcpy(d + lo, src, static_cast<size_t>(n));
        q = n;
      }
#if defined(__SSE2__)
      if (sw == 2) {  // even bytes of 32 at a time (past the row end, but not past the input's)
        const __m128i low = _mm_set1_epi16(0x00ff);
        // The last 16 overlap the ones before (rows of 16-31 bytes: no byte loop for the tail).
        for (; n >= 16 && q < n && src + 2 * std::min(q, n - 16) + 32 <= x_end; q += 16) {
          q = std::min(q, n - 16);
          const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * q));
          const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * q + 16));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(d + lo + q),
                           _mm_packus_epi16(_mm_and_si128(a, low), _mm_and_si128(b, low)));
        }
      }
#endif
      for (; q < n; ++q) d[lo + q] = src[q * sw];
      std::memset(d + hi, zp, static_cast<size_t>(pws - hi));
    }
  }
}

// Per-thread panel scratch of the gemm path: grows to the largest panel, then is reused.
core::ScratchSlot g_panel;     // packed activation panel per thread
core::ScratchSlot g_flat_out;  // flattened-plane GEMM output per thread

core::ScratchSlot g_dw_scratch;  // depthwise plane scratch per thread
core::ScratchSlot g_grouped;     // direct grouped conv planes and outputs per thread

}  // namespace

Status QConv::run_dw_blocks(const QConvShape& s, const uint8_t* x, uint8_t* y, core::ThreadPool* pool) {
  const QConvSpec& sp = spec_;
  constexpr int64_t kB = qconv_detail::kQDwBlockChannels;
  const int kh = static_cast<int>(sp.kh), kw = static_cast<int>(sp.kw), sh = static_cast<int>(s.sh),
            sw = static_cast<int>(s.sw), dh = static_cast<int>(s.dh), dw = static_cast<int>(s.dw);
  const int64_t need = qconv_detail::QDwBlockGeometry(s.oh, s.ow, kh, kw, sh, sw, dh, dw).scratch_floats();
  const int64_t blocks = (sp.m + kB - 1) / kB, taps = sp.kh * sp.kw;
  std::atomic<bool> no_memory{false};
  core::run_tasks(pool, s.n * blocks, [&](int64_t task) {
    float* scratch = g_dw_scratch.get_as<float>(static_cast<size_t>(need));
    if (!scratch) {
      no_memory.store(true);
      return;
    }
    const int64_t n = task / blocks, c0 = task % blocks * kB;
    qconv_detail::QDwBlock b;
    b.x = x + (n * sp.m + c0) * s.ih * s.iw;
    b.ih = s.ih;
    b.iw = s.iw;
    b.oh = s.oh;
    b.ow = s.ow;
    b.kh = kh;
    b.kw = kw;
    b.sh = sh;
    b.sw = sw;
    b.dh = dh;
    b.dw = dw;
    b.pad_top = s.pad_top;
    b.pad_left = s.pad_left;
    b.channels = static_cast<int>(std::min(kB, sp.m - c0));
    b.w = dw_block_w_.data() + c0 * taps;
    b.bias = dw_block_bias_.data() + c0;
    b.scale = dw_block_scale_.data() + c0;
    b.x_zp = sp.x_zp;
    b.y_zp = sp.y_zp;
    b.lo = std::max(sp.out_min, 0);
    b.hi = std::min(sp.out_max, 255);
    b.y = y + (n * sp.m + c0) * s.oh * s.ow;
    b.scratch = scratch;
    dw_block_fn_(b);
  });
  if (no_memory.load()) return Status(core::StatusCode::kOutOfMemory, "qconv: cannot allocate depthwise scratch");
  return Status::ok();
}

core::Result<std::unique_ptr<QConv>> QConv::create(const QConvSpec& spec) {
  if (spec.m < 1 || spec.c_per_group < 1 || spec.kh < 1 || spec.kw < 1 || spec.group < 1 || spec.m % spec.group != 0)
    return core::invalid_argument(core::str_cat("qconv: bad sizes M=", spec.m, " C/group=", spec.c_per_group,
                                                " kernel ", spec.kh, "x", spec.kw, " group ", spec.group));
  if (!spec.w) return core::invalid_argument("qconv: no weights");
  if (spec.out == QOut::kU8 && static_cast<int64_t>(spec.scale.size()) != spec.m)
    return core::invalid_argument(
        core::str_cat("qconv: need ", spec.m, " requantization scales, have ", spec.scale.size()));
  if (!spec.bias.empty() && static_cast<int64_t>(spec.bias.size()) != spec.m)
    return core::invalid_argument(core::str_cat("qconv: bias has ", spec.bias.size(), " values, need ", spec.m));
  if (spec.out == QOut::kU8 &&
      (spec.y_zp < 0 || spec.y_zp > 255 || spec.out_min > spec.out_max || spec.out_max < 0 || spec.out_min > 255))
    return core::invalid_argument("qconv: output zero point or clamp range outside u8");
  const int64_t k = spec.c_per_group * spec.kh * spec.kw;
  if (k > 65536) return core::unsupported(core::str_cat("qconv: K = ", k, " exceeds 65536"));
  auto conv = std::unique_ptr<QConv>(new QConv());
  conv->spec_ = spec;
  conv->spec_.w = nullptr;  // borrowed only during create
  const int64_t mg = spec.m / spec.group;
  conv->depthwise_ =
      spec.c_per_group == 1 && mg == 1 && spec.group > 1 && spec.kh * spec.kw <= qconv_detail::kQDwMaxTaps;
  if (conv->depthwise_) {
    const int64_t taps = spec.kh * spec.kw;
    conv->dw_w_.assign(spec.w, spec.w + spec.m * taps);
    conv->dw_wsum_.assign(static_cast<size_t>(spec.m), 0);
    for (int64_t c = 0; c < spec.m; ++c)
      for (int64_t t = 0; t < taps; ++t) conv->dw_wsum_[static_cast<size_t>(c)] += spec.w[c * taps + t];
    if (spec.kh == spec.kw && (spec.kh == 3 || spec.kh == 5)) {
      // Per kernel row: taps 0..3 and 4.. as little-endian words of s8, missing taps 0.
      const int64_t k = spec.kh;
      conv->dw_wq_.assign(static_cast<size_t>(spec.m * k * 2), 0);
      for (int64_t c = 0; c < spec.m; ++c)
        for (int64_t ky = 0; ky < k; ++ky)
          for (int64_t kx = 0; kx < k; ++kx) {
            const uint32_t b = static_cast<uint8_t>(spec.w[(c * k + ky) * k + kx]);
            uint32_t& word = reinterpret_cast<uint32_t&>(conv->dw_wq_[static_cast<size_t>((c * k + ky) * 2 + kx / 4)]);
            word |= b << (8 * (kx % 4));
          }
    }
#if defined(__x86_64__) || defined(_M_X64)
    if (spec.dw_blocked && spec.isa != core::Isa::kScalar && spec.out == QOut::kU8) {
      constexpr int64_t kB = qconv_detail::kQDwBlockChannels;
      const int64_t blocks = (spec.m + kB - 1) / kB;
      conv->dw_block_w_.assign(static_cast<size_t>(blocks * taps * kB), 0.f);
      conv->dw_block_bias_.assign(static_cast<size_t>(blocks * kB), 0);
      conv->dw_block_scale_.assign(static_cast<size_t>(blocks * kB), 0.f);
      for (int64_t c = 0; c < spec.m; ++c) {
        for (int64_t t = 0; t < taps; ++t)
          conv->dw_block_w_[static_cast<size_t>(((c / kB) * taps + t) * kB + c % kB)] =
              static_cast<float>(spec.w[c * taps + t]);
        conv->dw_block_bias_[static_cast<size_t>(c)] = spec.bias.empty() ? 0 : spec.bias[static_cast<size_t>(c)];
        conv->dw_block_scale_[static_cast<size_t>(c)] = spec.scale[static_cast<size_t>(c)];
      }
      conv->dw_block_fn_ =
          spec.isa == core::Isa::kAvx512 ? qconv_detail::qdw_block_fn_avx512() : qconv_detail::qdw_block_fn_avx2();
    }
#endif
    conv->dw_fn_ = qconv_detail::qdw_fn(spec.isa, spec.dw_vnni);
    conv->impl_name_ = qconv_detail::qdw_fn_name(spec.isa, spec.dw_vnni);
    conv->dw_int_rows_ =
        !conv->dw_wq_.empty() && spec.isa == core::Isa::kAvx512 && qconv_detail::dw_vnni_usable(spec.isa, spec.dw_vnni);
    if (!conv->dw_fn_) {
      conv->dw_fn_ = qconv_detail::qdw_fn_scalar();
      conv->impl_name_ = "qconv.dw.scalar";
    }
    return conv;
  }
  // Weights [M, C/g, kh, kw] are already W[M, K] with K in (c, ky, kx) order, the order of the
  // im2col rows: packed per group into MR-row blocks.
  const QgemmIsa qisa = spec.qgemm_isa ? *spec.qgemm_isa : qgemm_active_isa();
  if (!qgemm_isa_available(qisa))
    return core::unsupported(core::str_cat("qconv: this CPU / build cannot run ", qgemm_isa_name(qisa), " kernels"));
  const qconv_detail::QcTable* t = qconv_detail::qc_table(qisa);
  if (!t) return core::unsupported(core::str_cat("qconv: no ", qgemm_isa_name(qisa), " kernels in this build"));
  conv->qc_ = t;
  const int64_t groups = (k + t->kg - 1) / t->kg;
  conv->w_group_bytes_ = (mg + t->mr - 1) / t->mr * groups * t->mr * 4;
  conv->w_packed_.assign(static_cast<size_t>(conv->w_group_bytes_ * spec.group), 0);
  for (int64_t g = 0; g < spec.group; ++g)
    t->pack_w(spec.w + g * mg * k, mg, k, conv->w_packed_.data() + g * conv->w_group_bytes_);
  // The accumulators start at bias - x_zp * sum_k w (wrapping like the sums themselves), so that
  // the micro-kernel adds raw u8 x s8 products and the result is sum (x - x_zp) * w + bias.
  conv->offset_.resize(static_cast<size_t>(spec.m));
  for (int64_t m = 0; m < spec.m; ++m) {
    int32_t ws = 0;
    for (int64_t i = 0; i < k; ++i) ws += spec.w[m * k + i];
    const uint32_t b = spec.bias.empty() ? 0u : static_cast<uint32_t>(spec.bias[static_cast<size_t>(m)]);
    conv->offset_[static_cast<size_t>(m)] =
        static_cast<int32_t>(b - static_cast<uint32_t>(spec.x_zp) * static_cast<uint32_t>(ws));
  }
#if defined(__x86_64__) || defined(_M_X64)
  // Groups of 16 output channels over channel quads on AVX-512 VNNI: the direct grouped kernel
  // (the GEMM path stays for strides and dilations it does not take).
  if (qisa == QgemmIsa::kAvx512Vnni && spec.group > 1 &&
      qconv_detail::qgrouped_fits(spec.c_per_group, mg, spec.kh, spec.kw)) {
    const int64_t per_group = spec.c_per_group / 4 * spec.kh * spec.kw * qconv_detail::kQgOutChannels;
    conv->grouped_w_.resize(static_cast<size_t>(per_group * spec.group));
    for (int64_t g = 0; g < spec.group; ++g)
      qconv_detail::qgrouped_pack_weights(spec.w + g * mg * k, spec.c_per_group, static_cast<int>(spec.kh),
                                          conv->grouped_w_.data() + g * per_group);
    conv->grouped_fn_ = qconv_detail::qgrouped_fn_avx512vnni();
    conv->impl_name_ = "qconv.grouped.avx512vnni";
    return conv;
  }
#endif
  conv->impl_name_ = qisa == QgemmIsa::kAvx512Vnni ? "qconv.gemm.avx512vnni"
                     : qisa == QgemmIsa::kAvxVnni  ? "qconv.gemm.avxvnni"
                     : qisa == QgemmIsa::kAvx2     ? "qconv.gemm.avx2"
                                                   : "qconv.gemm.scalar";
  return conv;
}

Status QConv::run(const QConvShape& s, const uint8_t* x, void* y, core::ThreadPool* pool) {
  const QConvSpec& sp = spec_;
  if (s.n < 0 || s.c != sp.c_per_group * sp.group || s.ih < 1 || s.iw < 1 || s.oh < 0 || s.ow < 0 || s.sh < 1 ||
      s.sw < 1 || s.dh < 1 || s.dw < 1)
    return core::invalid_argument(core::str_cat("qconv: input with ", s.c, " channels does not fit weights [", sp.m,
                                                ", ", sp.c_per_group, ", ", sp.kh, ", ", sp.kw, "] with group ",
                                                sp.group, " (or bad geometry)"));
  const int64_t p = s.oh * s.ow;
  if (s.n == 0 || p == 0) return Status::ok();
  const size_t esize = sp.out == QOut::kU8 ? 1 : 4;
  if (uses_dw_blocks(s)) return run_dw_blocks(s, x, static_cast<uint8_t*>(y), pool);
  if (depthwise_) {
    const int64_t planes = s.n * sp.m;
    const int64_t need = qconv_detail::qdw_scratch_floats(s.oh, s.ow, static_cast<int>(sp.kh), static_cast<int>(sp.kw),
                                                          static_cast<int>(s.sh), static_cast<int>(s.sw),
                                                          static_cast<int>(s.dh), static_cast<int>(s.dw));
    constexpr int64_t kBatch = qconv_detail::kQDwBatch;
    std::atomic<bool> no_memory{false};
    auto task = [&](int64_t tb) {
      float* scratch = g_dw_scratch.get_as<float>(static_cast<size_t>(need));
      if (!scratch) {
        no_memory.store(true);
        return;
      }
      // The fields all planes share, then per plane what varies (channel c counts up from t0 % M).
      qconv_detail::QDwPlane base;
      base.ih = s.ih;
      base.iw = s.iw;
      base.kh = static_cast<int>(sp.kh);
      base.kw = static_cast<int>(sp.kw);
      base.sh = static_cast<int>(s.sh);
      base.sw = static_cast<int>(s.sw);
      base.dh = static_cast<int>(s.dh);
      base.dw = static_cast<int>(s.dw);
      base.pad_top = s.pad_top;
      base.pad_left = s.pad_left;
      base.oh = s.oh;
      base.ow = s.ow;
      base.x_zp = sp.x_zp;
      base.y_zp = sp.y_zp;
      base.lo = std::max(sp.out_min, 0);
      base.hi = std::min(sp.out_max, 255);
      base.out = sp.out;
      base.scratch = scratch;
      const int64_t taps = sp.kh * sp.kw, t0 = tb * kBatch, count = std::min(kBatch, planes - t0);
      // Uninitialized slots, each copied from base: an array of QDwPlane ran the default member initializers of all
      // kBatch slots before the copies, 20% of a 14x14 plane's time (perf, BM_QConvDw 384 x 14 x 14).
      union Slots {
        Slots() {}
        qconv_detail::QDwPlane p[kBatch];
      } qs;
      static_assert(std::is_trivially_copyable_v<qconv_detail::QDwPlane> &&
                    std::is_trivially_destructible_v<qconv_detail::QDwPlane>);
      for (int64_t i = 0, t = t0, c = t0 % sp.m; i < count; ++i, ++t, c = c + 1 == sp.m ? 0 : c + 1) {
        qconv_detail::QDwPlane& q = *new (&qs.p[i]) qconv_detail::QDwPlane(base);
        q.x = x + t * s.ih * s.iw;
        q.y = static_cast<uint8_t*>(y) + static_cast<size_t>(t * p) * esize;
        q.w = dw_w_.data() + c * taps;
        q.wq = dw_wq_.empty() ? nullptr : dw_wq_.data() + c * sp.kh * 2;
        q.wsum = dw_wsum_[static_cast<size_t>(c)];
        q.bias = sp.bias.empty() ? 0 : sp.bias[static_cast<size_t>(c)];
        q.scale = sp.out == QOut::kU8 ? sp.scale[static_cast<size_t>(c)] : 1.f;
      }
      dw_fn_(qs.p, static_cast<int>(count));
    };
    const int64_t tasks = (planes + kBatch - 1) / kBatch;
    core::run_tasks(pool, tasks, task);
    if (no_memory.load()) return Status(core::StatusCode::kOutOfMemory, "qconv: cannot allocate depthwise scratch");
    return Status::ok();
  }
  if (grouped_fn_ && s.sh == s.sw && (s.sh == 1 || s.sh == 2) && s.dh == 1 && s.dw == 1) {
    const int64_t cg = sp.c_per_group, mg = qconv_detail::kQgOutChannels;
    const int64_t bytes =
        qconv_detail::qgrouped_scratch_bytes(cg, s.oh, s.ow, static_cast<int>(sp.kh), static_cast<int>(s.sh));
    const int64_t per_group = cg / 4 * sp.kh * sp.kw * mg;
    std::atomic<bool> no_memory{false};
    core::run_tasks(pool, s.n * sp.group, [&](int64_t task) {
      uint8_t* scratch = g_grouped.get_as<uint8_t>(static_cast<size_t>(bytes));
      if (!scratch) {
        no_memory.store(true);
        return;
      }
      const int64_t n = task / sp.group, g = task % sp.group;
      qconv_detail::QGroupedPlane q;
      q.x = x + (n * s.c + g * cg) * s.ih * s.iw;
      q.cg = cg;
      q.ih = s.ih;
      q.iw = s.iw;
      q.oh = s.oh;
      q.ow = s.ow;
      q.k = static_cast<int>(sp.kh);
      q.s = static_cast<int>(s.sh);
      q.pad_top = s.pad_top;
      q.pad_left = s.pad_left;
      q.w = grouped_w_.data() + g * per_group;
      q.offset = offset_.data() + g * mg;
      q.scale = sp.out == QOut::kU8 ? sp.scale.data() + g * mg : nullptr;
      q.x_zp = sp.x_zp;
      q.y_zp = sp.y_zp;
      q.lo = std::max(sp.out_min, 0);
      q.hi = std::min(sp.out_max, 255);
      q.out = sp.out;
      q.y = static_cast<uint8_t*>(y) + static_cast<size_t>((n * sp.m + g * mg) * p) * esize;
      q.scratch = scratch;
      grouped_fn_(q);
    });
    if (no_memory.load()) return Status(core::StatusCode::kOutOfMemory, "qconv: cannot allocate grouped conv scratch");
    return Status::ok();
  }
  const qconv_detail::QcTable& t = *qc_;
  const int64_t mg = sp.m / sp.group, cg = sp.c_per_group, k = cg * sp.kh * sp.kw;
  const bool pointwise = sp.kh == 1 && sp.kw == 1 && s.sh == 1 && s.sw == 1 && s.pad_top == 0 && s.pad_left == 0 &&
                         s.oh == s.ih && s.ow == s.iw;
  // Panels of pixels: the packed panel (K x pt bytes) stays within L2 while every MR-row block
  // of weights sweeps it; at least one register tile wide.
  const int64_t groups = (k + t.kg - 1) / t.kg;
  constexpr int64_t kPanelBudget = 64 << 10;
  const int64_t cap = std::max<int64_t>(t.nr, kPanelBudget / (groups * 4) / t.nr * t.nr);
  // Windows read the input through phase planes (QcIm2col); the input itself is one when there
  // is no padding and no stride along the row.
  const int64_t ph = (s.oh - 1) * s.sh + (sp.kh - 1) * s.dh + 1, pw = (s.ow - 1) * s.sw + (sp.kw - 1) * s.dw + 1;
  const bool direct = s.pad_top == 0 && s.pad_left == 0 && s.sw == 1 && ph <= s.ih && pw <= s.iw;
  const int64_t pws = (pw + s.sw - 1) / s.sw;
  const int64_t prow = direct ? s.iw : pws;
  // Small stride-1 planes (7x7, 14x14) are computed over the flattened plane: output (oy, ox) at
  // oy * prow + ox, so each row of K is one contiguous run instead of oh runs of ow bytes (the
  // packing, not the multiply-adds, bounds these convs); the prow - ow extra columns per row are
  // computed into a per-thread buffer and dropped when its rows are copied out.
  const int64_t p_flat = (s.oh - 1) * prow + s.ow;
  const bool flat = !pointwise && s.sh == 1 && s.sw == 1 && s.ow < 16 && s.oh > 1 && p_flat <= cap;
  const int64_t pe = flat ? p_flat : p;  // pixels the GEMM computes
  const int64_t panel_px = std::min(cap, (pe + t.lanes - 1) / t.lanes * t.lanes);
  const int64_t panels = (pe + panel_px - 1) / panel_px;
  const int64_t mblocks = (mg + t.mr - 1) / t.mr;
  // Tasks: (image, group, panel, row range); rows are split only when there are too few panels
  // to keep every thread busy.
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t base = sp.group * panels;
  int64_t msplit = 1;
  const bool parallel =
      threads > 1 && static_cast<double>(p) * static_cast<double>(sp.m) * static_cast<double>(k) * s.n >= 5e5;
  if (parallel && base < 4 * threads) msplit = std::min(mblocks, (4 * threads + base - 1) / base);
  qconv_detail::QcEpilogue ep;
  ep.set(sp.out == QOut::kI32, static_cast<float>(std::max(sp.out_min, 0) - sp.y_zp),
         static_cast<float>(std::min(sp.out_max, 255) - sp.y_zp), sp.y_zp);
  qconv_detail::QcIm2col im;
  im.k = k;
  im.sh = s.sh;
  im.ow = flat ? p_flat : s.ow;  // flat: one "row" of p_flat pixels
  if (!pointwise) {
    int64_t chan_stride, phase_stride;
    if (direct) {
      chan_stride = s.ih * s.iw;
      phase_stride = 0;
      im.prow = s.iw;
    } else {
      phase_stride = ph * pws;
      chan_stride = s.sw * ph * pws;
      im.prow = pws;
      const size_t bytes = static_cast<size_t>(s.c * chan_stride);
      if (planes_.size() < bytes) planes_.resize(bytes);
    }
    // Row (c, ky, kx) of K: tap column kx * dw is phase (kx * dw) % sw, column (kx * dw) / sw.
    if (static_cast<int64_t>(row_off_.size()) < k) row_off_.resize(static_cast<size_t>(k));
    int64_t* ro = row_off_.data();
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t ky = 0; ky < sp.kh; ++ky)
        for (int64_t kx = 0; kx < sp.kw; ++kx) {
          const int64_t xo = kx * s.dw;
          *ro++ = c * chan_stride + (xo % s.sw) * phase_stride + ky * s.dh * im.prow + xo / s.sw;
        }
    im.row_off = row_off_.data();
    plane_chan_stride_ = chan_stride;
  }
  const int64_t tasks = sp.group * panels * msplit;
  const uint8_t* x_end = x + s.n * s.c * s.ih * s.iw;
  std::atomic<bool> no_memory{false};
  for (int64_t n = 0; n < s.n; ++n) {
    const uint8_t* xn = x + n * s.c * s.ih * s.iw;
    if (!pointwise && !direct)
      for (int64_t c = 0; c < s.c; ++c)
        phase_planes_u8(xn + c * s.ih * s.iw, x_end, s, sp.kh, sp.kw, ph, pws, sp.x_zp,
                        planes_.data() + c * plane_chan_stride_);
    auto task = [&](int64_t task_id) {
      const int64_t ms = task_id % msplit, rest = task_id / msplit;
      const int64_t panel = rest % panels, g = rest / panels;
      const int64_t p0 = panel * panel_px, cols = std::min(panel_px, pe - p0);
      const int64_t pt = (cols + t.lanes - 1) / t.lanes * t.lanes;
      const size_t panel_bytes = static_cast<size_t>(groups * pt * 4);
      uint8_t* panel_buf = g_panel.get_as<uint8_t>(panel_bytes);
      if (!panel_buf) {
        no_memory.store(true);
        return;
      }
      if (pointwise) {
        t.pack_x(xn + g * cg * p + p0, p, k, cols, pt, panel_buf);
      } else {
        qconv_detail::QcIm2col a = im;
        a.src = (direct ? xn : planes_.data()) + g * cg * plane_chan_stride_;
        t.pack_im2col(a, p0, cols, pt, panel_buf);
      }
      qconv_detail::QcPanel q;
      q.w = w_packed_.data() + g * w_group_bytes_;
      q.m0 = std::min(mg, mblocks * ms / msplit * t.mr);
      q.m1 = std::min(mg, mblocks * (ms + 1) / msplit * t.mr);
      q.groups = groups;
      q.x = panel_buf;
      q.pt = pt;
      q.cols = cols;
      q.offset = offset_.data() + g * mg;
      q.scale = sp.out == QOut::kU8 ? sp.scale.data() + g * mg : nullptr;
      q.ep = &ep;
      uint8_t* yg = static_cast<uint8_t*>(y) + static_cast<size_t>((n * sp.m + g * mg) * p) * esize;
      if (flat) {  // one panel: rows of p_flat pixels into the buffer, then rows of ow to y
        uint8_t* buf = g_flat_out.get_as<uint8_t>(static_cast<size_t>(mg * p_flat) * esize);
        if (!buf) {
          no_memory.store(true);
          return;
        }
        q.y = buf;
        q.ldy = p_flat;
        if (q.m0 < q.m1) t.run(q);
        // Rows of at most 15 elements: plain loops (a libc memcpy call per row cost more).
        const int64_t oh = s.oh, ow = s.ow;
        if (esize == 1) {
          for (int64_t m = q.m0; m < q.m1; ++m)
            for (int64_t oy = 0; oy < oh; ++oy) {
              uint8_t* d = yg + m * p + oy * ow;
              const uint8_t* src = buf + m * p_flat + oy * prow;
              for (int64_t i = 0; i < ow; ++i) d[i] = src[i];
            }
        } else {
          for (int64_t m = q.m0; m < q.m1; ++m)
            for (int64_t oy = 0; oy < oh; ++oy) {
              int32_t* d = reinterpret_cast<int32_t*>(yg) + m * p + oy * ow;
              const int32_t* src = reinterpret_cast<const int32_t*>(buf) + m * p_flat + oy * prow;
              for (int64_t i = 0; i < ow; ++i) d[i] = src[i];
            }
        }
        return;
      }
      q.y = yg + static_cast<size_t>(p0) * esize;
      q.ldy = p;
      if (q.m0 < q.m1) t.run(q);
    };
    if (parallel && tasks > 1) {
      pool->run(tasks, task);
    } else {
      for (int64_t i = 0; i < tasks; ++i) task(i);
    }
    if (no_memory.load()) return Status(core::StatusCode::kOutOfMemory, "qconv: cannot allocate the packed panel");
  }
  return Status::ok();
}

}  // namespace kestrel::kernels::cpu

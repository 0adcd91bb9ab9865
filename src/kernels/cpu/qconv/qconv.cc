// Int8 NCHW convolution driver: weight packing, the choice between the qgemm path and the direct
// depthwise kernel, u8 im2col / transpose into [pixels, K] patches, and the thread split.
#include "kernels/cpu/qconv/qconv.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/str_util.h"

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

#if defined(__SSE2__)
// Transposes one 16 x 16 byte block (rows of src at src_ld, rows of dst at dst_ld) in registers:
// four rounds of interleaving 8-, 16-, 32- and 64-bit lanes.
inline void transpose16x16_u8(const uint8_t* src, int64_t src_ld, uint8_t* dst, int64_t dst_ld) {
  __m128i r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * src_ld));
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) {
      r[4 * i + j] = _mm_unpacklo_epi16(t[4 * i + j], t[4 * i + j + 2]);
      r[4 * i + j + 2] = _mm_unpackhi_epi16(t[4 * i + j], t[4 * i + j + 2]);
    }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      t[8 * i + j] = _mm_unpacklo_epi32(r[8 * i + j], r[8 * i + j + 4]);
      t[8 * i + j + 4] = _mm_unpackhi_epi32(r[8 * i + j], r[8 * i + j + 4]);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm_unpacklo_epi64(t[j], t[j + 8]);
    r[j + 8] = _mm_unpackhi_epi64(t[j], t[j + 8]);
  }
  // After the rounds, register k holds source column c(k): undo the interleaving order.
  static constexpr int kCol[16] = {0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15};
  for (int k = 0; k < 16; ++k) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + kCol[k] * dst_ld), r[k]);
}
#endif

// [rows, cols] (row stride src_ld) -> [cols, rows] (row stride dst_ld): the NCHW -> HWC
// transposition behind both gemm paths. Whole 16 x 16 blocks in SSE2 registers, edges scalar.
void transpose_u8(const uint8_t* src, int64_t rows, int64_t cols, int64_t src_ld, uint8_t* dst, int64_t dst_ld) {
  int64_t i0 = 0;
#if defined(__SSE2__)
  for (; i0 + 16 <= rows; i0 += 16) {
    int64_t j0 = 0;
    for (; j0 + 16 <= cols; j0 += 16) transpose16x16_u8(src + i0 * src_ld + j0, src_ld, dst + j0 * dst_ld + i0, dst_ld);
    for (int64_t j = j0; j < cols; ++j)
      for (int64_t i = i0; i < i0 + 16; ++i) dst[j * dst_ld + i] = src[i * src_ld + j];
  }
#endif
  for (int64_t j0 = 0; j0 < cols; j0 += 16) {
    const int64_t j1 = std::min(cols, j0 + 16);
    for (int64_t j = j0; j < j1; ++j) {
      uint8_t* d = dst + j * dst_ld;
      for (int64_t i = i0; i < rows; ++i) d[i] = src[i * src_ld + j];
    }
  }
}

// The padded HWC copy of one group of one image: rows [0, ph) x columns [0, pw) of the window's
// reach, input (r - pad_top, q - pad_left) or the zero point in the padding (which then adds 0).
void pad_hwc_u8(const uint8_t* x, int64_t cg, const QConvShape& s, int64_t ph, int64_t pw, uint8_t zp, uint8_t* hwc) {
  const int64_t ih = s.ih, iw = s.iw, pt = s.pad_top, pl = s.pad_left;
  const int64_t q0 = std::min(pl, pw), q1 = std::max(q0, std::min(pw, pl + iw));
  for (int64_t r = 0; r < ph; ++r) {
    uint8_t* row = hwc + r * pw * cg;
    const int64_t iy = r - pt;
    if (iy < 0 || iy >= ih) {
      std::memset(row, zp, static_cast<size_t>(pw * cg));
      continue;
    }
    std::memset(row, zp, static_cast<size_t>(q0 * cg));
    transpose_u8(x + iy * iw + (q0 - pl), cg, q1 - q0, ih * iw, row + q0 * cg, cg);
    std::memset(row + q1 * cg, zp, static_cast<size_t>((pw - q1) * cg));
  }
}

// Patches [pixels, kh * kw * cg] in (ky, kx, c) order from the padded HWC image: one contiguous
// run of kw * cg bytes per (pixel, ky) when the dilation is 1.
void patches_u8(const uint8_t* hwc, int64_t cg, const QConvShape& s, int64_t kh, int64_t kw, int64_t pw, uint8_t* col) {
  const int64_t k = kh * kw * cg, oh = s.oh, ow = s.ow, sh = s.sh, sw = s.sw, dh = s.dh, dw = s.dw;
  const size_t run = static_cast<size_t>(kw * cg), one = static_cast<size_t>(cg);
  for (int64_t oy = 0; oy < oh; ++oy)
    for (int64_t ox = 0; ox < ow; ++ox) {
      uint8_t* dst = col + (oy * ow + ox) * k;
      for (int64_t ky = 0; ky < kh; ++ky) {
        const uint8_t* src = hwc + ((oy * sh + ky * dh) * pw + ox * sw) * cg;
        if (dw == 1) {
          std::memcpy(dst, src, run);
          dst += run;
        } else {
          for (int64_t kx = 0; kx < kw; ++kx, dst += cg) std::memcpy(dst, src + kx * dw * cg, one);
        }
      }
    }
}

thread_local std::vector<float> t_dw_scratch;

}  // namespace

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
    conv->dw_fn_ = qconv_detail::qdw_fn(spec.isa, spec.dw_vnni);
    conv->impl_name_ = qconv_detail::qdw_fn_name(spec.isa, spec.dw_vnni);
    if (!conv->dw_fn_) {
      conv->dw_fn_ = qconv_detail::qdw_fn_scalar();
      conv->impl_name_ = "qconv.dw.scalar";
    }
    return conv;
  }
  // Weights [M, C/g, kh, kw] -> [M, kh, kw, C/g]: the (ky, kx, c) order of the HWC patches.
  const int64_t taps = spec.kh * spec.kw;
  std::vector<int8_t> w_hwc(static_cast<size_t>(spec.m * k));
  for (int64_t m = 0; m < spec.m; ++m)
    for (int64_t c = 0; c < spec.c_per_group; ++c)
      for (int64_t t = 0; t < taps; ++t)
        w_hwc[static_cast<size_t>((m * taps + t) * spec.c_per_group + c)] =
            spec.w[(m * spec.c_per_group + c) * taps + t];
  for (int64_t g = 0; g < spec.group; ++g) {
    KESTREL_ASSIGN_OR_RETURN(PackedBS8 p, pack_b_s8(k, mg, w_hwc.data() + g * mg * k, k, true, spec.qgemm_isa));
    conv->packed_.push_back(std::move(p));
  }
  switch (conv->packed_[0].isa()) {
    case QgemmIsa::kAvx512Vnni:
      conv->impl_name_ = "qconv.gemm.avx512vnni";
      break;
    case QgemmIsa::kAvxVnni:
      conv->impl_name_ = "qconv.gemm.avxvnni";
      break;
    case QgemmIsa::kAvx2:
      conv->impl_name_ = "qconv.gemm.avx2";
      break;
    default:
      conv->impl_name_ = "qconv.gemm.scalar";
  }
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
  if (depthwise_) {
    const int64_t planes = s.n * sp.m;
    const int64_t need = qconv_detail::qdw_scratch_floats(s.oh, s.ow, static_cast<int>(sp.kh), static_cast<int>(sp.kw),
                                                          static_cast<int>(s.sh), static_cast<int>(s.sw),
                                                          static_cast<int>(s.dh), static_cast<int>(s.dw));
    constexpr int64_t kBatch = qconv_detail::kQDwBatch;
    auto task = [&](int64_t tb) {
      if (static_cast<int64_t>(t_dw_scratch.size()) < need) t_dw_scratch.resize(static_cast<size_t>(need));
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
      base.scratch = t_dw_scratch.data();
      const int64_t taps = sp.kh * sp.kw, t0 = tb * kBatch, count = std::min(kBatch, planes - t0);
      qconv_detail::QDwPlane qs[kBatch];
      for (int64_t i = 0, t = t0, c = t0 % sp.m; i < count; ++i, ++t, c = c + 1 == sp.m ? 0 : c + 1) {
        qconv_detail::QDwPlane& q = qs[i];
        q = base;
        q.x = x + t * s.ih * s.iw;
        q.y = static_cast<uint8_t*>(y) + static_cast<size_t>(t * p) * esize;
        q.w = dw_w_.data() + c * taps;
        q.wq = dw_wq_.empty() ? nullptr : dw_wq_.data() + c * sp.kh * 2;
        q.wsum = dw_wsum_[static_cast<size_t>(c)];
        q.bias = sp.bias.empty() ? 0 : sp.bias[static_cast<size_t>(c)];
        q.scale = sp.out == QOut::kU8 ? sp.scale[static_cast<size_t>(c)] : 1.f;
      }
      dw_fn_(qs, static_cast<int>(count));
    };
    const int64_t tasks = (planes + kBatch - 1) / kBatch;
    if (pool && pool->num_threads() > 1 && tasks > 1)
      pool->run(tasks, task);
    else
      for (int64_t t = 0; t < tasks; ++t) task(t);
    return Status::ok();
  }
  const int64_t mg = sp.m / sp.group, cg = sp.c_per_group, k = cg * sp.kh * sp.kw;
  const bool pointwise = sp.kh == 1 && sp.kw == 1 && s.sh == 1 && s.sw == 1 && s.pad_top == 0 && s.pad_left == 0 &&
                         s.oh == s.ih && s.ow == s.iw;
  const int64_t ph = (s.oh - 1) * s.sh + (sp.kh - 1) * s.dh + 1, pw = (s.ow - 1) * s.sw + (sp.kw - 1) * s.dw + 1;
  const size_t col_bytes = static_cast<size_t>(p * k), hwc_bytes = pointwise ? 0 : static_cast<size_t>(ph * pw * cg);
  if (col_.size() < col_bytes) col_.resize(col_bytes);
  if (hwc_.size() < hwc_bytes) hwc_.resize(hwc_bytes);
  QgemmEpilogue ep;
  ep.transpose_c = true;
  ep.per_column = true;
  if (sp.out == QOut::kU8) {
    ep.output = QgemmOutput::kU8;
    ep.requant = QgemmRequant::kFloat;
    ep.out_zero_point = sp.y_zp;
    ep.out_min = sp.out_min;
    ep.out_max = sp.out_max;
  } else {
    ep.output = QgemmOutput::kInt32;
  }
  QgemmContext ctx{pool};
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t g = 0; g < sp.group; ++g) {
      const uint8_t* xg = x + (n * s.c + g * cg) * s.ih * s.iw;
      if (pointwise) {
        transpose_u8(xg, cg, p, p, col_.data(), cg);
      } else {
        pad_hwc_u8(xg, cg, s, ph, pw, sp.x_zp, hwc_.data());
        patches_u8(hwc_.data(), cg, s, sp.kh, sp.kw, pw, col_.data());
      }
      ep.bias = sp.bias.empty() ? nullptr : sp.bias.data() + g * mg;
      ep.scale = sp.out == QOut::kU8 ? sp.scale.data() + g * mg : nullptr;
      void* yg = static_cast<uint8_t*>(y) + static_cast<size_t>((n * sp.m + g * mg) * p) * esize;
      KESTREL_RETURN_IF_ERROR(
          qgemm_u8s8(p, mg, k, col_.data(), k, sp.x_zp, packed_[static_cast<size_t>(g)], yg, p, ep, ctx));
    }
  }
  return Status::ok();
}

}  // namespace kestrel::kernels::cpu

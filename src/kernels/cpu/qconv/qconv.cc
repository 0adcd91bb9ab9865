// Int8 NCHW convolution driver: weight packing, the choice between the qgemm path and the direct
// depthwise kernel, u8 im2col / transpose into [pixels, K] patches, and the thread split.
#include "kernels/cpu/qconv/qconv.h"

#include <algorithm>
#include <cstring>

#include "core/str_util.h"

namespace kestrel::kernels::cpu {

namespace qconv_detail {

int64_t qdw_scratch_floats(int64_t oh, int64_t ow, int kh, int kw, int sh, int sw, int dh, int dw) {
  const int64_t ph = (oh - 1) * sh + (kh - 1) * dh + 1;
  const int64_t pw = (ow - 1) * sw + (kw - 1) * dw + 1;
  const int64_t len = (pw + sw - 1) / sw;
  return ph * sw * len + ow + 16;
}

QDwFn qdw_fn(core::Isa isa) {
  switch (isa) {
    case core::Isa::kAvx512:
      return qdw_fn_avx512();
    case core::Isa::kAvx2:
      return qdw_fn_avx2();
    default:
      return qdw_fn_scalar();
  }
}

}  // namespace qconv_detail

namespace {

using core::Status;

// [C, P] -> [P, C], in 16 x 16 blocks (the 1x1 convolution's A operand).
void transpose_u8(const uint8_t* src, int64_t c, int64_t p, uint8_t* dst) {
  constexpr int64_t kB = 16;
  for (int64_t p0 = 0; p0 < p; p0 += kB) {
    const int64_t p1 = std::min(p, p0 + kB);
    for (int64_t c0 = 0; c0 < c; c0 += kB) {
      const int64_t c1 = std::min(c, c0 + kB);
      for (int64_t i = p0; i < p1; ++i)
        for (int64_t j = c0; j < c1; ++j) dst[i * c + j] = src[j * p + i];
    }
  }
}

// Patches of one group of one image: row (oy, ox) holds, for (c, ky, kx), the input the tap
// reads, or the zero point in the padding (so that it contributes 0 after the zp correction).
void im2col_u8(const uint8_t* x, int64_t cg, const QConvShape& s, int64_t kh, int64_t kw, uint8_t zp, uint8_t* col) {
  const int64_t k = cg * kh * kw;
  for (int64_t oy = 0; oy < s.oh; ++oy) {
    const int64_t iy0 = oy * s.sh - s.pad_top;
    for (int64_t ox = 0; ox < s.ow; ++ox) {
      uint8_t* dst = col + (oy * s.ow + ox) * k;
      const int64_t ix0 = ox * s.sw - s.pad_left;
      const bool inside_x = ix0 >= 0 && ix0 + (kw - 1) * s.dw < s.iw;
      for (int64_t c = 0; c < cg; ++c) {
        const uint8_t* plane = x + c * s.ih * s.iw;
        for (int64_t ky = 0; ky < kh; ++ky, dst += kw) {
          const int64_t iy = iy0 + ky * s.dh;
          if (iy < 0 || iy >= s.ih) {
            std::memset(dst, zp, static_cast<size_t>(kw));
            continue;
          }
          const uint8_t* row = plane + iy * s.iw;
          if (inside_x) {
            for (int64_t kx = 0; kx < kw; ++kx) dst[kx] = row[ix0 + kx * s.dw];
          } else {
            for (int64_t kx = 0; kx < kw; ++kx) {
              const int64_t ix = ix0 + kx * s.dw;
              dst[kx] = ix >= 0 && ix < s.iw ? row[ix] : zp;
            }
          }
        }
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
    return core::invalid_argument(core::str_cat("qconv: need ", spec.m, " requantization scales, have ",
                                                spec.scale.size()));
  if (!spec.bias.empty() && static_cast<int64_t>(spec.bias.size()) != spec.m)
    return core::invalid_argument(core::str_cat("qconv: bias has ", spec.bias.size(), " values, need ", spec.m));
  if (spec.out == QOut::kU8 && (spec.y_zp < 0 || spec.y_zp > 255 || spec.out_min > spec.out_max ||
                                spec.out_max < 0 || spec.out_min > 255))
    return core::invalid_argument("qconv: output zero point or clamp range outside u8");
  const int64_t k = spec.c_per_group * spec.kh * spec.kw;
  if (k > 65536) return core::unsupported(core::str_cat("qconv: K = ", k, " exceeds 65536"));
  auto conv = std::unique_ptr<QConv>(new QConv());
  conv->spec_ = spec;
  conv->spec_.w = nullptr;  // borrowed only during create
  const int64_t mg = spec.m / spec.group;
  conv->depthwise_ = spec.c_per_group == 1 && mg == 1 && spec.group > 1 && spec.kh * spec.kw <= qconv_detail::kQDwMaxTaps;
  if (conv->depthwise_) {
    conv->dw_w_.assign(spec.w, spec.w + spec.m * spec.kh * spec.kw);
    conv->dw_fn_ = qconv_detail::qdw_fn(spec.isa);
    if (!conv->dw_fn_) conv->dw_fn_ = qconv_detail::qdw_fn_scalar();
    conv->impl_name_ = spec.isa == core::Isa::kAvx512 ? "qconv.dw.avx512"
                       : spec.isa == core::Isa::kAvx2 ? "qconv.dw.avx2"
                                                      : "qconv.dw.scalar";
    return conv;
  }
  for (int64_t g = 0; g < spec.group; ++g) {
    KESTREL_ASSIGN_OR_RETURN(PackedBS8 p, pack_b_s8(k, mg, spec.w + g * mg * k, k, true, spec.qgemm_isa));
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
    auto task = [&](int64_t t) {
      if (static_cast<int64_t>(t_dw_scratch.size()) < need) t_dw_scratch.resize(static_cast<size_t>(need));
      const int64_t c = t % sp.m;
      qconv_detail::QDwPlane q;
      q.x = x + t * s.ih * s.iw;
      q.ih = s.ih;
      q.iw = s.iw;
      q.w = dw_w_.data() + c * sp.kh * sp.kw;
      q.kh = static_cast<int>(sp.kh);
      q.kw = static_cast<int>(sp.kw);
      q.sh = static_cast<int>(s.sh);
      q.sw = static_cast<int>(s.sw);
      q.dh = static_cast<int>(s.dh);
      q.dw = static_cast<int>(s.dw);
      q.pad_top = s.pad_top;
      q.pad_left = s.pad_left;
      q.oh = s.oh;
      q.ow = s.ow;
      q.x_zp = sp.x_zp;
      q.bias = sp.bias.empty() ? 0 : sp.bias[static_cast<size_t>(c)];
      q.scale = sp.out == QOut::kU8 ? sp.scale[static_cast<size_t>(c)] : 1.f;
      q.y_zp = sp.y_zp;
      q.lo = std::max(sp.out_min, 0);
      q.hi = std::min(sp.out_max, 255);
      q.out = sp.out;
      q.y = static_cast<uint8_t*>(y) + static_cast<size_t>(t * p) * esize;
      q.scratch = t_dw_scratch.data();
      dw_fn_(q);
    };
    if (pool && pool->num_threads() > 1 && planes > 1)
      pool->run(planes, task);
    else
      for (int64_t t = 0; t < planes; ++t) task(t);
    return Status::ok();
  }
  const int64_t mg = sp.m / sp.group, cg = sp.c_per_group, k = cg * sp.kh * sp.kw;
  const bool pointwise = sp.kh == 1 && sp.kw == 1 && s.sh == 1 && s.sw == 1 && s.pad_top == 0 && s.pad_left == 0 &&
                         s.oh == s.ih && s.ow == s.iw;
  const size_t col_bytes = static_cast<size_t>(p * k);
  if (col_.size() < col_bytes) col_.resize(col_bytes);
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
      if (pointwise)
        transpose_u8(xg, cg, p, col_.data());
      else
        im2col_u8(xg, cg, s, sp.kh, sp.kw, sp.x_zp, col_.data());
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

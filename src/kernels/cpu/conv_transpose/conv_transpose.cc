// Fast ConvTranspose: packed W^T x X GEMMs in chunks of input rows, col2im over output channels.
#include "kernels/cpu/conv_transpose/conv_transpose.h"

#include <algorithm>

#include "core/str_util.h"

namespace kestrel::kernels::cpu {

using core::str_cat;

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}
int64_t ceil_div(int64_t a, int64_t b) {
  return -floor_div(-a, b);
}

// The col buffer holds at most this many floats per chunk of input rows (at least one row).
constexpr int64_t kMaxColFloats = int64_t{1} << 21;

}  // namespace

Result<FastConvTranspose> FastConvTranspose::create(const Tensor& w, int64_t group, core::Isa isa) {
  if (w.dtype() != core::DType::kF32 || (w.rank() != 3 && w.rank() != 4) || group < 1 || w.dim(0) % group != 0)
    return core::invalid_argument(str_cat("FastConvTranspose: weights ", w.type_string(), " with group ", group));
  FastConvTranspose k;
  k.isa_ = isa;
  k.rank_ = w.rank();
  k.c_ = w.dim(0);
  k.mg_ = w.dim(1);
  k.kh_ = w.rank() == 4 ? w.dim(2) : 1;
  k.kw_ = w.dim(-1);
  k.group_ = group;
  const int64_t cg = k.c_ / group, rows = k.mg_ * k.kh_ * k.kw_;
  for (int64_t g = 0; g < group; ++g) {
    // W_g is [Cg, Mg*KH*KW] row-major; A = W_g^T.
    KESTREL_ASSIGN_OR_RETURN(PackedA a, pack_a(rows, cg, w.data<float>() + g * cg * rows, rows, true, isa));
    k.packed_.push_back(std::move(a));
  }
  return k;
}

const char* FastConvTranspose::name() const {
  switch (isa_) {
    case core::Isa::kScalar:
      return "conv_transpose.scalar";
    case core::Isa::kAvx2:
      return "conv_transpose.avx2";
    case core::Isa::kAvx512:
      return "conv_transpose.avx512";
  }
  return "conv_transpose";
}

Status FastConvTranspose::run(const ref::ConvParams& p, const Tensor& x, const Tensor* bias, Tensor& y,
                              core::ThreadPool* pool) {
  const size_t spatial = static_cast<size_t>(rank_ - 2);
  if (x.dtype() != core::DType::kF32 || y.dtype() != core::DType::kF32 || x.rank() != rank_ || y.rank() != rank_ ||
      x.dim(1) != c_ || y.dim(0) != x.dim(0) || y.dim(1) != mg_ * group_ || p.strides.size() != spatial ||
      p.dilations.size() != spatial || p.pads_begin.size() != spatial || p.group != group_)
    return core::invalid_argument(
        str_cat("FastConvTranspose: X ", x.type_string(), " -> Y ", y.type_string(), " does not fit the weights"));
  if (bias && (bias->dtype() != core::DType::kF32 || bias->num_elements() != mg_ * group_))
    return core::invalid_argument(
        str_cat("FastConvTranspose: bias ", bias->type_string(), " must have ", mg_ * group_, " elements"));
  const bool two_d = rank_ == 4;
  const int64_t n_img = x.dim(0), h = two_d ? x.dim(2) : 1, w = x.dim(-1);
  const int64_t oh = two_d ? y.dim(2) : 1, ow = y.dim(-1);
  const int64_t sh = two_d ? p.strides[0] : 1, sw = p.strides[spatial - 1];
  const int64_t dh = two_d ? p.dilations[0] : 1, dw = p.dilations[spatial - 1];
  const int64_t ph = two_d ? p.pads_begin[0] : 0, pw = p.pads_begin[spatial - 1];
  for (int64_t v : {sh, sw, dh, dw})
    if (v < 1) return core::invalid_argument("FastConvTranspose: strides and dilations must be >= 1");
  const int64_t m = mg_ * group_, cg = c_ / group_, taps = kh_ * kw_, rows = mg_ * taps;
  const int64_t plane = oh * ow, in_plane = h * w;
  if (y.num_elements() == 0) return Status::ok();

  // y starts as the bias; positions no tap reaches keep it.
  float* yd = y.data<float>();
  const float* bd = bias ? bias->data<float>() : nullptr;
  core::parallel_for(pool, n_img * m, std::max<int64_t>(1, 65536 / std::max<int64_t>(plane, 1)),
                     [&](int64_t b0, int64_t b1) {
                       for (int64_t i = b0; i < b1; ++i) std::fill_n(yd + i * plane, plane, bd ? bd[i % m] : 0.f);
                     });
  if (in_plane == 0 || cg == 0) return Status::ok();

  // Input rows per chunk: the col buffer stays bounded for large planes.
  const int64_t chunk_rows = std::clamp<int64_t>(kMaxColFloats / std::max<int64_t>(rows * w, 1), 1, h);
  const size_t need = static_cast<size_t>(rows * chunk_rows * w);
  if (need > col_floats_) {
    KESTREL_ASSIGN_OR_RETURN(col_, core::allocate_arena(need * sizeof(float)));
    col_floats_ = need;
  }
  float* col = static_cast<float*>(col_.get());
  const SgemmContext ctx{pool, isa_};
  const float* xd = x.data<float>();
  for (int64_t n = 0; n < n_img; ++n) {
    for (int64_t g = 0; g < group_; ++g) {
      for (int64_t h0 = 0; h0 < h; h0 += chunk_rows) {
        const int64_t hc = std::min(chunk_rows, h - h0), cols = hc * w;
        const float* xb = xd + (n * c_ + g * cg) * in_plane + h0 * w;
        KESTREL_RETURN_IF_ERROR(sgemm(rows, cols, cg, 1.f, SgemmA(packed_[static_cast<size_t>(g)]),
                                      SgemmB(xb, in_plane), 0.f, col, cols, {}, ctx));
        // col2im: each output channel's plane is written by one task only.
        core::parallel_for(pool, mg_, std::max<int64_t>(1, 16384 / std::max<int64_t>(taps * cols, 1)),
                           [&](int64_t m0, int64_t m1) {
                             for (int64_t mi = m0; mi < m1; ++mi) {
                               float* yp = yd + (n * m + g * mg_ + mi) * plane;
                               for (int64_t ki = 0; ki < kh_; ++ki) {
                                 for (int64_t kj = 0; kj < kw_; ++kj) {
                                   const float* crow = col + ((mi * kh_ + ki) * kw_ + kj) * cols;
                                   const int64_t off_w = kj * dw - pw;  // ow = iw * sw + off_w
                                   const int64_t iw0 = std::max<int64_t>(0, ceil_div(-off_w, sw));
                                   const int64_t iw1 = std::min<int64_t>(w - 1, floor_div(ow - 1 - off_w, sw));
                                   if (iw0 > iw1) continue;
                                   for (int64_t ih = h0; ih < h0 + hc; ++ih) {
                                     const int64_t orow = ih * sh - ph + ki * dh;
                                     if (orow < 0 || orow >= oh) continue;
                                     const float* src = crow + (ih - h0) * w + iw0;
                                     float* dst = yp + orow * ow + iw0 * sw + off_w;
                                     const int64_t cnt = iw1 - iw0 + 1;
                                     if (sw == 1) {
                                       for (int64_t j = 0; j < cnt; ++j) dst[j] += src[j];
                                     } else {
                                       for (int64_t j = 0; j < cnt; ++j) dst[j * sw] += src[j];
                                     }
                                   }
                                 }
                               }
                             }
                           });
      }
    }
  }
  return Status::ok();
}

}  // namespace kestrel::kernels::cpu

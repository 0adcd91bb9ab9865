// Reference fused Conv / Gemm / MatMul: the plain kernel, then the epilogue; FusedPointwiseDepthwise:
// two or three of those.
#include "kernels/reference/fused.h"

#include <algorithm>
#include <string>

#include "core/str_util.h"
#include "kernels/reference/elementwise.h"
#include "kernels/reference/float_types.h"

namespace kestrel::kernels::ref {

using core::str_cat;

namespace {

template <class F>
F activation_impl(const ActivationParams& a, F x) {
  UnaryParams u;
  u.alpha = a.alpha;
  u.beta = a.beta;
  switch (a.kind) {
    case Activation::kNone:
      return x;
    case Activation::kClip:
      return std::min(std::max(x, static_cast<F>(a.alpha)), static_cast<F>(a.beta));
    case Activation::kRelu:
      u.op = UnaryOp::kRelu;
      break;
    case Activation::kLeakyRelu:
      u.op = UnaryOp::kLeakyRelu;
      break;
    case Activation::kSigmoid:
      u.op = UnaryOp::kSigmoid;
      break;
    case Activation::kHardSigmoid:
      u.op = UnaryOp::kHardSigmoid;
      break;
    case Activation::kHardSwish:
      u.op = UnaryOp::kHardSwish;
      break;
    case Activation::kSilu:
      u.op = UnaryOp::kSilu;
      break;
    case Activation::kGelu:
      u.op = UnaryOp::kGeluErf;
      break;
    case Activation::kGeluTanh:
      u.op = UnaryOp::kGeluTanh;
      break;
    case Activation::kTanh:
      u.op = UnaryOp::kTanh;
      break;
  }
  return unary_scalar(u, x);
}

}  // namespace

float activation_scalar(const ActivationParams& a, float x) {
  return activation_impl(a, x);
}
double activation_scalar(const ActivationParams& a, double x) {
  return activation_impl(a, x);
}

namespace {

// y = act(y + bias[column] + z), the bias (optional) running along y's last dim.
Status epilogue(const ActivationParams& act, const Tensor* bias, const Tensor* z, Tensor& y) {
  if (z && (z->dtype() != y.dtype() || z->dims() != y.dims()))
    return core::invalid_argument(
        str_cat("residual ", z->type_string(), " must have the output's type ", y.type_string()));
  const int64_t cols = y.rank() > 0 ? y.dim(-1) : 1;
  if (bias && (bias->dtype() != y.dtype() || bias->rank() != 1 || bias->dim(0) != cols))
    return core::invalid_argument(
        str_cat("bias ", bias->type_string(), " must be [", cols, "] of the output's dtype ", y.type_string()));
  if (!z && !bias && act.kind == Activation::kNone) return Status::ok();
  const int64_t n = y.num_elements();
  bool ok = visit_float(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* yp = y.data<T>();
    const T* zp = z ? z->data<T>() : nullptr;
    const T* bp = bias ? bias->data<T>() : nullptr;
    for (int64_t i = 0; i < n; ++i) {
      AccT<T> v = to_acc(yp[i]);
      if (bp) v += to_acc(bp[i % cols]);
      if (zp) v += to_acc(zp[i]);
      yp[i] = from_acc<T>(activation_scalar(act, v));
    }
  });
  return ok ? Status::ok() : core::invalid_argument(str_cat("fused epilogue: unsupported dtype ", y.type_string()));
}

}  // namespace

Status apply_epilogue(const ActivationParams& act, const Tensor* z, Tensor& y) {
  return epilogue(act, nullptr, z, y);
}
Status apply_epilogue(const ActivationParams& act, const Tensor* bias, const Tensor* z, Tensor& y) {
  return epilogue(act, bias, z, y);
}

Status fused_conv(const ConvParams& p, const ActivationParams& act, const Tensor& x, const Tensor& w, const Tensor* b,
                  const Tensor* z, Tensor& y) {
  KESTREL_RETURN_IF_ERROR(conv(p, x, w, b, y));
  return apply_epilogue(act, z, y);
}

Status fused_pointwise_depthwise(const PointwiseDepthwiseParams& p, const Tensor& x, const Tensor* w1, const Tensor* b1,
                                 const Tensor& w2, const Tensor* b2, const Tensor* w3, const Tensor* b3,
                                 const Tensor* z, Tensor* expanded, Tensor* dw, Tensor& y, const Tensor* w4,
                                 const Tensor* b4, Tensor* shortcut) {
  // 1x1, stride 1, no padding, group 1 (built once: the call allocates nothing).
  static const ConvParams kPointwise{{1, 1}, {1, 1}, {0, 0}, 1};
  auto type = [](const Tensor* t) { return t ? t->type_string() : std::string("(none)"); };
  if (x.rank() != 4 || (w1 && w1->rank() != 4) || w2.rank() != 4 || (w3 && w3->rank() != 4))
    return core::invalid_argument(str_cat("FusedPointwiseDepthwise: X ", x.type_string(), ", W1 ", type(w1), ", W2 ",
                                          w2.type_string(), " and W3 ", type(w3), " must have rank 4"));
  if ((w1 && (w1->dim(2) != 1 || w1->dim(3) != 1)) || (w3 && (w3->dim(2) != 1 || w3->dim(3) != 1)))
    return core::invalid_argument(
        str_cat("FusedPointwiseDepthwise: W1 ", type(w1), " and W3 ", type(w3), " must be 1x1"));
  if (p.depthwise.group < 1 || w2.dim(0) % p.depthwise.group != 0 || w2.dim(1) * p.depthwise.group != w2.dim(0))
    return core::invalid_argument(str_cat("FusedPointwiseDepthwise: W2 ", w2.type_string(),
                                          " is not [M, M / group, k, k] with group ", p.depthwise.group));
  if (!w1 && !w3) return core::invalid_argument("FusedPointwiseDepthwise: needs W1, W3 or both");
  if (!w1 && b1) return core::invalid_argument("FusedPointwiseDepthwise: B1 without W1");
  if (!w3 && (b3 || z)) return core::invalid_argument("FusedPointwiseDepthwise: B3 / Z without W3");
  if (w1 && !expanded) return core::invalid_argument("FusedPointwiseDepthwise: no buffer for the expanded tensor");
  if (w3 && !dw) return core::invalid_argument("FusedPointwiseDepthwise: no buffer for the depthwise output");
  if (w4 && (!w3 || z)) return core::invalid_argument("FusedPointwiseDepthwise: W4 needs W3 and no Z");
  if (!w4 && b4) return core::invalid_argument("FusedPointwiseDepthwise: B4 without W4");
  if (w4 && !shortcut) return core::invalid_argument("FusedPointwiseDepthwise: no buffer for the shortcut");
  if (w4) {  // z = the strided 1x1 conv of x (ref::conv checks the shapes)
    KESTREL_RETURN_IF_ERROR(fused_conv(p.shortcut, ActivationParams{}, x, *w4, b4, nullptr, *shortcut));
    z = shortcut;
  }
  // Without W1 the middle conv reads X itself (ref::conv checks X's channels against W2).
  const Tensor* e = &x;
  if (w1) {
    KESTREL_RETURN_IF_ERROR(fused_conv(kPointwise, p.act1, x, *w1, b1, nullptr, *expanded));
    e = expanded;
  }
  Tensor& d = w3 ? *dw : y;
  KESTREL_RETURN_IF_ERROR(fused_conv(p.depthwise, p.act2, *e, w2, b2, nullptr, d));
  if (!w3) return Status::ok();
  return fused_conv(kPointwise, p.act3, d, *w3, b3, z, y);
}

Status fused_gemm(const GemmParams& p, const ActivationParams& act, const Tensor& a, const Tensor& b, const Tensor* c,
                  Tensor& y) {
  if (!core::is_float(a.dtype())) return core::invalid_argument("FusedGemm: inputs must be float tensors");
  KESTREL_RETURN_IF_ERROR(gemm(p, a, b, c, y));
  return apply_epilogue(act, nullptr, y);
}

Status fused_matmul(const ActivationParams& act, const Tensor& a, const Tensor& b, const Tensor* bias, const Tensor* z,
                    Tensor& y) {
  if (!core::is_float(a.dtype())) return core::invalid_argument("FusedMatMul: inputs must be float tensors");
  if (b.rank() < 2) return core::invalid_argument(str_cat("FusedMatMul: B ", b.type_string(), " must have rank >= 2"));
  KESTREL_RETURN_IF_ERROR(matmul(a, b, y));
  return epilogue(act, bias, z, y);
}

}  // namespace kestrel::kernels::ref

// Reference scaled-dot-product attention.
#include "kernels/reference/attention.h"

#include <cmath>
#include <vector>

#include "core/str_util.h"
#include "kernels/reference/broadcast.h"
#include "kernels/reference/float_types.h"

namespace kestrel::kernels::ref {

using core::str_cat;

Status attention(float scale, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, Tensor& y) {
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4 || y.rank() != 4)
    return core::invalid_argument(str_cat("Attention: Q ", q.type_string(), ", K ", k.type_string(), ", V ",
                                          v.type_string(), " and the output must be 4-D [B, H, S, D]"));
  if (k.dtype() != q.dtype() || v.dtype() != q.dtype() || y.dtype() != q.dtype() ||
      (mask && mask->dtype() != q.dtype()))
    return core::invalid_argument("Attention: inputs and output must share one dtype");
  const int64_t sq = q.dim(2), d = q.dim(3), sk = k.dim(2), dv = v.dim(3);
  if (k.dim(3) != d || v.dim(2) != sk)
    return core::invalid_argument(str_cat("Attention: Q ", q.type_string(), ", K ", k.type_string(), " and V ",
                                          v.type_string(), " do not agree on D or Sk"));
  const int64_t nb = y.dim(0), nh = y.dim(1);
  if (y.dim(2) != sq || y.dim(3) != dv)
    return core::invalid_argument(
        str_cat("Attention: output ", y.type_string(), " must be [B, H, ", sq, ", ", dv, "]"));
  for (const Tensor* t : {&q, &k, &v})
    for (int64_t i = 0; i < 2; ++i)
      if (t->dim(i) != 1 && t->dim(i) != y.dim(i))
        return core::invalid_argument(
            str_cat("Attention: ", t->type_string(), " does not broadcast to the output ", y.type_string()));
  const core::Dims scores{nb, nh, sq, sk};
  core::Dims mask_strides(4, 0);
  if (mask) {
    core::Dims out;
    if (mask->rank() > 4 || !broadcast_dims({&mask->dims(), &scores}, &out) || out != scores)
      return core::invalid_argument(
          str_cat("Attention: mask ", mask->type_string(), " does not broadcast to ", core::dims_to_string(scores)));
    mask_strides = broadcast_strides(mask->dims(), scores);
  }
  // Element offset of [b, h] in a [B', H', S, X] tensor broadcast over B and H.
  auto head_offset = [](const Tensor& t, int64_t b, int64_t h) {
    return ((t.dim(0) == 1 ? 0 : b) * t.dim(1) + (t.dim(1) == 1 ? 0 : h)) * t.dim(2) * t.dim(3);
  };
  bool ok = visit_float(q.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = AccT<T>;
    const T* mp = mask ? mask->data<T>() : nullptr;
    std::vector<A> p(static_cast<size_t>(sk));
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t h = 0; h < nh; ++h) {
        const T* qh = q.data<T>() + head_offset(q, b, h);
        const T* kh = k.data<T>() + head_offset(k, b, h);
        const T* vh = v.data<T>() + head_offset(v, b, h);
        T* yh = y.data<T>() + (b * nh + h) * sq * dv;
        for (int64_t i = 0; i < sq; ++i) {
          A mx = -INFINITY;
          for (int64_t j = 0; j < sk; ++j) {
            A s = 0;
            for (int64_t c = 0; c < d; ++c) s += to_acc(qh[i * d + c]) * to_acc(kh[j * d + c]);
            s *= static_cast<A>(scale);
            if (mp)
              s += to_acc(mp[b * mask_strides[0] + h * mask_strides[1] + i * mask_strides[2] + j * mask_strides[3]]);
            p[static_cast<size_t>(j)] = s;
            if (s > mx) mx = s;
          }
          A sum = 0;
          for (int64_t j = 0; j < sk; ++j) {
            p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - mx);
            sum += p[static_cast<size_t>(j)];
          }
          for (int64_t c = 0; c < dv; ++c) {
            A acc = 0;
            for (int64_t j = 0; j < sk; ++j) acc += p[static_cast<size_t>(j)] * to_acc(vh[j * dv + c]);
            yh[i * dv + c] = from_acc<T>(acc / sum);
          }
        }
      }
  });
  return ok ? Status::ok() : core::invalid_argument(str_cat("Attention: unsupported dtype ", q.type_string()));
}

}  // namespace kestrel::kernels::ref

// Reference Conv and ConvTranspose.
#include "kernels/reference/conv.h"

#include <algorithm>
#include <vector>

#include "core/str_util.h"
#include "kernels/reference/float_types.h"

namespace kestrel::kernels::ref {

using core::str_cat;

namespace {

struct ConvDims {
  size_t spatial = 0;
  int64_t n = 0, c = 0, m = 0;  // batch, input channels, output channels
  core::Dims in, k, out;        // spatial sizes
  int64_t in_size = 1, k_size = 1, out_size = 1;
  int64_t cg = 0, mg = 0;  // channels per group (input, output)
};

// Shared checks; `transpose` swaps the meaning of w's first two dims.
Status check_dims(const char* op, const ConvParams& p, const Tensor& x, const Tensor& w, const Tensor* b,
                  const Tensor& y, bool transpose, ConvDims* d) {
  if (x.rank() < 3) return core::invalid_argument(str_cat(op, ": input must have rank >= 3, is ", x.type_string()));
  if (w.rank() != x.rank() || y.rank() != x.rank())
    return core::invalid_argument(
        str_cat(op, ": ranks differ: x ", x.type_string(), ", w ", w.type_string(), ", y ", y.type_string()));
  if (w.dtype() != x.dtype() || y.dtype() != x.dtype() || (b && b->dtype() != x.dtype()))
    return core::invalid_argument(str_cat(op, ": inputs and output must share one dtype"));
  d->spatial = static_cast<size_t>(x.rank() - 2);
  if (p.strides.size() != d->spatial || p.dilations.size() != d->spatial || p.pads_begin.size() != d->spatial)
    return core::invalid_argument(str_cat(op, ": strides/dilations/pads must have one value per spatial axis"));
  if (p.group < 1) return core::invalid_argument(str_cat(op, ": group must be >= 1"));
  d->n = x.dim(0);
  d->c = x.dim(1);
  if (d->c % p.group != 0)
    return core::invalid_argument(str_cat(op, ": input channels ", d->c, " not divisible by group ", p.group));
  d->cg = d->c / p.group;
  if (!transpose) {
    d->m = w.dim(0);
    if (w.dim(1) != d->cg)
      return core::invalid_argument(str_cat(op, ": w ", w.type_string(), " needs ", d->cg, " channels per group"));
    if (d->m % p.group != 0)
      return core::invalid_argument(str_cat(op, ": output channels ", d->m, " not divisible by group ", p.group));
    d->mg = d->m / p.group;
  } else {
    if (w.dim(0) != d->c)
      return core::invalid_argument(str_cat(op, ": w ", w.type_string(), " must have ", d->c, " input channels"));
    d->mg = w.dim(1);
    d->m = d->mg * p.group;
  }
  if (y.dim(0) != d->n || y.dim(1) != d->m)
    return core::invalid_argument(str_cat(op, ": output ", y.type_string(), " must be [", d->n, ",", d->m, ",...]"));
  if (b && b->num_elements() != d->m)
    return core::invalid_argument(str_cat(op, ": bias ", b->type_string(), " must have ", d->m, " elements"));
  for (size_t i = 0; i < d->spatial; ++i) {
    d->in.push_back(x.dim(static_cast<int64_t>(i) + 2));
    d->k.push_back(w.dim(static_cast<int64_t>(i) + 2));
    d->out.push_back(y.dim(static_cast<int64_t>(i) + 2));
    // Keeps every position product (index * stride, tap * dilation) far from int64 overflow.
    const int64_t reach = transpose ? d->in[i] : d->out[i];
    if (p.strides[i] < 1 || p.dilations[i] < 1 || p.pads_begin[i] < 0 || p.pads_begin[i] > core::kMaxElements ||
        reach > core::kMaxElements / p.strides[i] || d->k[i] > core::kMaxElements / p.dilations[i])
      return core::invalid_argument(str_cat(op, ": bad stride/dilation/pad on spatial axis ", i));
  }
  d->in_size = core::num_elements(d->in);
  d->k_size = core::num_elements(d->k);
  d->out_size = core::num_elements(d->out);
  return Status::ok();
}

// Per tap (row-major over the kernel window) and axis: the offset k_i * dilation_i.
std::vector<int64_t> tap_offsets(const ConvDims& d, const ConvParams& p) {
  std::vector<int64_t> offs(static_cast<size_t>(d.k_size) * d.spatial);
  std::vector<int64_t> idx(d.spatial, 0);
  for (int64_t t = 0; t < d.k_size; ++t) {
    for (size_t i = 0; i < d.spatial; ++i) offs[static_cast<size_t>(t) * d.spatial + i] = idx[i] * p.dilations[i];
    for (size_t i = d.spatial; i-- > 0;) {
      if (++idx[i] < d.k[i]) break;
      idx[i] = 0;
    }
  }
  return offs;
}

// Row-major multi-index of flat position `flat` in `dims`.
void unflatten(int64_t flat, const core::Dims& dims, std::vector<int64_t>& idx) {
  for (size_t i = dims.size(); i-- > 0;) {
    idx[i] = flat % dims[i];
    flat /= dims[i];
  }
}

template <class T>
void conv_typed(const ConvParams& p, const ConvDims& d, const Tensor& xt, const Tensor& wt, const Tensor* bt,
                Tensor& yt) {
  using A = AccT<T>;
  const T* x = xt.data<T>();
  const T* w = wt.data<T>();
  T* y = yt.data<T>();
  const std::vector<int64_t> taps = tap_offsets(d, p);
  const core::Dims in_strides = core::row_major_strides(d.in);
  // Linear input offset of each tap, and per output position the window's base offset and
  // whether the whole window lies inside the input (then no per-tap bounds checks are needed).
  std::vector<int64_t> tap_lin(static_cast<size_t>(d.k_size), 0);
  for (int64_t t = 0; t < d.k_size; ++t)
    for (size_t i = 0; i < d.spatial; ++i)
      tap_lin[static_cast<size_t>(t)] += taps[static_cast<size_t>(t) * d.spatial + i] * in_strides[i];
  std::vector<int64_t> opos(d.spatial), ibase(d.spatial);
  std::vector<int64_t> base_lin(static_cast<size_t>(d.out_size), 0);
  std::vector<uint8_t> interior(static_cast<size_t>(d.out_size), 1);
  for (int64_t o = 0; o < d.out_size; ++o) {
    unflatten(o, d.out, opos);
    for (size_t i = 0; i < d.spatial; ++i) {
      const int64_t b = opos[i] * p.strides[i] - p.pads_begin[i];
      if (b < 0 || b + (d.k[i] - 1) * p.dilations[i] >= d.in[i]) interior[static_cast<size_t>(o)] = 0;
      base_lin[static_cast<size_t>(o)] += b * in_strides[i];
    }
  }
  std::vector<A> acc(static_cast<size_t>(d.out_size));
  for (int64_t n = 0; n < d.n; ++n) {
    for (int64_t m = 0; m < d.m; ++m) {
      const int64_t g = m / d.mg;
      std::fill(acc.begin(), acc.end(), bt ? to_acc(bt->data<T>()[m]) : A(0));
      for (int64_t c = 0; c < d.cg; ++c) {
        const T* xc = x + (n * d.c + g * d.cg + c) * d.in_size;
        const T* wc = w + (m * d.cg + c) * d.k_size;
        for (int64_t o = 0; o < d.out_size; ++o) {
          A sum = 0;
          if (interior[static_cast<size_t>(o)]) {
            const T* xb = xc + base_lin[static_cast<size_t>(o)];
            for (int64_t t = 0; t < d.k_size; ++t) sum += to_acc(xb[tap_lin[static_cast<size_t>(t)]]) * to_acc(wc[t]);
          } else {
            unflatten(o, d.out, opos);
            for (size_t i = 0; i < d.spatial; ++i) ibase[i] = opos[i] * p.strides[i] - p.pads_begin[i];
            for (int64_t t = 0; t < d.k_size; ++t) {
              int64_t off = 0;
              bool inside = true;
              for (size_t i = 0; i < d.spatial && inside; ++i) {
                int64_t ip = ibase[i] + taps[static_cast<size_t>(t) * d.spatial + i];
                inside = ip >= 0 && ip < d.in[i];
                off = off * d.in[i] + ip;
              }
              if (inside) sum += to_acc(xc[off]) * to_acc(wc[t]);
            }
          }
          acc[static_cast<size_t>(o)] += sum;
        }
      }
      T* ym = y + (n * d.m + m) * d.out_size;
      for (int64_t o = 0; o < d.out_size; ++o) ym[o] = from_acc<T>(acc[static_cast<size_t>(o)]);
    }
  }
}

template <class T>
void conv_transpose_typed(const ConvParams& p, const ConvDims& d, const Tensor& xt, const Tensor& wt, const Tensor* bt,
                          Tensor& yt) {
  using A = AccT<T>;
  const T* x = xt.data<T>();
  const T* w = wt.data<T>();
  T* y = yt.data<T>();
  const std::vector<int64_t> taps = tap_offsets(d, p);
  std::vector<int64_t> ipos(d.spatial), obase(d.spatial);
  std::vector<A> acc(static_cast<size_t>(d.m * d.out_size));
  for (int64_t n = 0; n < d.n; ++n) {
    for (int64_t m = 0; m < d.m; ++m)
      for (int64_t o = 0; o < d.out_size; ++o)
        acc[static_cast<size_t>(m * d.out_size + o)] = bt ? to_acc(bt->data<T>()[m]) : A(0);
    for (int64_t ci = 0; ci < d.c; ++ci) {
      const int64_t g = ci / d.cg;
      const T* xc = x + (n * d.c + ci) * d.in_size;
      const T* wc = w + ci * d.mg * d.k_size;
      for (int64_t i = 0; i < d.in_size; ++i) {
        unflatten(i, d.in, ipos);
        for (size_t a = 0; a < d.spatial; ++a) obase[a] = ipos[a] * p.strides[a] - p.pads_begin[a];
        const A xv = to_acc(xc[i]);
        for (int64_t t = 0; t < d.k_size; ++t) {
          int64_t off = 0;
          bool inside = true;
          for (size_t a = 0; a < d.spatial && inside; ++a) {
            int64_t op = obase[a] + taps[static_cast<size_t>(t) * d.spatial + a];
            inside = op >= 0 && op < d.out[a];
            off = off * d.out[a] + op;
          }
          if (!inside) continue;
          for (int64_t mg = 0; mg < d.mg; ++mg)
            acc[static_cast<size_t>((g * d.mg + mg) * d.out_size + off)] += xv * to_acc(wc[mg * d.k_size + t]);
        }
      }
    }
    T* yn = y + n * d.m * d.out_size;
    for (int64_t j = 0; j < d.m * d.out_size; ++j) yn[j] = from_acc<T>(acc[static_cast<size_t>(j)]);
  }
}

}  // namespace

Status conv(const ConvParams& p, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y) {
  ConvDims d;
  KESTREL_RETURN_IF_ERROR(check_dims("Conv", p, x, w, b, y, false, &d));
  for (size_t i = 0; i < d.spatial; ++i)
    if (d.k[i] < 1) return core::invalid_argument("Conv: kernel sizes must be >= 1");
  bool ok = visit_float(x.dtype(), [&](auto tag) { conv_typed<decltype(tag)>(p, d, x, w, b, y); });
  return ok ? Status::ok() : core::invalid_argument(str_cat("Conv: unsupported dtype ", core::dtype_name(x.dtype())));
}

Status conv_transpose(const ConvParams& p, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y) {
  ConvDims d;
  KESTREL_RETURN_IF_ERROR(check_dims("ConvTranspose", p, x, w, b, y, true, &d));
  bool ok = visit_float(x.dtype(), [&](auto tag) { conv_transpose_typed<decltype(tag)>(p, d, x, w, b, y); });
  return ok ? Status::ok()
            : core::invalid_argument(str_cat("ConvTranspose: unsupported dtype ", core::dtype_name(x.dtype())));
}

}  // namespace kestrel::kernels::ref

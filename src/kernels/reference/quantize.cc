// Reference quantization kernels.
#include "kernels/reference/quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/str_util.h"
#include "kernels/reference/broadcast.h"
#include "kernels/reference/scalar_io.h"

namespace kestrel::kernels::ref {

using core::Dims;
using core::DType;
using core::str_cat;

namespace {

bool is_quantized_8bit(DType t) {
  return t == DType::kU8 || t == DType::kI8;
}

// Calls f(T{}) for the integer dtypes quantized tensors use.
template <class F>
bool visit_quant_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kU8:
      f(uint8_t{});
      return true;
    case DType::kI8:
      f(int8_t{});
      return true;
    case DType::kU16:
      f(uint16_t{});
      return true;
    case DType::kI16:
      f(int16_t{});
      return true;
    case DType::kI32:
      f(int32_t{});
      return true;
    default:
      return false;
  }
}

// Maps each element of x to the index of its scale / zero point.
struct ParamIndexer {
  enum class Mode { kTensor, kAxis, kBlock } mode = Mode::kTensor;
  int64_t axis_dim = 1, inner = 1, block = 1, blocks = 1;

  int64_t operator()(int64_t i) const {
    if (mode == Mode::kTensor) return 0;
    const int64_t a = (i / inner) % axis_dim;
    if (mode == Mode::kAxis) return a;
    const int64_t o = i / (inner * axis_dim);
    return (o * blocks + a / block) * inner + i % inner;
  }
};

core::Result<ParamIndexer> make_indexer(const QuantAxisParams& p, const Tensor& x, const Tensor& param,
                                        const char* what) {
  ParamIndexer ix;
  if (p.block_size < 0) return core::invalid_argument(str_cat("block_size must be >= 0, is ", p.block_size));
  if (p.block_size == 0 && param.num_elements() == 1 && param.rank() <= 1) return ix;
  if (x.rank() == 0)
    return core::invalid_argument(str_cat(what, " ", param.type_string(), " must have one element for a scalar input"));
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, core::normalize_axis(p.axis, x.rank()));
  ix.axis_dim = x.dim(axis);
  for (int64_t d = axis + 1; d < x.rank(); ++d) ix.inner *= x.dim(d);
  if (p.block_size == 0) {
    if (param.rank() != 1 || param.dim(0) != ix.axis_dim)
      return core::invalid_argument(str_cat(what, " ", param.type_string(),
                                            " must have one element or one per index of axis ", axis, " (", ix.axis_dim,
                                            ") of ", x.type_string()));
    ix.mode = ParamIndexer::Mode::kAxis;
    return ix;
  }
  ix.mode = ParamIndexer::Mode::kBlock;
  ix.block = p.block_size;
  ix.blocks = ix.axis_dim == 0 ? 0 : (ix.axis_dim - 1) / p.block_size + 1;  // ceil without overflow
  bool ok = param.rank() == x.rank();
  for (int64_t d = 0; ok && d < x.rank(); ++d) ok = param.dim(d) == (d == axis ? ix.blocks : x.dim(d));
  if (!ok)
    return core::invalid_argument(str_cat(what, " ", param.type_string(), " does not fit blocks of ", p.block_size,
                                          " along axis ", axis, " of ", x.type_string()));
  return ix;
}

Status check_zero_point(const Tensor* zp, const Tensor& scale, DType want) {
  if (!zp) return Status::ok();
  if (zp->dtype() != want)
    return core::invalid_argument(str_cat("zero point must be ", core::dtype_name(want), ", is ", zp->type_string()));
  if (zp->dims() != scale.dims() && !(zp->num_elements() == 1 && scale.num_elements() == 1))
    return core::invalid_argument(
        str_cat("zero point ", zp->type_string(), " and scale ", scale.type_string(), " must have the same shape"));
  return Status::ok();
}

// --- numpy-matmul geometry shared by MatMulInteger and QLinearMatMul

struct MatMulGeom {
  Dims batch;       // broadcast batch dims
  Dims a_bs, b_bs;  // batch strides of a and b (in matrices)
  int64_t m = 1, k = 1, n = 1;
  int64_t batch_count = 1;
};

core::Result<MatMulGeom> matmul_geometry(const Tensor& a, const Tensor& b, const Tensor& y) {
  if (a.rank() < 1 || b.rank() < 1)
    return core::invalid_argument(
        str_cat("matmul inputs must have rank >= 1, are ", a.type_string(), " and ", b.type_string()));
  Dims ad = a.dims(), bd = b.dims();
  const bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
  if (a_vec) ad.insert(ad.begin(), 1);
  if (b_vec) bd.push_back(1);
  MatMulGeom g;
  g.m = ad[ad.size() - 2];
  g.k = ad.back();
  g.n = bd.back();
  if (bd[bd.size() - 2] != g.k)
    return core::invalid_argument(str_cat("matmul inner dimensions differ: ", a.type_string(), " x ", b.type_string()));
  Dims ab(ad.begin(), ad.end() - 2), bb(bd.begin(), bd.end() - 2);
  if (!broadcast_dims({&ab, &bb}, &g.batch))
    return core::invalid_argument(
        str_cat("matmul batch dims do not broadcast: ", a.type_string(), " x ", b.type_string()));
  g.a_bs = broadcast_strides(ab, g.batch);
  g.b_bs = broadcast_strides(bb, g.batch);
  g.batch_count = core::num_elements(g.batch);
  Dims yd = g.batch;
  if (!a_vec) yd.push_back(g.m);
  if (!b_vec) yd.push_back(g.n);
  if (y.dims() != yd)
    return core::invalid_argument(
        str_cat("matmul output must have shape ", core::dims_to_string(yd), ", has ", core::dims_to_string(y.dims())));
  return g;
}

// Expands a scale / zero point to one value per (batch, row, col) of a [batch..., rows, cols]
// grid where rows or cols may be 1. One element: everywhere. 1-D with more than one element: one
// per row when cols == 1, else one per column. Otherwise numpy-broadcast to the grid.
core::Result<std::vector<double>> expand_param(const Tensor& p, const Dims& batch, int64_t rows, int64_t cols,
                                               const char* what) {
  Dims grid = batch;
  grid.push_back(rows);
  grid.push_back(cols);
  const int64_t total = core::num_elements(grid);
  std::vector<double> v = core::tensor_to_doubles(p);
  if (v.size() == 1) return std::vector<double>(static_cast<size_t>(total), v[0]);
  Dims pd = p.dims();
  if (pd.size() == 1) pd = cols == 1 ? Dims{pd[0], 1} : Dims{1, pd[0]};
  bool ok = pd.size() <= grid.size();
  for (size_t i = 0; ok && i < pd.size(); ++i) {
    int64_t have = pd[pd.size() - 1 - i], want = grid[grid.size() - 1 - i];
    ok = have == want || have == 1;
  }
  if (!ok)
    return core::invalid_argument(
        str_cat(what, " ", p.type_string(), " does not broadcast to ", core::dims_to_string(grid)));
  std::vector<double> out(static_cast<size_t>(total));
  for_each_broadcast<1>(grid, {broadcast_strides(pd, grid)}, [&](int64_t i, const std::array<int64_t, 1>& o) {
    out[static_cast<size_t>(i)] = v[static_cast<size_t>(o[0])];
  });
  return out;
}

// The values of a u8/i8 tensor as int32 (one dtype switch instead of one per multiply).
std::vector<int32_t> as_int32(const Tensor& t) {
  std::vector<int32_t> v(static_cast<size_t>(t.num_elements()));
  if (t.dtype() == DType::kU8)
    for (size_t i = 0; i < v.size(); ++i) v[i] = t.data<uint8_t>()[i];
  else
    for (size_t i = 0; i < v.size(); ++i) v[i] = t.data<int8_t>()[i];
  return v;
}

// Exact int64 accumulators of sum_k (a - za) (b - zb), one per output element ([batch, m, n]).
core::Result<std::vector<int64_t>> integer_matmul(const MatMulGeom& g, const Tensor& a, const Tensor& b,
                                                  const std::vector<double>& za, const std::vector<double>& zb) {
  if (!is_quantized_8bit(a.dtype()) || !is_quantized_8bit(b.dtype()))
    return core::invalid_argument(
        str_cat("matmul inputs must be u8 or i8, are ", a.type_string(), " and ", b.type_string()));
  const std::vector<int32_t> av = as_int32(a), bv = as_int32(b);
  std::vector<int64_t> acc(static_cast<size_t>(g.batch_count * g.m * g.n), 0);
  for_each_broadcast<2>(g.batch, {g.a_bs, g.b_bs}, [&](int64_t bi, const std::array<int64_t, 2>& off) {
    const int32_t* pa = av.data() + off[0] * g.m * g.k;
    const int32_t* pb = bv.data() + off[1] * g.k * g.n;
    for (int64_t i = 0; i < g.m; ++i) {
      const auto zai = static_cast<int64_t>(za[static_cast<size_t>(bi * g.m + i)]);
      for (int64_t j = 0; j < g.n; ++j) {
        const auto zbj = static_cast<int64_t>(zb[static_cast<size_t>(bi * g.n + j)]);
        int64_t s = 0;
        for (int64_t kk = 0; kk < g.k; ++kk) s += (pa[i * g.k + kk] - zai) * (pb[kk * g.n + j] - zbj);
        acc[static_cast<size_t>((bi * g.m + i) * g.n + j)] = s;
      }
    }
  });
  return acc;
}

int32_t wrap_int32(int64_t v) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
}

Status store_quantized(Tensor& y, int64_t i, int64_t v) {
  bool ok = visit_quant_dtype(y.dtype(), [&](auto tag) { y.data<decltype(tag)>()[i] = static_cast<decltype(tag)>(v); });
  if (!ok) return core::invalid_argument(str_cat("quantized output must be an integer tensor, is ", y.type_string()));
  return Status::ok();
}

// --- convolution

struct ConvGeom {
  int64_t n = 0, c = 0, m = 0, cg = 0, mg = 0, group = 1;
  Dims in, kernel, out;
  int64_t in_size = 1, kernel_size = 1, out_size = 1;
};

core::Result<ConvGeom> conv_geometry(const IntConvParams& p, const Tensor& x, const Tensor& w, const Tensor& y) {
  if (!is_quantized_8bit(x.dtype()) || !is_quantized_8bit(w.dtype()))
    return core::invalid_argument(
        str_cat("conv inputs must be u8 or i8, are ", x.type_string(), " and ", w.type_string()));
  if (x.rank() < 3 || w.rank() != x.rank() || y.rank() != x.rank())
    return core::invalid_argument(str_cat("conv needs x [N, C, D...], w [M, C/group, K...] of the same rank, got ",
                                          x.type_string(), " and ", w.type_string()));
  const size_t sp = static_cast<size_t>(x.rank() - 2);
  if (p.strides.size() != sp || p.dilations.size() != sp || p.pads_begin.size() != sp)
    return core::invalid_argument(str_cat("conv parameters must have ", sp, " entries per spatial axis"));
  ConvGeom g;
  g.n = x.dim(0);
  g.c = x.dim(1);
  g.m = w.dim(0);
  g.group = p.group;
  if (g.group < 1 || g.c % g.group != 0 || g.m % g.group != 0 || w.dim(1) != g.c / g.group)
    return core::invalid_argument(
        str_cat("group ", g.group, " does not fit x ", x.type_string(), " and w ", w.type_string()));
  g.cg = g.c / g.group;
  g.mg = g.m / g.group;
  if (y.dim(0) != g.n || y.dim(1) != g.m)
    return core::invalid_argument(str_cat("conv output ", y.type_string(), " must be [", g.n, ", ", g.m, ", ...]"));
  for (size_t d = 0; d < sp; ++d) {
    g.in.push_back(x.dim(static_cast<int64_t>(d) + 2));
    g.kernel.push_back(w.dim(static_cast<int64_t>(d) + 2));
    g.out.push_back(y.dim(static_cast<int64_t>(d) + 2));
    if (p.strides[d] < 1 || p.dilations[d] < 1)
      return core::invalid_argument("conv strides and dilations must be >= 1");
  }
  g.in_size = core::num_elements(g.in);
  g.kernel_size = core::num_elements(g.kernel);
  g.out_size = core::num_elements(g.out);
  return g;
}

// Exact accumulators per output element [N, M, O...]; wzp(m) gives the weight zero point.
template <class WZp>
std::vector<int64_t> integer_conv(const IntConvParams& p, const ConvGeom& g, const Tensor& x, const Tensor& w,
                                  int64_t xzp, WZp&& wzp) {
  const size_t sp = g.in.size();
  // Zero points subtracted once; padding then contributes 0 by being skipped.
  std::vector<int32_t> xs = as_int32(x), ws = as_int32(w);
  for (int32_t& v : xs) v -= static_cast<int32_t>(xzp);
  for (int64_t m = 0; m < g.m; ++m)
    for (int64_t i = 0; i < g.cg * g.kernel_size; ++i)
      ws[static_cast<size_t>(m * g.cg * g.kernel_size + i)] -= static_cast<int32_t>(wzp(m));
  std::vector<int64_t> acc(static_cast<size_t>(g.n * g.m * g.out_size), 0);
  std::vector<int64_t> oidx(sp), kidx(sp);
  std::vector<std::pair<int64_t, int64_t>> taps;  // (kernel offset, input offset) inside the input
  for (int64_t o = 0; o < g.out_size; ++o) {
    for (size_t d = sp, r = static_cast<size_t>(o); d-- > 0;) {
      oidx[d] = static_cast<int64_t>(r) % g.out[d];
      r /= static_cast<size_t>(g.out[d]);
    }
    taps.clear();
    for (int64_t kk = 0; kk < g.kernel_size; ++kk) {
      for (size_t d = sp, r = static_cast<size_t>(kk); d-- > 0;) {
        kidx[d] = static_cast<int64_t>(r) % g.kernel[d];
        r /= static_cast<size_t>(g.kernel[d]);
      }
      int64_t in_off = 0;
      bool inside = true;
      for (size_t d = 0; d < sp && inside; ++d) {
        const int64_t pos = oidx[d] * p.strides[d] - p.pads_begin[d] + kidx[d] * p.dilations[d];
        inside = pos >= 0 && pos < g.in[d];
        in_off = in_off * g.in[d] + pos;
      }
      if (inside) taps.emplace_back(kk, in_off);
    }
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t m = 0; m < g.m; ++m) {
        const int64_t grp = m / g.mg;
        int64_t s = 0;
        for (int64_t c = 0; c < g.cg; ++c) {
          const int32_t* xr = xs.data() + (n * g.c + grp * g.cg + c) * g.in_size;
          const int32_t* wr = ws.data() + (m * g.cg + c) * g.kernel_size;
          for (const auto& [kk, off] : taps) s += static_cast<int64_t>(xr[off]) * wr[kk];
        }
        acc[static_cast<size_t>((n * g.m + m) * g.out_size + o)] = s;
      }
    }
  }
  return acc;
}

core::Result<int64_t> single_value(const Tensor& t, const char* what) {
  if (t.num_elements() != 1)
    return core::invalid_argument(str_cat(what, " must have one element, is ", t.type_string()));
  return t.element_as_int64(0);
}

core::Result<std::vector<double>> per_channel(const Tensor* t, int64_t m, double def, const char* what) {
  if (!t) return std::vector<double>(static_cast<size_t>(m), def);
  std::vector<double> v = core::tensor_to_doubles(*t);
  if (v.size() == 1) return std::vector<double>(static_cast<size_t>(m), v[0]);
  if (t->rank() != 1 || t->dim(0) != m)
    return core::invalid_argument(
        str_cat(what, " must have one element or one per output channel (", m, "), is ", t->type_string()));
  return v;
}

}  // namespace

core::Result<std::pair<int64_t, int64_t>> quant_range(DType t) {
  switch (t) {
    case DType::kU8:
      return std::pair<int64_t, int64_t>{0, 255};
    case DType::kI8:
      return std::pair<int64_t, int64_t>{-128, 127};
    case DType::kU16:
      return std::pair<int64_t, int64_t>{0, 65535};
    case DType::kI16:
      return std::pair<int64_t, int64_t>{-32768, 32767};
    case DType::kI32:
      return std::pair<int64_t, int64_t>{std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default:
      return core::invalid_argument(str_cat(core::dtype_name(t), " is not a quantized type"));
  }
}

int64_t quantize_value(double v, int64_t zero_point, int64_t qmin, int64_t qmax) {
  double q = std::isnan(v) ? static_cast<double>(zero_point) : std::nearbyint(v) + static_cast<double>(zero_point);
  q = std::clamp(q, static_cast<double>(qmin), static_cast<double>(qmax));
  return static_cast<int64_t>(q);
}

int64_t requantize(int64_t acc, double multiplier, int64_t zero_point, int64_t qmin, int64_t qmax) {
  return quantize_value(static_cast<double>(acc) * multiplier, zero_point, qmin, qmax);
}

Status quantize_linear(const QuantAxisParams& p, const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                       Tensor& y) {
  if (y.dtype() == DType::kI32) return core::invalid_argument("QuantizeLinear cannot produce int32");
  KESTREL_ASSIGN_OR_RETURN(auto range, quant_range(y.dtype()));
  if (y.dims() != x.dims()) return core::invalid_argument("quantized output must have the input's shape");
  if (!core::is_float(scale.dtype()) && !(scale.dtype() == DType::kI32 && x.dtype() == DType::kI32))
    return core::invalid_argument(str_cat("scale must be a float tensor, is ", scale.type_string()));
  KESTREL_RETURN_IF_ERROR(check_zero_point(zero_point, scale, y.dtype()));
  KESTREL_ASSIGN_OR_RETURN(ParamIndexer ix, make_indexer(p, x, scale, "scale"));
  const std::vector<double> s = core::tensor_to_doubles(scale);
  std::vector<int64_t> zp(s.size(), 0);
  if (zero_point) zp = core::tensor_to_int64s(*zero_point);
  const int64_t count = x.num_elements();
  Status st;
  auto run = [&](auto load) {
    for (int64_t i = 0; i < count && st.is_ok(); ++i) {
      const auto pi = static_cast<size_t>(ix(i));
      st = store_quantized(y, i, quantize_value(load(i, s[pi]), zp[pi], range.first, range.second));
    }
  };
  bool ok = visit_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    if constexpr (std::is_same_v<T, double>) {
      run([&](int64_t i, double sc) { return px[i] / sc; });
    } else {
      run([&](int64_t i, double sc) {
        return static_cast<double>(static_cast<float>(load_double(px[i])) / static_cast<float>(sc));
      });
    }
  });
  if (!ok && x.dtype() == DType::kI32) {
    const int32_t* px = x.data<int32_t>();
    run([&](int64_t i, double sc) { return static_cast<double>(px[i]) / sc; });
    ok = true;
  }
  if (!ok) return core::invalid_argument(str_cat("QuantizeLinear input must be float or int32, is ", x.type_string()));
  return st;
}

Status dequantize_linear(const QuantAxisParams& p, const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                         Tensor& y) {
  if (!visit_quant_dtype(x.dtype(), [](auto) {}))
    return core::invalid_argument(str_cat("DequantizeLinear input must be an integer tensor, is ", x.type_string()));
  if (!core::is_float(scale.dtype()) || y.dtype() != scale.dtype())
    return core::invalid_argument(str_cat("scale and output must have the same float dtype, are ", scale.type_string(),
                                          " and ", y.type_string()));
  if (y.dims() != x.dims()) return core::invalid_argument("dequantized output must have the input's shape");
  KESTREL_RETURN_IF_ERROR(check_zero_point(zero_point, scale, x.dtype()));
  KESTREL_ASSIGN_OR_RETURN(ParamIndexer ix, make_indexer(p, x, scale, "scale"));
  const std::vector<double> s = core::tensor_to_doubles(scale);
  std::vector<int64_t> zp(s.size(), 0);
  if (zero_point) zp = core::tensor_to_int64s(*zero_point);
  const int64_t count = x.num_elements();
  visit_float(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* py = y.data<T>();
    for (int64_t i = 0; i < count; ++i) {
      const auto pi = static_cast<size_t>(ix(i));
      const int64_t diff = x.element_as_int64(i) - zp[pi];
      if constexpr (std::is_same_v<T, double>)
        py[i] = static_cast<double>(diff) * s[pi];
      else
        py[i] = store_double<T>(static_cast<float>(diff) * static_cast<float>(s[pi]));
    }
  });
  return Status::ok();
}

Status dynamic_quantize_linear(const Tensor& x, Tensor& y, Tensor& y_scale, Tensor& y_zero_point) {
  if (x.dtype() != DType::kF32) return core::invalid_argument(str_cat("input must be f32, is ", x.type_string()));
  if (y.dtype() != DType::kU8 || y.dims() != x.dims() || y_scale.dtype() != DType::kF32 ||
      y_scale.num_elements() != 1 || y_zero_point.dtype() != DType::kU8 || y_zero_point.num_elements() != 1)
    return core::invalid_argument("outputs must be u8 like the input, a f32 scale and a u8 zero point");
  const float* px = x.data<float>();
  float lo = 0.f, hi = 0.f;  // the range always includes 0 so that 0 is exact
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (px[i] < lo) lo = px[i];
    if (px[i] > hi) hi = px[i];
  }
  const float scale = (hi - lo) / 255.f;
  int64_t zp = 0;
  if (scale != 0.f) zp = quantize_value(static_cast<double>(0.f - lo / scale), 0, 0, 255);
  y_scale.data<float>()[0] = scale;
  y_zero_point.data<uint8_t>()[0] = static_cast<uint8_t>(zp);
  uint8_t* py = y.data<uint8_t>();
  for (int64_t i = 0; i < x.num_elements(); ++i)
    py[i] = scale == 0.f ? static_cast<uint8_t>(zp)
                         : static_cast<uint8_t>(quantize_value(static_cast<double>(px[i] / scale), zp, 0, 255));
  return Status::ok();
}

Status matmul_integer(const Tensor& a, const Tensor& b, const Tensor* a_zero_point, const Tensor* b_zero_point,
                      Tensor& y) {
  if (y.dtype() != DType::kI32) return core::invalid_argument(str_cat("output must be int32, is ", y.type_string()));
  KESTREL_ASSIGN_OR_RETURN(MatMulGeom g, matmul_geometry(a, b, y));
  if (a_zero_point && a_zero_point->dtype() != a.dtype())
    return core::invalid_argument("a_zero_point must have a's dtype");
  if (b_zero_point && b_zero_point->dtype() != b.dtype())
    return core::invalid_argument("b_zero_point must have b's dtype");
  std::vector<double> za(static_cast<size_t>(g.batch_count * g.m), 0.0),
      zb(static_cast<size_t>(g.batch_count * g.n), 0.0);
  if (a_zero_point) {
    KESTREL_ASSIGN_OR_RETURN(za, expand_param(*a_zero_point, g.batch, g.m, 1, "a_zero_point"));
  }
  if (b_zero_point) {
    KESTREL_ASSIGN_OR_RETURN(zb, expand_param(*b_zero_point, g.batch, 1, g.n, "b_zero_point"));
  }
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> acc, integer_matmul(g, a, b, za, zb));
  int32_t* py = y.data<int32_t>();
  for (size_t i = 0; i < acc.size(); ++i) py[i] = wrap_int32(acc[i]);
  return Status::ok();
}

Status qlinear_matmul(const Tensor& a, const Tensor& a_scale, const Tensor& a_zero_point, const Tensor& b,
                      const Tensor& b_scale, const Tensor& b_zero_point, const Tensor& y_scale,
                      const Tensor& y_zero_point, Tensor& y) {
  if (!is_quantized_8bit(y.dtype()) || y_zero_point.dtype() != y.dtype())
    return core::invalid_argument(str_cat("output and y_zero_point must be u8 or i8 alike, are ", y.type_string(),
                                          " and ", y_zero_point.type_string()));
  if (a_zero_point.dtype() != a.dtype() || b_zero_point.dtype() != b.dtype())
    return core::invalid_argument("zero points must have their input's dtype");
  for (const Tensor* s : {&a_scale, &b_scale, &y_scale})
    if (!core::is_float(s->dtype()))
      return core::invalid_argument(str_cat("scales must be float, got ", s->type_string()));
  KESTREL_ASSIGN_OR_RETURN(MatMulGeom g, matmul_geometry(a, b, y));
  KESTREL_ASSIGN_OR_RETURN(auto za, expand_param(a_zero_point, g.batch, g.m, 1, "a_zero_point"));
  KESTREL_ASSIGN_OR_RETURN(auto zb, expand_param(b_zero_point, g.batch, 1, g.n, "b_zero_point"));
  KESTREL_ASSIGN_OR_RETURN(auto sa, expand_param(a_scale, g.batch, g.m, 1, "a_scale"));
  KESTREL_ASSIGN_OR_RETURN(auto sb, expand_param(b_scale, g.batch, 1, g.n, "b_scale"));
  KESTREL_ASSIGN_OR_RETURN(auto sy, expand_param(y_scale, g.batch, g.m, g.n, "y_scale"));
  KESTREL_ASSIGN_OR_RETURN(auto zy, expand_param(y_zero_point, g.batch, g.m, g.n, "y_zero_point"));
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> acc, integer_matmul(g, a, b, za, zb));
  KESTREL_ASSIGN_OR_RETURN(auto range, quant_range(y.dtype()));
  for (int64_t bi = 0; bi < g.batch_count; ++bi)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        const auto o = static_cast<size_t>((bi * g.m + i) * g.n + j);
        const double mult = sa[static_cast<size_t>(bi * g.m + i)] * sb[static_cast<size_t>(bi * g.n + j)] / sy[o];
        KESTREL_RETURN_IF_ERROR(
            store_quantized(y, static_cast<int64_t>(o),
                            requantize(acc[o], mult, static_cast<int64_t>(zy[o]), range.first, range.second)));
      }
  return Status::ok();
}

Status conv_integer(const IntConvParams& p, const Tensor& x, const Tensor& w, const Tensor* x_zero_point,
                    const Tensor* w_zero_point, Tensor& y) {
  if (y.dtype() != DType::kI32) return core::invalid_argument(str_cat("output must be int32, is ", y.type_string()));
  KESTREL_ASSIGN_OR_RETURN(ConvGeom g, conv_geometry(p, x, w, y));
  int64_t xzp = 0;
  if (x_zero_point) {
    if (x_zero_point->dtype() != x.dtype()) return core::invalid_argument("x_zero_point must have x's dtype");
    KESTREL_ASSIGN_OR_RETURN(xzp, single_value(*x_zero_point, "x_zero_point"));
  }
  if (w_zero_point && w_zero_point->dtype() != w.dtype())
    return core::invalid_argument("w_zero_point must have w's dtype");
  KESTREL_ASSIGN_OR_RETURN(auto wzp, per_channel(w_zero_point, g.m, 0.0, "w_zero_point"));
  auto acc =
      integer_conv(p, g, x, w, xzp, [&](int64_t m) { return static_cast<int64_t>(wzp[static_cast<size_t>(m)]); });
  int32_t* py = y.data<int32_t>();
  for (size_t i = 0; i < acc.size(); ++i) py[i] = wrap_int32(acc[i]);
  return Status::ok();
}

Status qlinear_conv(const IntConvParams& p, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                    const Tensor& w, const Tensor& w_scale, const Tensor& w_zero_point, const Tensor& y_scale,
                    const Tensor& y_zero_point, const Tensor* bias, Tensor& y) {
  if (!is_quantized_8bit(y.dtype()) || y_zero_point.dtype() != y.dtype())
    return core::invalid_argument(str_cat("output and y_zero_point must be u8 or i8 alike, are ", y.type_string(),
                                          " and ", y_zero_point.type_string()));
  if (x_zero_point.dtype() != x.dtype() || w_zero_point.dtype() != w.dtype())
    return core::invalid_argument("zero points must have their input's dtype");
  for (const Tensor* s : {&x_scale, &w_scale, &y_scale})
    if (!core::is_float(s->dtype()))
      return core::invalid_argument(str_cat("scales must be float, got ", s->type_string()));
  KESTREL_ASSIGN_OR_RETURN(ConvGeom g, conv_geometry(p, x, w, y));
  KESTREL_ASSIGN_OR_RETURN(int64_t xzp, single_value(x_zero_point, "x_zero_point"));
  KESTREL_ASSIGN_OR_RETURN(int64_t yzp, single_value(y_zero_point, "y_zero_point"));
  if (x_scale.num_elements() != 1 || y_scale.num_elements() != 1)
    return core::invalid_argument("x_scale and y_scale must have one element");
  KESTREL_ASSIGN_OR_RETURN(auto wzp, per_channel(&w_zero_point, g.m, 0.0, "w_zero_point"));
  KESTREL_ASSIGN_OR_RETURN(auto ws, per_channel(&w_scale, g.m, 1.0, "w_scale"));
  std::vector<int64_t> b(static_cast<size_t>(g.m), 0);
  if (bias) {
    if (bias->dtype() != DType::kI32 || bias->rank() != 1 || bias->dim(0) != g.m)
      return core::invalid_argument(str_cat("bias must be int32[", g.m, "], is ", bias->type_string()));
    b = core::tensor_to_int64s(*bias);
  }
  KESTREL_ASSIGN_OR_RETURN(auto range, quant_range(y.dtype()));
  const double sx = x_scale.element_as_double(0), sy = y_scale.element_as_double(0);
  auto acc =
      integer_conv(p, g, x, w, xzp, [&](int64_t m) { return static_cast<int64_t>(wzp[static_cast<size_t>(m)]); });
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t m = 0; m < g.m; ++m) {
      const double mult = sx * ws[static_cast<size_t>(m)] / sy;
      for (int64_t o = 0; o < g.out_size; ++o) {
        const int64_t i = (n * g.m + m) * g.out_size + o;
        KESTREL_RETURN_IF_ERROR(store_quantized(
            y, i,
            requantize(acc[static_cast<size_t>(i)] + b[static_cast<size_t>(m)], mult, yzp, range.first, range.second)));
      }
    }
  return Status::ok();
}

}  // namespace kestrel::kernels::ref

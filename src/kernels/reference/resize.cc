// Reference Resize and GridSample kernels.
#include "kernels/reference/resize.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "core/str_util.h"
#include "kernels/reference/numeric.h"

namespace kestrel::kernels::ref {

using core::DType;
using core::str_cat;

core::Result<ResizeGeometry> resize_geometry(const core::Dims& in, const std::vector<int64_t>& axes,
                                             const std::vector<float>* scales, const std::vector<int64_t>* sizes,
                                             AspectPolicy policy) {
  const int64_t rank = static_cast<int64_t>(in.size());
  for (int64_t a : axes)
    if (a < 0 || a >= rank)
      return core::invalid_argument(str_cat("Resize axis ", a, " is out of range for rank ", rank));
  if ((scales == nullptr) == (sizes == nullptr))
    return core::invalid_argument("Resize needs exactly one of 'scales' and 'sizes'");
  ResizeGeometry g;
  g.out_dims = in;
  g.scales.assign(in.size(), 1.0);
  const size_t n = axes.size();
  if (scales) {
    if (scales->size() != n)
      return core::invalid_argument(str_cat("Resize 'scales' has ", scales->size(), " values, expected ", n));
    for (size_t i = 0; i < n; ++i) {
      const float s = (*scales)[i];
      if (!(s > 0) || !std::isfinite(s))
        return core::invalid_argument(str_cat("Resize scales must be positive and finite, got ", s));
      const auto a = static_cast<size_t>(axes[i]);
      const float out = std::floor(static_cast<float>(in[a]) * s);
      if (!(out <= static_cast<float>(core::kMaxElements)))
        return core::invalid_argument(str_cat("Resize output size ", out, " is too large"));
      g.out_dims[a] = static_cast<int64_t>(out);
      g.scales[a] = s;
    }
  } else {
    if (sizes->size() != n)
      return core::invalid_argument(str_cat("Resize 'sizes' has ", sizes->size(), " values, expected ", n));
    for (size_t i = 0; i < n; ++i) {
      const int64_t s = (*sizes)[i];
      const auto a = static_cast<size_t>(axes[i]);
      if (s < 0) return core::invalid_argument(str_cat("Resize sizes must not be negative, got ", s));
      if (in[a] == 0 && s > 0)
        return core::invalid_argument(str_cat("Resize cannot grow the empty axis ", a, " to size ", s));
    }
    if (policy == AspectPolicy::kStretch) {
      for (size_t i = 0; i < n; ++i) {
        const auto a = static_cast<size_t>(axes[i]);
        g.out_dims[a] = (*sizes)[i];
        g.scales[a] = in[a] > 0 ? static_cast<double>((*sizes)[i]) / static_cast<double>(in[a]) : 1.0;
      }
    } else {
      // One scale for every axis in `axes`: the largest that fits (not_larger) or the smallest
      // that covers (not_smaller), then each size rounded half up.
      double scale = policy == AspectPolicy::kNotLarger ? std::numeric_limits<double>::infinity() : 0.0;
      for (size_t i = 0; i < n; ++i) {
        const auto a = static_cast<size_t>(axes[i]);
        if (in[a] == 0) continue;
        const double si = static_cast<double>((*sizes)[i]) / static_cast<double>(in[a]);
        scale = policy == AspectPolicy::kNotLarger ? std::min(scale, si) : std::max(scale, si);
      }
      if (!std::isfinite(scale)) scale = 1.0;  // every axis empty
      for (size_t i = 0; i < n; ++i) {
        const auto a = static_cast<size_t>(axes[i]);
        const double out = std::floor(scale * static_cast<double>(in[a]) + 0.5);
        if (!(out <= static_cast<double>(core::kMaxElements)))
          return core::invalid_argument(str_cat("Resize output size ", out, " is too large"));
        g.out_dims[a] = static_cast<int64_t>(out);
        g.scales[a] = scale > 0 ? scale : 1.0;
      }
    }
  }
  KESTREL_RETURN_IF_ERROR(core::checked_num_elements(g.out_dims).status());
  return g;
}

namespace {

using AxisTable = ResizeAxisTable;

// Keys' cubic convolution kernel with coefficient a.
double cubic_kernel(double d, double a) {
  d = std::fabs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

// Input coordinate of output index x along one axis (the ONNX coordinate_transformation_mode
// formulas; the unrounded output length scale * in_len is what align_corners and
// tf_crop_and_resize divide by, as in the ONNX reference).
double source_coordinate(const ResizeParams& p, double x, int64_t in_len, int64_t out_len, double scale, double roi_lo,
                         double roi_hi) {
  const double in_f = static_cast<double>(in_len);
  const double out_f = scale * in_f;
  switch (p.coord) {
    case ResizeCoordMode::kHalfPixel:
      return (x + 0.5) / scale - 0.5;
    case ResizeCoordMode::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(out_len) / out_f;
      const double offset = in_f / 2 * (1 - adjustment);
      return offset + (x + 0.5) / scale - 0.5;
    }
    case ResizeCoordMode::kPytorchHalfPixel:
      return out_len > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case ResizeCoordMode::kAlignCorners:
      return out_len > 1 ? x * (in_f - 1) / (out_f - 1) : 0.0;
    case ResizeCoordMode::kAsymmetric:
      return x / scale;
    case ResizeCoordMode::kTfHalfPixelForNn:
      return (x + 0.5) / scale;
    case ResizeCoordMode::kTfCropAndResize:
      if (out_len > 1) return roi_lo * (in_f - 1) + x * (roi_hi - roi_lo) * (in_f - 1) / (out_f - 1);
      return 0.5 * (roi_lo + roi_hi) * (in_f - 1);
  }
  return 0;
}

int64_t nearest_index(NearestRounding r, double xo) {
  switch (r) {
    case NearestRounding::kRoundPreferFloor:
      return static_cast<int64_t>(std::ceil(xo - 0.5));
    case NearestRounding::kRoundPreferCeil:
      return static_cast<int64_t>(std::floor(xo + 0.5));
    case NearestRounding::kFloor:
      return static_cast<int64_t>(std::floor(xo));
    case NearestRounding::kCeil:
      return static_cast<int64_t>(std::ceil(xo));
  }
  return 0;
}

AxisTable build_axis(const ResizeParams& p, int64_t in_len, int64_t out_len, double scale, double roi_lo, double roi_hi,
                     int64_t stride) {
  AxisTable t;
  t.outside.assign(static_cast<size_t>(out_len), 0);
  const bool linear = p.mode == ResizeMode::kLinear;
  // Antialiasing stretches the filter by 1/scale when shrinking.
  const double s = (p.antialias && p.mode != ResizeMode::kNearest && scale < 1) ? scale : 1.0;
  const double reach = (linear ? 1.0 : 2.0) / s;
  // Coordinates beyond this margin touch only edge values: clamping them keeps the integer
  // conversions below defined whatever the scales or roi.
  const double margin = reach + 2;
  std::vector<std::vector<std::pair<int64_t, double>>> taps(static_cast<size_t>(out_len));
  for (int64_t x = 0; x < out_len; ++x) {
    auto& tx = taps[static_cast<size_t>(x)];
    double xo = source_coordinate(p, static_cast<double>(x), in_len, out_len, scale, roi_lo, roi_hi);
    if (p.coord == ResizeCoordMode::kTfCropAndResize &&
        (!(xo >= 0) || xo > static_cast<double>(in_len - 1))) {  // NaN counts as outside
      t.outside[static_cast<size_t>(x)] = 1;
      t.any_outside = true;
      continue;
    }
    if (std::isnan(xo)) xo = 0;
    xo = std::clamp(xo, -margin, static_cast<double>(in_len) + margin);
    if (p.mode == ResizeMode::kNearest) {
      tx.emplace_back(nearest_index(p.nearest, xo), 1.0);
    } else {
      const auto lo = static_cast<int64_t>(std::floor(xo - reach)) + 1;
      const auto hi = static_cast<int64_t>(std::ceil(xo + reach)) - 1;
      double sum = 0;
      for (int64_t q = lo; q <= hi; ++q) {
        const double d = (static_cast<double>(q) - xo) * s;
        double w = linear ? std::max(0.0, 1 - std::fabs(d)) : cubic_kernel(d, p.cubic_coeff_a);
        if (p.exclude_outside && (q < 0 || q >= in_len)) w = 0;
        tx.emplace_back(q, w);
        sum += w;
      }
      if ((p.antialias || p.exclude_outside) && sum != 0)
        for (auto& [q, w] : tx) w /= sum;
      std::erase_if(tx, [](const auto& qw) { return qw.second == 0; });
    }
    for (auto& [q, w] : tx) q = std::clamp<int64_t>(q, 0, std::max<int64_t>(in_len - 1, 0));
    t.taps = std::max<int64_t>(t.taps, static_cast<int64_t>(tx.size()));
  }
  t.offset.assign(static_cast<size_t>(out_len * t.taps), 0);
  t.weight.assign(static_cast<size_t>(out_len * t.taps), 0.0);
  for (int64_t x = 0; x < out_len; ++x) {
    const auto& tx = taps[static_cast<size_t>(x)];
    for (size_t k = 0; k < tx.size(); ++k) {
      const auto j = static_cast<size_t>(x * t.taps) + k;
      t.offset[j] = tx[k].first * stride;
      t.weight[j] = tx[k].second;
    }
  }
  return t;
}

// Every axis has one tap: a gather. Works on every dtype.
template <class T>
void resize_gather(ResizeTables& rt, const Tensor& x, Tensor& y, double extrapolation) {
  const std::vector<AxisTable>& tabs = rt.axes;
  T fill{};
  if constexpr (std::is_same_v<T, bool>)
    fill = extrapolation != 0;
  else if constexpr (!std::is_same_v<T, std::string>)
    fill = store_as<T>(extrapolation);
  const T* px = x.data<T>();
  T* py = y.data<T>();
  const auto rank = static_cast<size_t>(y.rank());
  const int64_t last = rank ? y.dims().back() : 1;
  std::vector<int64_t>& idx = rt.idx;
  idx.assign(rank, 0);
  for (int64_t o = 0; o < y.num_elements(); o += last) {
    int64_t base = 0;
    bool outside = false;
    for (size_t d = 0; d + 1 < rank; ++d) {
      const AxisTable& t = tabs[d];
      const auto i = static_cast<size_t>(idx[d]);
      outside = outside || (t.any_outside && t.outside[i]);
      base += t.offset[i];
    }
    if (rank == 0) {
      py[0] = px[0];
      break;
    }
    const AxisTable& t = tabs[rank - 1];
    for (int64_t i = 0; i < last; ++i)
      py[o + i] = (outside || (t.any_outside && t.outside[static_cast<size_t>(i)]))
                      ? fill
                      : px[base + t.offset[static_cast<size_t>(i)]];
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < y.dims()[d]) break;
      idx[d] = 0;
    }
  }
}

// Weighted sum over the product of every axis' taps, one output row (last axis) at a time: the
// taps of the outer axes are combined once per row, the last axis' taps per element.
template <class T>
void resize_weighted(ResizeTables& rt, const Tensor& x, Tensor& y, double extrapolation) {
  const std::vector<AxisTable>& tabs = rt.axes;
  using A = AccOf<T>;
  const T fill = store_as<T>(extrapolation);
  const T* px = x.data<T>();
  T* py = y.data<T>();
  const auto rank = static_cast<size_t>(y.rank());
  const int64_t last = y.dims().back();
  const AxisTable& tl = tabs[rank - 1];
  const A* wl_data;
  if constexpr (std::is_same_v<A, float>)
    wl_data = rt.last_weights_f.data();
  else
    wl_data = tl.weight.data();
  std::vector<int64_t>& idx = rt.idx;
  idx.assign(rank - 1, 0);
  // (input offset, weight) of the outer axes' taps
  std::vector<std::pair<int64_t, A>>& outer = [&]() -> auto& {
    if constexpr (std::is_same_v<A, float>)
      return rt.outer_f;
    else
      return rt.outer_d;
  }
  ();
  std::vector<std::pair<int64_t, A>>& next = [&]() -> auto& {
    if constexpr (std::is_same_v<A, float>)
      return rt.next_f;
    else
      return rt.next_d;
  }
  ();
  for (int64_t row = 0; row < y.num_elements() / std::max<int64_t>(last, 1); ++row) {
    outer.assign(1, {0, A(1)});
    bool outside = false;
    for (size_t d = 0; d + 1 < rank; ++d) {
      const AxisTable& t = tabs[d];
      const auto i = static_cast<size_t>(idx[d]);
      outside = outside || (t.any_outside && t.outside[i]);
      next.clear();
      for (const auto& [off, w] : outer)
        for (int64_t k = 0; k < t.taps; ++k) {
          const auto j = i * static_cast<size_t>(t.taps) + static_cast<size_t>(k);
          next.emplace_back(off + t.offset[j], w * static_cast<A>(t.weight[j]));
        }
      outer.swap(next);
    }
    T* out = py + row * last;
    for (int64_t i = 0; i < last; ++i) {
      if (outside || (tl.any_outside && tl.outside[static_cast<size_t>(i)])) {
        out[i] = fill;
        continue;
      }
      const A* w = wl_data + i * tl.taps;
      const int64_t* o = tl.offset.data() + i * tl.taps;
      A acc = 0;
      for (const auto& [base, wo] : outer) {
        A s = 0;
        for (int64_t k = 0; k < tl.taps; ++k) s += w[k] * load_as<A>(px[base + o[k]]);
        acc += wo * s;
      }
      out[i] = store_as<T>(acc);
    }
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < y.dims()[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

Status resize_prepare(const ResizeParams& p, const Tensor& x, const Tensor& y, ResizeTables* t) {
  const int64_t rank = x.rank();
  if (y.rank() != rank || y.dtype() != x.dtype())
    return core::internal_error(str_cat("Resize: output is ", y.type_string(), " for input ", x.type_string()));
  if (static_cast<int64_t>(p.scales.size()) != rank)
    return core::invalid_argument(str_cat("Resize: ", p.scales.size(), " scales for rank ", rank));
  if (!p.roi.empty() && static_cast<int64_t>(p.roi.size()) != 2 * rank)
    return core::invalid_argument(str_cat("Resize: roi has ", p.roi.size(), " values, expected ", 2 * rank));
  t->axes.clear();
  t->single_tap = true;
  if (y.num_elements() == 0) return Status::ok();
  for (int64_t d = 0; d < rank; ++d)
    if (x.dim(d) == 0) return core::invalid_argument(str_cat("Resize: cannot resize the empty axis ", d));
  const core::Dims strides = core::row_major_strides(x.dims());
  for (int64_t d = 0; d < rank; ++d) {
    const auto i = static_cast<size_t>(d);
    const double lo = p.roi.empty() ? 0.0 : p.roi[i];
    const double hi = p.roi.empty() ? 1.0 : p.roi[i + static_cast<size_t>(rank)];
    if (!(p.scales[i] > 0) || !std::isfinite(p.scales[i]))
      return core::invalid_argument(str_cat("Resize: scale ", p.scales[i], " of axis ", d, " is not positive"));
    t->axes.push_back(build_axis(p, x.dim(d), y.dim(d), p.scales[i], lo, hi, strides[i]));
    t->single_tap = t->single_tap && t->axes.back().taps == 1;
  }
  if (rank > 0) t->last_weights_f.assign(t->axes.back().weight.begin(), t->axes.back().weight.end());
  return Status::ok();
}

Status resize_run(ResizeTables& t, const ResizeParams& p, const Tensor& x, Tensor& y) {
  if (y.num_elements() == 0) return Status::ok();
  if (t.axes.size() != static_cast<size_t>(x.rank()) || y.rank() != x.rank() || y.dtype() != x.dtype())
    return core::internal_error("Resize: tables prepared for other shapes");
  if (t.single_tap) {
    // Nearest (or an axis-aligned copy): exact, any dtype.
    if (!core::visit_dtype(x.dtype(), [&](auto tag) { resize_gather<decltype(tag)>(t, x, y, p.extrapolation_value); }))
      return core::invalid_argument("Resize: input has no dtype");
    return Status::ok();
  }
  if (!visit_arith_dtype(x.dtype(), [&](auto tag) { resize_weighted<decltype(tag)>(t, x, y, p.extrapolation_value); }))
    return core::invalid_argument(
        str_cat("Resize: linear and cubic modes need a numeric input, got ", core::dtype_name(x.dtype())));
  return Status::ok();
}

Status resize(const ResizeParams& p, const Tensor& x, Tensor& y) {
  ResizeTables t;
  KESTREL_RETURN_IF_ERROR(resize_prepare(p, x, y, &t));
  return resize_run(t, p, x, y);
}

// ----------------------------------------------------------------------------------------------
// GridSample

namespace {

// Reflects v into [lo, hi] by folding at the borders as often as needed.
template <class G>
G reflect(G v, G lo, G hi) {
  const G range = hi - lo;
  if (!(range > 0)) return lo;
  if (v >= lo && v <= hi) return v;
  const G dx = v < lo ? lo - v : v - hi;
  const G m = std::fmod(dx, 2 * range);  // even fold count: m < range
  const bool even = m < range;
  const G r = even ? m : m - range;
  if (v < lo) return even ? lo + r : hi - r;
  return even ? hi - r : lo + r;
}

struct Tap {
  int64_t offset;  // index * stride; meaningless when !valid
  double weight;
  bool valid;
};

template <class T, class G>
void grid_sample_typed(const GridSampleParams& p, const Tensor& x, const std::vector<G>& grid, Tensor& y) {
  const auto r = static_cast<size_t>(x.rank() - 2);
  const int64_t n_batch = x.dim(0), channels = x.dim(1);
  core::Dims in_sp(x.dims().begin() + 2, x.dims().end());
  const int64_t in_plane = core::num_elements(in_sp);
  const core::Dims in_strides = core::row_major_strides(in_sp);
  int64_t points = 1;
  for (size_t d = 0; d < r; ++d) points *= y.dim(static_cast<int64_t>(d) + 2);
  const T* px = x.data<T>();
  T* py = y.data<T>();
  const double a = -0.75;
  std::vector<std::vector<Tap>> taps(r);
  std::vector<size_t> k(r);
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t pt = 0; pt < points; ++pt) {
      const G* g = grid.data() + (n * points + pt) * static_cast<int64_t>(r);
      for (size_t d = 0; d < r; ++d) {
        const int64_t len = in_sp[d];
        const G lenf = static_cast<G>(len);
        const G lo = p.align_corners ? G(0) : G(-0.5);
        const G hi = p.align_corners ? lenf - 1 : lenf - G(0.5);
        const G gv = g[r - 1 - d];  // grid holds (x, y, z...): the last spatial axis first
        G c = p.align_corners ? (gv + 1) / 2 * (lenf - 1) : ((gv + 1) * lenf - 1) / 2;
        if (!std::isfinite(c)) c = lo - 1;  // NaN or infinite coordinates sample the padding
        if (p.mode == GridSampleMode::kNearest) c = std::nearbyint(c);  // half to even, as PyTorch
        if (c < lo || c > hi) {
          if (p.padding == GridSamplePadding::kBorder)
            c = std::clamp(c, G(0), lenf - 1);
          else if (p.padding == GridSamplePadding::kReflection)
            c = reflect(c, lo, hi);
          else
            c = std::clamp(c, -lenf - 8, 2 * lenf + 8);  // zeros: far outside reads as just outside
        }
        auto make_tap = [&](int64_t q, double w) {
          Tap t{0, w, true};
          if (p.padding == GridSamplePadding::kZeros) {
            t.valid = q >= 0 && q < len;
          } else {
            if (p.padding == GridSamplePadding::kReflection && (q < 0 || q >= len))
              q = static_cast<int64_t>(reflect(static_cast<G>(q), lo, hi));
            q = std::clamp<int64_t>(q, 0, len - 1);
          }
          t.offset = q * in_strides[d];
          return t;
        };
        auto& td = taps[d];
        td.clear();
        const auto c0 = static_cast<int64_t>(std::floor(c));
        const double f = static_cast<double>(c) - static_cast<double>(c0);
        switch (p.mode) {
          case GridSampleMode::kNearest:
            td.push_back(make_tap(static_cast<int64_t>(c), 1.0));
            break;
          case GridSampleMode::kLinear:
            td.push_back(make_tap(c0, 1 - f));
            td.push_back(make_tap(c0 + 1, f));
            break;
          case GridSampleMode::kCubic:
            td.push_back(make_tap(c0 - 1, cubic_kernel(f + 1, a)));
            td.push_back(make_tap(c0, cubic_kernel(f, a)));
            td.push_back(make_tap(c0 + 1, cubic_kernel(1 - f, a)));
            td.push_back(make_tap(c0 + 2, cubic_kernel(2 - f, a)));
            break;
        }
      }
      for (int64_t c = 0; c < channels; ++c) {
        const T* plane = px + (n * channels + c) * in_plane;
        double acc = 0;
        std::fill(k.begin(), k.end(), 0);
        for (;;) {
          double w = 1;
          int64_t off = 0;
          bool valid = true;
          for (size_t d = 0; d < r; ++d) {
            const Tap& t = taps[d][k[d]];
            valid = valid && t.valid;
            w *= t.weight;
            off += t.offset;
          }
          if (valid) acc += w * load_as<double>(plane[off]);
          size_t j = r;
          while (j > 0 && ++k[j - 1] == taps[j - 1].size()) k[--j] = 0;
          if (j == 0) break;
        }
        py[(n * channels + c) * points + pt] = store_as<T>(acc);
      }
    }
  }
}

}  // namespace

Status grid_sample(const GridSampleParams& p, const Tensor& x, const Tensor& grid, Tensor& y) {
  const int64_t rank = x.rank();
  if (rank < 3) return core::invalid_argument(str_cat("GridSample: X must have rank >= 3, is ", x.type_string()));
  const int64_t r = rank - 2;
  if (grid.rank() != rank || grid.dim(0) != x.dim(0) || grid.dim(-1) != r)
    return core::invalid_argument(str_cat("GridSample: grid ", grid.type_string(), " does not fit X ", x.type_string(),
                                          " (expected (N, spatial..., ", r, "))"));
  core::Dims out{x.dim(0), x.dim(1)};
  for (int64_t d = 1; d <= r; ++d) out.push_back(grid.dim(d));
  if (y.dims() != out || y.dtype() != x.dtype())
    return core::internal_error(
        str_cat("GridSample: output is ", y.type_string(), ", expected ", core::dims_to_string(out)));
  if (y.num_elements() == 0) return Status::ok();
  for (int64_t d = 2; d < rank; ++d)
    if (x.dim(d) == 0) return core::invalid_argument("GridSample: X has an empty spatial axis");
  if (!core::is_float(grid.dtype()))
    return core::invalid_argument(str_cat("GridSample: grid must be a float tensor, is ", grid.type_string()));
  const std::vector<double> gd = core::tensor_to_doubles(grid);
  bool ok;
  if (grid.dtype() == DType::kF64) {
    ok = visit_arith_dtype(x.dtype(), [&](auto tag) { grid_sample_typed<decltype(tag), double>(p, x, gd, y); });
  } else {
    // Coordinates of a float grid are computed in float, as PyTorch and the ONNX reference do.
    const std::vector<float> gf(gd.begin(), gd.end());
    ok = visit_arith_dtype(x.dtype(), [&](auto tag) { grid_sample_typed<decltype(tag), float>(p, x, gf, y); });
  }
  if (!ok) return core::invalid_argument(str_cat("GridSample: X must be numeric, is ", x.type_string()));
  return Status::ok();
}

}  // namespace kestrel::kernels::ref

// Reference RoiAlign, MaxRoiPool, MaxUnpool and NonMaxSuppression kernels.
#include "kernels/reference/detection.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "core/str_util.h"
#include "kernels/reference/data_movement.h"
#include "kernels/reference/numeric.h"

namespace kestrel::kernels::ref {

using core::DType;
using core::str_cat;

namespace {

// Samples per bin along one axis; refuses absurd rois instead of looping for ever.
core::Result<int64_t> bin_grid(int64_t sampling_ratio, double roi_size, int64_t out_size) {
  if (sampling_ratio > 0) return sampling_ratio;
  const double g = std::ceil(roi_size / static_cast<double>(out_size));
  if (!(g > 0)) return int64_t{0};  // empty or inverted roi (or NaN): no samples, output 0
  if (g > double{1 << 20}) return core::invalid_argument(str_cat("RoiAlign: roi of size ", roi_size, " is too large"));
  return static_cast<int64_t>(g);
}

struct Sample {
  int64_t pos[4];
  double w[4];
};

template <class T>
Status roi_align_typed(const RoiAlignParams& p, const Tensor& x, const Tensor& rois, const std::vector<int64_t>& bidx,
                       Tensor& y) {
  using A = AccOf<T>;
  const int64_t n_batch = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t oh = p.output_height, ow = p.output_width;
  const T* px = x.data<T>();
  const T* pr = rois.data<T>();
  T* py = y.data<T>();
  const A offset = p.half_pixel ? A(0.5) : A(0);
  const A scale = static_cast<A>(p.spatial_scale);
  std::vector<Sample> samples;
  for (int64_t r = 0; r < rois.dim(0); ++r) {
    const int64_t b = bidx[static_cast<size_t>(r)];
    if (b < 0 || b >= n_batch)
      return core::out_of_range(str_cat("RoiAlign: batch index ", b, " of roi ", r, " is outside [0, ", n_batch, ")"));
    const A start_w = load_as<A>(pr[r * 4 + 0]) * scale - offset;
    const A start_h = load_as<A>(pr[r * 4 + 1]) * scale - offset;
    const A end_w = load_as<A>(pr[r * 4 + 2]) * scale - offset;
    const A end_h = load_as<A>(pr[r * 4 + 3]) * scale - offset;
    A roi_w = end_w - start_w, roi_h = end_h - start_h;
    if (!p.half_pixel) {  // the legacy mode forces malformed rois to 1x1
      roi_w = std::max(roi_w, A(1));
      roi_h = std::max(roi_h, A(1));
    }
    const A bin_h = roi_h / static_cast<A>(oh), bin_w = roi_w / static_cast<A>(ow);
    KESTREL_ASSIGN_OR_RETURN(const int64_t grid_h, bin_grid(p.sampling_ratio, roi_h, oh));
    KESTREL_ASSIGN_OR_RETURN(const int64_t grid_w, bin_grid(p.sampling_ratio, roi_w, ow));
    if (static_cast<double>(oh) * static_cast<double>(ow) * static_cast<double>(grid_h) * static_cast<double>(grid_w) >
        static_cast<double>(int64_t{1} << 28))
      return core::invalid_argument(
          str_cat("RoiAlign: ", grid_h, "x", grid_w, " samples per bin of a ", oh, "x", ow, " output are too many"));
    const A count = static_cast<A>(std::max<int64_t>(grid_h * grid_w, 1));
    // Corner positions and weights, shared by every channel.
    samples.assign(static_cast<size_t>(oh * ow * grid_h * grid_w), Sample{});
    size_t k = 0;
    for (int64_t ph = 0; ph < oh; ++ph)
      for (int64_t pw = 0; pw < ow; ++pw)
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          const A yy = start_h + static_cast<A>(ph) * bin_h +
                       static_cast<A>(static_cast<double>(iy) + 0.5) * bin_h / static_cast<A>(grid_h);
          for (int64_t ix = 0; ix < grid_w; ++ix, ++k) {
            A xx = start_w + static_cast<A>(pw) * bin_w +
                   static_cast<A>(static_cast<double>(ix) + 0.5) * bin_w / static_cast<A>(grid_w);
            A yv = yy;
            Sample& s = samples[k];
            if (!(yv >= -1 && yv <= static_cast<A>(height) && xx >= -1 && xx <= static_cast<A>(width))) continue;
            yv = std::max(yv, A(0));
            xx = std::max(xx, A(0));
            auto y_low = static_cast<int64_t>(yv), x_low = static_cast<int64_t>(xx);
            int64_t y_high, x_high;
            if (y_low >= height - 1) {
              y_high = y_low = height - 1;
              yv = static_cast<A>(y_low);
            } else {
              y_high = y_low + 1;
            }
            if (x_low >= width - 1) {
              x_high = x_low = width - 1;
              xx = static_cast<A>(x_low);
            } else {
              x_high = x_low + 1;
            }
            const A ly = yv - static_cast<A>(y_low), lx = xx - static_cast<A>(x_low);
            const A hy = 1 - ly, hx = 1 - lx;
            s.pos[0] = y_low * width + x_low;
            s.pos[1] = y_low * width + x_high;
            s.pos[2] = y_high * width + x_low;
            s.pos[3] = y_high * width + x_high;
            s.w[0] = hy * hx;
            s.w[1] = hy * lx;
            s.w[2] = ly * hx;
            s.w[3] = ly * lx;
          }
        }
    const int64_t per_bin = grid_h * grid_w;
    for (int64_t c = 0; c < channels; ++c) {
      const T* plane = px + (b * channels + c) * height * width;
      T* out = py + (r * channels + c) * oh * ow;
      for (int64_t bin = 0; bin < oh * ow; ++bin) {
        const Sample* s = samples.data() + bin * per_bin;
        A acc = 0;
        for (int64_t i = 0; i < per_bin; ++i) {
          A v[4];
          for (int j = 0; j < 4; ++j) v[j] = static_cast<A>(s[i].w[j]) * load_as<A>(plane[s[i].pos[j]]);
          if (p.max_mode) {
            const A m = std::max({v[0], v[1], v[2], v[3]});
            acc = i == 0 ? m : std::max(acc, m);
          } else {
            acc += v[0] + v[1] + v[2] + v[3];
          }
        }
        out[bin] = store_as<T>(p.max_mode ? acc : acc / count);
      }
    }
  }
  return Status::ok();
}

template <class T>
Status max_roi_pool_typed(int64_t ph_n, int64_t pw_n, float spatial_scale, const Tensor& x, const Tensor& rois,
                          Tensor& y) {
  using A = AccOf<T>;
  const int64_t n_batch = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const T* px = x.data<T>();
  const T* pr = rois.data<T>();
  T* py = y.data<T>();
  // Rounded roi corners, kept within a range where the int arithmetic below cannot overflow.
  auto corner = [&](T v) {
    const double d = std::round(load_as<double>(v) * static_cast<double>(spatial_scale));
    return static_cast<int64_t>(std::clamp(std::isnan(d) ? 0.0 : d, -1e12, 1e12));
  };
  for (int64_t r = 0; r < rois.dim(0); ++r) {
    const double bd = load_as<double>(pr[r * 5]);
    if (!(bd >= 0 && bd < static_cast<double>(n_batch)))
      return core::out_of_range(
          str_cat("MaxRoiPool: batch index ", bd, " of roi ", r, " is outside [0, ", n_batch, ")"));
    const auto b = static_cast<int64_t>(bd);
    const int64_t start_w = corner(pr[r * 5 + 1]), start_h = corner(pr[r * 5 + 2]);
    const int64_t end_w = corner(pr[r * 5 + 3]), end_h = corner(pr[r * 5 + 4]);
    const int64_t roi_h = std::max<int64_t>(end_h - start_h + 1, 1), roi_w = std::max<int64_t>(end_w - start_w + 1, 1);
    const double bin_h = static_cast<double>(roi_h) / static_cast<double>(ph_n);
    const double bin_w = static_cast<double>(roi_w) / static_cast<double>(pw_n);
    for (int64_t c = 0; c < channels; ++c) {
      const T* plane = px + (b * channels + c) * height * width;
      T* out = py + (r * channels + c) * ph_n * pw_n;
      for (int64_t ph = 0; ph < ph_n; ++ph)
        for (int64_t pw = 0; pw < pw_n; ++pw) {
          auto clip = [](int64_t v, int64_t hi) { return std::min(std::max<int64_t>(v, 0), hi); };
          const int64_t hs = clip(static_cast<int64_t>(std::floor(static_cast<double>(ph) * bin_h)) + start_h, height);
          const int64_t he =
              clip(static_cast<int64_t>(std::ceil(static_cast<double>(ph + 1) * bin_h)) + start_h, height);
          const int64_t ws = clip(static_cast<int64_t>(std::floor(static_cast<double>(pw) * bin_w)) + start_w, width);
          const int64_t we =
              clip(static_cast<int64_t>(std::ceil(static_cast<double>(pw + 1) * bin_w)) + start_w, width);
          A m = 0;
          if (he > hs && we > ws) {
            m = -std::numeric_limits<A>::infinity();
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w) m = std::max(m, load_as<A>(plane[h * width + w]));
          }
          out[ph * pw_n + pw] = store_as<T>(m);
        }
    }
  }
  return Status::ok();
}

template <class F>
struct Box {
  F x0, y0, x1, y1;  // x0 <= x1, y0 <= y1
};

template <class F>
Box<F> read_box(const F* b, bool center) {
  if (center) {
    const F hw = b[2] / 2, hh = b[3] / 2;
    return {b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh};
  }
  // [y1, x1, y2, x2], either diagonal.
  return {std::min(b[1], b[3]), std::min(b[0], b[2]), std::max(b[1], b[3]), std::max(b[0], b[2])};
}

// IoU > threshold, with degenerate boxes (no area) never suppressing.
template <class F>
bool suppresses(const Box<F>& a, const Box<F>& b, F threshold) {
  const F ix0 = std::max(a.x0, b.x0), ix1 = std::min(a.x1, b.x1);
  const F iy0 = std::max(a.y0, b.y0), iy1 = std::min(a.y1, b.y1);
  if (!(ix1 > ix0) || !(iy1 > iy0)) return false;
  const F inter = (ix1 - ix0) * (iy1 - iy0);
  const F area_a = (a.x1 - a.x0) * (a.y1 - a.y0), area_b = (b.x1 - b.x0) * (b.y1 - b.y0);
  const F uni = area_a + area_b - inter;
  if (!(area_a > 0) || !(area_b > 0) || !(uni > 0)) return false;
  return inter / uni > threshold;
}

template <class F>
std::vector<int64_t> nms_typed(const NmsParams& p, const std::vector<F>& boxes, const std::vector<F>& scores,
                               int64_t n_batch, int64_t n_class, int64_t n_box) {
  std::vector<int64_t> out;
  if (p.max_output_boxes_per_class <= 0) return out;
  std::vector<Box<F>> bx(static_cast<size_t>(n_box));
  std::vector<int64_t> order, kept;
  for (int64_t b = 0; b < n_batch; ++b) {
    for (int64_t i = 0; i < n_box; ++i)
      bx[static_cast<size_t>(i)] = read_box(boxes.data() + (b * n_box + i) * 4, p.center_point_box);
    for (int64_t c = 0; c < n_class; ++c) {
      const F* sc = scores.data() + (b * n_class + c) * n_box;
      order.clear();
      for (int64_t i = 0; i < n_box; ++i)
        if (!p.has_score_threshold || sc[i] > static_cast<F>(p.score_threshold)) order.push_back(i);
      // Highest score first; equal scores keep the lower box index first. NaN scores go last.
      std::stable_sort(order.begin(), order.end(), [&](int64_t u, int64_t v) {
        const F su = sc[u], sv = sc[v];
        if (std::isnan(su) || std::isnan(sv)) return !std::isnan(su) && std::isnan(sv);
        return su > sv;
      });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= p.max_output_boxes_per_class) break;
        bool keep = true;
        for (int64_t k : kept)
          if (suppresses(bx[static_cast<size_t>(i)], bx[static_cast<size_t>(k)], static_cast<F>(p.iou_threshold))) {
            keep = false;
            break;
          }
        if (keep) kept.push_back(i);
      }
      for (int64_t k : kept) out.insert(out.end(), {b, c, k});
    }
  }
  return out;
}

}  // namespace

Status roi_align(const RoiAlignParams& p, const Tensor& x, const Tensor& rois, const Tensor& batch_indices, Tensor& y) {
  if (x.rank() != 4) return core::invalid_argument(str_cat("RoiAlign: X must be (N, C, H, W), is ", x.type_string()));
  if (rois.rank() != 2 || rois.dim(1) != 4 || rois.dtype() != x.dtype())
    return core::invalid_argument(
        str_cat("RoiAlign: rois must be (num_rois, 4) of X's dtype, is ", rois.type_string()));
  if (batch_indices.rank() != 1 || batch_indices.dim(0) != rois.dim(0))
    return core::invalid_argument(str_cat("RoiAlign: batch_indices ", batch_indices.type_string(),
                                          " must have one entry per roi (", rois.dim(0), ")"));
  if (p.output_height <= 0 || p.output_width <= 0 || p.sampling_ratio < 0)
    return core::invalid_argument("RoiAlign: output sizes must be positive and sampling_ratio not negative");
  const core::Dims want{rois.dim(0), x.dim(1), p.output_height, p.output_width};
  KESTREL_RETURN_IF_ERROR(check_output(y, want, x.dtype(), "RoiAlign"));
  if (y.num_elements() == 0) return Status::ok();
  if (x.dim(2) == 0 || x.dim(3) == 0) return core::invalid_argument("RoiAlign: X has an empty spatial axis");
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> bidx, read_indices(batch_indices, "RoiAlign batch_indices"));
  Status st = core::invalid_argument(str_cat("RoiAlign: X must be a float tensor, is ", x.type_string()));
  visit_float(x.dtype(), [&](auto tag) { st = roi_align_typed<decltype(tag)>(p, x, rois, bidx, y); });
  return st;
}

Status max_roi_pool(int64_t pooled_h, int64_t pooled_w, float spatial_scale, const Tensor& x, const Tensor& rois,
                    Tensor& y) {
  if (x.rank() != 4) return core::invalid_argument(str_cat("MaxRoiPool: X must be (N, C, H, W), is ", x.type_string()));
  if (rois.rank() != 2 || rois.dim(1) != 5 || rois.dtype() != x.dtype())
    return core::invalid_argument(
        str_cat("MaxRoiPool: rois must be (num_rois, 5) of X's dtype, is ", rois.type_string()));
  if (pooled_h <= 0 || pooled_w <= 0) return core::invalid_argument("MaxRoiPool: pooled_shape must be positive");
  KESTREL_RETURN_IF_ERROR(check_output(y, {rois.dim(0), x.dim(1), pooled_h, pooled_w}, x.dtype(), "MaxRoiPool"));
  Status st = core::invalid_argument(str_cat("MaxRoiPool: X must be a float tensor, is ", x.type_string()));
  visit_float(x.dtype(), [&](auto tag) {
    st = max_roi_pool_typed<decltype(tag)>(pooled_h, pooled_w, spatial_scale, x, rois, y);
  });
  return st;
}

Status max_unpool(const Tensor& x, const Tensor& indices, const core::Dims& unpooled, Tensor& y) {
  if (indices.dims() != x.dims())
    return core::invalid_argument(
        str_cat("MaxUnpool: indices ", indices.type_string(), " must have the shape of X ", x.type_string()));
  if (y.dtype() != x.dtype() || x.dtype() == DType::kString)
    return core::internal_error(str_cat("MaxUnpool: output ", y.type_string(), " for input ", x.type_string()));
  if (unpooled.size() != y.dims().size())
    return core::invalid_argument(str_cat("MaxUnpool: output_shape ", core::dims_to_string(y.dims()),
                                          " must have the rank of the unpooled shape ",
                                          core::dims_to_string(unpooled)));
  for (size_t d = 0; d < unpooled.size(); ++d)
    if (unpooled[d] < 0)
      return core::invalid_argument(
          str_cat("MaxUnpool: the attributes give the negative shape ", core::dims_to_string(unpooled)));
  for (size_t d = 0; d < unpooled.size(); ++d)
    if (y.dims()[d] < unpooled[d])
      return core::invalid_argument(str_cat("MaxUnpool: output_shape ", core::dims_to_string(y.dims()),
                                            " is smaller than the unpooled shape ", core::dims_to_string(unpooled)));
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> idx, read_indices(indices, "MaxUnpool indices"));
  if (y.nbytes() > 0) std::memset(y.raw_data(), 0, y.nbytes());
  const int64_t total = core::num_elements(unpooled);
  const core::Dims ystrides = core::row_major_strides(y.dims());
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] < 0 || idx[i] >= total)
      return core::out_of_range(
          str_cat("MaxUnpool: index ", idx[i], " is outside the unpooled shape ", core::dims_to_string(unpooled)));
    // Same multi-index in y.
    int64_t rest = idx[i], off = 0;
    for (size_t d = unpooled.size(); d-- > 0;) {
      off += (rest % unpooled[d]) * ystrides[d];
      rest /= unpooled[d];
    }
    copy_elements(x, static_cast<int64_t>(i), y, off, 1);
  }
  return Status::ok();
}

core::Result<std::vector<int64_t>> non_max_suppression(const NmsParams& p, const Tensor& boxes, const Tensor& scores) {
  if (boxes.rank() != 3 || boxes.dim(2) != 4)
    return core::invalid_argument(
        str_cat("NonMaxSuppression: boxes must be (batch, boxes, 4), is ", boxes.type_string()));
  if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
    return core::invalid_argument(str_cat("NonMaxSuppression: scores ", scores.type_string(),
                                          " must be (batch, classes, boxes) for boxes ", boxes.type_string()));
  if (!core::is_float(boxes.dtype()) || !core::is_float(scores.dtype()))
    return core::invalid_argument("NonMaxSuppression: boxes and scores must be float tensors");
  if (!(p.iou_threshold >= 0 && p.iou_threshold <= 1))
    return core::invalid_argument(str_cat("NonMaxSuppression: iou_threshold must be in [0, 1], is ", p.iou_threshold));
  const std::vector<double> b = core::tensor_to_doubles(boxes), s = core::tensor_to_doubles(scores);
  if (boxes.dtype() == DType::kF64) return nms_typed<double>(p, b, s, boxes.dim(0), scores.dim(1), boxes.dim(1));
  // Single-precision data is compared in single precision, as ONNX Runtime does.
  return nms_typed<float>(p, std::vector<float>(b.begin(), b.end()), std::vector<float>(s.begin(), s.end()),
                          boxes.dim(0), scores.dim(1), boxes.dim(1));
}

}  // namespace kestrel::kernels::ref

// Reference kernels of the data-rearranging ops.
#include "kernels/reference/transform.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "core/str_util.h"
#include "kernels/reference/data_movement.h"

namespace kestrel::kernels::ref {

using core::Dims;
using core::str_cat;

void strided_copy(const Tensor& x, int64_t base, const Dims& out_dims, const Dims& src_strides, Tensor& y) {
  const int64_t total = core::num_elements(out_dims);
  if (total == 0) return;
  if (out_dims.empty()) {
    copy_elements(x, base, y, 0, 1);
    return;
  }
  const size_t rank = out_dims.size();
  const int64_t inner = out_dims[rank - 1], inner_stride = src_strides[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t src = base;
  visit_storage(x.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S* in = x.data<S>();
    S* out = y.data<S>();
    for (int64_t o = 0; o < total; o += inner) {
      if (inner_stride == 1) {
        copy_elements(x, src, y, o, inner);
      } else {
        for (int64_t i = 0, s = src; i < inner; ++i, s += inner_stride) out[o + i] = in[s];
      }
      // Next row: increment the multi-index over the outer dims.
      for (size_t d = rank - 1; d-- > 0;) {
        src += src_strides[d];
        if (++idx[d] < out_dims[d]) break;
        src -= src_strides[d] * out_dims[d];
        idx[d] = 0;
      }
    }
  });
}

Status transpose(const Tensor& x, std::span<const int64_t> perm_in, Tensor& y) {
  const int64_t rank = x.rank();
  std::vector<int64_t> perm(perm_in.begin(), perm_in.end());
  if (perm.empty())
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != rank)
    return core::invalid_argument(str_cat("Transpose: perm has ", perm.size(), " entries for rank ", rank));
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  Dims out_dims, strides;
  const Dims in_strides = core::row_major_strides(x.dims());
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)])
      return core::invalid_argument(str_cat("Transpose: perm [", core::join(perm), "] is not a permutation"));
    seen[static_cast<size_t>(p)] = true;
    out_dims.push_back(x.dims()[static_cast<size_t>(p)]);
    strides.push_back(in_strides[static_cast<size_t>(p)]);
  }
  KESTREL_RETURN_IF_ERROR(check_output(y, out_dims, x.dtype(), "Transpose"));
  strided_copy(x, 0, out_dims, strides, y);
  return Status::ok();
}

Status concat(std::span<const Tensor* const> xs, int64_t axis, Tensor& y) {
  if (xs.empty()) return core::invalid_argument("Concat: no inputs");
  const Tensor& first = *xs[0];
  KESTREL_ASSIGN_OR_RETURN(axis, core::normalize_axis(axis, first.rank(), "Concat axis"));
  int64_t axis_total = 0;
  for (const Tensor* t : xs) {
    bool same = t->dtype() == first.dtype() && t->rank() == first.rank();
    for (int64_t d = 0; same && d < first.rank(); ++d)
      if (d != axis && t->dims()[static_cast<size_t>(d)] != first.dims()[static_cast<size_t>(d)]) same = false;
    if (!same)
      return core::invalid_argument(
          str_cat("Concat: ", t->type_string(), " does not match ", first.type_string(), " outside axis ", axis));
    axis_total += t->dims()[static_cast<size_t>(axis)];
  }
  // The output check without building the expected dims (a run allocates nothing).
  bool ok = y.defined() && y.dtype() == first.dtype() && y.rank() == first.rank() &&
            (y.num_elements() == 0 || y.raw_data() != nullptr);
  for (int64_t d = 0; ok && d < first.rank(); ++d) ok = y.dim(d) == (d == axis ? axis_total : first.dim(d));
  if (!ok) {
    Dims out_dims = first.dims();
    out_dims[static_cast<size_t>(axis)] = axis_total;
    return check_output(y, out_dims, first.dtype(), "Concat");
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= first.dim(d);
  for (int64_t d = axis + 1; d < first.rank(); ++d) inner *= first.dim(d);
  int64_t dst = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor* t : xs) {
      const int64_t block = t->dims()[static_cast<size_t>(axis)] * inner;
      copy_elements(*t, o * block, y, dst, block);
      dst += block;
    }
  }
  return Status::ok();
}

Status split(const Tensor& x, int64_t axis, std::span<Tensor* const> ys) {
  KESTREL_ASSIGN_OR_RETURN(axis, core::normalize_axis(axis, x.rank(), "Split axis"));
  int64_t total = 0;
  for (Tensor* y : ys) {
    bool same = y->defined() && y->dtype() == x.dtype() && y->rank() == x.rank();
    for (int64_t d = 0; same && d < x.rank(); ++d)
      if (d != axis && y->dims()[static_cast<size_t>(d)] != x.dims()[static_cast<size_t>(d)]) same = false;
    if (!same)
      return core::internal_error(str_cat("Split: output ", y->type_string(), " does not fit input ", x.type_string()));
    total += y->dims()[static_cast<size_t>(axis)];
  }
  if (total != x.dims()[static_cast<size_t>(axis)])
    return core::internal_error(
        str_cat("Split: outputs add up to ", total, " along axis ", axis, " of ", x.type_string()));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dims()[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dims()[static_cast<size_t>(d)];
  int64_t src = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (Tensor* y : ys) {
      const int64_t block = y->dims()[static_cast<size_t>(axis)] * inner;
      copy_elements(x, src, *y, o * block, block);
      src += block;
    }
  }
  return Status::ok();
}

core::Result<std::vector<int64_t>> split_sizes(int64_t dim, const std::optional<std::vector<int64_t>>& split,
                                               std::optional<int64_t> num_outputs, int64_t count) {
  if (split) {
    if (static_cast<int64_t>(split->size()) != count)
      return core::invalid_argument(str_cat("split has ", split->size(), " entries for ", count, " outputs"));
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (s < 0 || s > dim) return core::invalid_argument(str_cat("split [", core::join(*split), "] has a bad size"));
      sum += s;
    }
    if (sum != dim)
      return core::invalid_argument(str_cat("split [", core::join(*split), "] adds up to ", sum, ", not ", dim));
    return *split;
  }
  if (count <= 0) return core::invalid_argument("Split needs at least one output");
  if (num_outputs) {
    if (*num_outputs != count)
      return core::invalid_argument(str_cat("num_outputs is ", *num_outputs, " but the node has ", count, " outputs"));
    const int64_t chunk = dim / count + (dim % count != 0 ? 1 : 0);
    std::vector<int64_t> sizes(static_cast<size_t>(count), chunk);
    sizes.back() = dim - chunk * (count - 1);
    if (sizes.back() < 0)
      return core::invalid_argument(str_cat("cannot split ", dim, " into ", count, " chunks of ", chunk));
    return sizes;
  }
  if (dim % count != 0) return core::invalid_argument(str_cat("cannot split ", dim, " into ", count, " equal parts"));
  return std::vector<int64_t>(static_cast<size_t>(count), dim / count);
}

core::Result<std::vector<SliceAxis>> resolve_slice(const Dims& dims, std::span<const int64_t> starts,
                                                   std::span<const int64_t> ends, std::span<const int64_t> axes,
                                                   std::span<const int64_t> steps) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  const size_t n = starts.size();
  if (ends.size() != n || (!axes.empty() && axes.size() != n) || (!steps.empty() && steps.size() != n))
    return core::invalid_argument(str_cat("Slice: starts, ends, axes and steps have different lengths (", n, ", ",
                                          ends.size(), ", ", axes.size(), ", ", steps.size(), ")"));
  std::vector<SliceAxis> spec(static_cast<size_t>(rank));
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t d = 0; d < rank; ++d) spec[static_cast<size_t>(d)].count = dims[static_cast<size_t>(d)];
  for (size_t i = 0; i < n; ++i) {
    int64_t axis = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    KESTREL_ASSIGN_OR_RETURN(axis, core::normalize_axis(axis, rank, "Slice axis"));
    if (seen[static_cast<size_t>(axis)]) return core::invalid_argument(str_cat("Slice: axis ", axis, " is repeated"));
    seen[static_cast<size_t>(axis)] = true;
    const int64_t step = steps.empty() ? 1 : steps[i];
    if (step == 0) return core::invalid_argument("Slice: step must not be 0");
    const core::SliceRange r = core::slice_range(starts[i], ends[i], step, dims[static_cast<size_t>(axis)]);
    spec[static_cast<size_t>(axis)] = {r.start, step, r.count};
  }
  return spec;
}

Status slice(const Tensor& x, std::span<const SliceAxis> spec, Tensor& y) {
  if (static_cast<int64_t>(spec.size()) != x.rank()) return core::internal_error("Slice: spec rank mismatch");
  Dims out_dims, strides;
  const Dims in_strides = core::row_major_strides(x.dims());
  int64_t base = 0;
  bool empty = false;
  for (size_t d = 0; d < spec.size(); ++d) {
    out_dims.push_back(spec[d].count);
    empty |= spec[d].count == 0;
    base += spec[d].start * in_strides[d];
    // With two or more elements |step| < dim, so the product stays small; else the stride is unused.
    strides.push_back(spec[d].count > 1 ? spec[d].step * in_strides[d] : 0);
  }
  KESTREL_RETURN_IF_ERROR(check_output(y, out_dims, x.dtype(), "Slice"));
  if (!empty) strided_copy(x, base, out_dims, strides, y);
  return Status::ok();
}

Status tile(const Tensor& x, std::span<const int64_t> repeats, Tensor& y) {
  const int64_t rank = x.rank();
  if (static_cast<int64_t>(repeats.size()) != rank)
    return core::invalid_argument(str_cat("Tile: repeats has ", repeats.size(), " entries for rank ", rank));
  Dims out_dims;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t r = repeats[static_cast<size_t>(d)], dim = x.dims()[static_cast<size_t>(d)];
    if (r < 0) return core::invalid_argument("Tile: repeats must not be negative");
    if (dim > 0 && r > core::kMaxElements / dim) return core::out_of_range("Tile: output is too large");
    out_dims.push_back(dim * r);
  }
  KESTREL_RETURN_IF_ERROR(check_output(y, out_dims, x.dtype(), "Tile"));
  const int64_t total = y.num_elements();
  if (total == 0) return Status::ok();
  if (rank == 0) {
    copy_elements(x, 0, y, 0, 1);
    return Status::ok();
  }
  // Row by row over the output; each row is the input's last-dim row repeated.
  const Dims in_strides = core::row_major_strides(x.dims());
  const size_t last = static_cast<size_t>(rank - 1);
  const int64_t in_row = x.dims()[last], out_row = out_dims[last];
  std::vector<int64_t> idx(last, 0);
  for (int64_t o = 0; o < total; o += out_row) {
    int64_t src = 0;
    for (size_t d = 0; d < last; ++d) src += (idx[d] % x.dims()[d]) * in_strides[d];
    for (int64_t r = 0; r < out_row; r += in_row) copy_elements(x, src, y, o + r, in_row);
    for (size_t d = last; d-- > 0;) {
      if (++idx[d] < out_dims[d]) break;
      idx[d] = 0;
    }
  }
  return Status::ok();
}

core::Result<std::vector<int64_t>> full_pads(int64_t rank, std::span<const int64_t> pads,
                                             std::optional<std::vector<int64_t>> axes) {
  std::vector<int64_t> ax;
  if (axes) {
    ax = *axes;
  } else {
    for (int64_t i = 0; i < rank; ++i) ax.push_back(i);
  }
  const size_t n = ax.size();
  if (pads.size() != 2 * n)
    return core::invalid_argument(str_cat("Pad: pads has ", pads.size(), " values, expected ", 2 * n));
  std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < n; ++i) {
    KESTREL_ASSIGN_OR_RETURN(int64_t a, core::normalize_axis(ax[i], rank, "Pad axis"));
    if (seen[static_cast<size_t>(a)]) return core::invalid_argument(str_cat("Pad: axis ", a, " is repeated"));
    seen[static_cast<size_t>(a)] = true;
    full[static_cast<size_t>(a)] = pads[i];
    full[static_cast<size_t>(a + rank)] = pads[i + n];
  }
  return full;
}

namespace {

// Output size of one padded dim (cropping first); errors for over-cropping and hostile sizes.
core::Result<int64_t> pad_dim(int64_t dim, int64_t b, int64_t e, PadMode mode) {
  if (b > core::kMaxElements || e > core::kMaxElements || b < -core::kMaxElements || e < -core::kMaxElements)
    return core::out_of_range(str_cat("Pad: pads ", b, ", ", e, " are too large"));
  const int64_t n = dim - std::max<int64_t>(-b, 0) - std::max<int64_t>(-e, 0);
  if (n < 0) return core::invalid_argument(str_cat("Pad: pads ", b, ", ", e, " crop more than the dim ", dim));
  const int64_t pad_b = std::max<int64_t>(b, 0), pad_e = std::max<int64_t>(e, 0);
  if ((pad_b > 0 || pad_e > 0) && n == 0 && mode != PadMode::kConstant)
    return core::invalid_argument("Pad: reflect, edge and wrap modes cannot pad an empty dim");
  return pad_b + n + pad_e;
}

// For one dim (already checked by pad_dim): the source index of every output position
// (-1 = the constant value).
std::vector<int64_t> pad_map(int64_t dim, int64_t b, int64_t e, PadMode mode) {
  const int64_t crop_b = std::max<int64_t>(-b, 0), crop_e = std::max<int64_t>(-e, 0);
  const int64_t pad_b = std::max<int64_t>(b, 0), pad_e = std::max<int64_t>(e, 0);
  const int64_t n = dim - crop_b - crop_e;
  const int64_t out = pad_b + n + pad_e;
  std::vector<int64_t> map(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const int64_t j = o - pad_b;
    int64_t s;
    if (j >= 0 && j < n) {
      s = j;
    } else {
      switch (mode) {
        case PadMode::kConstant:
          s = -1;
          break;
        case PadMode::kEdge:
          s = j < 0 ? 0 : n - 1;
          break;
        case PadMode::kWrap:
          s = ((j % n) + n) % n;
          break;
        case PadMode::kReflect:
        default: {
          if (n == 1) {
            s = 0;
            break;
          }
          const int64_t period = 2 * (n - 1);
          const int64_t m = ((j % period) + period) % period;
          s = m < n ? m : period - m;
          break;
        }
      }
    }
    map[static_cast<size_t>(o)] = s < 0 ? -1 : s + crop_b;
  }
  return map;
}

}  // namespace

Status pad(const Tensor& x, std::span<const int64_t> pads, PadMode mode, const Tensor* value, Tensor& y) {
  const int64_t rank = x.rank();
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return core::invalid_argument(str_cat("Pad: pads has ", pads.size(), " values for rank ", rank));
  if (value && (value->dtype() != x.dtype() || value->num_elements() != 1))
    return core::invalid_argument(str_cat("Pad: constant value ", value->type_string(), " must be one ",
                                          core::dtype_name(x.dtype()), " element"));
  Dims out_dims;
  for (int64_t d = 0; d < rank; ++d) {
    KESTREL_ASSIGN_OR_RETURN(int64_t o, pad_dim(x.dims()[static_cast<size_t>(d)], pads[static_cast<size_t>(d)],
                                                pads[static_cast<size_t>(d + rank)], mode));
    out_dims.push_back(o);
  }
  KESTREL_RETURN_IF_ERROR(check_output(y, out_dims, x.dtype(), "Pad"));
  std::vector<std::vector<int64_t>> maps;
  for (int64_t d = 0; d < rank; ++d)
    maps.push_back(pad_map(x.dims()[static_cast<size_t>(d)], pads[static_cast<size_t>(d)],
                           pads[static_cast<size_t>(d + rank)], mode));
  const int64_t total = y.num_elements();
  if (total == 0) return Status::ok();
  const Dims in_strides = core::row_major_strides(x.dims());
  visit_storage(x.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S fill = value ? value->data<S>()[0] : S{};
    const S* in = x.data<S>();
    S* out = y.data<S>();
    if (rank == 0) {
      out[0] = in[0];
      return;
    }
    const size_t last = static_cast<size_t>(rank - 1);
    const std::vector<int64_t>& inner_map = maps[last];
    const int64_t row = out_dims[last];
    std::vector<int64_t> idx(last, 0);
    for (int64_t o = 0; o < total; o += row) {
      int64_t src = 0;
      bool outside = false;
      for (size_t d = 0; d < last; ++d) {
        const int64_t s = maps[d][static_cast<size_t>(idx[d])];
        if (s < 0) outside = true;
        src += s * in_strides[d];
      }
      for (int64_t i = 0; i < row; ++i) {
        const int64_t s = inner_map[static_cast<size_t>(i)];
        out[o + i] = (outside || s < 0) ? fill : in[src + s];
      }
      for (size_t d = last; d-- > 0;) {
        if (++idx[d] < out_dims[d]) break;
        idx[d] = 0;
      }
    }
  });
  return Status::ok();
}

namespace {

// Rearranges x (viewed with dims `view`) by `perm` into y (viewed with the permuted dims).
Status permute_view(const Tensor& x, const Dims& view, std::span<const int64_t> perm, Tensor& y) {
  KESTREL_ASSIGN_OR_RETURN(Tensor xv, x.reshaped(view));
  Dims out_view;
  for (int64_t p : perm) out_view.push_back(view[static_cast<size_t>(p)]);
  KESTREL_ASSIGN_OR_RETURN(Tensor yv, y.reshaped(out_view));
  return transpose(xv, perm, yv);
}

}  // namespace

Status depth_to_space(const Tensor& x, int64_t b, bool crd, Tensor& y) {
  if (x.rank() != 4 || b <= 0)
    return core::invalid_argument(
        str_cat("DepthToSpace: needs a 4-D input and blocksize > 0, got ", x.type_string(), " and ", b));
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (b > c || c % (b * b) != 0)
    return core::invalid_argument(
        str_cat("DepthToSpace: channels ", c, " are not a multiple of blocksize^2 ", b, "^2"));
  const int64_t oc = c / (b * b);
  KESTREL_RETURN_IF_ERROR(check_output(y, {n, oc, h * b, w * b}, x.dtype(), "DepthToSpace"));
  if (crd) {
    const int64_t perm[] = {0, 1, 4, 2, 5, 3};
    return permute_view(x, {n, oc, b, b, h, w}, perm, y);
  }
  const int64_t perm[] = {0, 3, 4, 1, 5, 2};
  return permute_view(x, {n, b, b, oc, h, w}, perm, y);
}

Status space_to_depth(const Tensor& x, int64_t b, Tensor& y) {
  if (x.rank() != 4 || b <= 0)
    return core::invalid_argument(
        str_cat("SpaceToDepth: needs a 4-D input and blocksize > 0, got ", x.type_string(), " and ", b));
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (h % b != 0 || w % b != 0)
    return core::invalid_argument(str_cat("SpaceToDepth: spatial dims ", h, "x", w, " are not multiples of ", b));
  KESTREL_RETURN_IF_ERROR(check_output(y, {n, c * b * b, h / b, w / b}, x.dtype(), "SpaceToDepth"));
  const int64_t perm[] = {0, 3, 5, 1, 2, 4};
  return permute_view(x, {n, c, h / b, b, w / b, b}, perm, y);
}

Status trilu(const Tensor& x, int64_t k, bool upper, Tensor& y) {
  if (x.rank() < 2) return core::invalid_argument(str_cat("Trilu: input must have rank >= 2, is ", x.type_string()));
  KESTREL_RETURN_IF_ERROR(check_output(y, x.dims(), x.dtype(), "Trilu"));
  const int64_t rows = x.dim(-2), cols = x.dim(-1);
  const int64_t mats = rows * cols == 0 ? 0 : x.num_elements() / (rows * cols);
  visit_storage(x.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S* in = x.data<S>();
    S* out = y.data<S>();
    for (int64_t m = 0; m < mats; ++m) {
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t i = (m * rows + r) * cols + c;
          const int64_t diff = c - r;  // both small: no overflow; k may be anything
          const bool keep = upper ? diff >= k : diff <= k;
          out[i] = keep ? in[i] : S{};
        }
      }
    }
  });
  return Status::ok();
}

}  // namespace kestrel::kernels::ref

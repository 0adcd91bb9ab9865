// Schemas of the resampling ops: Resize (canonical opset-19 form: X, roi?, scales?, sizes?; the
// importer rewrites Upsample and Resize-10 into it) and GridSample (opset-20+ N-D form).
#include <cmath>
#include <string>

#include "core/str_util.h"
#include "ir/ops/axis_helpers.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

constexpr uint64_t kScalesAndSizes = (uint64_t{1} << 2) | (uint64_t{1} << 3);

// A string attribute that must take one of `allowed` values.
core::Result<std::string> enum_attr(const InferContext& ctx, const char* name, const char* def,
                                    std::initializer_list<const char*> allowed) {
  KESTREL_ASSIGN_OR_RETURN(std::string v, ctx.attr_string(name, std::string(def)));
  for (const char* a : allowed)
    if (v == a) return v;
  return ctx.fail("attribute '", name, "' has unsupported value '", v, "'");
}

Status bool_attr(const InferContext& ctx, const char* name) {
  KESTREL_ASSIGN_OR_RETURN(int64_t v, ctx.attr_int(name, 0));
  if (v != 0 && v != 1) return ctx.fail("attribute '", name, "' must be 0 or 1, is ", v);
  return Status::ok();
}

// Input i is given and not an empty tensor (exporters write empty initializers for unused
// optional inputs such as Resize's roi and scales).
bool given(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return false;
  const Shape& s = ctx.input_shape(i);
  return !(s.fully_known() && s.num_elements() == 0);
}

Status infer_resize(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(std::string mode, enum_attr(ctx, "mode", "nearest", {"nearest", "linear", "cubic"}));
  KESTREL_ASSIGN_OR_RETURN(std::string ctm,
                           enum_attr(ctx, "coordinate_transformation_mode", "half_pixel",
                                     {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                      "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"}));
  KESTREL_RETURN_IF_ERROR(
      enum_attr(ctx, "nearest_mode", "round_prefer_floor", {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
          .status());
  KESTREL_ASSIGN_OR_RETURN(std::string policy, enum_attr(ctx, "keep_aspect_ratio_policy", "stretch",
                                                         {"stretch", "not_larger", "not_smaller"}));
  KESTREL_RETURN_IF_ERROR(bool_attr(ctx, "antialias"));
  KESTREL_RETURN_IF_ERROR(bool_attr(ctx, "exclude_outside"));
  KESTREL_RETURN_IF_ERROR(ctx.attr_float("cubic_coeff_a", -0.75f).status());
  KESTREL_RETURN_IF_ERROR(ctx.attr_float("extrapolation_value", 0.f).status());
  const DType dt = ctx.input_dtype(0);
  if (mode != "nearest" && (dt == DType::kString || dt == DType::kBool))
    return ctx.fail("mode '", mode, "' needs a numeric input, got ", core::dtype_name(dt));
  for (size_t i : {size_t{1}, size_t{2}})
    if (ctx.has_input(i)) KESTREL_RETURN_IF_ERROR(expect_float(ctx, i));
  if (ctx.has_input(3) && ctx.input_dtype(3) != DType::kI64 && ctx.input_dtype(3) != DType::kUndefined)
    return ctx.fail("sizes (input 3) must be int64, is ", core::dtype_name(ctx.input_dtype(3)));
  const bool has_scales = given(ctx, 2), has_sizes = given(ctx, 3);
  if (!has_scales && !has_sizes) return ctx.fail("needs one of 'scales' (input 2) and 'sizes' (input 3)");
  if (has_scales && has_sizes) {
    // Either may still turn out empty at run time when its shape is not known yet.
    if (ctx.input_shape(2).fully_known() && ctx.input_shape(3).fully_known())
      return ctx.fail("takes 'scales' or 'sizes', not both");
    const Shape& in = ctx.input_shape(0);
    ctx.set_output(0, dt, in.rank_known() ? unknown_dims(in.rank()) : Shape::unknown_rank());
    return Status::ok();
  }

  const Shape& in = ctx.input_shape(0);
  if (!in.rank_known()) {
    ctx.set_output(0, dt, Shape::unknown_rank());
    return Status::ok();
  }
  const int64_t rank = in.rank();
  std::vector<int64_t> axes;
  if (ctx.node().has_attr("axes")) {
    KESTREL_ASSIGN_OR_RETURN(auto raw, ctx.attr_ints("axes"));
    KESTREL_ASSIGN_OR_RETURN(axes, infer_axes(ctx, raw, rank));
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  const auto n = static_cast<int64_t>(axes.size());
  const size_t which = has_scales ? 2 : 3;
  const char* what = has_scales ? "scales" : "sizes";
  KESTREL_ASSIGN_OR_RETURN(auto len, vector_length(ctx, which, what));
  if (len && *len != n) return ctx.fail(what, " has ", *len, " values, expected ", n);
  if (ctm == "tf_crop_and_resize" && given(ctx, 1)) {
    KESTREL_ASSIGN_OR_RETURN(auto roi_len, vector_length(ctx, 1, "roi"));
    if (roi_len && *roi_len != 2 * n) return ctx.fail("roi has ", *roi_len, " values, expected ", 2 * n);
  }

  Shape out = in;
  for (int64_t a : axes) out[a] = Dim::unknown();
  const core::Tensor* v = ctx.input_value(which);
  if (v && (v->raw_data() != nullptr || v->num_elements() == 0)) {
    if (has_scales) {
      const std::vector<double> s = core::tensor_to_doubles(*v);
      for (int64_t i = 0; i < n; ++i) {
        const auto sf = static_cast<float>(s[static_cast<size_t>(i)]);
        if (!(sf > 0) || !std::isfinite(sf)) return ctx.fail("scales must be positive and finite, got ", sf);
        const Dim& d = in[axes[static_cast<size_t>(i)]];
        // floor(in * scale) in float, as ONNX shape inference computes it.
        if (d.known())
          out[axes[static_cast<size_t>(i)]] =
              Dim(static_cast<int64_t>(std::floor(std::min(static_cast<float>(d.value) * sf, 1e18f))));
      }
    } else {
      const std::vector<int64_t> s = core::tensor_to_int64s(*v);
      for (int64_t x : s)
        if (x < 0) return ctx.fail("sizes must not be negative, got [", core::join(s), "]");
      if (policy == "stretch") {
        for (int64_t i = 0; i < n; ++i) out[axes[static_cast<size_t>(i)]] = Dim(s[static_cast<size_t>(i)]);
      } else {
        bool all_known = true;
        double scale = policy == "not_larger" ? INFINITY : 0.0;
        for (int64_t i = 0; i < n; ++i) {
          const Dim& d = in[axes[static_cast<size_t>(i)]];
          if (!d.known()) {
            all_known = false;
            continue;
          }
          if (d.value == 0) continue;
          const double si = static_cast<double>(s[static_cast<size_t>(i)]) / static_cast<double>(d.value);
          scale = policy == "not_larger" ? std::min(scale, si) : std::max(scale, si);
        }
        if (!std::isfinite(scale)) scale = 1.0;
        if (all_known)
          for (int64_t a : axes)
            out[a] =
                Dim(static_cast<int64_t>(std::floor(std::min(scale * static_cast<double>(in[a].value) + 0.5, 1e18))));
      }
    }
    for (int64_t a : axes)
      if (in[a].known() && in[a].value == 0 && out[a].known() && out[a].value > 0)
        return ctx.fail("cannot grow the empty axis ", a, " of ", in.to_string());
  }
  KESTREL_RETURN_IF_ERROR(check_known_dims(ctx, out));
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status infer_grid_sample(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(
      enum_attr(ctx, "mode", "linear", {"linear", "nearest", "cubic", "bilinear", "bicubic"}).status());
  KESTREL_RETURN_IF_ERROR(enum_attr(ctx, "padding_mode", "zeros", {"zeros", "border", "reflection"}).status());
  KESTREL_RETURN_IF_ERROR(bool_attr(ctx, "align_corners"));
  const DType dt = ctx.input_dtype(0);
  if (dt == DType::kString || dt == DType::kBool) return ctx.fail("X must be numeric, is ", core::dtype_name(dt));
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 1));
  const Shape& x = ctx.input_shape(0);
  const Shape& g = ctx.input_shape(1);
  if (x.rank_known() && x.rank() < 3) return ctx.fail("X must have rank >= 3 (N, C, spatial...), has ", x.to_string());
  int64_t rank = x.rank_known() ? x.rank() : g.rank();
  if (rank < 0) {
    ctx.set_output(0, dt, Shape::unknown_rank());
    return Status::ok();
  }
  if (g.rank_known() && g.rank() != rank)
    return ctx.fail("grid ", g.to_string(), " must have the rank of X (", rank, ")");
  if (g.rank_known() && g[rank - 1].known() && g[rank - 1].value != rank - 2)
    return ctx.fail("the last axis of grid ", g.to_string(), " must hold ", rank - 2, " coordinates");
  std::vector<Dim> out(static_cast<size_t>(rank));
  if (x.rank_known()) {
    out[0] = x[0];
    out[1] = x[1];
  }
  if (g.rank_known()) {
    if (x.rank_known() && x[0].known() && g[0].known() && x[0].value != g[0].value)
      return ctx.fail("X ", x.to_string(), " and grid ", g.to_string(), " have different batch sizes");
    if (!out[0].known()) out[0] = g[0];
    for (int64_t d = 1; d + 1 < rank; ++d) out[static_cast<size_t>(d + 1)] = g[d];
  }
  ctx.set_output(0, dt, Shape(std::move(out)));
  return Status::ok();
}

}  // namespace

void register_resize_ops(OpRegistry& r) {
  add_op(r, "Resize", 1, 4, 1, 1, infer_resize, "resamples X to new sizes (nearest / linear / cubic interpolation)",
         kScalesAndSizes);
  add_op(r, "GridSample", 2, 2, 1, 1, infer_grid_sample, "samples X at the normalized coordinates in grid");
}

}  // namespace kestrel::ir

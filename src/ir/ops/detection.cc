// Schemas of the detection / segmentation head ops: RoiAlign, MaxRoiPool, MaxUnpool (output_shape
// as a value input) and NonMaxSuppression (data-dependent output shape).
#include <string>

#include "core/str_util.h"
#include "ir/ops/axis_helpers.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

Status expect_index_type(const InferContext& ctx, size_t i, const char* what) {
  const DType t = ctx.input_dtype(i);
  if (t != DType::kUndefined && t != DType::kI64 && t != DType::kI32)
    return ctx.fail(what, " (input ", i, ") must be int64, is ", core::dtype_name(t));
  return Status::ok();
}

// rois: (num_rois, cols) with X's dtype; returns num_rois.
core::Result<Dim> check_rois(const InferContext& ctx, int64_t cols) {
  const Shape& r = ctx.input_shape(1);
  if (ctx.input_dtype(1) != ctx.input_dtype(0) && ctx.input_dtype(1) != DType::kUndefined &&
      ctx.input_dtype(0) != DType::kUndefined)
    return ctx.fail("rois must have X's dtype ", core::dtype_name(ctx.input_dtype(0)), ", is ",
                    core::dtype_name(ctx.input_dtype(1)));
  if (!r.rank_known()) return Dim::unknown();
  if (r.rank() != 2 || (r[1].known() && r[1].value != cols))
    return ctx.fail("rois must have shape (num_rois, ", cols, "), has ", r.to_string());
  return r[0];
}

Status infer_roi_align(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  KESTREL_RETURN_IF_ERROR(expect_rank(ctx, 0, 4));
  KESTREL_RETURN_IF_ERROR(expect_index_type(ctx, 2, "batch_indices"));
  KESTREL_ASSIGN_OR_RETURN(std::string ctm,
                           ctx.attr_string("coordinate_transformation_mode", std::string("half_pixel")));
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return ctx.fail("unsupported coordinate_transformation_mode '", ctm, "'");
  KESTREL_ASSIGN_OR_RETURN(std::string mode, ctx.attr_string("mode", std::string("avg")));
  if (mode != "avg" && mode != "max") return ctx.fail("unsupported mode '", mode, "'");
  KESTREL_ASSIGN_OR_RETURN(int64_t oh, ctx.attr_int("output_height", 1));
  KESTREL_ASSIGN_OR_RETURN(int64_t ow, ctx.attr_int("output_width", 1));
  KESTREL_ASSIGN_OR_RETURN(int64_t sr, ctx.attr_int("sampling_ratio", 0));
  KESTREL_RETURN_IF_ERROR(ctx.attr_float("spatial_scale", 1.f).status());
  if (oh <= 0 || ow <= 0) return ctx.fail("output_height and output_width must be positive, are ", oh, " and ", ow);
  if (sr < 0) return ctx.fail("sampling_ratio must not be negative, is ", sr);
  KESTREL_ASSIGN_OR_RETURN(Dim rois, check_rois(ctx, 4));
  const Shape& bi = ctx.input_shape(2);
  if (bi.rank_known()) {
    if (bi.rank() != 1) return ctx.fail("batch_indices must be 1-D, has shape ", bi.to_string());
    if (rois.known() && bi[0].known() && rois.value != bi[0].value)
      return ctx.fail("rois has ", rois.value, " rows but batch_indices has ", bi[0].value, " entries");
    if (!rois.known()) rois = bi[0];
  }
  const Shape& x = ctx.input_shape(0);
  ctx.set_output(0, ctx.input_dtype(0), Shape({rois, x.rank_known() ? x[1] : Dim::unknown(), Dim(oh), Dim(ow)}));
  return Status::ok();
}

Status infer_max_roi_pool(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  KESTREL_RETURN_IF_ERROR(expect_rank(ctx, 0, 4));
  KESTREL_ASSIGN_OR_RETURN(auto pooled, ctx.attr_ints("pooled_shape"));
  KESTREL_RETURN_IF_ERROR(ctx.attr_float("spatial_scale", 1.f).status());
  if (pooled.size() != 2 || pooled[0] <= 0 || pooled[1] <= 0)
    return ctx.fail("pooled_shape must be two positive sizes, is [", core::join(pooled), "]");
  KESTREL_ASSIGN_OR_RETURN(Dim rois, check_rois(ctx, 5));
  const Shape& x = ctx.input_shape(0);
  ctx.set_output(0, ctx.input_dtype(0),
                 Shape({rois, x.rank_known() ? x[1] : Dim::unknown(), Dim(pooled[0]), Dim(pooled[1])}));
  return Status::ok();
}

Status infer_max_unpool(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (dt == DType::kString) return ctx.fail("X must be numeric");
  KESTREL_RETURN_IF_ERROR(expect_index_type(ctx, 1, "I"));
  KESTREL_ASSIGN_OR_RETURN(auto kernel, ctx.attr_ints("kernel_shape"));
  const auto k = static_cast<int64_t>(kernel.size());
  KESTREL_ASSIGN_OR_RETURN(auto strides, ctx.attr_ints("strides", std::vector<int64_t>(kernel.size(), 1)));
  KESTREL_ASSIGN_OR_RETURN(auto pads, ctx.attr_ints("pads", std::vector<int64_t>(kernel.size() * 2, 0)));
  if (static_cast<int64_t>(strides.size()) != k || static_cast<int64_t>(pads.size()) != 2 * k)
    return ctx.fail("kernel_shape, strides and pads must cover the same ", k, " spatial axes");
  for (int64_t i = 0; i < k; ++i) {
    if (kernel[static_cast<size_t>(i)] <= 0 || strides[static_cast<size_t>(i)] <= 0)
      return ctx.fail("kernel_shape and strides must be positive");
    if (pads[static_cast<size_t>(i)] < 0 || pads[static_cast<size_t>(i + k)] < 0)
      return ctx.fail("pads must not be negative");
  }
  const Shape& x = ctx.input_shape(0);
  if (x.rank_known() && x.rank() != k + 2)
    return ctx.fail("X ", x.to_string(), " must have rank ", k + 2, " for a ", k, "-D kernel_shape");
  const Shape& ind = ctx.input_shape(1);
  if (x.fully_known() && ind.fully_known() && x.concrete() != ind.concrete())
    return ctx.fail("I ", ind.to_string(), " must have the shape of X ", x.to_string());
  if (ctx.has_input(2)) {
    KESTREL_ASSIGN_OR_RETURN(auto len, vector_length(ctx, 2, "output_shape"));
    if (len && *len != k + 2) return ctx.fail("output_shape has ", *len, " values, expected ", k + 2);
    if (auto v = input_ints(ctx, 2)) {
      std::vector<Dim> out;
      for (int64_t d : *v) {
        if (d < 0) return ctx.fail("output_shape must not be negative, is [", core::join(*v), "]");
        out.emplace_back(d);
      }
      Shape s(std::move(out));
      KESTREL_RETURN_IF_ERROR(check_known_dims(ctx, s));
      ctx.set_output(0, dt, std::move(s));
    } else {
      ctx.set_output(0, dt, unknown_dims(k + 2));
    }
    return Status::ok();
  }
  if (!x.rank_known()) {
    ctx.set_output(0, dt, unknown_dims(k + 2));
    return Status::ok();
  }
  Shape out = x;
  for (int64_t i = 0; i < k; ++i) {
    const Dim& d = x[i + 2];
    if (!d.known()) continue;
    const auto u = static_cast<size_t>(i);
    const int64_t v = (d.value - 1) * strides[u] + kernel[u] - pads[u] - pads[u + static_cast<size_t>(k)];
    if (v < 0) return ctx.fail("the output size of spatial axis ", i, " would be negative (", v, ")");
    out[i + 2] = Dim(v);
  }
  KESTREL_RETURN_IF_ERROR(check_known_dims(ctx, out));
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status infer_nms(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 1));
  KESTREL_RETURN_IF_ERROR(expect_rank(ctx, 0, 3));
  KESTREL_RETURN_IF_ERROR(expect_rank(ctx, 1, 3));
  KESTREL_ASSIGN_OR_RETURN(int64_t cpb, ctx.attr_int("center_point_box", 0));
  if (cpb != 0 && cpb != 1) return ctx.fail("center_point_box must be 0 or 1, is ", cpb);
  if (ctx.has_input(2)) KESTREL_RETURN_IF_ERROR(expect_index_type(ctx, 2, "max_output_boxes_per_class"));
  for (size_t i : {size_t{3}, size_t{4}})
    if (ctx.has_input(i)) KESTREL_RETURN_IF_ERROR(expect_float(ctx, i));
  const Shape& b = ctx.input_shape(0);
  const Shape& s = ctx.input_shape(1);
  if (b.rank_known() && b[2].known() && b[2].value != 4)
    return ctx.fail("boxes must have shape (batch, boxes, 4), has ", b.to_string());
  if (b.rank_known() && s.rank_known()) {
    if ((b[0].known() && s[0].known() && b[0].value != s[0].value) ||
        (b[1].known() && s[2].known() && b[1].value != s[2].value))
      return ctx.fail("scores ", s.to_string(), " must be (batch, classes, boxes) for boxes ", b.to_string());
  }
  for (size_t i : {size_t{2}, size_t{3}, size_t{4}}) {
    if (!ctx.has_input(i)) continue;
    const Shape& t = ctx.input_shape(i);
    if (t.fully_known() && t.num_elements() != 1)
      return ctx.fail("input ", i, " must hold one value, has shape ", t.to_string());
  }
  ctx.set_output(0, DType::kI64, Shape({Dim::unknown(), Dim(3)}));
  return Status::ok();
}

}  // namespace

void register_detection_ops(OpRegistry& r) {
  add_op(r, "RoiAlign", 3, 3, 1, 1, infer_roi_align, "bilinear-sampled average / max pooling of regions of interest");
  add_op(r, "MaxRoiPool", 2, 2, 1, 1, infer_max_roi_pool, "max pooling of regions of interest (Fast R-CNN)");
  add_op(r, "MaxUnpool", 2, 3, 1, 1, infer_max_unpool, "scatters pooled values back to their MaxPool indices",
         uint64_t{1} << 2);
  OpSchema nms;
  nms.name = "NonMaxSuppression";
  nms.min_inputs = 2;
  nms.max_inputs = 5;
  nms.infer = infer_nms;
  nms.data_dependent_shape = true;
  nms.doc = "greedy per-class selection of boxes by score, suppressing overlaps above iou_threshold";
  r.add(std::move(nms));
}

}  // namespace kestrel::ir

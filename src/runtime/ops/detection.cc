// Kernel bindings for RoiAlign, MaxRoiPool, MaxUnpool and NonMaxSuppression: attributes -> reference
// kernel parameters; NonMaxSuppression allocates its output once the selection is known.
#include "kernels/reference/detection.h"

#include <cstring>
#include <string>

#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

namespace {

// The single value of an optional scalar input, or `def` when the input is absent.
template <class T>
Result<T> optional_scalar(const KernelContext& ctx, size_t i, T def, const char* what) {
  const Tensor* t = ctx.input_or_null(i);
  if (!t || (t->num_elements() == 0 && t->rank() > 0)) return def;
  if (t->num_elements() != 1)
    return core::invalid_argument(
        core::str_cat("NonMaxSuppression: ", what, " must hold one value, is ", t->type_string()));
  if constexpr (std::is_integral_v<T>)
    return t->element_as_int64(0);
  else
    return static_cast<T>(t->element_as_double(0));
}

}  // namespace

void register_detection_kernels(KernelRegistry& r) {
  r.add("RoiAlign", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    ref::RoiAlignParams p;
    KESTREL_ASSIGN_OR_RETURN(std::string mode, info.node.attr_string("mode", std::string("avg")));
    KESTREL_ASSIGN_OR_RETURN(std::string ctm,
                             info.node.attr_string("coordinate_transformation_mode", std::string("half_pixel")));
    if (mode != "avg" && mode != "max") return info.fail("unsupported mode '", mode, "'");
    if (ctm != "half_pixel" && ctm != "output_half_pixel")
      return info.fail("unsupported coordinate_transformation_mode '", ctm, "'");
    p.max_mode = mode == "max";
    p.half_pixel = ctm == "half_pixel";
    KESTREL_ASSIGN_OR_RETURN(p.output_height, info.node.attr_int("output_height", 1));
    KESTREL_ASSIGN_OR_RETURN(p.output_width, info.node.attr_int("output_width", 1));
    KESTREL_ASSIGN_OR_RETURN(p.sampling_ratio, info.node.attr_int("sampling_ratio", 0));
    KESTREL_ASSIGN_OR_RETURN(p.spatial_scale, info.node.attr_float("spatial_scale", 1.f));
    return make_kernel([p](KernelContext& ctx) -> Status {
      return ref::roi_align(p, ctx.input(0), ctx.input(1), ctx.input(2), ctx.output(0));
    });
  });

  r.add("MaxRoiPool", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(auto pooled, info.node.attr_ints("pooled_shape"));
    KESTREL_ASSIGN_OR_RETURN(float scale, info.node.attr_float("spatial_scale", 1.f));
    if (pooled.size() != 2) return info.fail("pooled_shape must have two values");
    return make_kernel([pooled, scale](KernelContext& ctx) -> Status {
      return ref::max_roi_pool(pooled[0], pooled[1], scale, ctx.input(0), ctx.input(1), ctx.output(0));
    });
  });

  r.add("MaxUnpool", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(auto kernel, info.node.attr_ints("kernel_shape"));
    KESTREL_ASSIGN_OR_RETURN(auto strides, info.node.attr_ints("strides", std::vector<int64_t>(kernel.size(), 1)));
    KESTREL_ASSIGN_OR_RETURN(auto pads, info.node.attr_ints("pads", std::vector<int64_t>(kernel.size() * 2, 0)));
    if (strides.size() != kernel.size() || pads.size() != 2 * kernel.size())
      return info.fail("kernel_shape, strides and pads must cover the same spatial axes");
    return make_kernel([kernel, strides, pads](KernelContext& ctx) -> Status {
      const Tensor& x = ctx.input(0);
      const size_t k = kernel.size();
      if (x.rank() != static_cast<int64_t>(k) + 2)
        return core::invalid_argument(
            core::str_cat("MaxUnpool: X ", x.type_string(), " does not fit a ", k, "-D kernel"));
      // The shape MaxPool's indices refer to; output_shape (the allocated output) may be larger.
      core::Dims unpooled{x.dim(0), x.dim(1)};
      for (size_t i = 0; i < k; ++i)
        unpooled.push_back((x.dim(static_cast<int64_t>(i) + 2) - 1) * strides[i] + kernel[i] - pads[i] - pads[i + k]);
      return ref::max_unpool(x, ctx.input(1), unpooled, ctx.output(0));
    });
  });

  r.add("NonMaxSuppression", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t cpb, info.node.attr_int("center_point_box", 0));
    return make_kernel([cpb](KernelContext& ctx) -> Status {
      ref::NmsParams p;
      p.center_point_box = cpb != 0;
      KESTREL_ASSIGN_OR_RETURN(p.max_output_boxes_per_class,
                               optional_scalar<int64_t>(ctx, 2, 0, "max_output_boxes_per_class"));
      KESTREL_ASSIGN_OR_RETURN(p.iou_threshold, optional_scalar<float>(ctx, 3, 0.f, "iou_threshold"));
      const Tensor* st = ctx.input_or_null(4);
      p.has_score_threshold = st && st->num_elements() > 0;
      KESTREL_ASSIGN_OR_RETURN(p.score_threshold, optional_scalar<float>(ctx, 4, 0.f, "score_threshold"));
      KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> sel, ref::non_max_suppression(p, ctx.input(0), ctx.input(1)));
      const auto n = static_cast<int64_t>(sel.size() / 3);
      KESTREL_RETURN_IF_ERROR(ctx.allocate_output(0, {n, 3}));
      if (!sel.empty()) std::memcpy(ctx.output(0).raw_data(), sel.data(), sel.size() * sizeof(int64_t));
      return Status::ok();
    });
  });
}

}  // namespace kestrel::runtime

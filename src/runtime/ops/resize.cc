// Kernel bindings for Resize and GridSample: attributes -> reference kernel parameters; Resize's
// scales / sizes / roi inputs are read at run time (they may be graph inputs).
#include "kernels/reference/resize.h"

#include <string>
#include <utility>
#include <vector>

#include "runtime/kernel.h"
#include "runtime/ops/run_key.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

namespace {

// A present, non-empty optional input (empty tensors stand for "not given").
const Tensor* given(const KernelContext& ctx, size_t i) {
  const Tensor* t = ctx.input_or_null(i);
  return t && t->num_elements() > 0 ? t : nullptr;
}

Result<ref::ResizeParams> resize_params(const KernelCreateInfo& info) {
  const ir::Node& n = info.node;
  ref::ResizeParams p;
  KESTREL_ASSIGN_OR_RETURN(std::string mode, n.attr_string("mode", std::string("nearest")));
  if (mode == "nearest")
    p.mode = ref::ResizeMode::kNearest;
  else if (mode == "linear")
    p.mode = ref::ResizeMode::kLinear;
  else if (mode == "cubic")
    p.mode = ref::ResizeMode::kCubic;
  else
    return info.fail("unsupported mode '", mode, "'");
  KESTREL_ASSIGN_OR_RETURN(std::string ctm, n.attr_string("coordinate_transformation_mode", std::string("half_pixel")));
  const std::pair<const char*, ref::ResizeCoordMode> ctms[] = {
      {"half_pixel", ref::ResizeCoordMode::kHalfPixel},
      {"half_pixel_symmetric", ref::ResizeCoordMode::kHalfPixelSymmetric},
      {"pytorch_half_pixel", ref::ResizeCoordMode::kPytorchHalfPixel},
      {"align_corners", ref::ResizeCoordMode::kAlignCorners},
      {"asymmetric", ref::ResizeCoordMode::kAsymmetric},
      {"tf_half_pixel_for_nn", ref::ResizeCoordMode::kTfHalfPixelForNn},
      {"tf_crop_and_resize", ref::ResizeCoordMode::kTfCropAndResize},
  };
  bool found = false;
  for (const auto& [name, m] : ctms)
    if (ctm == name) {
      p.coord = m;
      found = true;
    }
  if (!found) return info.fail("unsupported coordinate_transformation_mode '", ctm, "'");
  KESTREL_ASSIGN_OR_RETURN(std::string nm, n.attr_string("nearest_mode", std::string("round_prefer_floor")));
  if (nm == "round_prefer_floor")
    p.nearest = ref::NearestRounding::kRoundPreferFloor;
  else if (nm == "round_prefer_ceil")
    p.nearest = ref::NearestRounding::kRoundPreferCeil;
  else if (nm == "floor")
    p.nearest = ref::NearestRounding::kFloor;
  else if (nm == "ceil")
    p.nearest = ref::NearestRounding::kCeil;
  else
    return info.fail("unsupported nearest_mode '", nm, "'");
  KESTREL_ASSIGN_OR_RETURN(float a, n.attr_float("cubic_coeff_a", -0.75f));
  KESTREL_ASSIGN_OR_RETURN(int64_t exclude, n.attr_int("exclude_outside", 0));
  KESTREL_ASSIGN_OR_RETURN(float extrapolation, n.attr_float("extrapolation_value", 0.f));
  KESTREL_ASSIGN_OR_RETURN(int64_t antialias, n.attr_int("antialias", 0));
  p.cubic_coeff_a = a;
  p.exclude_outside = exclude != 0;
  p.extrapolation_value = extrapolation;
  p.antialias = antialias != 0;
  return p;
}

// Resolves axes, scales / sizes and roi for this call's inputs into p and builds the tap tables.
Status prepare_resize(const ref::ResizeParams& params, bool has_axes, const std::vector<int64_t>& raw_axes,
                      ref::AspectPolicy policy, KernelContext& ctx, ref::ResizeParams* out, ref::ResizeTables* tables) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> axes;
  if (has_axes) {
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int64_t a : raw_axes) {
      KESTREL_ASSIGN_OR_RETURN(int64_t na, core::normalize_axis(a, rank, "Resize axis"));
      if (seen[static_cast<size_t>(na)]) return core::invalid_argument("Resize axes repeat an axis");
      seen[static_cast<size_t>(na)] = true;
      axes.push_back(na);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  const Tensor* scales_t = given(ctx, 2);
  const Tensor* sizes_t = given(ctx, 3);
  std::vector<float> scales;
  std::vector<int64_t> sizes;
  if (scales_t)
    for (double s : core::tensor_to_doubles(*scales_t)) scales.push_back(static_cast<float>(s));
  if (sizes_t) sizes = core::tensor_to_int64s(*sizes_t);
  KESTREL_ASSIGN_OR_RETURN(ref::ResizeGeometry geo, ref::resize_geometry(x.dims(), axes, scales_t ? &scales : nullptr,
                                                                         sizes_t ? &sizes : nullptr, policy));
  if (ctx.output(0).dims() != geo.out_dims)
    return core::internal_error(core::str_cat("Resize: output allocated as ", ctx.output(0).type_string(),
                                              ", computed ", core::dims_to_string(geo.out_dims)));
  ref::ResizeParams p = params;
  p.scales = std::move(geo.scales);
  if (const Tensor* roi = given(ctx, 1); roi && p.coord == ref::ResizeCoordMode::kTfCropAndResize) {
    const std::vector<double> v = core::tensor_to_doubles(*roi);
    const size_t n = axes.size();
    if (v.size() != 2 * n)
      return core::invalid_argument(core::str_cat("Resize roi has ", v.size(), " values, expected ", 2 * n));
    p.roi.assign(static_cast<size_t>(2 * rank), 0.0);
    for (int64_t d = 0; d < rank; ++d) p.roi[static_cast<size_t>(rank + d)] = 1.0;
    for (size_t i = 0; i < n; ++i) {
      p.roi[static_cast<size_t>(axes[i])] = v[i];
      p.roi[static_cast<size_t>(rank + axes[i])] = v[n + i];
    }
  }
  KESTREL_RETURN_IF_ERROR(ref::resize_prepare(p, x, ctx.output(0), tables));
  *out = std::move(p);
  return Status::ok();
}

}  // namespace

void register_resize_kernels(KernelRegistry& r) {
  r.add("Resize", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ref::ResizeParams params, resize_params(info));
    const bool has_axes = info.node.has_attr("axes");
    KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> raw_axes, info.node.attr_ints("axes", std::vector<int64_t>{}));
    KESTREL_ASSIGN_OR_RETURN(std::string policy_name,
                             info.node.attr_string("keep_aspect_ratio_policy", std::string("stretch")));
    ref::AspectPolicy policy = ref::AspectPolicy::kStretch;
    if (policy_name == "not_larger")
      policy = ref::AspectPolicy::kNotLarger;
    else if (policy_name == "not_smaller")
      policy = ref::AspectPolicy::kNotSmaller;
    else if (policy_name != "stretch")
      return info.fail("unsupported keep_aspect_ratio_policy '", policy_name, "'");
    // Output dims, scales and tap tables depend on x's and y's shapes and the roi / scales / sizes
    // values only: derived again when those change (a static-shape run allocates nothing).
    struct Cache {
      RunKey key;
      ref::ResizeParams p;
      ref::ResizeTables tables;
    };
    return make_kernel([params, has_axes, raw_axes, policy, c = Cache()](KernelContext& ctx) mutable -> Status {
      const Tensor& x = ctx.input(0);
      c.key.begin().add_dims(x.dims()).add_dims(ctx.output(0).dims()).add(static_cast<int64_t>(x.dtype()));
      for (size_t i = 1; i <= 3; ++i) c.key.add_raw(given(ctx, i));
      if (!c.key.same()) {
        KESTREL_RETURN_IF_ERROR(prepare_resize(params, has_axes, raw_axes, policy, ctx, &c.p, &c.tables));
        c.key.commit();
      }
      return ref::resize_run(c.tables, c.p, x, ctx.output(0));
    });
  });

  r.add("GridSample", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    ref::GridSampleParams p;
    KESTREL_ASSIGN_OR_RETURN(std::string mode, info.node.attr_string("mode", std::string("linear")));
    if (mode == "linear" || mode == "bilinear")
      p.mode = ref::GridSampleMode::kLinear;
    else if (mode == "nearest")
      p.mode = ref::GridSampleMode::kNearest;
    else if (mode == "cubic" || mode == "bicubic")
      p.mode = ref::GridSampleMode::kCubic;
    else
      return info.fail("unsupported mode '", mode, "'");
    KESTREL_ASSIGN_OR_RETURN(std::string pad, info.node.attr_string("padding_mode", std::string("zeros")));
    if (pad == "zeros")
      p.padding = ref::GridSamplePadding::kZeros;
    else if (pad == "border")
      p.padding = ref::GridSamplePadding::kBorder;
    else if (pad == "reflection")
      p.padding = ref::GridSamplePadding::kReflection;
    else
      return info.fail("unsupported padding_mode '", pad, "'");
    KESTREL_ASSIGN_OR_RETURN(int64_t ac, info.node.attr_int("align_corners", 0));
    p.align_corners = ac != 0;
    return make_kernel(
        [p](KernelContext& ctx) -> Status { return ref::grid_sample(p, ctx.input(0), ctx.input(1), ctx.output(0)); });
  });
}

}  // namespace kestrel::runtime

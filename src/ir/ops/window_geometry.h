// Sliding-window geometry shared by Conv, ConvTranspose and the pools: reading auto_pad / strides /
// dilations / pads / ceil_mode and computing each spatial axis' output size and effective pads.
// Used by shape inference and by the kernel bindings, so both agree on every corner case.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"

namespace kestrel::ir {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

// Window attributes per spatial axis; pads are [begin_0, begin_1, ..., end_0, end_1, ...].
struct WindowAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;
  bool ceil_mode = false;

  size_t spatial() const { return kernel.size(); }
  int64_t dilated_kernel(size_t i) const { return (kernel[i] - 1) * dilations[i] + 1; }
};

// Reads auto_pad, strides, dilations, pads and (when `with_ceil_mode`) ceil_mode for a window of
// `kernel.size()` spatial axes and checks them (lengths, strides/dilations >= 1, pads >= 0,
// kernel >= 1). Errors name the node. Values too large to compute with are rejected. `prefix`
// precedes every attribute name (kestrel.FusedConv's pool_strides, pool_pads, ...).
core::Result<WindowAttrs> read_window_attrs(const Node& n, std::vector<int64_t> kernel, bool with_ceil_mode,
                                            std::string_view prefix = "");

// What kestrel.FusedConv's MaxPool needs beyond read_window_attrs' checks: 2-D, NOTSET padding,
// no dilation, each pad smaller than the kernel. Errors name the attributes with `prefix`, not the
// node (the fusion pass checks a MaxPool with it before fusing).
core::Status check_fused_max_pool(const WindowAttrs& w, std::string_view prefix);

// Output size and effective pads of one spatial axis.
struct AxisWindow {
  int64_t out = 0;
  int64_t pad_begin = 0;
  int64_t pad_end = 0;
};

// Conv / pool geometry (the window slides over the padded input). NOTSET and VALID use floor, or
// ceil with ceil_mode, where the last window must start inside the input or the left padding.
// SAME_*: out = ceil(in / stride), pads split evenly with the odd one at the end (UPPER) or the
// beginning (LOWER). Fails with a message (no node name) when no window fits.
core::Result<AxisWindow> forward_window(const WindowAttrs& a, size_t axis, int64_t in);

// ConvTranspose geometry. `output_shape` (spatial sizes) overrides pads: the total padding is
// split with the odd one at the end for SAME_UPPER and at the beginning otherwise (ONNX spec).
// SAME_*: out = in * stride. Otherwise out = stride*(in-1) + output_padding + dilated_kernel - pads.
core::Result<AxisWindow> transpose_window(const WindowAttrs& a, size_t axis, int64_t in, int64_t output_padding,
                                          std::optional<int64_t> output_shape);

// LpPool / GlobalLpPool's `p` (default 2, must be >= 1). Opsets before 11 stored it as a float;
// an integral float is accepted, anything else is Unsupported.
core::Result<int64_t> read_lp_pool_p(const Node& n);

// ConvTranspose's output_padding (default zeros) and output_shape (spatial sizes; a full
// N, C, spatial... list is accepted too), checked against the spatial rank. Defined in conv.cc.
core::Status read_conv_transpose_extras(const Node& n, size_t spatial, std::vector<int64_t>* output_padding,
                                        std::optional<std::vector<int64_t>>* output_shape);

// kestrel.FusedConv's optional 2-D MaxPool after the activation (docs/fused_ops.md): nullopt when
// the node has no `pool_kernel_shape`; else the window of pool_kernel_shape (2 values),
// pool_strides (2, default 1), pool_pads (4, default 0) and pool_ceil_mode (default 0), read by
// read_window_attrs and checked by check_fused_max_pool (errors name the node). Defined in conv.cc.
core::Result<std::optional<WindowAttrs>> read_fused_max_pool(const Node& n);

// kestrel.FusedPointwiseDepthwise's depthwise window (docs/fused_ops.md): `kernel_shape` (required,
// 2 equal values), `strides` (2 equal values, default 1), `pads` (4, default 0); auto_pad, if
// present, NOTSET and dilations, if present, 1. Errors name the node. Defined in conv.cc.
core::Result<WindowAttrs> read_pointwise_depthwise_window(const Node& n);

}  // namespace kestrel::ir

// Window geometry of the integer convolutions (ConvInteger, QLinearConv) on top of the shared
// sliding-window helpers (window_geometry.h), used by their shape inference and kernel binding.
#pragma once

#include <cstdint>
#include <vector>

#include "core/shape.h"
#include "core/status.h"
#include "ir/graph.h"
#include "ir/ops/window_geometry.h"

namespace kestrel::ir {

// The window attributes of one node, read and checked once. Without kernel_shape the kernel
// comes from W's spatial dims when the geometry is computed.
struct IntConvWindow {
  WindowAttrs window;  // kernel is a stand-in of 1s when kernel_from_w
  bool kernel_from_w = true;
  int64_t group = 1;
};
core::Result<IntConvWindow> read_int_conv_window(const Node& n, size_t spatial);

struct IntConvGeometry {
  std::vector<int64_t> strides, dilations, pads_begin;
  core::Dims out;  // output spatial sizes
  int64_t group = 1;
};

// Output sizes and effective pads for input spatial sizes `in` and W's spatial sizes `kernel`
// (Conv rules, see forward_window). Error messages do not name the node; callers add it.
core::Result<IntConvGeometry> int_conv_geometry(const IntConvWindow& w, const core::Dims& in, const core::Dims& kernel);

}  // namespace kestrel::ir

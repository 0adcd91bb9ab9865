// Window geometry of the integer convolutions (ConvInteger, QLinearConv), shared by their shape
// inference and their kernel binding so both agree on auto_pad / pads / strides / dilations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/shape.h"
#include "core/status.h"
#include "ir/graph.h"

namespace kestrel::ir {

// The window attributes as written on the node (absent lists are empty: defaults depend on rank).
struct IntConvAttrs {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
  int64_t group = 1;
};
core::Result<IntConvAttrs> read_int_conv_attrs(const Node& n);

struct IntConvGeometry {
  std::vector<int64_t> strides, dilations, pads_begin, pads_end;
  core::Dims out;  // output spatial sizes
  int64_t group = 1;
};

// Checks the attributes against input spatial sizes `in` and kernel spatial sizes `kernel` and
// computes the output sizes (ONNX Conv rules: floor((in + pads - dilated_kernel) / stride) + 1;
// SAME_*: ceil(in / stride) with the odd padding at the end (UPPER) or the beginning (LOWER);
// VALID: no padding). Error messages do not name the node; callers add it.
core::Result<IntConvGeometry> int_conv_geometry(const IntConvAttrs& a, const core::Dims& in, const core::Dims& kernel);

}  // namespace kestrel::ir

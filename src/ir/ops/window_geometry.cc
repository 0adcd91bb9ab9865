// Sliding-window geometry for Conv, ConvTranspose and pooling.
#include "ir/ops/window_geometry.h"

#include <algorithm>

#include "core/str_util.h"

namespace kestrel::ir {

using core::Result;
using core::str_cat;

namespace {

// Window sizes, strides and pads beyond this are certainly hostile; keeping them small keeps every
// product below int64 overflow.
constexpr int64_t kMaxWindowValue = int64_t{1} << 31;

core::Status fail(const Node& n, const std::string& msg) {
  return core::invalid_model(n.describe() + ": " + msg);
}

core::Status check_list(const Node& n, const std::string& name, const std::vector<int64_t>& v, size_t want,
                        int64_t min) {
  if (v.size() != want) return fail(n, str_cat("attribute '", name, "' has ", v.size(), " values, expected ", want));
  for (int64_t x : v)
    if (x < min || x > kMaxWindowValue)
      return fail(n, str_cat("attribute '", name, "' has value ", x, ", expected ", min, "..", kMaxWindowValue));
  return core::Status::ok();
}

}  // namespace

Result<WindowAttrs> read_window_attrs(const Node& n, std::vector<int64_t> kernel, bool with_ceil_mode,
                                      std::string_view prefix) {
  const std::string p(prefix);
  WindowAttrs a;
  const size_t s = kernel.size();
  KESTREL_RETURN_IF_ERROR(check_list(n, p + "kernel_shape", kernel, s, 1));
  a.kernel = std::move(kernel);
  KESTREL_ASSIGN_OR_RETURN(std::string ap, n.attr_string(p + "auto_pad", std::string("NOTSET")));
  if (ap == "NOTSET" || ap.empty())
    a.auto_pad = AutoPad::kNotSet;
  else if (ap == "SAME_UPPER")
    a.auto_pad = AutoPad::kSameUpper;
  else if (ap == "SAME_LOWER")
    a.auto_pad = AutoPad::kSameLower;
  else if (ap == "VALID")
    a.auto_pad = AutoPad::kValid;
  else
    return fail(n, str_cat(p, "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '", ap, "'"));
  KESTREL_ASSIGN_OR_RETURN(a.strides, n.attr_ints(p + "strides", std::vector<int64_t>(s, 1)));
  KESTREL_RETURN_IF_ERROR(check_list(n, p + "strides", a.strides, s, 1));
  KESTREL_ASSIGN_OR_RETURN(a.dilations, n.attr_ints(p + "dilations", std::vector<int64_t>(s, 1)));
  KESTREL_RETURN_IF_ERROR(check_list(n, p + "dilations", a.dilations, s, 1));
  KESTREL_ASSIGN_OR_RETURN(a.pads, n.attr_ints(p + "pads", std::vector<int64_t>(2 * s, 0)));
  KESTREL_RETURN_IF_ERROR(check_list(n, p + "pads", a.pads, 2 * s, 0));
  for (size_t i = 0; i < s; ++i)
    if (a.dilated_kernel(i) > kMaxWindowValue)
      return fail(n, str_cat("dilated kernel extent along spatial axis ", i, " is too large"));
  if (with_ceil_mode) {
    KESTREL_ASSIGN_OR_RETURN(int64_t c, n.attr_int(p + "ceil_mode", 0));
    if (c != 0 && c != 1) return fail(n, str_cat(p, "ceil_mode must be 0 or 1, got ", c));
    a.ceil_mode = c == 1;
  }
  return a;
}

core::Status check_fused_max_pool(const WindowAttrs& w, std::string_view prefix) {
  const std::string p(prefix);
  if (w.spatial() != 2) return core::invalid_argument(str_cat(p, "kernel_shape: the MaxPool must be 2-D"));
  if (w.auto_pad != AutoPad::kNotSet) return core::invalid_argument(str_cat(p, "auto_pad must be NOTSET"));
  for (int64_t d : w.dilations)
    if (d != 1) return core::invalid_argument(str_cat(p, "dilations must be 1"));
  // ONNX MaxPool: each pad smaller than the kernel (a window of padding only has no maximum).
  for (size_t i = 0; i < 4; ++i)
    if (w.pads[i] >= w.kernel[i % 2])
      return core::invalid_argument(str_cat(p, "pads must be smaller than ", p, "kernel_shape"));
  return core::Status::ok();
}

Result<int64_t> read_lp_pool_p(const Node& n) {
  int64_t p = 2;
  const Attribute* a = n.attr("p");
  if (a && a->is<float>()) {
    float f = a->get<float>();
    if (!(f >= 1.0f && f <= 64.0f) || f != static_cast<float>(static_cast<int64_t>(f)))
      return core::unsupported(str_cat(n.describe(), ": p = ", f, " is not supported (integers 1..64)"));
    p = static_cast<int64_t>(f);
  } else {
    KESTREL_ASSIGN_OR_RETURN(p, n.attr_int("p", 2));
  }
  if (p < 1) return fail(n, str_cat("p must be >= 1, got ", p));
  return p;
}

Result<AxisWindow> forward_window(const WindowAttrs& a, size_t axis, int64_t in) {
  const int64_t s = a.strides[axis];
  const int64_t k = a.dilated_kernel(axis);
  AxisWindow w;
  if (in < 0) return core::invalid_argument(str_cat("negative input size ", in));
  if (a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower) {
    w.out = (in + s - 1) / s;
    int64_t total = std::max<int64_t>(0, (w.out - 1) * s + k - in);
    int64_t small = total / 2;
    w.pad_begin = a.auto_pad == AutoPad::kSameUpper ? small : total - small;
    w.pad_end = total - w.pad_begin;
    return w;
  }
  if (a.auto_pad == AutoPad::kNotSet) {
    w.pad_begin = a.pads[axis];
    w.pad_end = a.pads[axis + a.spatial()];
  }
  const int64_t padded = in + w.pad_begin + w.pad_end;
  if (padded < k)
    return core::invalid_argument(str_cat("kernel extent ", k, " along spatial axis ", axis,
                                          " is larger than the padded input (", in, " + ", w.pad_begin, " + ",
                                          w.pad_end, " = ", padded, ")"));
  const int64_t span = padded - k;
  w.out = (a.ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // A ceil-mode window that would start in the right padding is dropped (PyTorch / ONNX rule).
  if (a.ceil_mode && (w.out - 1) * s >= in + w.pad_begin) --w.out;
  return w;
}

Result<AxisWindow> transpose_window(const WindowAttrs& a, size_t axis, int64_t in, int64_t output_padding,
                                    std::optional<int64_t> output_shape) {
  const int64_t s = a.strides[axis];
  const int64_t k = a.dilated_kernel(axis);
  AxisWindow w;
  if (in < 0) return core::invalid_argument(str_cat("negative input size ", in));
  if (in > 0 && in - 1 > core::kMaxElements / s)
    return core::invalid_argument(str_cat("output along spatial axis ", axis, " would be too large"));
  const int64_t full = in == 0 ? 0 : s * (in - 1) + output_padding + k;  // output before cropping
  const bool same = a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower;
  if (output_shape || same) {
    w.out = output_shape ? *output_shape : in * s;
    if (w.out < 0) return core::invalid_argument(str_cat("negative output_shape ", w.out));
    // A requested size larger than the full output gets zeros (plus bias) at the end.
    int64_t total = std::max<int64_t>(0, full - w.out);
    int64_t small = total / 2;
    w.pad_begin = a.auto_pad == AutoPad::kSameUpper ? small : total - small;
    w.pad_end = total - w.pad_begin;
    return w;
  }
  if (a.auto_pad == AutoPad::kNotSet) {
    w.pad_begin = a.pads[axis];
    w.pad_end = a.pads[axis + a.spatial()];
  }
  w.out = full - w.pad_begin - w.pad_end;
  if (w.out < 0)
    return core::invalid_argument(str_cat("pads (", w.pad_begin, " + ", w.pad_end, ") along spatial axis ", axis,
                                          " exceed the output size ", full));
  return w;
}

}  // namespace kestrel::ir

// ONNX TensorProto data-type codes, which ONNX-semantics attributes (Cast's `to`, ...) carry.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace kestrel::ir {

// kUndefined for codes Kestrel does not support (complex, float8).
core::DType dtype_from_onnx(int64_t code);
// 0 for kUndefined.
int64_t dtype_to_onnx(core::DType t);

}  // namespace kestrel::ir

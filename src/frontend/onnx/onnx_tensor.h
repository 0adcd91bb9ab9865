// ONNX TensorProto / TypeProto conversion to Kestrel tensors and value types.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "core/status.h"
#include "core/tensor.h"
#include "ir/types.h"

namespace kestrel::frontend {

// Converts a TensorProto (typed fields, raw_data, or external data under model_dir) into an
// aligned Kestrel tensor, checking that the data matches the declared shape.
core::Result<core::Tensor> tensor_from_onnx(const onnx::TensorProto& tp, const std::string& model_dir);

// Converts a tensor TypeProto; non-tensor types (sequence, map, optional) are unsupported. An
// absent type (no value set) is an unknown type: undefined dtype, unknown rank.
core::Result<ir::ValueType> type_from_onnx(const onnx::TypeProto& tp);

}  // namespace kestrel::frontend

// ONNX data-type code mapping (values from onnx.proto TensorProto.DataType).
#include "ir/onnx_types.h"

namespace kestrel::ir {

using core::DType;

DType dtype_from_onnx(int64_t code) {
  switch (code) {
    case 1: return DType::kF32;
    case 2: return DType::kU8;
    case 3: return DType::kI8;
    case 4: return DType::kU16;
    case 5: return DType::kI16;
    case 6: return DType::kI32;
    case 7: return DType::kI64;
    case 8: return DType::kString;
    case 9: return DType::kBool;
    case 10: return DType::kF16;
    case 11: return DType::kF64;
    case 12: return DType::kU32;
    case 13: return DType::kU64;
    case 16: return DType::kBF16;
    default: return DType::kUndefined;
  }
}

int64_t dtype_to_onnx(DType t) {
  switch (t) {
    case DType::kF32: return 1;
    case DType::kU8: return 2;
    case DType::kI8: return 3;
    case DType::kU16: return 4;
    case DType::kI16: return 5;
    case DType::kI32: return 6;
    case DType::kI64: return 7;
    case DType::kString: return 8;
    case DType::kBool: return 9;
    case DType::kF16: return 10;
    case DType::kF64: return 11;
    case DType::kU32: return 12;
    case DType::kU64: return 13;
    case DType::kBF16: return 16;
    case DType::kUndefined: return 0;
  }
  return 0;
}

}  // namespace kestrel::ir

// Mapping between the .kst schema enums (generated from kst.fbs) and the IR's own enums.
// The file keeps its own numbering so an IR enum change can never silently change the format.
#pragma once

#include <optional>

#include "core/dtype.h"
#include "format/kst_generated.h"
#include "ir/attribute.h"
#include "ir/graph.h"

namespace kestrel::format {

inline kst::DType to_kst(core::DType t) {
  using core::DType;
  switch (t) {
    case DType::kUndefined:
      return kst::DType::Undefined;
    case DType::kF32:
      return kst::DType::F32;
    case DType::kF16:
      return kst::DType::F16;
    case DType::kBF16:
      return kst::DType::BF16;
    case DType::kF64:
      return kst::DType::F64;
    case DType::kI8:
      return kst::DType::I8;
    case DType::kU8:
      return kst::DType::U8;
    case DType::kI16:
      return kst::DType::I16;
    case DType::kU16:
      return kst::DType::U16;
    case DType::kI32:
      return kst::DType::I32;
    case DType::kU32:
      return kst::DType::U32;
    case DType::kI64:
      return kst::DType::I64;
    case DType::kU64:
      return kst::DType::U64;
    case DType::kBool:
      return kst::DType::Bool;
    case DType::kString:
      return kst::DType::String;
  }
  return kst::DType::Undefined;
}

// nullopt for a value outside the enum (a corrupt or newer file).
inline std::optional<core::DType> from_kst(kst::DType t) {
  using core::DType;
  switch (t) {
    case kst::DType::Undefined:
      return DType::kUndefined;
    case kst::DType::F32:
      return DType::kF32;
    case kst::DType::F16:
      return DType::kF16;
    case kst::DType::BF16:
      return DType::kBF16;
    case kst::DType::F64:
      return DType::kF64;
    case kst::DType::I8:
      return DType::kI8;
    case kst::DType::U8:
      return DType::kU8;
    case kst::DType::I16:
      return DType::kI16;
    case kst::DType::U16:
      return DType::kU16;
    case kst::DType::I32:
      return DType::kI32;
    case kst::DType::U32:
      return DType::kU32;
    case kst::DType::I64:
      return DType::kI64;
    case kst::DType::U64:
      return DType::kU64;
    case kst::DType::Bool:
      return DType::kBool;
    case kst::DType::String:
      return DType::kString;
  }
  return std::nullopt;
}

inline kst::ValueKind to_kst(ir::ValueKind k) {
  switch (k) {
    case ir::ValueKind::kNodeOutput:
      return kst::ValueKind::NodeOutput;
    case ir::ValueKind::kGraphInput:
      return kst::ValueKind::GraphInput;
    case ir::ValueKind::kConstant:
      return kst::ValueKind::Constant;
    case ir::ValueKind::kOuterScope:
      return kst::ValueKind::OuterScope;
  }
  return kst::ValueKind::NodeOutput;
}

inline kst::AttrKind to_kst(ir::AttrKind k) {
  switch (k) {
    case ir::AttrKind::kFloat:
      return kst::AttrKind::Float;
    case ir::AttrKind::kInt:
      return kst::AttrKind::Int;
    case ir::AttrKind::kString:
      return kst::AttrKind::String;
    case ir::AttrKind::kTensor:
      return kst::AttrKind::Tensor;
    case ir::AttrKind::kGraph:
      return kst::AttrKind::Graph;
    case ir::AttrKind::kFloats:
      return kst::AttrKind::Floats;
    case ir::AttrKind::kInts:
      return kst::AttrKind::Ints;
    case ir::AttrKind::kStrings:
      return kst::AttrKind::Strings;
    case ir::AttrKind::kTensors:
      return kst::AttrKind::Tensors;
    case ir::AttrKind::kGraphs:
      return kst::AttrKind::Graphs;
  }
  return kst::AttrKind::Int;
}

// Metadata keys with a place of their own in the Metadata table.
constexpr char kMetaProducer[] = "producer";
constexpr char kMetaSourceFormat[] = "source_format";
constexpr char kMetaConvertPrefix[] = "convert.";
constexpr char kMetaUserPrefix[] = "user.";

}  // namespace kestrel::format

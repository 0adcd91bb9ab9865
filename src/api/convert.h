// Conversions between the public API types and the internal core types (no data copies).
#pragma once

#include "core/status.h"
#include "core/tensor.h"
#include "ir/types.h"
#include "kestrel/kestrel.hpp"

namespace kestrel::api {

inline core::DType to_core(DType t) { return static_cast<core::DType>(t); }
inline DType to_public(core::DType t) { return static_cast<DType>(t); }

inline core::Tensor to_core(const Tensor& t) {
  return core::Tensor::wrap(to_core(t.dtype()), t.shape(), const_cast<void*>(t.data()), t.owner());
}
inline Tensor to_public(const core::Tensor& t) {
  return Tensor(to_public(t.dtype()), t.dims(), const_cast<void*>(t.raw_data()), t.owner());
}

TensorInfo to_public(const std::string& name, const ir::ValueType& type);

// Throws kestrel::Error for a failed status.
void throw_if_error(const core::Status& s);

}  // namespace kestrel::api

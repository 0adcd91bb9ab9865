// Float-type plumbing for the reference NN kernels: dispatch over f32/f16/bf16/f64 and the
// accumulation type (float for 16- and 32-bit floats, double for f64).
#pragma once

#include <type_traits>

#include "core/dtype.h"

namespace kestrel::kernels::ref {

template <class T>
using AccT = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
inline AccT<T> to_acc(T v) {
  return static_cast<AccT<T>>(v);
}
template <class T>
inline T from_acc(AccT<T> v) {
  if constexpr (std::is_same_v<T, core::Float16> || std::is_same_v<T, core::BFloat16>)
    return T(v);
  else
    return static_cast<T>(v);
}

// Calls f(T{}) for a float dtype; false for anything else.
template <class F>
bool visit_float(core::DType t, F&& f) {
  switch (t) {
    case core::DType::kF32:
      f(float{});
      return true;
    case core::DType::kF16:
      f(core::Float16{});
      return true;
    case core::DType::kBF16:
      f(core::BFloat16{});
      return true;
    case core::DType::kF64:
      f(double{});
      return true;
    default:
      return false;
  }
}

}  // namespace kestrel::kernels::ref

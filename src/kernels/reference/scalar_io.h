// Element conversions for the reference kernels that compute in double or int64 and read or write
// any numeric dtype: loads to double, rounding stores to floats, saturating stores to integers.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/dtype.h"
#include "kernels/reference/float_types.h"  // visit_float

namespace kestrel::kernels::ref {

template <class T>
constexpr bool is_half_float_v = std::is_same_v<T, core::Float16> || std::is_same_v<T, core::BFloat16>;

template <class T>
inline double load_double(T v) {
  if constexpr (is_half_float_v<T>)
    return static_cast<double>(static_cast<float>(v));
  else
    return static_cast<double>(v);
}

// Floats round to nearest; integers truncate toward zero and saturate (NaN gives 0), as ONNX Cast
// does for in-range values; bool is v != 0.
template <class T>
inline T store_double(double v) {
  if constexpr (is_half_float_v<T>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

}  // namespace kestrel::kernels::ref

// Element conversions shared by reference kernels that compute in a wider type than they store:
// f16/bf16 through float, integers through double with rounding and saturation (never UB).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "core/dtype.h"
#include "core/float16.h"

namespace kestrel::kernels::ref {

template <class T>
constexpr bool is_half_v = std::is_same_v<T, core::Float16> || std::is_same_v<T, core::BFloat16>;

// Types a numeric kernel can compute on: every numeric dtype but bool.
template <class T>
constexpr bool is_arith_v = !std::is_same_v<T, bool> && !std::is_same_v<T, std::string>;

// The type arithmetic happens in: float for f32/f16/bf16, double for f64 and integers.
template <class T>
using AccOf = std::conditional_t<std::is_same_v<T, float> || is_half_v<T>, float, double>;

template <class A, class T>
A load_as(T v) {
  if constexpr (is_half_v<T>)
    return static_cast<A>(static_cast<float>(v));
  else
    return static_cast<A>(v);
}

// A (float or double) -> T: plain conversion for floats; for integers round half away from zero
// and saturate (NaN -> 0), since an interpolated or averaged integer is rarely exact.
template <class T, class A>
T store_as(A v) {
  if constexpr (is_half_v<T>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    const double d = std::round(static_cast<double>(v));
    if (std::isnan(d)) return T(0);
    if (d <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (d >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(d);
  }
}

// Calls f(T{}) for numeric dtypes other than bool and string; false otherwise.
template <class F>
bool visit_arith_dtype(core::DType t, F&& f) {
  if (t == core::DType::kBool || t == core::DType::kString) return false;
  return core::visit_numeric_dtype(t, [&](auto tag) {
    if constexpr (is_arith_v<decltype(tag)>) f(tag);
  });
}

// Calls f(T{}) for f32, f64, f16 and bf16; false otherwise.
template <class F>
bool visit_float(core::DType t, F&& f) {
  if (!core::is_float(t)) return false;
  return core::visit_numeric_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T> || is_half_v<T>) f(tag);
  });
}

}  // namespace kestrel::kernels::ref

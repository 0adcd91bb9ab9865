// DType: the element types a tensor can hold, with sizes, names and C++ type mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/float16.h"

namespace kestrel::core {

enum class DType : uint8_t {
  kUndefined = 0,
  kF32,
  kF16,
  kBF16,
  kF64,
  kI8,
  kU8,
  kI16,
  kU16,
  kI32,
  kU32,
  kI64,
  kU64,
  kBool,
  kString,  // std::string elements; only for the few ops that need strings
};

constexpr int kNumDTypes = 15;

// Bytes per element (sizeof(std::string) for kString, 0 for kUndefined).
size_t dtype_size(DType t);
// Short lowercase name: "f32", "i64", "bool", ...
const char* dtype_name(DType t);
// Parses a name from dtype_name(); kUndefined if unknown.
DType dtype_from_name(std::string_view name);
bool is_float(DType t);    // f32 f16 bf16 f64
bool is_integer(DType t);  // signed or unsigned ints (not bool)
bool is_signed(DType t);

template <class T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<Float16> { static constexpr DType value = DType::kF16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::kBF16; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kF64; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kI8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kU8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::kI16; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::kU16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kI32; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kU32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kI64; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::kU64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };
template <> struct DTypeOf<std::string> { static constexpr DType value = DType::kString; };
template <class T> constexpr DType dtype_of = DTypeOf<T>::value;

// Calls f(T{}) with T the C++ type of `t` (bool for kBool, std::string for kString).
// Returns false for kUndefined without calling f.
template <class F>
bool visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kF32: f(float{}); return true;
    case DType::kF16: f(Float16{}); return true;
    case DType::kBF16: f(BFloat16{}); return true;
    case DType::kF64: f(double{}); return true;
    case DType::kI8: f(int8_t{}); return true;
    case DType::kU8: f(uint8_t{}); return true;
    case DType::kI16: f(int16_t{}); return true;
    case DType::kU16: f(uint16_t{}); return true;
    case DType::kI32: f(int32_t{}); return true;
    case DType::kU32: f(uint32_t{}); return true;
    case DType::kI64: f(int64_t{}); return true;
    case DType::kU64: f(uint64_t{}); return true;
    case DType::kBool: f(bool{}); return true;
    case DType::kString: f(std::string{}); return true;
    case DType::kUndefined: return false;
  }
  return false;
}

// Same, for the numeric types only (no string): returns false for kString.
template <class F>
bool visit_numeric_dtype(DType t, F&& f) {
  if (t == DType::kString) return false;
  return visit_dtype(t, [&](auto tag) {
    if constexpr (!std::is_same_v<decltype(tag), std::string>) f(tag);
  });
}

}  // namespace kestrel::core

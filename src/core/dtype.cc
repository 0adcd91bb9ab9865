// DType tables.
#include "core/dtype.h"

namespace kestrel::core {

namespace {
struct Info {
  const char* name;
  size_t size;
};
constexpr Info kInfo[kNumDTypes] = {
    {"undefined", 0}, {"f32", 4}, {"f16", 2}, {"bf16", 2}, {"f64", 8},  {"i8", 1},
    {"u8", 1},        {"i16", 2}, {"u16", 2}, {"i32", 4},  {"u32", 4},  {"i64", 8},
    {"u64", 8},       {"bool", 1}, {"string", sizeof(std::string)},
};
}  // namespace

size_t dtype_size(DType t) {
  auto i = static_cast<size_t>(t);
  return i < kNumDTypes ? kInfo[i].size : 0;
}

const char* dtype_name(DType t) {
  auto i = static_cast<size_t>(t);
  return i < kNumDTypes ? kInfo[i].name : "invalid";
}

DType dtype_from_name(std::string_view name) {
  for (int i = 1; i < kNumDTypes; ++i)
    if (name == kInfo[i].name) return static_cast<DType>(i);
  return DType::kUndefined;
}

bool is_float(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kF64;
}

bool is_integer(DType t) {
  switch (t) {
    case DType::kI8: case DType::kU8: case DType::kI16: case DType::kU16:
    case DType::kI32: case DType::kU32: case DType::kI64: case DType::kU64:
      return true;
    default:
      return false;
  }
}

bool is_signed(DType t) {
  return is_float(t) || t == DType::kI8 || t == DType::kI16 || t == DType::kI32 || t == DType::kI64;
}

}  // namespace kestrel::core

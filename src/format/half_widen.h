// Widening IEEE binary16 to float32 for f16-stored weights: bit-exact with core::half_bits_to_float
// (subnormals, infinities and NaN payloads included) but branch-free, so the loop vectorizes.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace kestrel::format {

inline float widen_half(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;  // exponent and mantissa
  const uint32_t exp = em & 0x7c00u;
  const uint32_t shifted = em << 13;
  const uint32_t normal = shifted + ((127u - 15u) << 23);   // rebias the exponent
  const uint32_t inf_nan = shifted + ((255u - 31u) << 23);  // exponent 31 -> 255, payload kept
  // Zero and subnormals: em * 2^-24 is exact in float.
  const uint32_t small = std::bit_cast<uint32_t>(static_cast<float>(static_cast<int32_t>(em)) * 5.9604644775390625e-8f);
  uint32_t r = exp == 0x7c00u ? inf_nan : normal;
  r = exp == 0 ? small : r;
  return std::bit_cast<float>(r | sign);
}

inline void widen_halves(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = widen_half(src[i]);
}

}  // namespace kestrel::format

// Masks of lanes for AVX-512 masked loads and stores, as plain integers (a __mmask16 / __mmask32 /
// __mmask64 takes the low bits), so any unit can build them.
#pragma once

#include <cstdint>

namespace kestrel::kernels::cpu {

// Bit i set for lanes i in [0, n), n clamped to [0, 64].
constexpr uint64_t first_lanes(int64_t n) {
  return n >= 64 ? ~uint64_t{0} : n <= 0 ? uint64_t{0} : (uint64_t{1} << n) - 1;
}
// Lanes [lo, hi).
constexpr uint64_t lanes_between(int64_t lo, int64_t hi) { return first_lanes(hi) & ~first_lanes(lo); }

}  // namespace kestrel::kernels::cpu

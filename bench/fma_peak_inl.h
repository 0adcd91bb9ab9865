// The FMA-throughput probe, written once over the vector type; fma_peak_avx2.cc and
// fma_peak_avx512.cc instantiate it, each with its own compile flags.
#pragma once

#include <cstdint>
#include <cstring>

namespace kestrel::bench {

// kChains independent accumulator chains (more than FMA latency x FMA ports on the cores it runs
// on), each step one FMA; returns a value derived from the accumulators so nothing is optimized
// away. set1(i) gives chain i's start, fma(c, a, b) = c * a + b.
template <int kChains, class V, class Set1, class Fma>
float fma_peak_chains(int64_t iters, Set1 set1, Fma fma) {
  const V a = set1(0.999999f), b = set1(1e-7f);
  V c[kChains];
  for (int i = 0; i < kChains; ++i) c[i] = set1(static_cast<float>(i));
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < kChains; ++i) c[i] = fma(c[i], a, b);
  }
  float r = 0;
  for (const V& v : c) {
    float lanes[sizeof(V) / sizeof(float)];
    std::memcpy(lanes, &v, sizeof(V));
    for (float x : lanes) r += x;
  }
  return r;
}

}  // namespace kestrel::bench

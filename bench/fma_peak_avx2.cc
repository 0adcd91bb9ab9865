// FMA-throughput probe: the single-core AVX2 + FMA peak (8-lane FMAs), for hosts without AVX-512.
#include <immintrin.h>

#include <cstdint>

namespace kestrel::bench {

// 12 independent accumulator chains (more than FMA latency x FMA ports: 5 x 2 on Zen 2, 4 x 2 on
// Intel cores), each step one 8-lane FMA; returns a value derived from the accumulators so nothing
// is optimized away.
float fma_peak_avx2(int64_t iters) {
  __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  __m256 c[12];
  for (int i = 0; i < 12; ++i) c[i] = _mm256_set1_ps(static_cast<float>(i));
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) c[i] = _mm256_fmadd_ps(c[i], a, b);
  }
  __m256 s = c[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, c[i]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  float r = 0;
  for (float x : lanes) r += x;
  return r;
}

}  // namespace kestrel::bench

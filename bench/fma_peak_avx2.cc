// FMA-throughput probe: the single-core AVX2 + FMA peak (8-lane FMAs), for hosts without AVX-512.
#include <immintrin.h>

#include "fma_peak_inl.h"

namespace kestrel::bench {

// 12 chains: more than FMA latency x FMA ports (5 x 2 on Zen 2, 4 x 2 on Intel cores).
float fma_peak_avx2(int64_t iters) {
  return fma_peak_chains<12, __m256>(
      iters, [](float x) { return _mm256_set1_ps(x); },
      [](__m256 c, __m256 a, __m256 b) { return _mm256_fmadd_ps(c, a, b); });
}

}  // namespace kestrel::bench

// FMA-throughput probe: the single-core AVX-512 FMA peak that SGEMM efficiency is measured against.
#include <immintrin.h>

#include "fma_peak_inl.h"

namespace kestrel::bench {

// 24 chains: more than FMA latency x FMA ports on any current core.
float fma_peak_avx512(int64_t iters) {
  return fma_peak_chains<24, __m512>(
      iters, [](float x) { return _mm512_set1_ps(x); },
      [](__m512 c, __m512 a, __m512 b) { return _mm512_fmadd_ps(c, a, b); });
}

}  // namespace kestrel::bench

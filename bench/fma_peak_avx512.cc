// FMA-throughput probe: the single-core AVX-512 FMA peak that SGEMM efficiency is measured against.
#include <immintrin.h>

#include <cstdint>

namespace kestrel::bench {

// 24 independent accumulator chains (more than FMA latency x FMA ports on any current core), each
// step one 16-lane FMA; returns a value derived from the accumulators so nothing is optimized away.
float fma_peak_avx512(int64_t iters) {
  __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  __m512 c[24];
  for (int i = 0; i < 24; ++i) c[i] = _mm512_set1_ps(static_cast<float>(i));
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) c[i] = _mm512_fmadd_ps(c[i], a, b);
  }
  __m512 s = c[0];
  for (int i = 1; i < 24; ++i) s = _mm512_add_ps(s, c[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  float r = 0;
  for (float x : lanes) r += x;
  return r;
}

}  // namespace kestrel::bench

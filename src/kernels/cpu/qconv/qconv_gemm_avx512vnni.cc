// AVX-512 VNNI NCHW int8 convolution GEMM (8 rows x 48 pixels): vpdpbusd of 16 pixels' 4 u8
// activations against one row's 4 s8 weights broadcast from memory; masked u8 / int32 stores.
// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 headers (the self-initialized
// "undefined" vectors of the masked intrinsics, as -Wuninitialized when inlined into a
// constant-size loop); the warnings are about the headers, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include "kernels/cpu/qconv/qconv_gemm_inl.h"

namespace kestrel::kernels::cpu::qconv_detail {
namespace {

struct Avx512VnniQc {
  static constexpr int kLanes = 16;
  static constexpr int kKg = 4;
  using V = __m512i;
  using VX = __m512i;
  using VW = __m512i;
  static KESTREL_QC_INLINE V splat(int32_t v) { return _mm512_set1_epi32(v); }
  static KESTREL_QC_INLINE V add(V a, V b) { return _mm512_add_epi32(a, b); }
  static KESTREL_QC_INLINE VX load_x(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static KESTREL_QC_INLINE VW bcast_w(const uint8_t* p) {
    int32_t w;
    std::memcpy(&w, p, 4);
    return _mm512_set1_epi32(w);
  }
  // vpdpbusd: 4 u8 (x) x 4 s8 (w) products summed into int32 without intermediate saturation.
  // (asm: with the intrinsic GCC 12 copied the tied accumulator through another register and the
  // stack every k step in tiles that fill the register file)
  static KESTREL_QC_INLINE V dot(V acc, VX x, VW w) {
    asm("vpdpbusd %[w], %[x], %[a]" : [a] "+v"(acc) : [x] "v"(x), [w] "v"(w));
    return acc;
  }
  // The full 8 x 3 tile (QcKernel::tile's contract) with 24 named accumulators and the
  // multiply-adds in assembly. GCC 12 kept the accumulator array of the generic tile in memory
  // (a stack store per vpdpbusd); named variables stay in registers. Two asm statements of 4
  // rows per k step (at most 30 operands each); zmm31 holds the broadcast weight.
  template <int R, int NE, bool I32>
    requires(R == 8 && NE == 3)
  static void full_tile(const uint8_t* w, const uint8_t* x, int64_t groups, int64_t xs, const int32_t* off,
                        const float* sc, const QcEpilogue& ep, uint8_t* y, int64_t ldy_bytes, int cols) {
#define KESTREL_QC_ROW(r, o)                    \
  "vpbroadcastd " #o "(%[w]), %%zmm31\n\t"       \
  "vpdpbusd %%zmm31, %[x0], %[a" #r "0]\n\t" \
  "vpdpbusd %%zmm31, %[x1], %[a" #r "1]\n\t" \
  "vpdpbusd %%zmm31, %[x2], %[a" #r "2]\n\t"
    // The accumulators start at the rows' offsets (one add less per output vector).
    __m512i a00 = _mm512_set1_epi32(off[0]), a01 = a00, a02 = a00, a10 = _mm512_set1_epi32(off[1]), a11 = a10,
            a12 = a10, a20 = _mm512_set1_epi32(off[2]), a21 = a20, a22 = a20, a30 = _mm512_set1_epi32(off[3]),
            a31 = a30, a32 = a30, a40 = _mm512_set1_epi32(off[4]), a41 = a40, a42 = a40,
            a50 = _mm512_set1_epi32(off[5]), a51 = a50, a52 = a50, a60 = _mm512_set1_epi32(off[6]), a61 = a60,
            a62 = a60, a70 = _mm512_set1_epi32(off[7]), a71 = a70, a72 = a70;
    for (int64_t g = 0; g < groups; ++g) {
      const __m512i x0 = _mm512_loadu_si512(x), x1 = _mm512_loadu_si512(x + 64), x2 = _mm512_loadu_si512(x + 128);
      asm(KESTREL_QC_ROW(0, 0) KESTREL_QC_ROW(1, 4) KESTREL_QC_ROW(2, 8) KESTREL_QC_ROW(3, 12)
          : [a00] "+v"(a00), [a01] "+v"(a01), [a02] "+v"(a02), [a10] "+v"(a10), [a11] "+v"(a11), [a12] "+v"(a12),
            [a20] "+v"(a20), [a21] "+v"(a21), [a22] "+v"(a22), [a30] "+v"(a30), [a31] "+v"(a31), [a32] "+v"(a32)
          : [x0] "v"(x0), [x1] "v"(x1), [x2] "v"(x2), [w] "r"(w), "m"(*reinterpret_cast<const uint8_t(*)[16]>(w))
          : "zmm31");
      asm(KESTREL_QC_ROW(0, 16) KESTREL_QC_ROW(1, 20) KESTREL_QC_ROW(2, 24) KESTREL_QC_ROW(3, 28)
          : [a00] "+v"(a40), [a01] "+v"(a41), [a02] "+v"(a42), [a10] "+v"(a50), [a11] "+v"(a51), [a12] "+v"(a52),
            [a20] "+v"(a60), [a21] "+v"(a61), [a22] "+v"(a62), [a30] "+v"(a70), [a31] "+v"(a71), [a32] "+v"(a72)
          : [x0] "v"(x0), [x1] "v"(x1), [x2] "v"(x2), [w] "r"(w),
            "m"(*reinterpret_cast<const uint8_t(*)[16]>(w + 16))
          : "zmm31");
      x += xs;
      w += 32;
    }
#undef KESTREL_QC_ROW
    constexpr int esize = I32 ? 4 : 1;
    auto row = [&](int r, __m512i c0, __m512i c1, __m512i c2) {
      const float s = I32 ? 0.f : sc[r];
      uint8_t* yr = y + r * ldy_bytes;
      finish<I32>(c0, s, ep, yr, 16);
      finish<I32>(c1, s, ep, yr + 16 * esize, 16);
      finish<I32>(c2, s, ep, yr + 32 * esize, cols - 32);
    };
    row(0, a00, a01, a02);
    row(1, a10, a11, a12);
    row(2, a20, a21, a22);
    row(3, a30, a31, a32);
    row(4, a40, a41, a42);
    row(5, a50, a51, a52);
    row(6, a60, a61, a62);
    row(7, a70, a71, a72);
  }

  // The last 1 to kColumnMax pixels of a panel (7x7 planes: 49 = 48 + 1; 14x14: 196 = 4 x 48 + 4; 1x1: 1) with
  // rows on the lanes: one 32-byte load of a group's 8 x 4 weights (the packed block's layout) and, per pixel, its 4
  // bytes broadcast into one ymm vpdpbusd; a 16-pixel tile spent 8 broadcasts and 8 vpdpbusd a group on them.
  static constexpr int kColumnMax = 4;
  template <bool I32>
  static void column_tile(const uint8_t* w, const uint8_t* x, int64_t groups, int64_t xs, const int32_t* off,
                          const float* sc, const QcEpilogue& ep, uint8_t* y, int64_t ldy_bytes, int rows, int cols) {
    switch (cols) {
      case 1:
        return columns<1, I32>(w, x, groups, xs, off, sc, ep, y, ldy_bytes, rows);
      case 2:
        return columns<2, I32>(w, x, groups, xs, off, sc, ep, y, ldy_bytes, rows);
      case 3:
        return columns<3, I32>(w, x, groups, xs, off, sc, ep, y, ldy_bytes, rows);
      default:
        return columns<4, I32>(w, x, groups, xs, off, sc, ep, y, ldy_bytes, rows);
    }
  }
  template <int C, bool I32>
  static void columns(const uint8_t* w, const uint8_t* x, int64_t groups, int64_t xs, const int32_t* off,
                      const float* sc, const QcEpilogue& ep, uint8_t* y, int64_t ldy_bytes, int rows) {
    const __mmask8 rm = static_cast<__mmask8>((1u << rows) - 1);
    // P sets of accumulators take the groups in turn (summed after): with one chain per pixel, the loop waited on
    // vpdpbusd's latency.
    constexpr int P = C == 1 ? 4 : 2;
    __m256i acc[P][C];
    for (int q = 0; q < P; ++q)
      for (int c = 0; c < C; ++c) acc[q][c] = _mm256_setzero_si256();
    auto step = [&](int q) {
      const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
      for (int c = 0; c < C; ++c) {
        int32_t xc;
        std::memcpy(&xc, x + 4 * c, 4);
        acc[q][c] = _mm256_dpbusd_epi32(acc[q][c], _mm256_set1_epi32(xc), wv);
      }
      x += xs;
      w += 32;
    };
    int64_t g = 0;
    for (; g + P <= groups; g += P)
      for (int q = 0; q < P; ++q) step(q);
    for (int q = 0; g < groups; ++g, ++q) step(q);
    for (int q = 1; q < P; ++q)
      for (int c = 0; c < C; ++c) acc[0][c] = _mm256_add_epi32(acc[0][c], acc[q][c]);
    for (int c = 0; c < C; ++c) acc[0][c] = _mm256_add_epi32(acc[0][c], _mm256_maskz_loadu_epi32(rm, off));
    alignas(32) int32_t out[C][8];
    if constexpr (I32) {
      for (int c = 0; c < C; ++c) _mm256_store_si256(reinterpret_cast<__m256i*>(out[c]), acc[0][c]);
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < C; ++c) std::memcpy(y + r * ldy_bytes + 4 * c, &out[c][r], 4);
    } else {
      const __m256 scale = _mm256_maskz_loadu_ps(rm, sc);
      for (int c = 0; c < C; ++c) {  // as finish, with a scale per lane
        __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(acc[0][c]), scale);
        f = _mm256_max_ps(f, _mm256_load_ps(ep.lo16));  // NaN -> lo (max returns the second operand)
        f = _mm256_min_ps(f, _mm256_load_ps(ep.hi16));
        _mm256_store_si256(reinterpret_cast<__m256i*>(out[c]),
                           _mm256_add_epi32(_mm256_cvtps_epi32(f), _mm256_set1_epi32(ep.zp)));
      }
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < C; ++c) y[r * ldy_bytes + c] = static_cast<uint8_t>(out[c][r]);
    }
  }

  template <bool I32>
  static KESTREL_QC_INLINE void finish(V acc, float scale, const QcEpilogue& ep, uint8_t* out, int n) {
    const __mmask16 mask = static_cast<__mmask16>(n >= 16 ? 0xffff : (1u << n) - 1);
    if constexpr (I32) {
      _mm512_mask_storeu_epi32(out, mask, acc);
    } else {
      __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), _mm512_set1_ps(scale));
      f = _mm512_max_ps(f, _mm512_load_ps(ep.lo16));  // NaN -> lo (max returns the second operand)
      f = _mm512_min_ps(f, _mm512_load_ps(ep.hi16));
      const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), _mm512_set1_epi32(ep.zp));  // half to even
      _mm512_mask_cvtepi32_storeu_epi8(out, mask, q);  // q is within [0, 255]: truncation is exact
    }
  }
};

}  // namespace

const QcTable* qc_table_avx512vnni() {
  return QcKernel<Avx512VnniQc, 8, 3>::table();
}

}  // namespace kestrel::kernels::cpu::qconv_detail

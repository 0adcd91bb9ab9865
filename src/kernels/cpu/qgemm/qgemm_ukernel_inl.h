// The int8 GEMM macro-kernel, MR x NR register-blocked micro-kernel and packers, written once over
// an ISA traits type T and instantiated per ISA by qgemm_kernel_*.cc.
//
// Include only from a kernel .cc; the unnamed namespace keeps each ISA's copy private to its
// translation unit (they are compiled with different -m flags and must never be merged).
//
// T provides: V (int32 accumulator vector), VA / VB (what bcast_a / load_b return), kLanes,
// kKg (4: u8 x s8 bytes, 2: u16 x s16), zero(), load_b(p) (kLanes groups of 4 bytes), bcast_a(p) (one 4-byte group to
// every lane), dot(acc, a, b) (acc + per-lane dot product of the groups), and finish(acc, ColParams, j0, Epilogue, out,
// n): epilogue of columns j0..j0+n-1 of one row.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kernels/cpu/qgemm/qgemm_ukernel.h"

#define KESTREL_QGEMM_INLINE inline __attribute__((always_inline))
#define KESTREL_QGEMM_PRAGMA(x) _Pragma(#x)
#define KESTREL_QGEMM_UNROLL(n) KESTREL_QGEMM_PRAGMA(GCC unroll n)

namespace kestrel::kernels::cpu {
namespace {

using qgemm_detail::ColParams;
using qgemm_detail::Epilogue;
using qgemm_detail::MacroTile;
using qgemm_detail::UkernelTable;

inline int qgemm_out_size(QgemmOutput o) {
  return o == QgemmOutput::kU8 || o == QgemmOutput::kS8 ? 1 : 4;
}

template <class T, int MR, int NV>
struct QgemmKernel {
  using V = typename T::V;
  using VA = typename T::VA;
  using VB = typename T::VB;
  static constexpr int kNr = NV * T::kLanes;
  static_assert(kNr <= qgemm_detail::kMaxNr, "NR too large for ColParams");

  // One R x (NE vectors) tile: `groups` groups of the packed A sliver ([group][MR][4 bytes])
  // against the first NE vectors of the B sliver ([group][NR][4 bytes]), then the epilogue straight
  // from the registers. Edge tiles (R < MR, NE < NV) are their own instantiations, so a narrow N
  // (16-channel convolutions) does not pay for the full register block.
  template <int R, int NE>
  static void tile(const uint8_t* a, int64_t groups, const uint8_t* b, const ColParams& cp, const Epilogue& ep,
                   uint8_t* c, int64_t ldc_bytes, int esize, int cols) {
    V acc[R][NE];
    KESTREL_QGEMM_UNROLL(16)
    for (int r = 0; r < R; ++r) {
      KESTREL_QGEMM_UNROLL(4)
      for (int v = 0; v < NE; ++v) acc[r][v] = T::zero();
    }
    for (int64_t g = 0; g < groups; ++g) {
      VB bv[NE];
      KESTREL_QGEMM_UNROLL(4)
      for (int v = 0; v < NE; ++v) bv[v] = T::load_b(b + v * T::kLanes * 4);
      KESTREL_QGEMM_UNROLL(16)
      for (int r = 0; r < R; ++r) {
        const VA av = T::bcast_a(a + r * 4);
        KESTREL_QGEMM_UNROLL(4)
        for (int v = 0; v < NE; ++v) acc[r][v] = T::dot(acc[r][v], av, bv[v]);
      }
      a += MR * 4;
      b += kNr * 4;
    }
    KESTREL_QGEMM_UNROLL(16)
    for (int r = 0; r < R; ++r) {
      KESTREL_QGEMM_UNROLL(4)
      for (int v = 0; v < NE; ++v) {
        const int j0 = v * T::kLanes;
        if (j0 < cols) {
          const int n = cols - j0 < T::kLanes ? cols - j0 : T::kLanes;
          T::finish(acc[r][v], cp, j0, ep, c + r * ldc_bytes + static_cast<int64_t>(j0) * esize, n);
        }
      }
    }
  }

  using TileFn = void (*)(const uint8_t*, int64_t, const uint8_t*, const ColParams&, const Epilogue&, uint8_t*, int64_t,
                          int, int);

  template <int NE, size_t... I>
  static constexpr std::array<TileFn, MR> make_row(std::index_sequence<I...>) {
    return {&tile<static_cast<int>(I) + 1, NE>...};
  }
  template <size_t... J>
  static constexpr auto make_tiles(std::index_sequence<J...>) {
    return std::array<std::array<TileFn, MR>, NV>{make_row<static_cast<int>(J) + 1>(std::make_index_sequence<MR>{})...};
  }

  static void macro(const MacroTile& t) {
    static constexpr auto kTiles = make_tiles(std::make_index_sequence<NV>{});
    const Epilogue& ep = *t.ep;
    const int esize = qgemm_out_size(ep.output);
    const int64_t ldc_bytes = t.ldc * esize;
    const int64_t groups = (t.k + T::kKg - 1) / T::kKg;
    ColParams cp;
    for (int64_t j = 0; j < t.nc; j += kNr) {
      const int cols = static_cast<int>(t.nc - j < kNr ? t.nc - j : kNr);
      for (int c = 0; c < kNr; ++c) {
        const bool in = c < cols;
        const int64_t pc = t.per_column ? j + c : 0;
        const uint32_t bias = in && t.bias ? static_cast<uint32_t>(t.bias[j + c]) : 0u;
        const uint32_t corr =
            in ? static_cast<uint32_t>(t.a_zero_point) * static_cast<uint32_t>(t.col_sums[j + c]) : 0u;
        cp.offset[c] = static_cast<int32_t>(bias - corr);
        cp.scale[c] = in && t.scale ? t.scale[pc] : 0.f;
        cp.multiplier[c] = in && t.multiplier ? t.multiplier[pc] : 0;
        cp.shift[c] = in && t.shift ? t.shift[pc] : 1;
      }
      const uint8_t* b = t.b + (j / kNr) * t.b_sliver_stride;
      const auto& tiles = kTiles[(cols + T::kLanes - 1) / T::kLanes - 1];
      for (int64_t i = 0; i < t.mc; i += MR) {
        const int rows = static_cast<int>(t.mc - i < MR ? t.mc - i : MR);
        const uint8_t* a = t.a + (i / MR) * groups * MR * 4;
        if (!t.transpose_c) {
          uint8_t* c = static_cast<uint8_t*>(t.c) + i * ldc_bytes + j * esize;
          tiles[rows - 1](a, groups, b, cp, ep, c, ldc_bytes, esize, cols);
        } else {
          // The tile lands row-major in L1, then goes out one C^T row (one column of C) at a time.
          alignas(64) uint8_t buf[MR * kNr * 4];
          tiles[rows - 1](a, groups, b, cp, ep, buf, kNr * esize, esize, cols);
          for (int cc = 0; cc < cols; ++cc) {
            uint8_t* dst = static_cast<uint8_t*>(t.c) + (j + cc) * ldc_bytes + i * esize;
            if (esize == 1) {
              for (int r = 0; r < rows; ++r) dst[r] = buf[r * kNr + cc];
            } else {
              for (int r = 0; r < rows; ++r) std::memcpy(dst + r * 4, buf + (r * kNr + cc) * 4, 4);
            }
          }
        }
      }
    }
  }

  // A[0:mc, 0:k] -> slivers [group][row][4 bytes]: u8 (KG 4) or u16 (KG 2), zero padded.
  static void pack_a(const uint8_t* a, int64_t lda, int64_t mc, int64_t k, uint8_t* dst) {
    const int64_t groups = (k + T::kKg - 1) / T::kKg;
    const int64_t full = k / T::kKg;
    for (int64_t i = 0; i < mc; i += MR) {
      uint8_t* d = dst + (i / MR) * groups * MR * 4;
      const int rows = static_cast<int>(mc - i < MR ? mc - i : MR);
      // Groups [0, g_vec) of rows [0, rows4) go 4 rows x 4 groups at a time through a 4 x 4
      // transpose of 32-bit groups (SSE2); the rest one group at a time.
      int rows4 = 0;
      int64_t g_vec = 0;
#if defined(__SSE2__)
      {
        rows4 = rows / 4 * 4;
        g_vec = full / 4 * 4;
        // One row's 4 groups: 16 bytes (KG 4), or 8 bytes widened to 16 (KG 2, u8 -> u16).
        auto load4 = [](const uint8_t* p) {
          if constexpr (T::kKg == 4) {
            return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
          } else {
            return _mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), _mm_setzero_si128());
          }
        };
        for (int r0 = 0; r0 < rows4; r0 += 4) {
          const uint8_t* s0 = a + (i + r0) * lda;
          for (int64_t g = 0; g < g_vec; g += 4) {
            const int64_t off = g * T::kKg;
            const __m128i x0 = load4(s0 + off), x1 = load4(s0 + lda + off);
            const __m128i x2 = load4(s0 + 2 * lda + off), x3 = load4(s0 + 3 * lda + off);
            const __m128i t0 = _mm_unpacklo_epi32(x0, x1), t1 = _mm_unpacklo_epi32(x2, x3);
            const __m128i t2 = _mm_unpackhi_epi32(x0, x1), t3 = _mm_unpackhi_epi32(x2, x3);
            uint8_t* o = d + g * MR * 4 + r0 * 4;
            _mm_storeu_si128(reinterpret_cast<__m128i*>(o), _mm_unpacklo_epi64(t0, t1));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(o + MR * 4), _mm_unpackhi_epi64(t0, t1));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 2 * MR * 4), _mm_unpacklo_epi64(t2, t3));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 3 * MR * 4), _mm_unpackhi_epi64(t2, t3));
          }
        }
      }
#endif
      for (int r = 0; r < MR; ++r) {
        uint8_t* dr = d + r * 4;
        if (r >= rows) {
          for (int64_t g = 0; g < groups; ++g) std::memset(dr + g * MR * 4, 0, 4);
          continue;
        }
        const uint8_t* src = a + (i + r) * lda;
        if constexpr (T::kKg == 4) {
          for (int64_t g = r < rows4 ? g_vec : 0; g < full; ++g) std::memcpy(dr + g * MR * 4, src + g * 4, 4);
          if (full < groups) {
            uint8_t last[4] = {0, 0, 0, 0};
            std::memcpy(last, src + full * 4, static_cast<size_t>(k - full * 4));
            std::memcpy(dr + full * MR * 4, last, 4);
          }
        } else {
          for (int64_t g = r < rows4 ? g_vec : 0; g < full; ++g) {
            const uint32_t w = static_cast<uint32_t>(src[2 * g]) | (static_cast<uint32_t>(src[2 * g + 1]) << 16);
            std::memcpy(dr + g * MR * 4, &w, 4);
          }
          if (full < groups) {
            const uint32_t w = src[2 * full];
            std::memcpy(dr + full * MR * 4, &w, 4);
          }
        }
      }
    }
  }

  // B (s8) -> slivers [group][column][4 bytes]: s8 (KG 4) or s16 (KG 2), zero padded.
  static void pack_b(const int8_t* b, int64_t ldb, bool trans, int64_t k, int64_t n, uint8_t* dst) {
    const int64_t groups = (k + T::kKg - 1) / T::kKg;
    for (int64_t j = 0; j < n; j += kNr) {
      uint8_t* d = dst + (j / kNr) * groups * kNr * 4;
      for (int64_t g = 0; g < groups; ++g) {
        for (int c = 0; c < kNr; ++c) {
          uint8_t* dc = d + (g * kNr + c) * 4;
          for (int e = 0; e < T::kKg; ++e) {
            const int64_t kk = g * T::kKg + e, nn = j + c;
            const int8_t v = kk < k && nn < n ? (trans ? b[nn * ldb + kk] : b[kk * ldb + nn]) : int8_t{0};
            if constexpr (T::kKg == 4) {
              dc[e] = static_cast<uint8_t>(v);
            } else {
              const int16_t w = v;
              std::memcpy(dc + 2 * e, &w, 2);
            }
          }
        }
      }
    }
  }

  static const UkernelTable* table(QgemmIsa isa) {
    static const UkernelTable t{isa, MR, kNr, T::kKg, &macro, &pack_a, &pack_b};
    return &t;
  }
};

}  // namespace
}  // namespace kestrel::kernels::cpu

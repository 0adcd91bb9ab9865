// Direct int8 depthwise convolution of one NCHW plane (u8 activations, s8 weights, exact sums),
// per ISA: integer dot products of 4 taps on x86 for 3x3 / 5x5 at stride 1 / 2
// (qconv_dw_int_inl.h), the float kernel of qconv_dw_inl.h otherwise and in the scalar build.
#pragma once

#include <cstdint>

#include "core/cpu_features.h"

namespace kestrel::kernels::cpu::qconv_detail {

// Output of the int8 kernels: requantized u8, or the raw int32 sum (ConvInteger).
enum class QOut : uint8_t { kU8, kI32 };

struct QDwPlane {
  const uint8_t* x = nullptr;  // [ih, iw]
  int64_t ih = 0, iw = 0;
  const float* w = nullptr;  // [kh, kw] s8 weights held as floats (products and sums stay exact)
  // 3x3 / 5x5 only (else null): per kernel row two int32 words of 4 s8 taps each, taps 0..3 and
  // 4 (padded with zero weights), and the sum of all taps.
  const int32_t* wq = nullptr;
  int32_t wsum = 0;
  int kh = 3, kw = 3, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pad_top = 0, pad_left = 0, oh = 0, ow = 0;
  uint8_t x_zp = 0;  // the value of the padding, so that padded taps add 0
  int32_t bias = 0;
  float scale = 1.f;  // x_scale * w_scale / y_scale
  int32_t y_zp = 0, lo = 0, hi = 255;
  QOut out = QOut::kU8;
  void* y = nullptr;         // [oh, ow]
  float* scratch = nullptr;  // qdw_scratch_floats(...) floats
};

// Floats of scratch one QDwFn call needs (float kernel: the zero-point-shifted padded plane split
// into stride phases, and the sums; integer kernels: two slots of padded u8 plane and flat sums).
int64_t qdw_scratch_floats(int64_t oh, int64_t ow, int kh, int kw, int sh, int sw, int dh, int dw);

// Sum magnitude bound for the float accumulation to stay exact: kh * kw * 255 * 128 < 2^24.
constexpr int64_t kQDwMaxTaps = 256;

// n planes of one geometry (channels, images) sharing p[0].scratch.
using QDwFn = void (*)(const QDwPlane* p, int n);
// The AVX-512 row tiles of the integer kernel (qconv_dw_int_inl.h) take planes of at least this many output rows and
// columns, reading them in place; on AVX-512 VNNI QConv sends such planes there rather than to the blocked kernel.
constexpr int64_t kQDwRowTileMinOutputs = 7;

// Planes per QDwFn call.
constexpr int kQDwBatch = 8;
// The kernel for isa, with the VNNI dot products of that level (avx_vnni / avx512_vnni) when vnni
// is set and the CPU has them. Null when the ISA is not compiled into this binary.
QDwFn qdw_fn(core::Isa isa, bool vnni);
const char* qdw_fn_name(core::Isa isa, bool vnni);
QDwFn qdw_fn_scalar();
QDwFn qdw_fn_avx2();
QDwFn qdw_fn_avxvnni();
QDwFn qdw_fn_avx512();
QDwFn qdw_fn_avx512vnni();

}  // namespace kestrel::kernels::cpu::qconv_detail

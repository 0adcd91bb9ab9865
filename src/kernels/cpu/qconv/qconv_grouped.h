// Direct int8 grouped convolution for groups of 16 output channels whose input channels come in
// quads (RegNet's group width 16): no im2col. Per image and group, the group's input is laid out
// as planes of 32-bit words, each holding one pixel of 4 consecutive channels (split into stride
// phases by row and column, zero-point padded), so that 16 consecutive outputs of one tap read 64
// contiguous bytes and one vpdpbusd adds 4 channels of that tap for 16 outputs of one output
// channel, its 4 s8 weights broadcast from memory. Outputs run over the flattened plane (output
// (oy, ox) at oy * pws + ox) into a buffer whose rows are copied out. AVX-512 VNNI only; the
// other instruction sets keep the GEMM path (qconv_gemm.h).
#pragma once

#include <cstdint>

#include "kernels/cpu/qconv/qconv_dw.h"

namespace kestrel::kernels::cpu::qconv_detail {

constexpr int64_t kQgOutChannels = 16;  // output channels per group this kernel takes

// One image's one group.
struct QGroupedPlane {
  const uint8_t* x = nullptr;  // [cg, ih, iw]
  int64_t cg = 4, ih = 1, iw = 1, oh = 1, ow = 1;
  int k = 3, s = 1;  // square window, stride (1 or 2), no dilation
  int64_t pad_top = 0, pad_left = 0;
  const int32_t* w = nullptr;       // qgrouped_pack_weights: [cg / 4][k][k][16] words of 4 s8
  const int32_t* offset = nullptr;  // [16] bias - x_zp * sum(w)
  const float* scale = nullptr;     // [16] (u8 output)
  uint8_t x_zp = 0;
  int32_t y_zp = 0, lo = 0, hi = 255;
  QOut out = QOut::kU8;
  void* y = nullptr;           // [16, oh, ow]
  uint8_t* scratch = nullptr;  // qgrouped_scratch_bytes
};

// Whether the kernel takes this shape (the caller also needs a CPU with AVX-512 VNNI).
inline bool qgrouped_fits(int64_t cg, int64_t mg, int64_t kh, int64_t kw) {
  return mg == kQgOutChannels && cg % 4 == 0 && cg <= 256 && kh == kw && kh >= 1 && kh <= 7;
}
// Bytes of scratch for qgrouped_avx512vnni on this geometry.
int64_t qgrouped_scratch_bytes(int64_t cg, int64_t oh, int64_t ow, int k, int s);
// Packs one group's weights [16, cg, k, k] (s8) into the kernel's order.
void qgrouped_pack_weights(const int8_t* w, int64_t cg, int k, int32_t* dst);
// Null when the build has no AVX-512 VNNI unit.
using QGroupedFn = void (*)(const QGroupedPlane& p);
QGroupedFn qgrouped_fn_avx512vnni();

}  // namespace kestrel::kernels::cpu::qconv_detail

// Int8 depthwise convolution of small planes (7x7 outputs and the like) 16 channels at a time:
// the per-plane kernels of qconv_dw.h spend most of a 49-output plane on its padded copy and
// set-up. Here the 16 channels of a block are transposed (bytes, 16x16 per 128-bit lane) into a
// zero-padded pixel-major buffer of floats (x - x_zp, one channel per lane), every tap is one FMA
// of a pixel vector with that tap's 16 weights (s8 held as floats: products and sums stay exact
// integers, kh * kw * 255 * 128 < 2^24), and the requantized bytes are transposed back to NCHW.
// Any window, stride and dilation; u8 output; AVX-512 (F, BW) and AVX2 + FMA (qconv_dw_blocked_inl.h).
#pragma once

#include <cstdint>

#include "kernels/cpu/qconv/qconv_dw.h"

namespace kestrel::kernels::cpu::qconv_detail {

constexpr int kQDwBlockChannels = 16;
constexpr int64_t kQDwBlockMaxOutputs = 64;  // oh * ow: one transpose back (14x14 planes: the row tiles are faster)

// One image's block of up to 16 channels.
struct QDwBlock {
  const uint8_t* x = nullptr;  // channel 0 of the block; channel c at x + c * ih * iw
  int64_t ih = 1, iw = 1, oh = 1, ow = 1;
  int kh = 3, kw = 3, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pad_top = 0, pad_left = 0;  // >= 0
  int channels = kQDwBlockChannels;   // 1..16
  const float* w = nullptr;           // [kh * kw][16] the taps, lane = channel (0 past `channels`)
  const int32_t* bias = nullptr;      // [16]
  const float* scale = nullptr;       // [16] x_scale * w_scale / y_scale
  uint8_t x_zp = 0;
  int32_t y_zp = 0, lo = 0, hi = 255;
  uint8_t* y = nullptr;      // channel 0 of the block; channel c at y + c * oh * ow
  float* scratch = nullptr;  // QDwBlockGeometry::scratch_floats()
};

// Output columns are computed 8 at a time (the padded buffer is wide enough for the last 8).
constexpr int64_t kQDwBlockCols = 8;
struct QDwBlockGeometry {
  int64_t ph, pw;  // padded buffer rows and columns (pixels of 16 floats)
  QDwBlockGeometry(int64_t oh, int64_t ow, int kh, int kw, int sh, int sw, int dh, int dw) {
    const int64_t cols = (ow + kQDwBlockCols - 1) / kQDwBlockCols * kQDwBlockCols;
    ph = (oh - 1) * sh + static_cast<int64_t>(kh - 1) * dh + 1;
    pw = (cols - 1) * sw + static_cast<int64_t>(kw - 1) * dw + 1;
  }
  // The buffer, then 64 pixels x 16 bytes in and out.
  int64_t scratch_floats() const { return ph * pw * kQDwBlockChannels + 2 * 256; }
};

// Whether the blocked kernel takes this geometry (u8 output is the caller's condition): small output
// planes, and a padded buffer of at most 1024 pixels (64 KiB; strides and dilations that spread a
// small output over a large input keep the per-plane kernels).
inline bool qdw_block_fits(int64_t oh, int64_t ow, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh,
                           int64_t dw, int64_t pad_top, int64_t pad_left) {
  if (oh < 1 || ow < 1 || oh * ow > kQDwBlockMaxOutputs || pad_top < 0 || pad_left < 0 || kh < 1 || kw < 1 ||
      kh * kw > kQDwMaxTaps || sh < 1 || sw < 1 || dh < 1 || dw < 1 || sh > 64 || sw > 64 || dh > 64 || dw > 64)
    return false;
  const QDwBlockGeometry g(oh, ow, static_cast<int>(kh), static_cast<int>(kw), static_cast<int>(sh),
                           static_cast<int>(sw), static_cast<int>(dh), static_cast<int>(dw));
  return g.ph * g.pw <= 1024;
}

using QDwBlockFn = void (*)(const QDwBlock& b);
// Per ISA (qconv_dw_blocked_inl.h): 16 lanes per pixel with AVX-512, two passes of 8 with AVX2 + FMA.
QDwBlockFn qdw_block_fn_avx512();
QDwBlockFn qdw_block_fn_avx2();

}  // namespace kestrel::kernels::cpu::qconv_detail

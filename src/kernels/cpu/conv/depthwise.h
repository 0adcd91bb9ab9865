// Per-ISA convolution helpers: direct depthwise and grouped convolution over channel blocks (one
// pixel of W channels per vector), im2col, and the attention softmax rows.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cpu_features.h"
#include "kernels/cpu/gemm/sgemm.h"

namespace kestrel::kernels::cpu::conv_detail {

// Channel-blocked depthwise (depthwise_blocked_inl.h): W channels of one image at a time, output rows
// [oy0, oy1). Weights packed [ceil(C / W)][k * k][W] (zero lanes past C).
struct DepthwiseBlockArgs {
  const float* x = nullptr;  // [C, ih, iw] (one image); channel c's plane at x + c * in_plane()
  int64_t c = 0, ih = 0, iw = 0, oh = 0, ow = 0;
  // Floats between two channels' planes of x; 0: ih * iw. Larger than 0 for an x that holds only some rows of
  // each plane (FastConvChain's strips of rows: x then points where row 0 would be, and only the rows that the
  // output rows asked for are read).
  int64_t x_plane = 0;
  int64_t in_plane() const { return x_plane ? x_plane : ih * iw; }
  int k = 3, stride = 1;  // k 3 or 5, stride 1 or 2
  int64_t pad_top = 0, pad_left = 0;
  const float* w = nullptr;         // packed, see above
  const float* bias = nullptr;      // [C] or null
  const float* residual = nullptr;  // [C, oh, ow] or null
  float* y = nullptr;               // [C, oh, ow]
  GemmActivation activation = GemmActivation::kNone;
  float act_alpha = 0.f, act_beta = 0.f;
  float* scratch = nullptr;  // depthwise_block_scratch_floats(...)
  // Write y's whole aligned vectors with non-temporal stores (outputs much larger than L2, which
  // would not stay in this core's cache anyway): with 2 threads, ordinary stores to lines the other
  // core last read wait for that core's copy to be invalidated (~9 ns a line here, see
  // docs/architecture.md); the plane-direct depthwise and the stem honour it, the blocked path's
  // aligned vectors too. The block functions fence before returning.
  bool stream = false;
  int64_t cg = 1, mg = 1;    // grouped: channels per group (multiples of the width), weights
                             // packed [M / W][k * k][cg][W]
};
using DepthwiseBlockFn = void (*)(const DepthwiseBlockArgs& a, int64_t block, int64_t oy0, int64_t oy1);
// Depthwise k x k (3 or 5, stride 1 or 2) over one pixel-major image (NHWC: pixel (iy, ix)'s channels at
// x + (iy * iw + ix) * ldx), into pixel-major y (ldy floats per pixel), channels [c0, c1) (c0 a multiple of the
// width): every vector is one pixel's W channels, so no transposes. Weights packed as for DepthwiseBlocked::fn
// ([block][k * k][width]); bias [C] or null; the activation in the store; scratch depthwise_nhwc_scratch_floats.
// FastConvChain's small planes (conv_chain.h).
struct DepthwiseNhwcArgs {
  const float* x = nullptr;
  int64_t ldx = 0, ih = 0, iw = 0;
  float* y = nullptr;
  int64_t ldy = 0, oh = 0, ow = 0;
  int k = 3, stride = 1;
  int64_t pad_top = 0, pad_left = 0;
  const float* w = nullptr;
  const float* bias = nullptr;
  GemmActivation activation = GemmActivation::kNone;
  float act_alpha = 0.f, act_beta = 0.f;
  float* scratch = nullptr;
};
// One block's zero-padded input strip and its output pixels.
inline int64_t depthwise_nhwc_scratch_floats(int64_t oh, int64_t ow, int k, int stride, int width) {
  return ((oh - 1) * stride + k) * ((ow - 1) * stride + k) * width + oh * ow * width;
}
using DepthwiseNhwcFn = void (*)(const DepthwiseNhwcArgs& a, int64_t c0, int64_t c1);
struct DepthwiseBlocked {
  int width = 1;  // channels per block (the ISA's vector width)
  DepthwiseBlockFn fn = nullptr;
  DepthwiseBlockFn grouped = nullptr;  // (a, group, oy0, oy1)
  // Dense 3x3 stride-2 conv over a.cg (<= kStemMaxInputChannels) input and a.mg output channels, weights
  // tap-major [C * 9][M] (stem_weights); (a, unused, oy0, oy1); scratch stem_scratch_floats(...).
  DepthwiseBlockFn stem = nullptr;
  DepthwiseNhwcFn nhwc = nullptr;
};
// fn null when the ISA is not compiled into this binary.
DepthwiseBlocked depthwise_blocked(core::Isa isa);
DepthwiseBlocked depthwise_blocked_scalar();
DepthwiseBlocked depthwise_blocked_avx2();
DepthwiseBlocked depthwise_blocked_avx512();
int64_t stem_scratch_floats(int64_t c, int64_t rows_out, int64_t ow, int width);
constexpr int64_t kStemMaxInputChannels = 4;
// The stem's weights from [M][C][3][3] to tap-major [C * 9][M]: one tap's weights of consecutive output channels
// are consecutive floats, so a tile's broadcasts take one pointer stepped once per tap.
std::vector<float> stem_weights(const float* w, int64_t m, int64_t c);
// Channels: width for depthwise, cg for grouped (the output block is always `width` channels).
int64_t depthwise_block_scratch_floats(int64_t rows_out, int64_t ow, int k, int stride, int width, int64_t channels);
// Whether the depthwise block function runs plane-direct (one channel at a time, no transposes;
// depthwise_blocked_inl.h) rather than channel-blocked: wide stride-1 planes (measured on AVX-512: 112-wide 0.85x
// the blocked time; 56-wide even with ReLU6 and 1.15x with SiLU, whose constants then compete with the accumulators
// for registers). Stride 2 copied to scratch (even / odd columns) was slower, also with whole planes per task.
// Stride 2 runs plane-direct on planes of at least kDirectStride2MinWidth outputs (the 112-wide inputs of the
// MobileNets), read in place with in-lane shuffles (dw_inplace_channel), unless the activation is Sigmoid, GELU or
// Tanh: measured (kestrel_conv_bench, alternating runs) AVX-512 96 ch ReLU6 196-200 -> 156-161 us, 48 ch ReLU 99-101 ->
// 94-97; AVX2 48 ch 120 -> 111, 96 ch 236 -> 232; SiLU 2-5% slower on both; 56-wide outputs 25-70% slower.
// Those were on Zen 5. On an AVX2-only host (Zen 2, 3 interleaved runs) the channel-blocked path is
// the faster one: 48 ch ReLU 165 against 176 us, 96 ch ReLU6 311 against 356, cold (BM_ConvCold) 724
// against 944; so stride 2 runs plane-direct only with 16-wide vectors. SiLU joined the plane-direct path on
// Zen 4 (AVX-512 on 256-bit units), where the blocked path's transposes cost more: 96 ch SiLU (EfficientNet-B0's
// 112 -> 56 depthwise) 379-386 -> 268 us (two pairs), the model at 1 thread 0.979 of the time (8 interleaved
// rounds), against the 2-5% it lost on Zen 5.
constexpr int64_t kDirectStride2MinWidth = 48;
constexpr bool depthwise_runs_direct(int stride, int64_t ow, int width, GemmActivation act) {
  if (width < 8) return false;
  if (stride == 1) return ow >= 6 * width;
  return stride == 2 && width >= 16 && ow >= kDirectStride2MinWidth &&
         act != GemmActivation::kSigmoid && act != GemmActivation::kGelu && act != GemmActivation::kTanh;
}
// Narrow stride-1 planes on AVX-512 (rows of 1 to 4 16-wide vectors with at most 1/8 of the lanes idle: 14x14,
// 28x28, 56x56) also run plane-direct, several rows at a time read straight from the input (dw_narrow_channel,
// depthwise_blocked_inl.h): the channel-blocked path's 16 x 16 transposes cost more than the idle lanes. Zen 4,
// kestrel_conv_bench BM_Conv, two rounds: 672 ch 3x3 14x14 HardSwish 85 -> 58 us, 576 ch ReLU6 71 -> 52, 480 ch
// 5x5 SiLU 116 -> 94; 240 ch 5x5 28x28 SiLU 189 -> 178; 72 ch 3x3 56x56 ReLU 143 -> 85, 144 ch SiLU 339 -> 291.
// With 8-wide vectors (AVX2 forced on the same host; 8 x 8 transposes) 14x14 was slower: 80 -> 110, 134 -> 172.
constexpr bool depthwise_runs_narrow(int stride, int64_t ow, int width) {
  const int64_t lanes = (ow + width - 1) / width * width;
  return stride == 1 && width >= 16 && ow <= 4 * width && ow * 8 >= lanes * 7;
}
// Plane-direct planes up to this size are copied zero-padded to scratch (dw_direct_channel); larger ones are read
// straight from the input with masked loads at the edges (dw_inplace_channel): a copy that does not fit L1 goes through
// L2 twice. kestrel_conv_bench, alternating runs: 32 ch at 112 (50 KiB planes) AVX-512 125-131 -> 113-117 us, AVX2
// 151 -> 139; AVX2's 56-wide planes (12.5 KiB) were slower read from the input (SiLU 361 -> 405 us).
constexpr int64_t kDirectCopyMaxPlaneBytes = int64_t{32} << 10;
// Scratch of the plane-direct path: one channel's zero-padded input rows for rows_out output rows.
int64_t depthwise_direct_scratch_floats(int64_t rows_out, int64_t ow, int k, int width);

// Winograd F(2x2, 3x3), stride 1 (winograd_inl.h), one image and a chunk of tile rows [ty0, ty1):
// input transform into v [16][C][nt], then 16 GEMMs (outside) into mt [16][M][nt], then the output
// transform with the epilogue. nt = (ty1 - ty0) * tw; tile (ty, tx) covers outputs (2ty.., 2tx..).
struct WinogradArgs {
  const float* x = nullptr;  // [C, ih, iw]
  int64_t c = 0, m = 0, ih = 0, iw = 0, oh = 0, ow = 0, pad_top = 0, pad_left = 0;
  int64_t tw = 0, ty0 = 0, ty1 = 0;
  float* v = nullptr;
  const float* mt = nullptr;
  float* row_scratch = nullptr;  // per thread: winograd_row_scratch_floats(tw, width)
  const float* bias = nullptr;
  const float* residual = nullptr;  // [M, oh, ow] or null
  float* y = nullptr;               // [M, oh, ow]
  GemmActivation activation = GemmActivation::kNone;
  float act_alpha = 0.f, act_beta = 0.f;
};
using WinogradFn = void (*)(const WinogradArgs& a, int64_t from, int64_t to);  // channel range
struct WinogradKernels {
  WinogradFn input = nullptr;   // input channels
  WinogradFn output = nullptr;  // output channels
};
// Floats per split input row half (even or odd columns): whole vectors, one past the last tile's column.
inline int64_t winograd_half_row(int64_t tw, int width) {
  return (tw + width - 1) / width * width + width;
}
inline int64_t winograd_row_scratch_floats(int64_t tw, int width) {
  return 8 * winograd_half_row(tw, width) + 64;
}
WinogradKernels winograd_kernels(core::Isa isa);
WinogradKernels winograd_kernels_scalar();
WinogradKernels winograd_kernels_avx2();
WinogradKernels winograd_kernels_avx512();

// im2col of one image, rows [r0, r1) of col [C*KH*KW, OH*OW]; row (c, ky, kx) holds, per output
// position, the input element that tap reads (0 in the padding). Lives beside the depthwise kernel
// because it shares the vector traits: rows of small images are a few floats, where per-row
// memcpy / memset calls cost more than the copy.
struct Im2colArgs {
  const float* x = nullptr;  // [C, IH, IW]
  int64_t ih = 1, iw = 1, kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, oh = 1, ow = 1;
  float* col = nullptr;
};
using Im2colFn = void (*)(const Im2colArgs& a, int64_t r0, int64_t r1);
Im2colFn im2col_fn(core::Isa isa);
Im2colFn im2col_fn_scalar();
Im2colFn im2col_fn_avx2();
Im2colFn im2col_fn_avx512();

// Pointwise convs on small planes run as C^T = X^T W^T, output channels in the vector lanes (conv.h):
// this writes y[c][p] = act(ct[p * ldc + c - c0] + bias[c] + residual[c][p]) for channels [c0, c1) (c0 a
// multiple of the vector width) and pixels [0, pixels), W x W blocks transposed in registers.
struct TransposeOutArgs {
  const float* ct = nullptr;  // [pixels, ldc], channels from c0
  int64_t ldc = 0, pixels = 0;
  int64_t plane = 0;                // channel stride of y and residual (0: pixels; more: a range of a plane's pixels)
  const float* bias = nullptr;      // [C] or null
  const float* residual = nullptr;  // [C, plane] or null
  float* y = nullptr;               // [C, plane]
  GemmActivation activation = GemmActivation::kNone;
  float act_alpha = 0.f, act_beta = 0.f;
};
using TransposeOutFn = void (*)(const TransposeOutArgs& a, int64_t c0, int64_t c1);
TransposeOutFn transpose_out_fn(core::Isa isa);
TransposeOutFn transpose_out_fn_scalar();
TransposeOutFn transpose_out_fn_avx2();
TransposeOutFn transpose_out_fn_avx512();

// Softmax over each of `rows` rows of n floats (row stride ld), in place: exp(x - max) / sum. A
// row whose maximum is -inf becomes NaN (as Softmax). Used by the fast attention kernel; here for
// the same reason as im2col (the per-ISA vector traits and exp live in these units).
using SoftmaxRowsFn = void (*)(float* s, int64_t rows, int64_t n, int64_t ld);
SoftmaxRowsFn softmax_rows_fn(core::Isa isa);
SoftmaxRowsFn softmax_rows_fn_scalar();
SoftmaxRowsFn softmax_rows_fn_avx2();
SoftmaxRowsFn softmax_rows_fn_avx512();

}  // namespace kestrel::kernels::cpu::conv_detail

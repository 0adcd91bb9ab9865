// A pointwise conv, a depthwise conv and optionally a second pointwise conv run together over strips
// of output rows (MobileNet's inverted residual: expand 1x1 -> depthwise k x k -> project 1x1), so the
// expanded tensor (and, with the projection, the depthwise output) never leaves L2: each strip's
// expansion goes to per-thread scratch, the depthwise reads it from there, the projection reads the
// depthwise rows from scratch too. Rows shared by two strips of one thread are carried over, not
// recomputed. Without the expansion (the first block of MobileNet-V2 / V3 and MnasNet: depthwise ->
// project) the depthwise reads its rows straight from X and only its output strip stays in scratch.
// On small planes (the 7x7 stages, small_plane) the three convs run whole instead, pixel-major in between
// (run_small). NCHW f32 in and out; the kernels are FastConv's (conv.h), so every ISA it has.
#pragma once

#include <optional>

#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/conv/conv.h"

namespace kestrel::kernels::cpu {

struct ConvChainParams {
  int64_t stride = 1;                 // the depthwise conv's stride on both axes: 1 or 2
  int64_t pad_top = 0, pad_left = 0;  // its begin pads, each < its kernel size (the output size is y's)
};

class FastConvChain {
 public:
  // expand: a FastConv of W1 [M, C, 1, 1] (group 1) or none; depthwise: of W2 [M, 1, k, k] (k 3 or 5) with
  // group M; project: of W3 [P, M, 1, 1] (group 1) or none; at least one of expand and project. Each carries its
  // activation; all for the same ISA. A conv of another kind (middle conv not has_direct_rows(), say groups of 8
  // on AVX-512) gives Unsupported: the caller runs the convs another way; mismatched channel counts, or neither
  // pointwise conv, give InvalidArgument.
  // On small planes (small_plane) the op makes expand and project with FastConv::create_transposed_pointwise around a
  // depthwise conv: the chain then runs the three convs whole over pixel-major scratch (channels in the vector lanes:
  // no transposes between them, one at the end) instead of strips of NCHW rows.
  // shortcut_channels > 0: a strided 1x1 shortcut of X (RegNet's downsampling blocks) folded into the projection,
  // which then maps M + shortcut_channels channels (W3 and the shortcut's W4 side by side, [P, M + C]; its bias
  // B3 + B4): per strip, X's pixels at the middle conv's stride (rows and columns 0, s, ...) are gathered below the
  // depthwise output, so one GEMM of depth M + C adds both, and X is read once, while its rows are in cache. Needs
  // the projection, X's channel count C (= M without the expansion) and the strip path (no small planes).
  static Result<FastConvChain> create(std::optional<FastConv> expand, FastConv depthwise,
                                      std::optional<FastConv> project, int64_t shortcut_channels = 0);

  // Whether a depthwise middle conv with this input plane and stride runs a chain of both pointwise convs on the
  // small-plane path: output about ceil(h / s) x ceil(w / s) pixels, at most kSmallPlaneMaxPixels (the 7x7 stages),
  // or kSmallPlaneMaxPixelsStride1 at stride 1 or with one thread (also the 14x14 stages). The fusion pass fuses
  // the first kind too (fuse_pointwise_depthwise.cc; strips of rows lost there), the second is fused anyway
  // (kMinProjectedPlane). BM_Chain and the models on Zen 4 (docs/architecture.md, "7x7 stages pixel-major"):
  // 14x14 blocks 0.92 at 1 thread; at 2 threads 1.08-1.10 at stop 30, 0.93-1.00 at stride 1 once the projection
  // was shared by pixels (stop 34); 28x28 1.12 at 1 thread, so stride 2 from 28x28 only with one thread.
  static constexpr int64_t kSmallPlaneMaxPixels = 8 * 8;
  static constexpr int64_t kSmallPlaneMaxPixelsStride1 = 14 * 14;
  static bool small_plane(int64_t h, int64_t w, int64_t stride, int threads) {
    const int64_t max = threads == 1 || stride == 1 ? kSmallPlaneMaxPixelsStride1 : kSmallPlaneMaxPixels;
    return h > 0 && w > 0 && stride > 0 && ((h + stride - 1) / stride) * ((w + stride - 1) / stride) <= max;
  }

  // x [N, C, H, W] (C = M without expansion); b1 [M] (only with the expansion), b2 [M], b3 [P] or null; z (the
  // projection's residual): y's shape or null, only with a projection and no shortcut; y [N, P (or M without
  // projection), OH, OW]. With the shortcut, b3 is B3 + B4.
  Status run(const ConvChainParams& p, const Tensor& x, const Tensor* b1, const Tensor* b2, const Tensor* b3,
             const Tensor* z, Tensor& y, core::ThreadPool* pool) const;

  const char* name() const;  // "conv_chain.<isa>"

  // Floats of expanded rows per strip (per thread, 512 KiB: half of Zen 5's L2); the strip height follows from it.
  // kestrel_conv_bench BM_Chain on Zen 5 (docs/architecture.md, "Fused inverted residuals"): 48 Ki floats made
  // strips of one output row at 112x112 (96 channels; no projection 1.64x the unfused time), 64 Ki 1.07-1.25x
  // warm at 1 thread; 128 Ki and 192 Ki 1.01-1.06x warm, 0.74-1.01x cold, 0.6-0.9x at 2 threads.
  static constexpr int64_t kStripFloats = int64_t{128} << 10;
  // Without the expansion, with threads: floats of depthwise output per strip (96 KiB), kept for the projection
  // while the thread's share of X, written by the op before on this core, stays in its L2. Before, the strips were
  // sized as expanded rows (kStripFloats): at 112x112, 32 channels, 28-row strips whose 400 KiB of depthwise output
  // pushed X's rows out of Zen 4's 1 MiB L2. `kestrel bench --trace` at 2 threads, 10-14 interleaved rounds, the
  // first block's node, median ratio of the rounds: MnasNet 0.87, MobileNet-V2 0.77, MobileNet-V3-Large (16
  // channels) 0.96. One thread keeps the whole image as one strip.
  static constexpr int64_t kDepthwiseStripFloats = int64_t{24} << 10;

 private:
  // Small planes (create: both pointwise convs transposed): the three convs over pixel-major scratch, no strips.
  Status run_small(const ConvChainParams& p, const Tensor& x, const Tensor* b1, const Tensor* b2, const Tensor* b3,
                   const Tensor* z, Tensor& y, core::ThreadPool* pool) const;

  std::optional<FastConv> expand_;
  FastConv depthwise_;
  std::optional<FastConv> project_;
  bool small_ = false;
  int64_t shortcut_c_ = 0;  // create's shortcut_channels
};

}  // namespace kestrel::kernels::cpu

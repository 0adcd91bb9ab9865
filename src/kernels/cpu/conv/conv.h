// Fast f32 convolution, NCHW (1-D and 2-D), weights prepared once at kernel creation:
//   - 1x1, stride 1, no padding: a GEMM per image and group, W[M,C] x X[C,H*W], no im2col;
//   - depthwise 3x3 / 5x5, stride 1 or 2, any padding: direct, W channels per vector (depthwise.h);
//   - grouped k x k, stride 1 or 2, whose group widths are whole vectors (RegNet): direct, over input rows packed in
//     blocks of W channels;
//   - dense 3x3 stride 1 with enough channels: Winograd F(2x2, 3x3), 16 GEMMs on transformed tiles;
//   - anything else: im2col per image and group, then GEMM with the pre-packed weights.
// Bias, residual (fused ops' Z) and activation run in the GEMM / depthwise epilogue.
#pragma once

#include <algorithm>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "core/cpu_features.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/cpu/conv/depthwise.h"
#include "kernels/cpu/gemm/bf16_gemm.h"
#include "kernels/cpu/gemm/sgemm.h"
#include "kernels/cpu/matmul/matmul.h"
#include "kernels/cpu/pool/pool.h"
#include "kernels/reference/conv.h"

namespace kestrel::kernels::cpu {

class FastConv {
 public:
  // w: [M, C/group, KH, KW] or [M, C/group, KW], f32 (copied / packed here).
  // allow_winograd: false keeps 3x3 stride-1 convs on im2col + GEMM (tests, benchmarks).
  // plane_hint: the input's spatial size (product) when known at creation, else 0; pointwise convs
  // on planes up to pointwise_transposed_max_plane(isa) then pack their weights for the transposed
  // GEMM.
  static Result<FastConv> create(const Tensor& w, int64_t group, FusedActivation act, core::Isa isa,
                                 bool allow_winograd = true, int64_t plane_hint = 0);

  // p: strides, dilations, begin pads per spatial axis (the output size is y's). x: [N, C, ...],
  // bias: [M] or null, z: y's shape or null, y: [N, M, ...].
  Status run(const ref::ConvParams& p, const Tensor& x, const Tensor* bias, const Tensor* z, Tensor& y,
             core::ThreadPool* pool) const;
  const char* name() const;

  // Conv + epilogue (bias, activation; no residual) + 2-D MaxPool `q` in one pass, on the stem path
  // only (path_for(p) == kStem, else Unsupported): the conv rows each strip of pool rows needs are
  // computed into per-thread scratch (those it shares with the strip before it are kept from that
  // one) and pooled from there, so the conv output ([N, M, conv_oh, conv_ow]) is never written to
  // memory. y: [N, M, pooled sizes] (the MaxPool's output).
  Status run_max_pooled(const ref::ConvParams& p, int64_t conv_oh, int64_t conv_ow, const Pool2dParams& q,
                        const Tensor& x, const Tensor* bias, Tensor& y, core::ThreadPool* pool) const;

  // Which path run() takes for these parameters (for tests and profiles).
  enum class Path { kPointwise, kDepthwise, kIm2col, kGrouped, kWinograd, kStem };
  // Winograd needs at least this many input and output channels. It was 32 while the transforms
  // were scalar loops (with C = 16 its 16 GEMMs of depth C lost to im2col + GEMM); with them
  // vectorized, SqueezeNet's 55x55 16 -> 64 convs take 250-261 us against im2col's 320-327 in the
  // model (1 thread; kestrel_conv_bench 253-270 against 329-345).
  static constexpr int64_t kWinogradMinChannels = 16;
  // With threads, Winograd runs whole chunks of tile rows as tasks when each has this many tiles
  // (GEMM N); below, every phase is split across the threads instead.
  static constexpr int64_t kWinogradMinTilesPerTask = 48;
  // With threads, im2col runs strips of output rows as tasks, each unfolded into a buffer of about
  // this many floats (L2), when a strip has at least kIm2colMinStripColumns outputs (GEMM N).
  static constexpr int64_t kIm2colStripFloats = 1 << 16;
  static constexpr int64_t kIm2colMinStripColumns = 256;
  // 1x1 stride-1 convs on planes up to this size run as C^T = X^T W^T (output channels in the
  // vector lanes) and a transpose. AVX-512: 7x7 planes fill 49 of 64 lanes when the pixels are in
  // them (measured on Zen 5). AVX2: the plain GEMM does 49 = 3 x 16 + 1 pixels with the last
  // column in the macro-kernel and is faster from 16 pixels up (Zen 2: 400 -> 400 on 7x7 174
  // against 194 us, 8x8 210 against 240; 3x3 51 against 40), so only smaller planes go transposed.
  static int64_t pointwise_transposed_max_plane(core::Isa isa) { return isa == core::Isa::kAvx2 ? 15 : 64; }
  static constexpr int64_t kStemMaxChannels = 4;  // 3x3 stride 2 with at most this many input channels: direct
  // With threads, the direct depthwise and stem kernels write outputs of at least this many bytes
  // with non-temporal stores (conv_detail::DepthwiseBlockArgs::stream): mnasnet at 2 threads, per
  // op, stem 219 -> 115 us and 112x112 depthwise 201 -> 151 us (the model -0.7% to -2%). At 1
  // thread they cost 1-4% (the next op then reads from memory, not L3): one thread keeps ordinary
  // stores.
  static constexpr int64_t kStreamOutputBytes = int64_t{1} << 20;
  Path path_for(const ref::ConvParams& p) const;
  // Whether the pointwise path runs transposed (C^T = X^T W^T) on a plane of this many pixels.
  bool pointwise_transposed(int64_t plane) const {
    return group_ == 1 && !pointwise_t_.empty() && plane <= pointwise_transposed_max_plane(isa_);
  }
  const char* path_name(const ref::ConvParams& p) const;

  // With threads, run pointwise and im2col GEMMs over wide planes as one contiguous range of pixels
  // per thread (SgemmContext::split_columns) instead of ranges of output channels. For convs whose
  // output is read by other dense convs (their GEMMs and strips read all channels of a range of
  // pixels), not for those that feed a depthwise or grouped conv (ranges of channels per thread).
  void set_split_columns(bool on) { split_columns_ = on; }
  // With threads, run the stem as one contiguous range of output rows per thread (task t on thread t) with ordinary
  // stores instead of strips dealt out and non-temporal stores: for a stem read only by FastConvChains over strips
  // of rows, which share the rows the same way, so each thread reads the rows it wrote from its own cache. (Other
  // readers keep the streaming stores: RegNet's stem, read by 1x1 convs, took 174 -> 330 us without them.)
  void set_stem_rows_per_thread(bool on) { stem_rows_per_thread_ = on; }

  // Lets this conv trade f32 precision for bf16's, when the CPU has AVX512_BF16 and the conv is for AVX-512 (a no-op
  // otherwise): a 1x1 group-1 conv (is_pointwise) of at least kBf16MinOutputChannels rounds its weights and inputs
  // to bf16 and sums their products in f32 (bf16_gemm) on its plain pointwise path and in pointwise_columns (small
  // planes on the transposed path keep f32), and any conv computes a fused SiLU to bf16's precision
  // (GemmActivation::kSiluBf16). For models whose float layers may run in reduced precision (docs/quantization.md,
  // "bf16 for the float layers").
  Status enable_bf16();
  // Fewer output channels keep f32: each bf16 B panel (packed per call) then serves too few rows. MobileNet-V2 at 1
  // thread (kestrel bench --trace, 5 rounds): features.1's 32 -> 16 projection 183 us in f32, 201 in bf16; the
  // 24-channel projections of features.2-3 gain 10-25% with their chains.
  static constexpr int64_t kBf16MinOutputChannels = 24;
  // Whether a 1x1 conv of this many output channels for this ISA runs in bf16 when allowed (the CPU has AVX512_BF16,
  // the ISA is AVX-512, at least kBf16MinOutputChannels): enable_bf16's rule, also the channel-scaled 1x1 kernel's.
  static bool bf16_applies(int64_t out_channels, core::Isa isa) {
    return out_channels >= kBf16MinOutputChannels && bf16_cpu(isa);
  }
  static bool bf16_cpu(core::Isa isa) { return isa == core::Isa::kAvx512 && bf16_gemm_available(); }
  bool uses_bf16() const { return !bf16_.empty(); }

  // Building blocks for kernels that run several convs over strips of rows (conv_chain.h), on the calling thread.
  // A 1x1 group-1 conv (is_pointwise) over `cols` pixels: y[m][j] = act(sum_c W[m][c] x[c][j] + bias[m] + z[m][j]),
  // rows of x, y and z ld* floats apart; bias and z may be null.
  bool is_pointwise() const { return group_ == 1 && rank_ == 4 && kh_ == 1 && kw_ == 1 && !packed_.empty(); }
  Status pointwise_columns(const float* x, int64_t ldx, int64_t cols, const float* bias, const float* z, int64_t ldz,
                           float* y, int64_t ldy) const;
  // A conv that runs directly over rows of its input (has_direct_rows): depthwise (one 3x3 / 5x5 filter per
  // channel) or grouped k x k on the direct grouped path (group widths whole vectors of this ISA). Output rows
  // [oy0, oy1) of every channel of the image `a` gives (x, c, ih, iw, x_plane, oh, ow, stride, pads, bias,
  // residual, y); the weights, kernel size, groups and activation are this conv's. scratch:
  // direct_rows_scratch_floats(oy1 - oy0, a.ow, a.stride) floats.
  bool has_direct_rows() const { return rank_ == 4 && (depthwise_shaped_ || gp_packed_ != nullptr); }
  void direct_rows(conv_detail::DepthwiseBlockArgs a, int64_t oy0, int64_t oy1, float* scratch) const;
  // For FastConvChain's small planes (pixel-major between its convs): a 1x1 group-1 conv whose weights are packed
  // only as the transposed GEMM's B (W^T, output channels in the vector lanes), for any plane size; its
  // transposed_weights() and activation() are what the chain's GEMMs use.
  static Result<FastConv> create_transposed_pointwise(const Tensor& w, FusedActivation act, core::Isa isa);
  bool is_transposed_pointwise() const {
    return group_ == 1 && rank_ == 4 && kh_ == 1 && kw_ == 1 && packed_.empty() && !pointwise_t_.empty();
  }
  const PackedB& transposed_weights() const { return pointwise_t_; }
  const FusedActivation& activation() const { return act_; }
  // How tasks share one image of a conv with transposed weights (is_transposed_pointwise, or pointwise_transposed
  // on this plane): output channels [n0, n1) (n0 a multiple of transposed_weights().nr()) of pixels [p0, p1) (p0 a
  // multiple of the GEMM's tile height).
  struct TransposedShare {
    int64_t p0 = 0, p1 = 0, n0 = 0, n1 = 0;
  };
  // Tasks for `threads` on a plane of this many pixels, and task t's share: ranges of output channels, or of
  // pixels when that leaves the busiest task fewer pixel rows x column slivers (a 96- or 160-channel projection is
  // 3 or 5 slivers, 2 : 1 or 3 : 2 between two threads; 14x14 and 7x7 planes are 14 and 4 tiles of 14 rows).
  int64_t transposed_tasks(int64_t plane, int threads) const;
  TransposedShare transposed_share(int64_t plane, int64_t tasks, int64_t t) const;
  // One share: C^T = A W^T into per-thread scratch, A = X^T [plane][C] (an NCHW image read transposed, or
  // pixel-major rows; every pixel of the plane, the share's rows are picked here), then transposed into
  // y [M][plane] with bias, residual z (y's layout, or null) and the activation. On the calling thread.
  Status transposed_part(const SgemmA& a, int64_t plane, const TransposedShare& share, const float* bias,
                         const float* z, float* y) const;
  // Task t of `tasks`'s share [first, second) of `total` channels, in whole units (the last share ends at total).
  static std::pair<int64_t, int64_t> unit_share(int64_t total, int64_t unit, int64_t tasks, int64_t t) {
    const int64_t units = (total + unit - 1) / unit;
    return {units * t / tasks * unit, std::min(total, units * (t + 1) / tasks * unit)};
  }
  // A depthwise conv (one 3x3 / 5x5 filter per channel) over pixel-major rows, channels [c0, c1) (c0 a multiple
  // of vector_width()): conv_detail::DepthwiseNhwcArgs with this conv's weights, kernel size and activation.
  bool is_depthwise() const { return rank_ == 4 && depthwise_shaped_; }
  int vector_width() const { return dw_width_; }
  void depthwise_nhwc(conv_detail::DepthwiseNhwcArgs a, int64_t c0, int64_t c1) const;
  int64_t direct_rows_scratch_floats(int64_t rows, int64_t ow, int stride) const;
  int64_t out_channels() const { return m_; }
  int64_t in_channels() const { return cg_ * group_; }
  int kernel_size() const { return static_cast<int>(kh_); }
  core::Isa isa() const { return isa_; }

 private:
  struct Geometry;
  Status make_geometry(const ref::ConvParams& p, const Tensor& x, const Tensor* bias, std::span<const int64_t> ydims,
                       Geometry* g) const;
  Status run_pointwise(const Geometry& g, const float* x, const float* bias, const float* z, float* y,
                       core::ThreadPool* pool) const;
  Status run_pointwise_transposed(const Geometry& g, const float* x, const float* bias, const float* z, float* y,
                                  core::ThreadPool* pool) const;
  Status run_depthwise(const Geometry& g, const float* x, const float* bias, const float* z, float* y,
                       core::ThreadPool* pool) const;
  Status run_grouped(const Geometry& g, const float* x, const float* bias, const float* z, float* y,
                     core::ThreadPool* pool) const;
  Status run_winograd(const Geometry& g, const float* x, const float* bias, const float* z, float* y,
                      core::ThreadPool* pool) const;
  Status run_stem(const Geometry& g, const float* x, const float* bias, const float* z, float* y,
                  core::ThreadPool* pool) const;
  Status run_im2col(const Geometry& g, const float* x, const float* bias, const float* z, float* y,
                    core::ThreadPool* pool) const;
  Status run_im2col_strips(const Geometry& g, const float* x, const float* bias, const float* z, float* y,
                           core::ThreadPool* pool, int64_t rows_per_strip, const GemmEpilogue& ep) const;

  core::Isa isa_ = core::Isa::kScalar;
  bool split_columns_ = false;
  bool stem_rows_per_thread_ = false;
  FusedActivation act_;
  int64_t m_ = 0, cg_ = 0, kh_ = 1, kw_ = 1, group_ = 1, rank_ = 4;
  std::shared_ptr<const std::vector<float>> w_;  // [M, Cg*KH*KW]
  bool depthwise_shaped_ = false;                // one 3x3 / 5x5 filter per channel
  std::vector<PackedA> packed_;                  // group == 1: the weights packed as GEMM A
  PackedBf16A bf16_;                             // enable_bf16() on a pointwise conv: the weights in bf16
  PackedB pointwise_t_;                          // pointwise on a small plane: W^T packed as GEMM B
  int dw_width_ = 1;                             // depthwise: channels per block of dw_packed_
  std::shared_ptr<const std::vector<float>> dw_packed_;  // depthwise: [ceil(M / width)][k * k][width]
  std::vector<PackedA> winograd_;                        // F(2x2, 3x3): the 16 transformed [M, C] weights
  int64_t tile_mr_ = 1;                                  // their sliver height (row slices per thread)
  int gp_width_ = 1;                                     // grouped direct: vector width of gp_packed_
  std::shared_ptr<const std::vector<float>> gp_packed_;  // grouped direct: [M / width][k * k][cg][width]
  std::shared_ptr<const std::vector<float>> stem_w_;     // stem: [C * 9][M] (conv_detail::stem_weights)
};

}  // namespace kestrel::kernels::cpu

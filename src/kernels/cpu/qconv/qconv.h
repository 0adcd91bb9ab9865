// Int8 NCHW convolution (u8 activations, s8 per-output-channel weights, int32 bias) with the
// requantizing epilogue and fused output clamp: 1x1 and general convolution as an NCHW GEMM
// W[Cout, K] x X[K, pixels] (qconv_gemm.h; im2col panels for windows), depthwise through a direct
// kernel. The engine of kestrel.QConv, QLinearConv and ConvInteger (docs/quantization.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/cpu_features.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "kernels/cpu/qconv/qconv_dw.h"
#include "kernels/cpu/qconv/qconv_dw_blocked.h"
#include "kernels/cpu/qconv/qconv_gemm.h"
#include "kernels/cpu/qconv/qconv_grouped.h"
#include "kernels/cpu/qgemm/qgemm.h"

namespace kestrel::kernels::cpu {

using qconv_detail::QOut;

// What is fixed when the session is created: the weights and the quantization parameters.
struct QConvSpec {
  int64_t m = 0, c_per_group = 0, kh = 1, kw = 1, group = 1;
  const int8_t* w = nullptr;  // [M, C/group, kh, kw], copied / packed by create()
  std::vector<float> scale;   // [M]: x_scale * w_scale[m] / y_scale (kU8 output)
  std::vector<int32_t> bias;  // [M] or empty
  uint8_t x_zp = 0;
  int32_t y_zp = 0, out_min = 0, out_max = 255;  // output clamp in the quantized domain (fused Relu / Clip)
  QOut out = QOut::kU8;
  core::Isa isa = core::Isa::kScalar;  // depthwise kernel's ISA
  bool dw_vnni = true;                  // depthwise: use the VNNI of isa if the CPU has it (tests turn it off)
  bool dw_blocked = true;               // depthwise: the blocked small-plane kernel where it applies (ditto)
  std::optional<QgemmIsa> qgemm_isa;   // default: qgemm_active_isa()
};

// What the input shape decides (per run): sizes, strides, dilations and begin pads of 2-D
// windows (a 1-D conv is H = 1).
struct QConvShape {
  int64_t n = 1, c = 1, ih = 1, iw = 1, oh = 1, ow = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pad_top = 0, pad_left = 0;
};

class QConv {
 public:
  static core::Result<std::unique_ptr<QConv>> create(const QConvSpec& spec);
  // x: u8 [N, C, IH, IW]; y: u8 or int32 [N, M, OH, OW]. Steady-state calls allocate nothing
  // (scratch grows to the largest shape seen).
  core::Status run(const QConvShape& s, const uint8_t* x, void* y, core::ThreadPool* pool);
  const char* impl_name() const { return impl_name_; }
  // The kernel run() takes for this shape (the depthwise kernels differ by plane size).
  const char* impl_name(const QConvShape& s) const {
    return !uses_dw_blocks(s)                ? impl_name_
           : spec_.isa == core::Isa::kAvx512 ? "qconv.dw_blocked.avx512"
                                             : "qconv.dw_blocked.avx2";
  }
  bool depthwise() const { return depthwise_; }
  // Whether run() takes this shape through the blocked small-plane depthwise kernel.
  // On AVX-512 VNNI the per-plane row tiles take planes of 7 x 7 outputs and more instead (dw_int_rows_).
  bool uses_dw_blocks(const QConvShape& s) const {
    constexpr int64_t kMin = qconv_detail::kQDwRowTileMinOutputs;
    if (dw_int_rows_ && s.sh == s.sw && (s.sh == 1 || s.sh == 2) && s.dh == 1 && s.dw == 1 && s.oh >= kMin &&
        s.ow >= kMin)
      return false;
    return dw_block_fn_ &&
           qconv_detail::qdw_block_fits(s.oh, s.ow, spec_.kh, spec_.kw, s.sh, s.sw, s.dh, s.dw, s.pad_top, s.pad_left);
  }

 private:
  QConvSpec spec_;
  bool depthwise_ = false;
  const qconv_detail::QcTable* qc_ = nullptr;  // gemm path kernels
  std::vector<uint8_t> w_packed_;               // packed weights, w_group_bytes_ per group
  qconv_detail::QGroupedFn grouped_fn_ = nullptr;  // direct grouped kernel (qconv_grouped.h), or null
  std::vector<int32_t> grouped_w_;                 // its weights, per group
  int64_t w_group_bytes_ = 0;
  std::vector<int32_t> offset_;                 // [M] bias - x_zp * sum_k w
  std::vector<uint8_t> planes_;                 // padded phase planes of one image (windows)
  std::vector<int64_t> row_off_;                // [K] start of each im2col row in the planes
  int64_t plane_chan_stride_ = 0;
  std::vector<float> dw_w_;        // depthwise weights as floats [M, kh*kw]
  std::vector<int32_t> dw_wq_;     // 3x3 / 5x5 depthwise: [M, kh, 2] words of 4 s8 taps (QDwPlane::wq)
  std::vector<int32_t> dw_wsum_;   // [M] sums of the depthwise taps
  qconv_detail::QDwFn dw_fn_ = nullptr;
  // Small planes, 16 channels at a time (qconv_dw_blocked.h): u8 output on AVX-512 / AVX2, else null.
  qconv_detail::QDwBlockFn dw_block_fn_ = nullptr;
  // Square 3x3 / 5x5 on AVX-512 VNNI: the integer kernel's row tiles read the plane in place and put two 7-8 wide
  // planes in one vector (qconv_dw_int_inl.h, V512::plane_rows, dw_int_rows_pair), and take the 7x7 outputs in
  // 0.5-0.8x the blocked kernel's time (BM_QConvDw, Zen 5: 960 x 7 x 7 3x3 19.2-20.6 -> 16.0 us, 1152 x 7 x 7 5x5
  // 33-35 -> 24, 576 x 14 x 14 3x3 s2 21.3 -> 10.3, 672 x 14 x 14 5x5 s2 30.8 -> 15.1).
  bool dw_int_rows_ = false;
  std::vector<float> dw_block_w_;       // [M / 16 rounded up][kh * kw][16]
  std::vector<int32_t> dw_block_bias_;  // [M rounded up to 16]
  std::vector<float> dw_block_scale_;   // [M rounded up to 16]
  core::Status run_dw_blocks(const QConvShape& s, const uint8_t* x, uint8_t* y, core::ThreadPool* pool);
  const char* impl_name_ = "qconv";
};

}  // namespace kestrel::kernels::cpu

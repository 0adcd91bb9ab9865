// Reference quantization kernels: QuantizeLinear / DequantizeLinear (per tensor, per axis,
// blocked), DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv.
// Integer products are accumulated exactly in int64; they are the oracle for the int8 kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

// Smallest and largest value of a quantized dtype (u8, i8, u16, i16, i32).
core::Result<std::pair<int64_t, int64_t>> quant_range(core::DType t);

// The rounding and saturation every quantizing op shares: round half to even, add the zero point,
// clamp to [qmin, qmax]. NaN gives the zero point; infinities saturate.
int64_t quantize_value(double v, int64_t zero_point, int64_t qmin, int64_t qmax);

// Requantization of an exact integer accumulator: saturate(round_half_even(acc * multiplier) + zp)
// with multiplier = in_scale * w_scale / out_scale computed in double. Optimized int8 kernels that
// use fixed-point multipliers may differ from this by one at exact ties.
int64_t requantize(int64_t acc, double multiplier, int64_t zero_point, int64_t qmin, int64_t qmax);

// How a scale / zero-point tensor maps onto the quantized tensor: one value (a scalar or a
// one-element tensor), one per index of `axis` (1-D), or one per block of `block_size`
// consecutive indices along `axis` (same rank as x, ceil(dim/block_size) along axis).
struct QuantAxisParams {
  int64_t axis = 1;  // normalized by the caller
  int64_t block_size = 0;
};

// y = saturate(round(x / scale) + zero_point). x: f32/f16/bf16/f64/i32; scale: float dtype (or i32 for i32 x);
// zero_point: y's dtype or null (0); y: u8/i8/u16/i16 with x's shape. The division is done in float
// for 32-bit-and-narrower floats (as ONNX Runtime and the ONNX reference do) and in double otherwise.
Status quantize_linear(const QuantAxisParams& p, const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                       Tensor& y);

// y = (x - zero_point) * scale. x: u8/i8/u16/i16/i32; zero_point: x's dtype or null; scale and y:
// f32/f16/bf16/f64 (y has scale's dtype).
Status dequantize_linear(const QuantAxisParams& p, const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                         Tensor& y);

// u8 quantization of a f32 tensor with its range widened to include 0:
// scale = (max - min) / 255, zero_point = saturate(round(-min / scale)), y = saturate(round(x / scale) + zp).
// An all-zero (or empty) x gives scale 0, zero point 0 and y = 0. NaNs are ignored for the range.
Status dynamic_quantize_linear(const Tensor& x, Tensor& y, Tensor& y_scale, Tensor& y_zero_point);

// numpy-matmul of u8/i8 a and b after subtracting zero points; exact sum wrapped to int32.
// a_zero_point: one value, one per row of a ([M] or [..., M, 1]); b_zero_point: one value, one per
// column of b ([N] or [..., 1, N]). Either may be null (0). y: int32 with the matmul shape.
Status matmul_integer(const Tensor& a, const Tensor& b, const Tensor* a_zero_point, const Tensor* b_zero_point,
                      Tensor& y);

// MatMulInteger followed by requantization to y's dtype (u8/i8): scales as the zero points
// (per tensor, per row of a, per column of b); y_scale / y_zero_point: one value, one per column
// ([N]), or any shape broadcastable to y.
Status qlinear_matmul(const Tensor& a, const Tensor& a_scale, const Tensor& a_zero_point, const Tensor& b,
                      const Tensor& b_scale, const Tensor& b_zero_point, const Tensor& y_scale,
                      const Tensor& y_zero_point, Tensor& y);

// Integer convolution geometry per spatial axis; output spatial sizes come from y.
struct IntConvParams {
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads_begin;
  int64_t group = 1;
};

// y[n, m, o] = sum_{c, k} (x[n, g*C/G + c, o*stride - pad + k*dilation] - x_zp) * (w[m, c, k] - w_zp[m])
// with padding contributing 0 (it is the zero point). x: [N, C, D...] u8/i8; w: [M, C/G, K...]
// u8/i8; x_zero_point: one value or null; w_zero_point: one value, [M] or null; y: int32
// [N, M, O...], the exact sum wrapped to 32 bits.
Status conv_integer(const IntConvParams& p, const Tensor& x, const Tensor& w, const Tensor* x_zero_point,
                    const Tensor* w_zero_point, Tensor& y);

// ConvInteger plus bias (int32 [M], scale x_scale * w_scale, zero point 0), requantized to y's
// dtype: y = saturate(round((acc + bias[m]) * x_scale * w_scale[m] / y_scale) + y_zero_point).
// x_scale, x_zero_point, y_scale, y_zero_point: one value; w_scale / w_zero_point: one value or [M].
Status qlinear_conv(const IntConvParams& p, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                    const Tensor& w, const Tensor& w_scale, const Tensor& w_zero_point, const Tensor& y_scale,
                    const Tensor& y_zero_point, const Tensor* bias, Tensor& y);

}  // namespace kestrel::kernels::ref

// Tests of the quantization ops: rounding and saturation by hand, Quantize/DequantizeLinear per
// tensor / axis / block against a naive loop, DynamicQuantizeLinear on the spec's example,
// MatMulInteger / QLinearMatMul and ConvInteger / QLinearConv against naive int64 computations
// written here (batch broadcasting, per-row/column/channel zero points, groups, strides,
// dilations, padding, int32 wrap-around), and the ONNX path through Session (auto_pad,
// output_dtype, bad attributes).
#include "kernels/reference/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "common/onnx_builder.h"
#include "common/op_test_util.h"
#include "core/tensor.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::Dims;
using core::DType;
using core::Tensor;
namespace ref = kernels::ref;
using testing::OnnxBuilder;
using testing::unravel;

Tensor random_f32(const Dims& dims, uint32_t seed, float lo = -5.f, float hi = 5.f) {
  Tensor t = Tensor::allocate(DType::kF32, dims).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

Tensor random_q(DType t, const Dims& dims, uint32_t seed) {
  Tensor x = Tensor::allocate(t, dims).value();
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    int v = static_cast<int>(rng() % 256);
    if (t == DType::kU8)
      x.data<uint8_t>()[i] = static_cast<uint8_t>(v);
    else
      x.data<int8_t>()[i] = static_cast<int8_t>(v - 128);
  }
  return x;
}

Tensor q_scalar(DType t, int v) {
  Tensor x = Tensor::allocate(t, {}).value();
  if (t == DType::kU8)
    x.data<uint8_t>()[0] = static_cast<uint8_t>(v);
  else
    x.data<int8_t>()[0] = static_cast<int8_t>(v);
  return x;
}

int64_t clamp_q(double v, DType t) {
  auto r = ref::quant_range(t).value();
  return static_cast<int64_t>(std::clamp(v, static_cast<double>(r.first), static_cast<double>(r.second)));
}

TEST(QuantizeKernel, RoundingIsHalfToEvenAndSaturates) {
  EXPECT_EQ(ref::quantize_value(2.5, 0, 0, 255), 2);
  EXPECT_EQ(ref::quantize_value(3.5, 0, 0, 255), 4);
  EXPECT_EQ(ref::quantize_value(-2.5, 10, -128, 127), 8);
  EXPECT_EQ(ref::quantize_value(-0.5, 0, -128, 127), 0);
  EXPECT_EQ(ref::quantize_value(1000, 3, 0, 255), 255);
  EXPECT_EQ(ref::quantize_value(-1000, 3, -128, 127), -128);
  EXPECT_EQ(ref::quantize_value(std::numeric_limits<double>::infinity(), 0, 0, 255), 255);
  EXPECT_EQ(ref::quantize_value(-std::numeric_limits<double>::infinity(), 0, -128, 127), -128);
  EXPECT_EQ(ref::quantize_value(std::nan(""), 7, 0, 255), 7);
  EXPECT_EQ(ref::requantize(5, 0.5, 0, 0, 255), 2);       // 2.5 -> 2
  EXPECT_EQ(ref::requantize(7, 0.5, 0, 0, 255), 4);       // 3.5 -> 4
  EXPECT_EQ(ref::requantize(-3, 0.5, 1, -128, 127), -1);  // -1.5 -> -2, + 1
}

TEST(QuantizeKernel, HandComputedPerTensor) {
  Tensor x = Tensor::from_vector<float>({0, 2, 3, 1000, -254, -1000, 1.f, -1.f}, {8});
  Tensor scale = Tensor::scalar<float>(2);
  Tensor zp = Tensor::allocate(DType::kU8, {}).value();
  zp.data<uint8_t>()[0] = 128;
  Tensor y = Tensor::allocate(DType::kU8, {8}).value();
  ASSERT_TRUE(ref::quantize_linear({1, 0}, x, scale, &zp, y).is_ok());
  const uint8_t want[] = {128, 129, 130, 255, 1, 0, 128, 128};  // 1/2 -> 0, 3/2 -> 2 (ties to even)
  for (int i = 0; i < 8; ++i) EXPECT_EQ(y.data<uint8_t>()[i], want[i]) << i;
  // No zero point: u8 with zero point 0.
  ASSERT_TRUE(ref::quantize_linear({1, 0}, x, scale, nullptr, y).is_ok());
  EXPECT_EQ(y.data<uint8_t>()[4], 0);
  EXPECT_EQ(y.data<uint8_t>()[2], 2);
  // int32 input with an int32 scale (opset 21 types both as T1).
  Tensor xi = Tensor::from_vector<int32_t>({7, -9, 100, 1000}, {4});
  Tensor yi = Tensor::allocate(DType::kI8, {4}).value();
  Tensor zi = Tensor::allocate(DType::kI8, {}).value();
  ASSERT_TRUE(ref::quantize_linear({1, 0}, xi, Tensor::scalar<int32_t>(2), &zi, yi).is_ok());
  const int8_t want_i[] = {4, -4, 50, 127};  // 3.5 -> 4, -4.5 -> -4
  for (int i = 0; i < 4; ++i) EXPECT_EQ(yi.data<int8_t>()[i], want_i[i]) << i;
}

// Naive Q/DQ: finds each element's parameter index from its coordinates.
int64_t param_index(const Dims& idx, const Dims& xdims, const Tensor& param, int64_t axis, int64_t block) {
  if (param.num_elements() == 1 && block == 0) return 0;
  if (block == 0) return idx[static_cast<size_t>(axis)];
  Dims pidx = idx;
  pidx[static_cast<size_t>(axis)] /= block;
  int64_t off = 0;
  for (size_t d = 0; d < xdims.size(); ++d) off = off * param.dims()[d] + pidx[d];
  return off;
}

TEST(QuantizeKernel, QuantizeDequantizeMatchNaivePerTensorAxisAndBlock) {
  const std::vector<Dims> shapes = {{7}, {3, 5}, {2, 3, 4}, {1, 6, 1, 5}};
  uint32_t seed = 11;
  for (const Dims& xs : shapes) {
    const int64_t rank = static_cast<int64_t>(xs.size());
    Tensor x = random_f32(xs, seed++, -300.f, 300.f);
    for (int64_t axis = -rank; axis < rank; ++axis) {
      const int64_t a = axis < 0 ? axis + rank : axis;
      for (int mode = 0; mode < 3; ++mode) {  // per tensor, per axis, blocked by 2
        const int64_t block = mode == 2 ? 2 : 0;
        Dims pd;
        if (mode == 1) pd = {xs[static_cast<size_t>(a)]};
        if (mode == 2) {
          pd = xs;
          pd[static_cast<size_t>(a)] = (xs[static_cast<size_t>(a)] + 1) / 2;
        }
        Tensor scale = random_f32(pd, seed++, 0.5f, 3.f);
        for (DType qt : {DType::kU8, DType::kI8, DType::kU16, DType::kI16}) {
          Tensor zp = Tensor::allocate(qt, pd).value();
          std::mt19937 rng(seed++);
          for (int64_t i = 0; i < zp.num_elements(); ++i) {
            int v = static_cast<int>(rng() % 100);
            switch (qt) {
              case DType::kU8:
                zp.data<uint8_t>()[i] = static_cast<uint8_t>(v + 50);
                break;
              case DType::kI8:
                zp.data<int8_t>()[i] = static_cast<int8_t>(v - 50);
                break;
              case DType::kU16:
                zp.data<uint16_t>()[i] = static_cast<uint16_t>(v * 300);
                break;
              default:
                zp.data<int16_t>()[i] = static_cast<int16_t>(v * 300 - 15000);
                break;
            }
          }
          Tensor y = Tensor::allocate(qt, xs).value();
          ref::QuantAxisParams p{axis, block};
          auto st = ref::quantize_linear(p, x, scale, &zp, y);
          ASSERT_TRUE(st.is_ok()) << st.to_string();
          Tensor back = Tensor::allocate(DType::kF32, xs).value();
          st = ref::dequantize_linear(p, y, scale, &zp, back);
          ASSERT_TRUE(st.is_ok()) << st.to_string();
          for (int64_t i = 0; i < x.num_elements(); ++i) {
            Dims idx = unravel(i, xs);
            int64_t pi = param_index(idx, xs, scale, a, block);
            float s = scale.data<float>()[pi];
            int64_t z = zp.element_as_int64(pi);
            int64_t want = clamp_q(std::nearbyint(x.data<float>()[i] / s) + static_cast<double>(z), qt);
            ASSERT_EQ(y.element_as_int64(i), want) << core::dims_to_string(xs) << " axis " << axis << " mode " << mode;
            EXPECT_EQ(back.data<float>()[i], static_cast<float>(want - z) * s);
          }
        }
      }
    }
  }
}

TEST(QuantizeKernel, DequantizeInt32AndFloat16Scale) {
  Tensor x = Tensor::from_vector<int32_t>({-2000000000, 0, 7, 2000000000}, {4});
  Tensor scale = Tensor::scalar<double>(0.5);
  Tensor y = Tensor::allocate(DType::kF64, {4}).value();
  ASSERT_TRUE(ref::dequantize_linear({1, 0}, x, scale, nullptr, y).is_ok());
  EXPECT_EQ(y.data<double>()[0], -1e9);
  EXPECT_EQ(y.data<double>()[2], 3.5);
  Tensor s16 = Tensor::allocate(DType::kF16, {}).value();
  s16.data<core::Float16>()[0] = core::Float16(0.25f);
  Tensor q = Tensor::allocate(DType::kI8, {2}).value();
  q.data<int8_t>()[0] = -128;
  q.data<int8_t>()[1] = 6;
  Tensor y16 = Tensor::allocate(DType::kF16, {2}).value();
  ASSERT_TRUE(ref::dequantize_linear({1, 0}, q, s16, nullptr, y16).is_ok());
  EXPECT_EQ(static_cast<float>(y16.data<core::Float16>()[0]), -32.f);
  EXPECT_EQ(static_cast<float>(y16.data<core::Float16>()[1]), 1.5f);
}

TEST(QuantizeKernel, BadParametersAreErrors) {
  Tensor x = random_f32({2, 3}, 1);
  Tensor y = Tensor::allocate(DType::kU8, {2, 3}).value();
  Tensor s2 = Tensor::from_vector<float>({1, 2}, {2});
  EXPECT_FALSE(ref::quantize_linear({1, 0}, x, s2, nullptr, y).is_ok());  // axis 1 has 3
  EXPECT_TRUE(ref::quantize_linear({0, 0}, x, s2, nullptr, y).is_ok());
  EXPECT_FALSE(ref::quantize_linear({2, 0}, x, s2, nullptr, y).is_ok());  // axis out of range
  Tensor zp_i8 = Tensor::allocate(DType::kI8, {2}).value();
  EXPECT_FALSE(ref::quantize_linear({0, 0}, x, s2, &zp_i8, y).is_ok());  // zp dtype != y dtype
  Tensor sb = Tensor::from_vector<float>({1, 1, 1, 1}, {2, 2});
  EXPECT_TRUE(ref::quantize_linear({1, 2}, x, sb, nullptr, y).is_ok());  // ceil(3/2) = 2 blocks
  EXPECT_FALSE(ref::quantize_linear({1, 3}, x, sb, nullptr, y).is_ok());
  Tensor sb1 = Tensor::from_vector<float>({1, 1}, {2, 1});  // one block per row, however large
  EXPECT_TRUE(ref::quantize_linear({1, std::numeric_limits<int64_t>::max()}, x, sb1, nullptr, y).is_ok());
  Tensor yi32 = Tensor::allocate(DType::kI32, {2, 3}).value();
  EXPECT_FALSE(ref::quantize_linear({1, 0}, x, Tensor::scalar<float>(1), nullptr, yi32).is_ok());
}

TEST(QuantizeKernel, DynamicQuantizeLinearSpecExample) {
  // From the ONNX operator documentation.
  Tensor x = Tensor::from_vector<float>({0, 2, -3, -2.5f, 1.34f, 0.5f}, {6});
  Tensor y = Tensor::allocate(DType::kU8, {6}).value();
  Tensor s = Tensor::allocate(DType::kF32, {}).value();
  Tensor z = Tensor::allocate(DType::kU8, {}).value();
  ASSERT_TRUE(ref::dynamic_quantize_linear(x, y, s, z).is_ok());
  EXPECT_FLOAT_EQ(s.data<float>()[0], 5.f / 255.f);
  EXPECT_EQ(z.data<uint8_t>()[0], 153);
  const uint8_t want[] = {153, 255, 0, 26, 221, 179};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data<uint8_t>()[i], want[i]) << i;
  // All-positive input: the range still starts at 0, so the zero point is 0.
  Tensor xp = Tensor::from_vector<float>({1, 2, 3}, {3});
  Tensor yp = Tensor::allocate(DType::kU8, {3}).value();
  ASSERT_TRUE(ref::dynamic_quantize_linear(xp, yp, s, z).is_ok());
  EXPECT_EQ(z.data<uint8_t>()[0], 0);
  EXPECT_EQ(yp.data<uint8_t>()[2], 255);
  // All zeros: scale 0, zero point 0, no NaN anywhere.
  Tensor x0 = Tensor::allocate(DType::kF32, {4}).value();
  Tensor y0 = Tensor::allocate(DType::kU8, {4}).value();
  ASSERT_TRUE(ref::dynamic_quantize_linear(x0, y0, s, z).is_ok());
  EXPECT_EQ(s.data<float>()[0], 0.f);
  EXPECT_EQ(z.data<uint8_t>()[0], 0);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y0.data<uint8_t>()[i], 0);
}

// --- MatMulInteger / QLinearMatMul

struct MatMulCase {
  Dims a, b;
};

// Naive numpy matmul over explicit multi-indices with per-row / per-column zero points.
std::vector<int64_t> naive_matmul(const Tensor& a, const Tensor& b, const std::vector<int64_t>& za,
                                  const std::vector<int64_t>& zb, Dims* ydims) {
  Dims ad = a.dims(), bd = b.dims();
  bool av = ad.size() == 1, bv = bd.size() == 1;
  if (av) ad.insert(ad.begin(), 1);
  if (bv) bd.push_back(1);
  const int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  size_t br = std::max(ad.size(), bd.size()) - 2;
  Dims batch(br);
  auto bdim = [&](const Dims& d, size_t i) {  // batch dim i (right-aligned) or 1
    size_t nb = d.size() - 2;
    return i + nb >= br ? d[i + nb - br] : int64_t{1};
  };
  for (size_t i = 0; i < br; ++i) batch[i] = std::max(bdim(ad, i), bdim(bd, i));
  *ydims = batch;
  if (!av) ydims->push_back(m);
  if (!bv) ydims->push_back(n);
  std::vector<int64_t> out;
  int64_t nbatch = core::num_elements(batch);
  for (int64_t bi = 0; bi < nbatch; ++bi) {
    Dims idx = unravel(bi, batch);
    int64_t ao = 0, bo = 0;
    for (size_t i = 0; i < br; ++i) {
      if (i + ad.size() - 2 >= br) ao = ao * bdim(ad, i) + (bdim(ad, i) == 1 ? 0 : idx[i]);
      if (i + bd.size() - 2 >= br) bo = bo * bdim(bd, i) + (bdim(bd, i) == 1 ? 0 : idx[i]);
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t s = 0;
        for (int64_t kk = 0; kk < k; ++kk)
          s += (a.element_as_int64(ao * m * k + i * k + kk) - za[static_cast<size_t>(za.size() == 1 ? 0 : i)]) *
               (b.element_as_int64(bo * k * n + kk * n + j) - zb[static_cast<size_t>(zb.size() == 1 ? 0 : j)]);
        out.push_back(s);
      }
  }
  return out;
}

TEST(QuantizeKernel, MatMulIntegerMatchesNaive) {
  const MatMulCase cases[] = {{{3, 4}, {4, 5}}, {{1, 1}, {1, 1}}, {{2, 3, 7}, {7, 2}},       {{7}, {7, 3}},
                              {{2, 5}, {5}},    {{4}, {4}},       {{2, 1, 3, 2}, {3, 2, 5}}, {{1, 2, 3}, {4, 3, 1}}};
  uint32_t seed = 100;
  for (const auto& c : cases) {
    for (DType at : {DType::kU8, DType::kI8}) {
      for (DType bt : {DType::kU8, DType::kI8}) {
        Tensor a = random_q(at, c.a, seed++), b = random_q(bt, c.b, seed++);
        const int64_t m = c.a.size() == 1 ? 1 : c.a[c.a.size() - 2], n = c.b.size() == 1 ? 1 : c.b.back();
        for (int zmode = 0; zmode < 3; ++zmode) {  // none, per tensor, per row / column
          std::vector<int64_t> za{0}, zb{0};
          Tensor zat, zbt;
          if (zmode == 1) {
            zat = q_scalar(at, 3);
            zbt = q_scalar(bt, -5 & 0xff);
            za = {zat.element_as_int64(0)};
            zb = {zbt.element_as_int64(0)};
          } else if (zmode == 2) {
            zat = random_q(at, {m}, seed++);
            zbt = random_q(bt, {n}, seed++);
            za = core::tensor_to_int64s(zat);
            zb = core::tensor_to_int64s(zbt);
          }
          Dims yd;
          std::vector<int64_t> want = naive_matmul(a, b, za, zb, &yd);
          Tensor y = Tensor::allocate(DType::kI32, yd).value();
          auto st = ref::matmul_integer(a, b, zmode ? &zat : nullptr, zmode ? &zbt : nullptr, y);
          ASSERT_TRUE(st.is_ok()) << st.to_string();
          for (size_t i = 0; i < want.size(); ++i)
            ASSERT_EQ(y.data<int32_t>()[i], want[i]) << core::dims_to_string(c.a) << "x" << core::dims_to_string(c.b);
        }
      }
    }
  }
}

TEST(QuantizeKernel, MatMulIntegerWrapsAt32Bits) {
  const int64_t k = 40000;  // 40000 * 255 * 255 > 2^31
  Tensor a = Tensor::allocate(DType::kU8, {1, k}).value();
  Tensor b = Tensor::allocate(DType::kU8, {k, 1}).value();
  for (int64_t i = 0; i < k; ++i) a.data<uint8_t>()[i] = b.data<uint8_t>()[i] = 255;
  Tensor y = Tensor::allocate(DType::kI32, {1, 1}).value();
  ASSERT_TRUE(ref::matmul_integer(a, b, nullptr, nullptr, y).is_ok());
  const int64_t exact = k * 255 * 255;
  EXPECT_EQ(y.data<int32_t>()[0], static_cast<int32_t>(static_cast<uint32_t>(exact)));
}

TEST(QuantizeKernel, QLinearMatMulSpecExampleAndPerColumnScales) {
  // The ONNX backend test's 2-D case.
  Tensor a = Tensor::allocate(DType::kU8, {2, 4}).value();
  const uint8_t av[] = {208, 236, 0, 238, 3, 214, 255, 29};
  for (int i = 0; i < 8; ++i) a.data<uint8_t>()[i] = av[i];
  Tensor b = Tensor::allocate(DType::kU8, {4, 3}).value();
  const uint8_t bv[] = {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247};
  for (int i = 0; i < 12; ++i) b.data<uint8_t>()[i] = bv[i];
  auto u8 = [](int v) { return q_scalar(DType::kU8, v); };
  Tensor y = Tensor::allocate(DType::kU8, {2, 3}).value();
  ASSERT_TRUE(ref::qlinear_matmul(a, Tensor::scalar<float>(0.0066f), u8(113), b, Tensor::scalar<float>(0.00705f),
                                  u8(114), Tensor::scalar<float>(0.0107f), u8(118), y)
                  .is_ok());
  const uint8_t want[] = {168, 115, 255, 1, 66, 151};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data<uint8_t>()[i], want[i]) << i;

  // Per-column b scale / zero point and per-row a, i8 output, against a naive double formula.
  Tensor a2 = random_q(DType::kI8, {3, 5}, 1), b2 = random_q(DType::kU8, {5, 4}, 2);
  Tensor sa = Tensor::from_vector<float>({0.01f, 0.02f, 0.03f}, {3});
  Tensor za = random_q(DType::kI8, {3}, 3);
  Tensor sb = Tensor::from_vector<float>({0.05f, 0.01f, 0.02f, 0.04f}, {4});
  Tensor zb = random_q(DType::kU8, {4}, 4);
  Tensor y2 = Tensor::allocate(DType::kI8, {3, 4}).value();
  ASSERT_TRUE(
      ref::qlinear_matmul(a2, sa, za, b2, sb, zb, Tensor::scalar<float>(0.1f), q_scalar(DType::kI8, -3), y2).is_ok());
  Dims yd;
  auto acc = naive_matmul(a2, b2, core::tensor_to_int64s(za), core::tensor_to_int64s(zb), &yd);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      double real = static_cast<double>(acc[static_cast<size_t>(i * 4 + j)]) * double{sa.data<float>()[i]} *
                    double{sb.data<float>()[j]} / double{0.1f};
      EXPECT_EQ(y2.data<int8_t>()[i * 4 + j], clamp_q(std::nearbyint(real) - 3, DType::kI8)) << i << "," << j;
    }
}

// --- ConvInteger / QLinearConv

struct ConvCase {
  Dims x, w;
  std::vector<int64_t> strides, dilations, pads_begin, pads_end;
  int64_t group;
};

// Naive conv: builds the padded input explicitly (padding = zero point) and slides the window.
std::vector<int64_t> naive_conv(const ConvCase& c, const Tensor& x, const Tensor& w, int64_t xzp,
                                const std::vector<int64_t>& wzp, Dims* ydims) {
  const size_t sp = c.x.size() - 2;
  Dims padded{c.x[0], c.x[1]};
  Dims out{c.x[0], c.w[0]};
  for (size_t d = 0; d < sp; ++d) {
    padded.push_back(c.x[d + 2] + c.pads_begin[d] + c.pads_end[d]);
    int64_t dk = (c.w[d + 2] - 1) * c.dilations[d] + 1;
    out.push_back((padded.back() - dk) / c.strides[d] + 1);
  }
  *ydims = out;
  std::vector<int64_t> px(static_cast<size_t>(core::num_elements(padded)), 0);  // already shifted by xzp
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    Dims idx = unravel(i, c.x);
    int64_t off = 0;
    for (size_t d = 0; d < padded.size(); ++d) off = off * padded[d] + idx[d] + (d >= 2 ? c.pads_begin[d - 2] : 0);
    px[static_cast<size_t>(off)] = x.element_as_int64(i) - xzp;
  }
  const int64_t cg = c.w[1], mg = c.w[0] / c.group;
  Dims kspatial(c.w.begin() + 2, c.w.end());
  std::vector<int64_t> y;
  for (int64_t o = 0; o < core::num_elements(out); ++o) {
    Dims oi = unravel(o, out);
    const int64_t n = oi[0], m = oi[1], g = m / mg;
    int64_t s = 0;
    for (int64_t ci = 0; ci < cg; ++ci)
      for (int64_t k = 0; k < core::num_elements(kspatial); ++k) {
        Dims ki = unravel(k, kspatial);
        int64_t off = n * padded[1] + g * cg + ci;
        for (size_t d = 0; d < sp; ++d) off = off * padded[d + 2] + oi[d + 2] * c.strides[d] + ki[d] * c.dilations[d];
        int64_t woff = (m * cg + ci) * core::num_elements(kspatial) + k;
        s += px[static_cast<size_t>(off)] *
             (w.element_as_int64(woff) - wzp[static_cast<size_t>(wzp.size() == 1 ? 0 : m)]);
      }
    y.push_back(s);
  }
  return y;
}

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {{1, 1, 5, 5}, {1, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
      {{2, 4, 7, 6}, {6, 2, 3, 2}, {2, 1}, {1, 2}, {0, 1}, {2, 0}, 2},
      {{1, 3, 9}, {5, 3, 4}, {3}, {2}, {2}, {1}, 1},
      {{1, 4, 5, 4, 3}, {4, 1, 2, 3, 1}, {1, 2, 1}, {1, 1, 2}, {1, 0, 1}, {0, 1, 1}, 4},
      {{3, 2, 1, 1}, {7, 2, 1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 1},
  };
  return cases;
}

TEST(QuantizeKernel, ConvIntegerMatchesNaive) {
  uint32_t seed = 300;
  for (const ConvCase& c : conv_cases()) {
    for (DType xt : {DType::kU8, DType::kI8}) {
      for (bool per_channel : {false, true}) {
        Tensor x = random_q(xt, c.x, seed++);
        Tensor w = random_q(DType::kI8, c.w, seed++);
        Tensor xzp = q_scalar(xt, 7);
        Tensor wzp = per_channel ? random_q(DType::kI8, {c.w[0]}, seed++) : q_scalar(DType::kI8, -2 & 0xff);
        Dims yd;
        auto want = naive_conv(c, x, w, xzp.element_as_int64(0), core::tensor_to_int64s(wzp), &yd);
        Tensor y = Tensor::allocate(DType::kI32, yd).value();
        ref::IntConvParams p{c.strides, c.dilations, c.pads_begin, c.group};
        auto st = ref::conv_integer(p, x, w, &xzp, &wzp, y);
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(y.data<int32_t>()[i], want[i]) << core::dims_to_string(c.x) << " i=" << i;
      }
    }
  }
}

TEST(QuantizeKernel, QLinearConvMatchesNaiveWithPerChannelScalesAndBias) {
  uint32_t seed = 500;
  for (const ConvCase& c : conv_cases()) {
    const int64_t m = c.w[0];
    Tensor x = random_q(DType::kU8, c.x, seed++);
    Tensor w = random_q(DType::kI8, c.w, seed++);
    Tensor wzp = random_q(DType::kI8, {m}, seed++);
    Tensor ws = random_f32({m}, seed++, 0.001f, 0.02f);
    Tensor bias = Tensor::allocate(DType::kI32, {m}).value();
    for (int64_t i = 0; i < m; ++i) bias.data<int32_t>()[i] = static_cast<int32_t>(i * 97 - 200);
    const float sx = 0.05f, sy = 0.2f;
    Dims yd;
    auto acc = naive_conv(c, x, w, 120, core::tensor_to_int64s(wzp), &yd);
    Tensor y = Tensor::allocate(DType::kU8, yd).value();
    ref::IntConvParams p{c.strides, c.dilations, c.pads_begin, c.group};
    auto st = ref::qlinear_conv(p, x, Tensor::scalar<float>(sx), q_scalar(DType::kU8, 120), w, ws, wzp,
                                Tensor::scalar<float>(sy), q_scalar(DType::kU8, 100), &bias, y);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    int64_t per_m = core::num_elements(yd) / (yd[0] * m);
    for (size_t i = 0; i < acc.size(); ++i) {
      int64_t mm = (static_cast<int64_t>(i) / per_m) % m;
      double real = static_cast<double>(acc[i] + bias.data<int32_t>()[mm]) * double{sx} * double{ws.data<float>()[mm]} /
                    double{sy};
      ASSERT_EQ(y.data<uint8_t>()[i], clamp_q(std::nearbyint(real) + 100, DType::kU8)) << i;
    }
  }
}

TEST(QuantizeKernel, ConvBadShapesAreErrors) {
  Tensor x = random_q(DType::kU8, {1, 4, 5, 5}, 1);
  Tensor w = random_q(DType::kU8, {3, 2, 3, 3}, 2);
  Tensor y = Tensor::allocate(DType::kI32, {1, 3, 3, 3}).value();
  ref::IntConvParams p{{1, 1}, {1, 1}, {0, 0}, 2};
  EXPECT_FALSE(ref::conv_integer(p, x, w, nullptr, nullptr, y).is_ok());  // 3 output channels, group 2
  Tensor wzp = random_q(DType::kU8, {2}, 3);
  Tensor w4 = random_q(DType::kU8, {4, 2, 3, 3}, 2);
  Tensor y4 = Tensor::allocate(DType::kI32, {1, 4, 3, 3}).value();
  EXPECT_FALSE(ref::conv_integer(p, x, w4, nullptr, &wzp, y4).is_ok());  // zero point per channel needs 4
  EXPECT_TRUE(ref::conv_integer(p, x, w4, nullptr, nullptr, y4).is_ok());
}

// --- Through Session

std::unique_ptr<runtime::Session> open(const std::string& bytes) {
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(s).value() : nullptr;
}

TEST(QuantizeSession, ConvIntegerAutoPadShapes) {
  for (const char* pad : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    OnnxBuilder b(10);
    b.input("x", 2, {1, 1, 5, 6}).input("w", 2, {2, 1, 2, 3});
    auto& n = b.node("ConvInteger", {"x", "w"}, {"y"});
    OnnxBuilder::attr(n, "auto_pad", std::string(pad));
    OnnxBuilder::attr(n, "strides", std::vector<int64_t>{2, 2});
    b.output("y", 6);
    auto s = open(b.bytes());
    ASSERT_TRUE(s);
    Tensor x = random_q(DType::kU8, {1, 1, 5, 6}, 1), w = random_q(DType::kU8, {2, 1, 2, 3}, 2);
    std::vector<Tensor> out;
    ASSERT_TRUE(s->run({{"x", x}, {"w", w}}, out).is_ok());
    Dims want = std::string(pad) == "VALID" ? Dims{1, 2, 2, 2} : Dims{1, 2, 3, 3};
    EXPECT_EQ(out[0].dims(), want) << pad;
    // SAME: total padding (3-1)*2+2-5 = 1 rows and (3-1)*2+3-6 = 1 column.
    ConvCase c{{1, 1, 5, 6}, {2, 1, 2, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, 1};
    if (std::string(pad) == "SAME_UPPER") c.pads_end = {1, 1};
    if (std::string(pad) == "SAME_LOWER") c.pads_begin = {1, 1};
    Dims yd;
    auto ref_vals = naive_conv(c, x, w, 0, {0}, &yd);
    ASSERT_EQ(yd, want);
    for (size_t i = 0; i < ref_vals.size(); ++i) EXPECT_EQ(out[0].data<int32_t>()[i], ref_vals[i]) << pad << i;
  }
}

TEST(QuantizeSession, QuantizeOutputDtypeAndDequantizeAxis) {
  OnnxBuilder b(21);
  b.input("x", 1, {2, 3}).initializer_f32("s", {3}, {1, 2, 4});
  auto& q = b.node("QuantizeLinear", {"x", "s"}, {"q"});
  OnnxBuilder::attr(q, "output_dtype", int64_t{3});  // int8
  b.node("DequantizeLinear", {"q", "s"}, {"y"});
  b.output("q", 3).output("y");
  auto s = open(b.bytes());
  ASSERT_TRUE(s);
  std::vector<Tensor> out;
  ASSERT_TRUE(s->run({{"x", Tensor::from_vector<float>({1, 3, -5, 1000, -1000, 10}, {2, 3})}}, out).is_ok());
  ASSERT_EQ(out[0].dtype(), DType::kI8);
  const int8_t want[] = {1, 2, -1, 127, -128, 2};  // 3/2 = 1.5 -> 2; -5/4 = -1.25 -> -1; 10/4 = 2.5 -> 2
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[0].data<int8_t>()[i], want[i]) << i;
  EXPECT_EQ(out[1].data<float>()[2], -4.f);
}

TEST(QuantizeSession, BadModelsFailAtLoadNamingTheNode) {
  {
    OnnxBuilder b(13);
    b.input("x", 1, {2, 3}).initializer_f32("s", {2}, {1, 2});
    b.node("QuantizeLinear", {"x", "s"}, {"q"}, "quant");  // axis 1 has 3 entries
    b.output("q", 2);
    std::string bytes = b.bytes();
    auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.status().message().find("quant"), std::string::npos) << s.status().message();
  }
  {
    OnnxBuilder b(10);
    b.input("x", 2, {1, 4, 5, 5}).input("w", 2, {2, 3, 3, 3});
    b.node("ConvInteger", {"x", "w"}, {"y"}, "conv");  // 4 channels vs 3 x group 1
    b.output("y", 6);
    std::string bytes = b.bytes();
    auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.status().message().find("conv"), std::string::npos) << s.status().message();
  }
  for (int64_t group : {int64_t{0}, int64_t{-3}, std::numeric_limits<int64_t>::max()}) {
    OnnxBuilder b(10);
    b.input("x", 2, {1, 4, 5, 5}).input("w", 2, {2, 2, 3, 3});
    auto& n = b.node("ConvInteger", {"x", "w"}, {"y"}, "grouped");
    OnnxBuilder::attr(n, "group", group);
    b.output("y", 6);
    std::string bytes = b.bytes();
    auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
    ASSERT_FALSE(s.is_ok()) << group;
    EXPECT_NE(s.status().message().find("grouped"), std::string::npos) << s.status().message();
  }
  {
    OnnxBuilder b(10);
    b.input("x", 2, {1, 1, 2, 2}).input("w", 2, {1, 1, 3, 3});
    b.node("ConvInteger", {"x", "w"}, {"y"}, "tiny");  // kernel larger than the input
    b.output("y", 6);
    std::string bytes = b.bytes();
    auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.status().message().find("larger"), std::string::npos) << s.status().message();
  }
}

}  // namespace
}  // namespace kestrel

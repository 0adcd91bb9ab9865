// Tests of the signal ops: DFT against a naive complex sum computed here (real and complex input,
// every axis, cut and zero-padded lengths, inverse, one-sided forward and inverse round trips,
// f64 / f16), STFT against per-frame transforms, hand-computed windows and the ONNX
// MelWeightMatrix example, and the ONNX path through Session (opset-17 axis attribute, run-time
// dft_length, bad axes).
#include "kernels/reference/signal.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
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
using testing::ravel;
using testing::unravel;
using Complex = std::complex<double>;

Tensor random_tensor(DType t, const Dims& dims, uint32_t seed) {
  Tensor x = Tensor::allocate(t, dims).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-2, 2);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    double v = dist(rng);
    if (t == DType::kF32)
      x.data<float>()[i] = static_cast<float>(v);
    else if (t == DType::kF64)
      x.data<double>()[i] = v;
    else
      x.data<core::Float16>()[i] = core::Float16(static_cast<float>(v));
  }
  return x;
}

// Naive DFT along `axis` (no onesided): each output bin sums over the signal with std::polar.
std::vector<Complex> naive_dft(const Tensor& x, int64_t axis, int64_t length, bool inverse, Dims* ydims) {
  Dims xd = x.dims();
  const bool cplx = xd.back() == 2;
  Dims yd = xd;
  yd[static_cast<size_t>(axis)] = length;
  yd.back() = 1;  // one complex value per position here
  *ydims = yd;
  std::vector<Complex> out;
  for (int64_t o = 0; o < core::num_elements(yd); ++o) {
    Dims idx = unravel(o, yd);
    const int64_t k = idx[static_cast<size_t>(axis)];
    Complex s = 0;
    for (int64_t t = 0; t < std::min(length, xd[static_cast<size_t>(axis)]); ++t) {
      Dims xi = idx;
      xi[static_cast<size_t>(axis)] = t;
      xi.back() = 0;
      Complex v(x.element_as_double(ravel(xi, xd)), 0);
      if (cplx) {
        xi.back() = 1;
        v.imag(x.element_as_double(ravel(xi, xd)));
      }
      const double ang =
          (inverse ? 2 : -2) * std::numbers::pi * static_cast<double>(k * t) / static_cast<double>(length);
      s += v * std::polar(1.0, ang);
    }
    out.push_back(inverse ? s / static_cast<double>(length) : s);
  }
  return out;
}

TEST(SignalKernel, DftMatchesNaiveOverAxesLengthsAndDirections) {
  const std::vector<Dims> shapes = {{5, 1}, {1, 7, 2}, {2, 6, 3, 1}, {3, 4, 5, 2}};
  uint32_t seed = 1;
  for (const Dims& xs : shapes) {
    Tensor x = random_tensor(DType::kF64, xs, seed++);
    for (int64_t axis = 0; axis < static_cast<int64_t>(xs.size()) - 1; ++axis) {
      const int64_t n = xs[static_cast<size_t>(axis)];
      for (int64_t length : {n, n + 3, std::max<int64_t>(1, n - 2)}) {
        for (bool inverse : {false, true}) {
          Dims nd;
          auto want = naive_dft(x, axis, length, inverse, &nd);
          Dims yd = nd;
          yd.back() = 2;
          Tensor y = Tensor::allocate(DType::kF64, yd).value();
          auto st = ref::dft({axis, length, inverse, false}, x, y);
          ASSERT_TRUE(st.is_ok()) << st.to_string();
          for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_NEAR(y.data<double>()[2 * i], want[i].real(), 1e-9) << core::dims_to_string(xs) << " axis " << axis;
            ASSERT_NEAR(y.data<double>()[2 * i + 1], want[i].imag(), 1e-9);
          }
          // One-sided forward on real input keeps bins 0 .. L/2 of the same transform.
          if (xs.back() == 1 && !inverse) {
            Dims od = yd;
            od[static_cast<size_t>(axis)] = length / 2 + 1;
            Tensor y1 = Tensor::allocate(DType::kF64, od).value();
            ASSERT_TRUE(ref::dft({axis, length, false, true}, x, y1).is_ok());
            for (int64_t i = 0; i < y1.num_elements(); ++i) {
              Dims idx = unravel(i, od);
              ASSERT_EQ(y1.data<double>()[i], y.data<double>()[ravel(idx, yd)]);
            }
          }
        }
      }
    }
  }
}

TEST(SignalKernel, DftHandValuesAndInverseRoundTrips) {
  // DFT of a unit impulse is all ones; of a constant, an impulse of height n.
  Tensor imp = Tensor::from_vector<float>({1, 0, 0, 0}, {4, 1});
  Tensor y = Tensor::allocate(DType::kF32, {4, 2}).value();
  ASSERT_TRUE(ref::dft({0, 4, false, false}, imp, y).is_ok());
  for (int k = 0; k < 4; ++k) {
    EXPECT_FLOAT_EQ(y.data<float>()[2 * k], 1.f);
    EXPECT_FLOAT_EQ(y.data<float>()[2 * k + 1], 0.f);
  }
  Tensor c = Tensor::from_vector<float>({2, 2, 2}, {3, 1});
  Tensor yc = Tensor::allocate(DType::kF32, {3, 2}).value();
  ASSERT_TRUE(ref::dft({0, 3, false, false}, c, yc).is_ok());
  EXPECT_NEAR(yc.data<float>()[0], 6.f, 1e-6);
  EXPECT_NEAR(yc.data<float>()[2], 0.f, 1e-6);
  EXPECT_NEAR(yc.data<float>()[5], 0.f, 1e-6);
  // rfft then irfft gives the signal back, for even and odd lengths.
  for (int64_t n : {1, 2, 7, 8}) {
    Tensor x = random_tensor(DType::kF64, {2, n, 1}, static_cast<uint32_t>(n));
    Tensor spec = Tensor::allocate(DType::kF64, {2, n / 2 + 1, 2}).value();
    ASSERT_TRUE(ref::dft({1, n, false, true}, x, spec).is_ok());
    Tensor back = Tensor::allocate(DType::kF64, {2, n, 1}).value();
    ASSERT_TRUE(ref::dft({1, n, true, true}, spec, back).is_ok());
    for (int64_t i = 0; i < x.num_elements(); ++i) EXPECT_NEAR(back.data<double>()[i], x.data<double>()[i], 1e-12) << n;
  }
  // Complex forward then inverse.
  Tensor z = random_tensor(DType::kF64, {5, 2}, 9);
  Tensor zf = Tensor::allocate(DType::kF64, {5, 2}).value(), zb = Tensor::allocate(DType::kF64, {5, 2}).value();
  ASSERT_TRUE(ref::dft({0, 5, false, false}, z, zf).is_ok());
  ASSERT_TRUE(ref::dft({0, 5, true, false}, zf, zb).is_ok());
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(zb.data<double>()[i], z.data<double>()[i], 1e-12);
}

TEST(SignalKernel, DftFloat16AndErrors) {
  Tensor x = random_tensor(DType::kF16, {6, 1}, 3);
  Tensor y = Tensor::allocate(DType::kF16, {6, 2}).value();
  ASSERT_TRUE(ref::dft({0, 6, false, false}, x, y).is_ok());
  Dims nd;
  auto want = naive_dft(x, 0, 6, false, &nd);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(static_cast<float>(y.data<core::Float16>()[2 * i]), want[i].real(), 1e-2);
  Tensor z = random_tensor(DType::kF32, {4, 2}, 4);
  Tensor y3 = Tensor::allocate(DType::kF32, {3, 2}).value();
  EXPECT_FALSE(ref::dft({0, 4, false, true}, z, y3).is_ok());  // one-sided forward of complex input
  Tensor r = random_tensor(DType::kF32, {4, 1}, 5);
  Tensor y4 = Tensor::allocate(DType::kF32, {4, 1}).value();
  EXPECT_FALSE(ref::dft({0, 4, true, true}, r, y4).is_ok());  // one-sided inverse of real input
  Tensor y2 = Tensor::allocate(DType::kF32, {4, 2}).value();
  EXPECT_FALSE(ref::dft({1, 4, false, false}, r, y2).is_ok());  // axis on the complex dim
  EXPECT_FALSE(ref::dft({0, 0, false, false}, r, y2).is_ok());  // zero length
  Tensor bad3 = random_tensor(DType::kF32, {4, 3}, 6);
  EXPECT_FALSE(ref::dft({0, 4, false, false}, bad3, y2).is_ok());
}

TEST(SignalKernel, StftMatchesPerFrameDft) {
  for (bool onesided : {true, false}) {
    for (bool complex_in : {false, true}) {
      if (onesided && complex_in) continue;
      const int64_t n = 29, len = 8, step = 3, c = complex_in ? 2 : 1;
      Tensor sig = random_tensor(DType::kF32, {2, n, c}, 7);
      Tensor win = random_tensor(DType::kF32, {len}, 8);
      const int64_t frames = (n - len) / step + 1, bins = onesided ? len / 2 + 1 : len;
      Tensor y = Tensor::allocate(DType::kF32, {2, frames, bins, 2}).value();
      ASSERT_TRUE(ref::stft({step, len, onesided}, sig, &win, y).is_ok());
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t f = 0; f < frames; ++f) {
          Tensor frame = Tensor::allocate(DType::kF64, {len, c}).value();
          for (int64_t t = 0; t < len; ++t)
            for (int64_t k = 0; k < c; ++k)
              frame.data<double>()[t * c + k] =
                  double{sig.data<float>()[(b * n + f * step + t) * c + k]} * double{win.data<float>()[t]};
          Dims nd;
          auto want = naive_dft(frame, 0, len, false, &nd);
          for (int64_t k = 0; k < bins; ++k) {
            const int64_t o = ((b * frames + f) * bins + k) * 2;
            ASSERT_NEAR(y.data<float>()[o], want[static_cast<size_t>(k)].real(), 1e-4);
            ASSERT_NEAR(y.data<float>()[o + 1], want[static_cast<size_t>(k)].imag(), 1e-4);
          }
        }
    }
  }
  Tensor sig = random_tensor(DType::kF32, {1, 4, 1}, 1);
  Tensor y = Tensor::allocate(DType::kF32, {1, 1, 3, 2}).value();
  EXPECT_FALSE(ref::stft({1, 5, true}, sig, nullptr, y).is_ok());  // frame longer than signal
  EXPECT_FALSE(ref::stft({0, 4, true}, sig, nullptr, y).is_ok());  // zero step
}

TEST(SignalKernel, WindowsByHand) {
  auto run = [](ref::WindowKind k, bool periodic, int64_t size, DType t = DType::kF64) {
    Tensor y = Tensor::allocate(t, {size}).value();
    EXPECT_TRUE(ref::window(k, periodic, y).is_ok());
    return y;
  };
  Tensor h = run(ref::WindowKind::kHann, true, 4);
  const double hp[] = {0, 0.5, 1, 0.5};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(h.data<double>()[i], hp[i], 1e-15);
  Tensor hs = run(ref::WindowKind::kHann, false, 5);
  const double hsv[] = {0, 0.5, 1, 0.5, 0};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(hs.data<double>()[i], hsv[i], 1e-15);
  Tensor m = run(ref::WindowKind::kHamming, false, 3);
  EXPECT_NEAR(m.data<double>()[0], 4.0 / 46, 1e-15);
  EXPECT_NEAR(m.data<double>()[1], 1.0, 1e-15);
  Tensor b = run(ref::WindowKind::kBlackman, true, 4);
  const double bp[] = {0, 0.34, 1, 0.34};  // 0.42 - 0.5 cos + 0.08 cos(2x) at 0, pi/2, pi, 3pi/2
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(b.data<double>()[i], bp[i], 1e-15);
  EXPECT_EQ(run(ref::WindowKind::kHann, false, 1).data<double>()[0], 1.0);
  EXPECT_EQ(run(ref::WindowKind::kHann, true, 0).num_elements(), 0);
  Tensor hi = run(ref::WindowKind::kHann, true, 4, DType::kI32);  // truncates like Cast
  EXPECT_EQ(hi.data<int32_t>()[1], 0);
  EXPECT_EQ(hi.data<int32_t>()[2], 1);
}

TEST(SignalKernel, MelWeightMatrixOnnxExample) {
  // num_mel_bins 8, dft_length 16, sample_rate 8192, edges 0 .. 4096 Hz (the ONNX backend test).
  Tensor y = Tensor::allocate(DType::kF32, {9, 8}).value();
  ASSERT_TRUE(ref::mel_weight_matrix(8, 16, 8192, 0, 4096, y).is_ok());
  // Expected from the ONNX test's comment: rows 0..5 hold single ones, rows 6..8 are zero.
  const int ones[][2] = {{0, 0}, {0, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 6}, {5, 7}};
  std::vector<float> want(72, 0.f);
  for (const auto& rc : ones) want[static_cast<size_t>(rc[0] * 8 + rc[1])] = 1.f;
  for (int i = 0; i < 72; ++i) EXPECT_EQ(y.data<float>()[i], want[static_cast<size_t>(i)]) << i;
  // A finer grid has triangles: every column peaks at exactly 1 and stays within [0, 1].
  Tensor f = Tensor::allocate(DType::kF64, {257, 10}).value();
  ASSERT_TRUE(ref::mel_weight_matrix(10, 512, 16000, 20, 8000, f).is_ok());
  for (int64_t col = 0; col < 10; ++col) {
    double peak = 0;
    for (int64_t r = 0; r < 257; ++r) {
      double v = f.data<double>()[r * 10 + col];
      EXPECT_GE(v, 0.0);
      EXPECT_LE(v, 1.0);
      peak = std::max(peak, v);
    }
    EXPECT_EQ(peak, 1.0) << col;
  }
  EXPECT_FALSE(ref::mel_weight_matrix(0, 16, 8192, 0, 4096, y).is_ok());
  EXPECT_FALSE(ref::mel_weight_matrix(8, 16, 8192, 100, 50, y).is_ok());
}

// --- Through Session

TEST(SignalSession, DftOpset17AxisAttributeAndOpset20AxisInput) {
  Tensor x = random_tensor(DType::kF32, {2, 3, 4, 1}, 11);
  Dims nd;
  auto want = naive_dft(x, 2, 4, false, &nd);
  {
    OnnxBuilder b(17);
    b.input("x", 1, {2, 3, 4, 1});
    auto& n = b.node("DFT", {"x"}, {"y"});
    OnnxBuilder::attr(n, "axis", int64_t{2});
    b.output("y");
    std::string bytes = b.bytes();
    auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    std::vector<Tensor> out;
    ASSERT_TRUE((*s)->run({{"x", x}}, out).is_ok());
    ASSERT_EQ(out[0].dims(), (Dims{2, 3, 4, 2}));
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out[0].data<float>()[2 * i], want[i].real(), 1e-5);
  }
  {
    // Opset 20: axis -2 (the default) is the last signal axis; dft_length fed at run time.
    OnnxBuilder b(20);
    b.input("x", 1, {2, 3, 4, 1}).input("len", 7, {});
    b.node("DFT", {"x", "len"}, {"y"});
    b.output("y");
    std::string bytes = b.bytes();
    auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    for (int64_t len : {4, 6}) {
      std::vector<Tensor> out;
      ASSERT_TRUE((*s)->run({{"x", x}, {"len", Tensor::scalar<int64_t>(len)}}, out).is_ok());
      ASSERT_EQ(out[0].dims(), (Dims{2, 3, len, 2}));
      auto w = naive_dft(x, 2, len, false, &nd);
      for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(out[0].data<float>()[2 * i + 1], w[i].imag(), 1e-5);
    }
  }
}

TEST(SignalSession, BadDftFailsAtLoad) {
  OnnxBuilder b(20);
  b.input("x", 1, {4, 2});
  b.raw_initializer("axis")->set_data_type(7);
  b.model().mutable_graph()->mutable_initializer(0)->add_int64_data(-1);
  b.node("DFT", {"x", "", "axis"}, {"y"}, "dft");
  b.output("y");
  std::string bytes = b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("dft"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("axis"), std::string::npos) << s.status().message();
}

TEST(SignalSession, WindowSizeFromRuntimeInput) {
  OnnxBuilder b(17);
  b.input("n", 7, {});
  auto& n = b.node("HammingWindow", {"n"}, {"w"});
  OnnxBuilder::attr(n, "output_datatype", int64_t{11});  // double
  OnnxBuilder::attr(n, "periodic", int64_t{0});
  b.output("w", 11);
  std::string bytes = b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  std::vector<Tensor> out;
  ASSERT_TRUE((*s)->run({{"n", Tensor::scalar<int64_t>(5)}}, out).is_ok());
  ASSERT_EQ(out[0].dims(), (Dims{5}));
  EXPECT_NEAR(out[0].data<double>()[2], 1.0, 1e-15);
  EXPECT_FALSE((*s)->run({{"n", Tensor::scalar<int64_t>(-1)}}, out).is_ok());
}

}  // namespace
}  // namespace kestrel

// Tests of Cast to and from strings: floats print as the shortest decimal that reads back to the
// same value, laid out as numpy's str() (the ONNX reference); 64-bit integers are exact both ways.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

#include "core/tensor.h"
#include "kernels/reference/elementwise.h"

namespace kestrel {
namespace {

using core::DType;
using core::Tensor;

template <class T>
std::vector<std::string> to_strings(const std::vector<T>& v) {
  Tensor x = Tensor::from_vector<T>(v, {static_cast<int64_t>(v.size())});
  Tensor y = Tensor::allocate(DType::kString, x.dims()).value();
  EXPECT_TRUE(kernels::ref::cast(x, y).is_ok());
  return {y.data<std::string>(), y.data<std::string>() + y.num_elements()};
}

TEST(CastString, FloatLikeNumpyStr) {
  // Expected strings are numpy's: str(np.float32(v)).
  EXPECT_EQ(to_strings<float>({0.9767611f, 0.039187793f, 1.f, 100.f, 0.1f, 123456789.f, 1e-4f, 9.9e-5f, 1e15f, 1e16f,
                               1.5e16f, 3.4e38f, 1e-45f, 0.f, -0.f, -2.5f}),
            (std::vector<std::string>{"0.9767611", "0.039187793", "1.0", "100.0", "0.1", "123456790.0", "1e-04",
                                      "9.9e-05", "1000000000000000.0", "1e+16", "1.5e+16", "3.4e+38", "1e-45", "0.0", "-0.0",
                                      "-2.5"}));
  EXPECT_EQ(to_strings<double>({123456789.0, 0.1, 1e-300, 1e15}),
            (std::vector<std::string>{"123456789.0", "0.1", "1e-300", "1000000000000000.0"}));
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(to_strings<float>({std::numeric_limits<float>::quiet_NaN(), inf, -inf}),
            (std::vector<std::string>{"NaN", "INF", "-INF"}));
}

TEST(CastString, FloatRoundTripsExactly) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mant(-1.f, 1.f);
  std::uniform_int_distribution<int> ex(-140, 127);
  std::vector<float> v;
  for (int i = 0; i < 2000; ++i) v.push_back(std::ldexp(mant(rng), ex(rng)));
  auto s = to_strings<float>(v);
  for (size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(std::strtof(s[i].c_str(), nullptr), v[i]) << s[i];
}

TEST(CastString, SixtyFourBitIntegersAreExact) {
  const int64_t big = (int64_t{1} << 62) + 1;  // not representable in double
  EXPECT_EQ(to_strings<int64_t>({big, -big, std::numeric_limits<int64_t>::min()}),
            (std::vector<std::string>{"4611686018427387905", "-4611686018427387905", "-9223372036854775808"}));
  EXPECT_EQ(to_strings<uint64_t>({std::numeric_limits<uint64_t>::max()}),
            (std::vector<std::string>{"18446744073709551615"}));

  Tensor s = Tensor::allocate(DType::kString, {4}).value();
  s.data<std::string>()[0] = "4611686018427387905";
  s.data<std::string>()[1] = "-7";
  s.data<std::string>()[2] = "1e3";
  s.data<std::string>()[3] = "2.9";
  Tensor i = Tensor::allocate(DType::kI64, {4}).value();
  ASSERT_TRUE(kernels::ref::cast(s, i).is_ok());
  EXPECT_EQ(i.data<int64_t>()[0], big);
  EXPECT_EQ(i.data<int64_t>()[1], -7);
  EXPECT_EQ(i.data<int64_t>()[2], 1000);
  EXPECT_EQ(i.data<int64_t>()[3], 2);
  Tensor u = Tensor::allocate(DType::kU64, {4}).value();
  ASSERT_TRUE(kernels::ref::cast(s, u).is_ok());
  EXPECT_EQ(u.data<uint64_t>()[0], static_cast<uint64_t>(big));
  EXPECT_EQ(u.data<uint64_t>()[1], 0u);  // negative saturates at 0 instead of wrapping
}

}  // namespace
}  // namespace kestrel

// Tests of Gemm and MatMul against naive loops written here: every transA/transB combination,
// alpha/beta, each broadcastable C shape, integer types, numpy 1-D and batch-broadcast rules.
#include "kernels/reference/matmul.h"

#include <gtest/gtest.h>

#include "common/nn_test_util.h"

namespace kestrel {
namespace {

using core::Dims;
using core::DType;
using core::Tensor;
using testing::OnnxBuilder;

// op(a)[i][k] from a row-major [r, c] matrix.
double at(const std::vector<double>& m, int64_t cols, bool trans, int64_t i, int64_t k) {
  return trans ? m[static_cast<size_t>(k * cols + i)] : m[static_cast<size_t>(i * cols + k)];
}

std::vector<double> naive_gemm(const Tensor& a, const Tensor& b, const Tensor* c, bool ta, bool tb, double alpha,
                               double beta) {
  auto av = testing::values(a), bv = testing::values(b);
  const int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1), n = tb ? b.dim(0) : b.dim(1);
  std::vector<double> cv = c ? testing::values(*c) : std::vector<double>();
  std::vector<double> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t kk = 0; kk < k; ++kk) s += at(av, a.dim(1), ta, i, kk) * at(bv, b.dim(1), tb, kk, j);
      double cij = 0;
      if (c) {
        // Unidirectional broadcast of C (rank 0..2) to [m, n].
        int64_t ci = 0;
        if (c->rank() == 2)
          ci = (c->dim(0) == 1 ? 0 : i) * c->dim(1) + (c->dim(1) == 1 ? 0 : j);
        else if (c->rank() == 1)
          ci = c->dim(0) == 1 ? 0 : j;
        cij = cv[static_cast<size_t>(ci)];
      }
      y[static_cast<size_t>(i * n + j)] = alpha * s + beta * cij;
    }
  return y;
}

TEST(GemmReference, HandChecked) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Tensor::from_vector<float>({1, 0, 0, 1, 1, 1}, {3, 2});
  Tensor c = Tensor::from_vector<float>({10, 20}, {2});
  Tensor y = *Tensor::allocate(DType::kF32, {2, 2});
  ASSERT_TRUE(kernels::ref::gemm({false, false, 2.0f, 0.5f}, a, b, &c, y).is_ok());
  // A*B = [[4, 5], [10, 11]] -> 2*AB + 0.5*[10, 20]
  testing::expect_close(y, {13, 20, 25, 32});
}

TEST(GemmReference, MatchesNaiveForEveryTransposeAndBiasShape) {
  const int64_t m = 5, k = 7, n = 3;
  uint32_t seed = 1;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (const Dims& cd : std::vector<Dims>{{-1}, {}, {1}, {n}, {m, 1}, {1, n}, {m, n}, {1, 1}}) {
        Tensor a = testing::random_tensor(ta ? Dims{k, m} : Dims{m, k}, seed++);
        Tensor b = testing::random_tensor(tb ? Dims{n, k} : Dims{k, n}, seed++);
        const bool has_c = cd.empty() || cd[0] != -1;
        Tensor c = testing::random_tensor(has_c ? cd : Dims{1}, seed++);
        for (auto [alpha, beta] : {std::pair{1.0f, 1.0f}, std::pair{0.5f, -2.0f}}) {
          auto want = naive_gemm(a, b, has_c ? &c : nullptr, ta, tb, alpha, beta);
          for (DType dt : {DType::kF32, DType::kF64, DType::kF16}) {
            Tensor at = testing::to_dtype(a, dt), bt = testing::to_dtype(b, dt), ct = testing::to_dtype(c, dt);
            auto ref = dt == DType::kF16 ? naive_gemm(at, bt, has_c ? &ct : nullptr, ta, tb, alpha, beta) : want;
            Tensor y = *Tensor::allocate(dt, {m, n});
            ASSERT_TRUE(kernels::ref::gemm({ta, tb, alpha, beta}, at, bt, has_c ? &ct : nullptr, y).is_ok());
            double tol = dt == DType::kF16 ? 1e-2 : 1e-5;
            testing::expect_close(
                y, ref, tol, tol,
                core::str_cat("ta=", ta, " tb=", tb, " C", core::dims_to_string(cd), " ", core::dtype_name(dt)));
          }
        }
      }
}

TEST(GemmReference, IntegersAreExact) {
  Tensor a = Tensor::from_vector<int64_t>({1, -2, 3, 4000000000, 5, 6}, {2, 3});
  Tensor b = Tensor::from_vector<int64_t>({7, 8, 9, 10, 11, 12}, {3, 2});
  Tensor c = Tensor::from_vector<int64_t>({1, 2}, {1, 2});
  Tensor y = *Tensor::allocate(DType::kI64, {2, 2});
  ASSERT_TRUE(kernels::ref::gemm({}, a, b, &c, y).is_ok());
  EXPECT_EQ(y.data<int64_t>()[0], 7 - 18 + 33 + 1);
  EXPECT_EQ(y.data<int64_t>()[1], 8 - 20 + 36 + 2);
  EXPECT_EQ(y.data<int64_t>()[2], 28000000000 + 45 + 66 + 1);
  EXPECT_EQ(y.data<int64_t>()[3], 32000000000 + 50 + 72 + 2);
  Tensor ai = Tensor::from_vector<int32_t>({1, 2, 3, 4}, {2, 2}), yi = *Tensor::allocate(DType::kI32, {2, 2});
  ASSERT_TRUE(kernels::ref::gemm({true, false, 1.f, 1.f}, ai, ai, nullptr, yi).is_ok());
  EXPECT_EQ(yi.data<int32_t>()[0], 1 * 1 + 3 * 3);
  EXPECT_EQ(yi.data<int32_t>()[1], 1 * 2 + 3 * 4);
}

TEST(GemmReference, RejectsBadShapes) {
  Tensor a = testing::random_tensor({2, 3}, 1), b = testing::random_tensor({4, 2}, 2);
  Tensor y = *Tensor::allocate(DType::kF32, {2, 2});
  EXPECT_FALSE(kernels::ref::gemm({}, a, b, nullptr, y).is_ok());  // inner 3 vs 4
  Tensor b2 = testing::random_tensor({3, 2}, 3), c = testing::random_tensor({3}, 4);
  EXPECT_FALSE(kernels::ref::gemm({}, a, b2, &c, y).is_ok());  // C does not broadcast
}

OnnxBuilder gemm_model(const Dims& ad, const Dims& bd, const Dims* cd, int64_t ta, int64_t tb, float alpha,
                       float beta) {
  OnnxBuilder m;
  m.input("a", 1, ad).input("b", 1, bd);
  std::vector<std::string> ins = {"a", "b"};
  if (cd) {
    m.input("c", 1, *cd);
    ins.push_back("c");
  }
  auto& n = m.node("Gemm", ins, {"y"}, "gemm");
  OnnxBuilder::attr(n, "transA", ta);
  OnnxBuilder::attr(n, "transB", tb);
  OnnxBuilder::attr(n, "alpha", alpha);
  OnnxBuilder::attr(n, "beta", beta);
  m.output("y");
  return m;
}

TEST(GemmSession, AttributesAndInference) {
  Tensor a = testing::random_tensor({4, 3}, 11), b = testing::random_tensor({5, 4}, 12),
         c = testing::random_tensor({5}, 13);
  Dims cd = {5};
  auto m = gemm_model(a.dims(), b.dims(), &cd, 1, 1, 0.25f, 3.0f);
  auto s = testing::open_model(m);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ((*s)->outputs()[0].type.shape.to_string(), "[3,5]");
  auto out = testing::run_model(m, {a, b, c});
  ASSERT_EQ(out.size(), 1u);
  testing::expect_close(out[0], naive_gemm(a, b, &c, true, true, 0.25, 3.0));
  // Missing C is zero.
  auto m2 = gemm_model({2, 3}, {3, 2}, nullptr, 0, 0, 1.f, 1.f);
  Tensor a2 = testing::random_tensor({2, 3}, 14), b2 = testing::random_tensor({3, 2}, 15);
  auto out2 = testing::run_model(m2, {a2, b2});
  ASSERT_EQ(out2.size(), 1u);
  testing::expect_close(out2[0], naive_gemm(a2, b2, nullptr, false, false, 1, 1));
}

TEST(GemmSession, ShapeErrors) {
  Dims c_bad = {3, 2};
  EXPECT_TRUE(testing::contains(testing::open_error(gemm_model({2, 3}, {4, 5}, nullptr, 0, 0, 1, 1), "gemm"), "inner"));
  EXPECT_TRUE(
      testing::contains(testing::open_error(gemm_model({2, 3}, {3, 5}, &c_bad, 0, 0, 1, 1), "gemm"), "broadcast"));
  EXPECT_FALSE(testing::open_error(gemm_model({2, 3, 1}, {3, 5}, nullptr, 0, 0, 1, 1), "gemm").is_ok());
}

// numpy.matmul written out: promote 1-D operands, broadcast batch dims, drop promoted dims.
std::vector<double> naive_matmul(const Tensor& a, const Tensor& b, Dims* out_dims) {
  Dims ad = a.dims(), bd = b.dims();
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  const int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  const size_t rank = std::max(ad.size(), bd.size());
  Dims ab(rank - ad.size(), 1), bb(rank - bd.size(), 1);
  ab.insert(ab.end(), ad.begin(), ad.end());
  bb.insert(bb.end(), bd.begin(), bd.end());
  Dims batch(rank - 2);
  for (size_t i = 0; i + 2 < rank; ++i) batch[i] = std::max(ab[i], bb[i]);
  auto av = testing::values(a), bv = testing::values(b);
  const int64_t nb = core::num_elements(batch);
  std::vector<double> y(static_cast<size_t>(nb * m * n));
  std::vector<int64_t> idx(batch.size(), 0);
  for (int64_t t = 0; t < nb; ++t) {
    int64_t ao = 0, bo = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      ao = ao * ab[i] + (ab[i] == 1 ? 0 : idx[i]);
      bo = bo * bb[i] + (bb[i] == 1 ? 0 : idx[i]);
    }
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double s = 0;
        for (int64_t kk = 0; kk < k; ++kk)
          s += av[static_cast<size_t>(ao * m * k + r * k + kk)] * bv[static_cast<size_t>(bo * k * n + kk * n + c)];
        y[static_cast<size_t>(t * m * n + r * n + c)] = s;
      }
    for (size_t i = batch.size(); i-- > 0;) {
      if (++idx[i] < batch[i]) break;
      idx[i] = 0;
    }
  }
  *out_dims = batch;
  if (a.rank() > 1) out_dims->push_back(m);
  if (b.rank() > 1) out_dims->push_back(n);
  return y;
}

TEST(MatMulReference, HandChecked) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor v = Tensor::from_vector<float>({1, -1}, {2});
  Tensor y = *Tensor::allocate(DType::kF32, {2});
  ASSERT_TRUE(kernels::ref::matmul(a, v, y).is_ok());  // matrix x vector
  testing::expect_close(y, {-1, -1});
  ASSERT_TRUE(kernels::ref::matmul(v, a, y).is_ok());  // vector x matrix
  testing::expect_close(y, {-2, -2});
  Tensor s = *Tensor::allocate(DType::kF32, {});
  ASSERT_TRUE(kernels::ref::matmul(v, v, s).is_ok());  // dot product -> scalar
  testing::expect_close(s, {2});
}

TEST(MatMulSession, NumpyShapesAndBroadcasting) {
  const std::vector<std::pair<Dims, Dims>> cases = {
      {{3, 4}, {4, 5}},       {{2, 3, 4}, {4, 5}}, {{4}, {2, 4, 3}},
      {{2, 3, 4}, {4}},       {{5}, {5}},          {{2, 1, 3, 4}, {5, 4, 2}},
      {{1, 2, 3}, {7, 3, 1}}, {{1, 1}, {1, 1}},    {{3, 1, 2, 7}, {1, 4, 7, 3}},
      {{0, 3}, {3, 2}},
  };
  uint32_t seed = 30;
  for (const auto& [ad, bd] : cases) {
    Tensor a = testing::random_tensor(ad, seed++), b = testing::random_tensor(bd, seed++);
    OnnxBuilder m;
    m.input("a", 1, ad).input("b", 1, bd);
    m.node("MatMul", {"a", "b"}, {"y"});
    m.output("y");
    auto out = testing::run_model(m, {a, b});
    ASSERT_EQ(out.size(), 1u);
    Dims want_dims;
    auto want = naive_matmul(a, b, &want_dims);
    EXPECT_EQ(out[0].dims(), want_dims) << core::dims_to_string(ad) << " x " << core::dims_to_string(bd);
    testing::expect_close(out[0], want, 1e-5, 1e-5, core::dims_to_string(ad) + " x " + core::dims_to_string(bd));
  }
}

TEST(MatMulReference, OtherDtypes) {
  Tensor a = testing::random_tensor({2, 3, 4}, 50), b = testing::random_tensor({4, 5}, 51);
  Dims d;
  for (DType dt : {DType::kF64, DType::kF16, DType::kBF16}) {
    Tensor at = testing::to_dtype(a, dt), bt = testing::to_dtype(b, dt);
    auto want = naive_matmul(at, bt, &d);
    Tensor y = *Tensor::allocate(dt, d);
    ASSERT_TRUE(kernels::ref::matmul(at, bt, y).is_ok());
    double tol = dt == DType::kF64 ? 1e-12 : (dt == DType::kF16 ? 1e-2 : 5e-2);
    testing::expect_close(y, want, tol, tol, core::dtype_name(dt));
  }
  Tensor ai = Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor bi = Tensor::from_vector<int32_t>({1, 1, 1}, {3});
  Tensor yi = *Tensor::allocate(DType::kI32, {2});
  ASSERT_TRUE(kernels::ref::matmul(ai, bi, yi).is_ok());
  EXPECT_EQ(yi.data<int32_t>()[0], 6);
  EXPECT_EQ(yi.data<int32_t>()[1], 15);
  Tensor au = Tensor::from_vector<uint64_t>({3}, {1, 1}), yu = *Tensor::allocate(DType::kU64, {1, 1});
  ASSERT_TRUE(kernels::ref::matmul(au, au, yu).is_ok());
  EXPECT_EQ(yu.data<uint64_t>()[0], 9u);
}

TEST(MatMulSession, ShapeErrors) {
  auto model = [](const Dims& ad, const Dims& bd) {
    OnnxBuilder m;
    m.input("a", 1, ad).input("b", 1, bd);
    m.node("MatMul", {"a", "b"}, {"y"}, "mm");
    m.output("y");
    return m;
  };
  EXPECT_TRUE(testing::contains(testing::open_error(model({2, 3}, {4, 2}), "mm"), "inner"));
  EXPECT_TRUE(testing::contains(testing::open_error(model({2, 2, 3}, {3, 3, 2}), "mm"), "batch"));
  EXPECT_FALSE(testing::open_error(model({}, {3}), "mm").is_ok());
}

}  // namespace
}  // namespace kestrel

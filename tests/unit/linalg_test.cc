// Tests of Einsum and Det: Einsum against a naive sum over every assignment of every label
// (broadcast size-1 axes, ellipses spelled out as letters), Det against cofactor expansion, over
// several shapes and dtypes, plus malformed equations and bad shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "common/op_test_util.h"

namespace kestrel {
namespace {

using core::Dims;
using core::DType;
using core::Tensor;
using ir::Attribute;
using testing::Attrs;
using testing::eval_op;
using testing::make;
using testing::run_op;
using testing::tensors_equal;
using testing::fails_with;

Tensor random_f32(const Dims& dims, uint32_t seed) {
  Tensor t = Tensor::allocate(DType::kF32, dims).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

// Naive einsum: `eq` uses letters only and an explicit output; inputs have one axis per letter
// (size-1 axes broadcast). Sums the product over every assignment of every label.
std::vector<double> naive_einsum(const std::string& eq, const std::vector<Tensor>& in, Dims* out_dims) {
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  std::string lhs = eq.substr(0, arrow), rhs = eq.substr(arrow + 2);
  for (size_t s = 0;;) {
    size_t c = lhs.find(',', s);
    terms.push_back(lhs.substr(s, c == std::string::npos ? c : c - s));
    if (c == std::string::npos) break;
    s = c + 1;
  }
  std::map<char, int64_t> size;
  for (size_t i = 0; i < terms.size(); ++i)
    for (size_t a = 0; a < terms[i].size(); ++a) {
      int64_t& s = size[terms[i][a]];
      s = std::max(s, in[i].dims()[a]);
      if (in[i].dims()[a] == 0) s = 0;
    }
  std::vector<char> labels;
  for (auto& [l, s] : size) labels.push_back(l);
  out_dims->clear();
  for (char l : rhs) out_dims->push_back(size[l]);
  std::vector<double> out(static_cast<size_t>(core::num_elements(*out_dims)), 0.0);
  std::map<char, int64_t> v;
  std::function<void(size_t)> rec = [&](size_t k) {
    if (k == labels.size()) {
      double p = 1;
      for (size_t i = 0; i < terms.size(); ++i) {
        int64_t off = 0;
        for (size_t a = 0; a < terms[i].size(); ++a) {
          const int64_t d = in[i].dims()[a];
          off = off * d + (d == 1 ? 0 : v[terms[i][a]]);
        }
        p *= in[i].element_as_double(off);
      }
      int64_t o = 0;
      for (char l : rhs) o = o * size[l] + v[l];
      out[static_cast<size_t>(o)] += p;
      return;
    }
    for (int64_t i = 0; i < size[labels[k]]; ++i) {
      v[labels[k]] = i;
      rec(k + 1);
    }
  };
  rec(0);
  return out;
}

struct EinsumCase {
  std::string equation;  // as given to the op
  std::string naive;     // letters only, explicit output
  std::vector<Dims> shapes;
  std::vector<Dims> naive_shapes = {};  // when the ellipsis needs leading 1s to align
};

TEST(EinsumKernel, MatchesNaiveSummation) {
  const std::vector<EinsumCase> cases = {
      {"ij,jk->ik", "ij,jk->ik", {{3, 4}, {4, 5}}},
      {"ij,jk", "ij,jk->ik", {{2, 3}, {3, 7}}},
      {"bij, bjk -> bik", "bij,bjk->bik", {{5, 2, 3}, {5, 3, 4}}},
      {"ii->i", "ii->i", {{4, 4}}},
      {"ii", "ii->", {{5, 5}}},
      {"iij->ji", "iij->ji", {{3, 3, 2}}},
      {"...ii ->...i", "aii->ai", {{3, 5, 5}}},
      {"...ij,...jk->...ik", "abij,abjk->abik", {{2, 1, 3, 4}, {5, 4, 2}}, {{2, 1, 3, 4}, {1, 5, 4, 2}}},
      {"...,...", "ab,ab->ab", {{2, 3}, {1, 3}}},
      {"i,i", "i,i->", {{6}, {6}}},
      {"i,j->ij", "i,j->ij", {{3}, {4}}},
      {"ij->", "ij->", {{3, 4}}},
      {"ij->ji", "ij->ji", {{3, 4}}},
      {"ba", "ba->ab", {{3, 4}}},
      {"abc,cd,de->abe", "abc,cd,de->abe", {{2, 3, 4}, {4, 5}, {5, 3}}},
      {"a,a,a->a", "a,a,a->a", {{5}, {5}, {5}}},
      {"BaA->AaB", "BaA->AaB", {{2, 3, 4}}},
      {"ij,ij->ij", "ij,ij->ij", {{3, 4}, {3, 4}}},
      {"i,i->", "i,i->", {{1}, {4}}},  // size-1 broadcast, as numpy allows
      {"ij,kl->", "ij,kl->", {{2, 3}, {4, 5}}},
      {"bn,anm,bm->ba", "bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}},
      {"i->", "i->", {{0}}},
  };
  uint32_t seed = 1;
  for (const EinsumCase& c : cases) {
    std::vector<Tensor> in;
    for (const Dims& s : c.shapes) in.push_back(random_f32(s, seed++));
    KESTREL_EVAL1(y, "Einsum", in, Attrs{{"equation", Attribute(c.equation)}});
    std::vector<Tensor> naive_in = in;
    for (size_t i = 0; i < c.naive_shapes.size(); ++i) naive_in[i] = in[i].reshaped(c.naive_shapes[i]).value();
    Dims want_dims;
    std::vector<double> want = naive_einsum(c.naive, naive_in, &want_dims);
    ASSERT_EQ(y.dims(), want_dims) << c.equation;
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(y.element_as_double(static_cast<int64_t>(i)), want[i], 1e-5) << c.equation << " element " << i;
  }
}

TEST(EinsumKernel, IntegersDoublesAndRuntimeShapes) {
  // int32: exact; int64 wraps modulo 2^64 instead of overflowing.
  KESTREL_EVAL1(i, "Einsum", {make<int32_t>({2, 2}, {1, 2, 3, 4}), make<int32_t>({2, 2}, {5, 6, 7, 8})},
                Attrs{{"equation", Attribute("ij,jk->ik")}});
  EXPECT_TRUE(tensors_equal(i, make<int32_t>({2, 2}, {19, 22, 43, 50})));
  const int64_t big = int64_t{1} << 62;
  KESTREL_EVAL1(w, "Einsum", {make<int64_t>({2}, {big, big}), make<int64_t>({2}, {2, 2})},
                Attrs{{"equation", Attribute("i,i")}});
  EXPECT_EQ(w.data<int64_t>()[0], 0);  // 4 * 2^62 = 2^64 = 0 modulo 2^64
  Tensor d = Tensor::allocate(DType::kF64, {3}).value();
  for (int k = 0; k < 3; ++k) d.data<double>()[k] = 0.1 * (k + 1);
  KESTREL_EVAL1(dd, "Einsum", {d, d}, Attrs{{"equation", Attribute("i,i->")}});
  EXPECT_DOUBLE_EQ(dd.data<double>()[0], 0.01 + 0.04 + 0.09);
  // Inputs of unknown dims: the shape comes at run time.
  Tensor a = random_f32({2, 3, 4}, 3), b = random_f32({4, 5}, 4);
  auto r = run_op("Einsum", {a, b}, {true, true}, Attrs{{"equation", Attribute("...j,jk->...k")}}, 1, true);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  Dims want_dims;
  std::vector<double> want = naive_einsum("abj,jk->abk", {a, b}, &want_dims);
  ASSERT_EQ((*r)[0].dims(), want_dims);
  for (size_t k = 0; k < want.size(); ++k)
    EXPECT_NEAR((*r)[0].element_as_double(static_cast<int64_t>(k)), want[k], 1e-5);
}

TEST(EinsumKernel, BadEquations) {
  Tensor m = random_f32({2, 3}, 1), v = random_f32({3}, 2);
  auto eq = [&](const std::string& e, const std::vector<Tensor>& in) {
    return eval_op("Einsum", in, Attrs{{"equation", Attribute(e)}}).status();
  };
  EXPECT_TRUE(fails_with(eq("ij,j->i", {m}), "input terms"));
  EXPECT_TRUE(fails_with(eq("ijk->i", {m}), "rank"));
  EXPECT_TRUE(fails_with(eq("ij,i->j", {m, v}), "sizes"));
  EXPECT_TRUE(fails_with(eq("ij->k", {m}), "not in any input"));
  EXPECT_TRUE(fails_with(eq("ij->ii", {m}), "repeats"));
  EXPECT_TRUE(fails_with(eq("i1->i", {v}), "malformed"));
  EXPECT_TRUE(fails_with(eq("......->", {m}), "malformed"));
  EXPECT_TRUE(fails_with(eq("...j->j", {m}), "no '...'"));
  EXPECT_TRUE(fails_with(eq("ii->i", {m}), "sizes"));  // a diagonal needs a square
  EXPECT_TRUE(fails_with(eq("i,i->i", {v, make<int32_t>({3}, {1, 2, 3})}), "dtypes"));
  EXPECT_TRUE(fails_with(eval_op("Einsum", {v}).status(), "equation"));
  // A pairwise intermediate beyond any tensor size is an error, not an allocation failure.
  Tensor a = Tensor::allocate(DType::kF32, {int64_t{1} << 20}).value();
  Tensor b = Tensor::allocate(DType::kF32, {int64_t{1} << 21}).value();
  EXPECT_TRUE(fails_with(eq("a,b,ab->", {a, b, make<float>({1, 1}, {1})}), "too large"));
}

// ---------------------------------------------------------------------------------------------
// Det

double cofactor_det(const std::vector<double>& a, int64_t n) {
  if (n == 0) return 1;
  if (n == 1) return a[0];
  double d = 0;
  for (int64_t c = 0; c < n; ++c) {
    std::vector<double> minor;
    for (int64_t r = 1; r < n; ++r)
      for (int64_t k = 0; k < n; ++k)
        if (k != c) minor.push_back(a[static_cast<size_t>(r * n + k)]);
    d += (c % 2 ? -1 : 1) * a[static_cast<size_t>(c)] * cofactor_det(minor, n - 1);
  }
  return d;
}

TEST(DetKernel, MatchesCofactorExpansion) {
  const std::vector<Dims> shapes = {{1, 1},    {2, 2},       {3, 3},    {4, 4},   {5, 5},
                                    {3, 2, 2}, {2, 3, 4, 4}, {0, 3, 3}, {2, 0, 0}};
  uint32_t seed = 5;
  for (const Dims& s : shapes) {
    Tensor x = random_f32(s, seed++);
    KESTREL_EVAL1(y, "Det", {x});
    const Dims want_dims(s.begin(), s.end() - 2);
    ASSERT_EQ(y.dims(), want_dims);
    const int64_t n = s.back();
    for (int64_t b = 0; b < y.num_elements(); ++b) {
      std::vector<double> a;
      for (int64_t k = 0; k < n * n; ++k) a.push_back(x.element_as_double(b * n * n + k));
      EXPECT_NEAR(y.element_as_double(b), cofactor_det(a, n), 1e-5) << core::dims_to_string(s) << " matrix " << b;
    }
  }
}

TEST(DetKernel, PivotingSingularDtypesAndBadInput) {
  // A zero leading entry needs a row swap; the sign flips with each swap.
  KESTREL_EVAL1(p, "Det", {make<float>({2, 3, 3}, {0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 3, 4, 0, 0})});
  EXPECT_EQ(p.data<float>()[0], -1);
  EXPECT_EQ(p.data<float>()[1], 24);
  KESTREL_EVAL1(z, "Det", {make<float>({3, 3}, {1, 2, 3, 2, 4, 6, 7, 8, 9})});
  EXPECT_EQ(z.data<float>()[0], 0);
  Tensor d = Tensor::allocate(DType::kF64, {2, 2}).value();
  d.data<double>()[0] = 1e-200, d.data<double>()[1] = 1, d.data<double>()[2] = 1, d.data<double>()[3] = 1e-200;
  KESTREL_EVAL1(dd, "Det", {d});
  EXPECT_DOUBLE_EQ(dd.data<double>()[0], -1.0);
  Tensor h = Tensor::allocate(DType::kF16, {2, 2}).value();
  const float hv[] = {2, 1, 1, 3};
  for (int k = 0; k < 4; ++k) h.data<core::Float16>()[k] = core::Float16(hv[k]);
  KESTREL_EVAL1(hh, "Det", {h});
  EXPECT_EQ(hh.element_as_double(0), 5);
  EXPECT_TRUE(fails_with(eval_op("Det", {random_f32({2, 3}, 1)}).status(), "square"));
  EXPECT_TRUE(fails_with(eval_op("Det", {random_f32({3}, 1)}).status(), "rank"));
  EXPECT_TRUE(fails_with(eval_op("Det", {make<int32_t>({1, 1}, {1})}).status(), "float"));
}

}  // namespace
}  // namespace kestrel

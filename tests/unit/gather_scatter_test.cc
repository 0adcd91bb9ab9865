// Tests of the indexing ops (Gather, GatherElements, GatherND, ScatterElements, ScatterND,
// OneHot, NonZero, Compress): the ONNX spec's examples, naive re-computations written here,
// negative and out-of-range indices (an error, never a wild access), and data-dependent shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "common/op_test_util.h"

namespace kestrel {
namespace {

using core::Dims;
using core::DType;
using core::Tensor;
using testing::eval_op;
using testing::i64_scalar;
using testing::i64s;
using testing::iota;
using testing::make;
using testing::run_op;
using testing::tensors_equal;
using testing::ravel;
using testing::unravel;
using testing::fails_with;

// ---------------------------------------------------------------- Gather

TEST(GatherScatterOps, GatherSpecExample) {
  const Tensor data = make<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  auto r = eval_op("Gather", {data, make<int64_t>({2, 2}, {0, 1, 1, 2})});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({2, 2, 2}, {1, 2, 3, 4, 3, 4, 5, 6})));
  const Tensor data2 = make<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  r = eval_op("Gather", {data2, make<int32_t>({1, 2}, {0, -1})}, {{"axis", int64_t{1}}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({3, 1, 2}, {1, 3, 4, 6, 7, 9})));
}

TEST(GatherScatterOps, GatherMatchesNaive) {
  const Dims dims{3, 4, 5};
  const Tensor data = iota<double>(dims);
  const std::vector<std::pair<Dims, std::vector<int64_t>>> index_sets = {
      {{}, {-1}}, {{2}, {0, 2}}, {{2, 3}, {1, -2, 0, 2, -3, 1}}, {{0}, {}}, {{4}, {-1, -1, 0, 0}}};
  for (int64_t axis = -3; axis < 3; ++axis) {
    const size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    for (const auto& [idims, ivals] : index_sets) {
      const Tensor idx = make<int64_t>(idims, ivals);
      auto r = eval_op("Gather", {data, idx}, {{"axis", axis}});
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      Dims od(dims.begin(), dims.begin() + static_cast<long>(a));
      od.insert(od.end(), idims.begin(), idims.end());
      od.insert(od.end(), dims.begin() + static_cast<long>(a) + 1, dims.end());
      ASSERT_EQ((*r)[0].dims(), od);
      for (int64_t o = 0; o < (*r)[0].num_elements(); ++o) {
        Dims oi = unravel(o, od);
        Dims ii(oi.begin(), oi.begin() + static_cast<long>(a));
        const Dims qi(oi.begin() + static_cast<long>(a), oi.begin() + static_cast<long>(a + idims.size()));
        int64_t v = ivals[static_cast<size_t>(ravel(qi, idims))];
        ii.push_back(v < 0 ? v + dims[a] : v);
        ii.insert(ii.end(), oi.begin() + static_cast<long>(a + idims.size()), oi.end());
        EXPECT_EQ((*r)[0].data<double>()[o], static_cast<double>(ravel(ii, dims)));
      }
    }
  }
}

TEST(GatherScatterOps, GatherOutOfRangeIsAnError) {
  const Tensor data = iota<float>({3, 2});
  // Constant index: caught by inference at load.
  auto st = eval_op("Gather", {data, i64s({0, 3})}).status();
  EXPECT_TRUE(fails_with(st, "out of range"));
  EXPECT_TRUE(fails_with(st, "node_under_test"));
  EXPECT_TRUE(fails_with(eval_op("Gather", {data, i64s({-4})}).status(), "out of range"));
  // Index known only at run time: caught by the kernel.
  auto r = run_op("Gather", {data, i64s({1, 7})}, {true, true});
  EXPECT_EQ(r.status().code(), core::StatusCode::kOutOfRange) << r.status().to_string();
  EXPECT_TRUE(fails_with(r.status(), "index 7"));
  EXPECT_TRUE(fails_with(r.status(), "node_under_test"));
  r = run_op("Gather", {data, make<int32_t>({1}, {std::numeric_limits<int32_t>::min()})}, {true, true});
  EXPECT_EQ(r.status().code(), core::StatusCode::kOutOfRange);
  // A good run-time index works.
  r = run_op("Gather", {data, i64s({-1, 0})}, {true, true});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({2, 2}, {4, 5, 0, 1})));
  // Bad axis, float indices, empty dim.
  EXPECT_TRUE(fails_with(eval_op("Gather", {data, i64s({0})}, {{"axis", int64_t{2}}}).status(), "out of range"));
  EXPECT_TRUE(fails_with(eval_op("Gather", {data, make<float>({1}, {0.f})}).status(), "int32 or int64"));
  EXPECT_TRUE(fails_with(eval_op("Gather", {Tensor::allocate(DType::kF32, {0, 2}).value(), i64s({0})}).status(),
                         "out of range"));
  // Strings.
  auto s = eval_op("Gather", {make<std::string>({3}, {"a", "b", "c"}), i64s({2, 0, 2})});
  ASSERT_TRUE(s.is_ok());
  EXPECT_TRUE(tensors_equal((*s)[0], make<std::string>({3}, {"c", "a", "c"})));
}

// ---------------------------------------------------------------- GatherElements

TEST(GatherScatterOps, GatherElements) {
  auto r = eval_op("GatherElements", {make<float>({2, 2}, {1, 2, 3, 4}), make<int64_t>({2, 2}, {0, 0, 1, 0})},
                   {{"axis", int64_t{1}}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({2, 2}, {1, 1, 4, 3})));
  r = eval_op("GatherElements",
              {make<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), make<int32_t>({2, 3}, {1, 2, 0, 2, 0, -3})});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({2, 3}, {4, 8, 3, 7, 2, 3})));
  // Naive over every axis with indices smaller than data outside the axis.
  std::mt19937 rng(7);
  const Dims dims{3, 4, 5};
  const Tensor data = iota<int64_t>(dims);
  for (int64_t axis = -3; axis < 3; ++axis) {
    const size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    // Indices may be longer than data along the axis, not elsewhere.
    const Dims idims{a == 0 ? 5 : 2, a == 1 ? 6 : 3, a == 2 ? 7 : 4};
    std::vector<int64_t> iv;
    for (int64_t i = 0; i < core::num_elements(idims); ++i)
      iv.push_back(static_cast<int64_t>(rng() % static_cast<uint32_t>(2 * dims[a])) - dims[a]);
    auto out = eval_op("GatherElements", {data, make<int64_t>(idims, iv)}, {{"axis", axis}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    for (int64_t o = 0; o < core::num_elements(idims); ++o) {
      Dims ii = unravel(o, idims);
      const int64_t v = iv[static_cast<size_t>(o)];
      ii[a] = v < 0 ? v + dims[a] : v;
      EXPECT_EQ((*out)[0].data<int64_t>()[o], ravel(ii, dims));
    }
  }
  EXPECT_TRUE(fails_with(eval_op("GatherElements", {iota<float>({2, 2}), i64s({0})}).status(), "rank"));
  EXPECT_TRUE(fails_with(
      eval_op("GatherElements", {iota<float>({2, 2}), make<int64_t>({3, 1}, {0, 0, 0})}, {{"axis", int64_t{1}}})
          .status(),
      "exceed"));
  EXPECT_TRUE(fails_with(eval_op("GatherElements", {iota<float>({2, 2}), make<int64_t>({1, 1}, {2})}).status(),
                         "out of range"));
}

// ---------------------------------------------------------------- GatherND

TEST(GatherScatterOps, GatherNDSpecExamples) {
  struct Case {
    Tensor data, indices;
    int64_t batch_dims;
    Tensor want;
  } cases[] = {
      {make<int32_t>({2, 2}, {0, 1, 2, 3}), make<int64_t>({2, 2}, {0, 0, 1, 1}), 0, make<int32_t>({2}, {0, 3})},
      {make<int32_t>({2, 2}, {0, 1, 2, 3}), make<int64_t>({2, 1}, {1, 0}), 0, make<int32_t>({2, 2}, {2, 3, 0, 1})},
      {iota<int32_t>({2, 2, 2}), make<int64_t>({2, 2}, {0, 1, 1, 0}), 0, make<int32_t>({2, 2}, {2, 3, 4, 5})},
      {iota<int32_t>({2, 2, 2}), make<int64_t>({2, 1, 2}, {0, 1, 1, 0}), 0, make<int32_t>({2, 1, 2}, {2, 3, 4, 5})},
      {iota<int32_t>({2, 2, 2}), make<int64_t>({2, 1}, {1, 0}), 1, make<int32_t>({2, 2}, {2, 3, 4, 5})},
      {iota<int32_t>({2, 2, 2}), make<int64_t>({2, 1, 2}, {-1, -1, 0, -2}), 1, make<int32_t>({2, 1}, {3, 4})},
  };
  for (const auto& c : cases) {
    auto r = eval_op("GatherND", {c.data, c.indices}, {{"batch_dims", c.batch_dims}});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_TRUE(tensors_equal((*r)[0], c.want));
  }
  const Tensor data = iota<float>({2, 3});
  EXPECT_TRUE(fails_with(eval_op("GatherND", {data, make<int64_t>({1, 2}, {0, 3})}).status(), "out of range"));
  EXPECT_TRUE(fails_with(eval_op("GatherND", {data, make<int64_t>({1, 3}, {0, 0, 0})}).status(), "last dim"));
  EXPECT_TRUE(
      fails_with(eval_op("GatherND", {data, make<int64_t>({3, 1}, {0, 0, 0})}, {{"batch_dims", int64_t{1}}}).status(),
                 "batch dim"));
  EXPECT_TRUE(fails_with(
      eval_op("GatherND", {data, make<int64_t>({2, 1}, {0, 0})}, {{"batch_dims", int64_t{2}}}).status(), "batch_dims"));
  auto r = run_op("GatherND", {data, make<int64_t>({1, 2}, {1, 9})}, {true, true});
  EXPECT_EQ(r.status().code(), core::StatusCode::kOutOfRange) << r.status().to_string();
}

// ---------------------------------------------------------------- ScatterElements

TEST(GatherScatterOps, ScatterElementsSpecExamples) {
  auto r = eval_op("ScatterElements",
                   {Tensor::allocate(DType::kF32, {3, 3}).value(), make<int64_t>({2, 3}, {1, 0, 2, 0, 2, 1}),
                    make<float>({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f})});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({3, 3}, {2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f})));
  const Tensor data = make<float>({1, 5}, {1, 2, 3, 4, 5});
  r = eval_op("ScatterElements", {data, make<int64_t>({1, 2}, {1, -2}), make<float>({1, 2}, {1.1f, 2.1f})},
              {{"axis", int64_t{1}}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({1, 5}, {1, 1.1f, 3, 2.1f, 5})));
  // Duplicate indices with each reduction.
  const std::pair<const char*, float> reds[] = {
      {"add", 2 + 1.1f + 2.1f}, {"mul", 2 * 1.1f * 2.1f}, {"max", 2.1f}, {"min", 1.1f}, {"none", 2.1f}};
  for (const auto& [red, want1] : reds) {
    r = eval_op("ScatterElements", {data, make<int64_t>({1, 2}, {1, 1}), make<float>({1, 2}, {1.1f, 2.1f})},
                {{"axis", int64_t{1}}, {"reduction", std::string(red)}});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_FLOAT_EQ((*r)[0].data<float>()[1], want1) << red;
    EXPECT_EQ((*r)[0].data<float>()[0], 1.f);
  }
}

template <class T>
T naive_combine(T a, T b, const std::string& red) {
  if (red == "add") return static_cast<T>(a + b);
  if (red == "mul") return static_cast<T>(a * b);
  if (red == "max") return std::max(a, b);
  if (red == "min") return std::min(a, b);
  return b;
}

TEST(GatherScatterOps, ScatterElementsMatchesNaive) {
  std::mt19937 rng(99);
  const Dims dims{4, 3, 5};
  for (const std::string red : {"none", "add", "mul", "max", "min"}) {
    for (int64_t axis = -3; axis < 3; ++axis) {
      const size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
      const Dims idims{3, 2, 4};
      std::vector<int32_t> dv, uv;
      std::vector<int64_t> iv;
      for (int64_t i = 0; i < core::num_elements(dims); ++i) dv.push_back(static_cast<int32_t>(rng() % 7) - 3);
      for (int64_t i = 0; i < core::num_elements(idims); ++i) {
        uv.push_back(static_cast<int32_t>(rng() % 7) - 3);
        iv.push_back(static_cast<int64_t>(rng() % static_cast<uint32_t>(2 * dims[a])) - dims[a]);
      }
      auto r = eval_op("ScatterElements", {make<int32_t>(dims, dv), make<int64_t>(idims, iv), make<int32_t>(idims, uv)},
                       {{"axis", axis}, {"reduction", red}});
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      std::vector<int32_t> want = dv;
      for (int64_t o = 0; o < core::num_elements(idims); ++o) {
        Dims ii = unravel(o, idims);
        const int64_t v = iv[static_cast<size_t>(o)];
        ii[a] = v < 0 ? v + dims[a] : v;
        int32_t& dst = want[static_cast<size_t>(ravel(ii, dims))];
        dst = naive_combine(dst, uv[static_cast<size_t>(o)], red);
      }
      EXPECT_TRUE(tensors_equal((*r)[0], make<int32_t>(dims, want))) << red << " axis " << axis;
    }
  }
}

TEST(GatherScatterOps, ScatterElementsDtypesAndErrors) {
  // Integer add wraps (no undefined behaviour); bool add is OR, mul is AND.
  auto r = eval_op("ScatterElements", {make<int8_t>({2}, {127, 0}), i64s({0}), make<int8_t>({1}, {1})},
                   {{"reduction", std::string("add")}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].data<int8_t>()[0], -128);
  r = eval_op("ScatterElements", {make<bool>({2}, {false, true}), i64s({0, 1}), make<bool>({2}, {true, false})},
              {{"reduction", std::string("add")}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<bool>({2}, {true, true})));
  r = eval_op("ScatterElements", {make<bool>({2}, {false, true}), i64s({0, 1}), make<bool>({2}, {true, false})},
              {{"reduction", std::string("mul")}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<bool>({2}, {false, false})));
  r = eval_op("ScatterElements",
              {make<core::Float16>({2}, {core::Float16(1.5f), core::Float16(2.f)}), i64s({1}),
               make<core::Float16>({1}, {core::Float16(0.5f)})},
              {{"reduction", std::string("add")}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].element_as_double(1), 2.5);
  r = eval_op("ScatterElements", {make<std::string>({2}, {"a", "b"}), i64s({-1}), make<std::string>({1}, {"z"})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<std::string>({2}, {"a", "z"})));
  EXPECT_TRUE(fails_with(
      eval_op("ScatterElements", {make<std::string>({2}, {"a", "b"}), i64s({0}), make<std::string>({1}, {"z"})},
              {{"reduction", std::string("add")}})
          .status(),
      "reduction none"));
  const Tensor data = iota<float>({2, 3});
  EXPECT_TRUE(
      fails_with(eval_op("ScatterElements", {data, make<int64_t>({1, 1}, {2}), make<float>({1, 1}, {1})}).status(),
                 "out of range"));
  EXPECT_TRUE(
      fails_with(eval_op("ScatterElements", {data, make<int64_t>({1, 1}, {0}), make<float>({1, 2}, {1, 2})}).status(),
                 "shape of indices"));
  EXPECT_TRUE(fails_with(eval_op("ScatterElements", {data, make<int64_t>({1, 1}, {0}), make<float>({1, 1}, {1})},
                                 {{"reduction", std::string("sub")}})
                             .status(),
                         "reduction"));
  auto dyn =
      run_op("ScatterElements", {data, make<int64_t>({1, 1}, {-3}), make<float>({1, 1}, {1})}, {true, true, true});
  EXPECT_EQ(dyn.status().code(), core::StatusCode::kOutOfRange) << dyn.status().to_string();
}

// ---------------------------------------------------------------- ScatterND

TEST(GatherScatterOps, ScatterND) {
  auto r = eval_op("ScatterND", {make<float>({8}, {1, 2, 3, 4, 5, 6, 7, 8}), make<int64_t>({4, 1}, {4, 3, 1, 7}),
                                 make<float>({4}, {9, 10, 11, 12})});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({8}, {1, 11, 3, 10, 9, 6, 7, 12})));
  // Slices: data [4,4,4], indices [[0],[2]], updates [2,4,4].
  const Tensor data = iota<float>({4, 4, 4});
  Tensor upd = iota<float>({2, 4, 4});
  for (int64_t i = 0; i < upd.num_elements(); ++i) upd.data<float>()[i] += 1000;
  r = eval_op("ScatterND", {data, make<int64_t>({2, 1}, {0, -2}), upd});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  for (int64_t o = 0; o < 64; ++o) {
    const int64_t slice = o / 16;
    const float want = slice == 0   ? 1000.f + static_cast<float>(o)
                       : slice == 2 ? 1000.f + static_cast<float>(o - 16)
                                    : static_cast<float>(o);
    EXPECT_EQ((*r)[0].data<float>()[o], want) << o;
  }
  // Reductions with duplicate index tuples (ONNX test_scatternd_add / _multiply shapes).
  const std::pair<const char*, float> reds[] = {{"add", 3 + 5 + 6}, {"mul", 3 * 5 * 6}, {"max", 6}, {"min", 3}};
  for (const auto& [red, want] : reds) {
    r = eval_op("ScatterND",
                {make<float>({2, 2}, {3, 4, 5, 6}), make<int64_t>({2, 2}, {0, 0, 0, 0}), make<float>({2}, {5, 6})},
                {{"reduction", std::string(red)}});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_TRUE(tensors_equal((*r)[0], make<float>({2, 2}, {want, 4, 5, 6}))) << red;
  }
  EXPECT_TRUE(
      fails_with(eval_op("ScatterND", {iota<float>({4}), make<int64_t>({1, 1}, {4}), make<float>({1}, {1})}).status(),
                 "out of range"));
  EXPECT_TRUE(fails_with(
      eval_op("ScatterND", {iota<float>({4}), make<int64_t>({1, 1}, {0}), make<float>({2}, {1, 1})}).status(),
      "updates"));
  EXPECT_TRUE(fails_with(
      eval_op("ScatterND", {iota<float>({4}), make<int64_t>({1, 2}, {0, 0}), make<float>({1}, {1})}).status(),
      "last dim"));
}

// ---------------------------------------------------------------- OneHot

TEST(GatherScatterOps, OneHotMatchesNaive) {
  const Dims idims{2, 3};
  const std::vector<int64_t> iv{1, -1, 9, 4, -5, 0};  // 9 and -5 are outside [-4, 4): all off
  const int64_t depth = 4;
  for (int64_t axis = -3; axis <= 2; ++axis) {
    auto r = eval_op("OneHot", {make<int64_t>(idims, iv), i64_scalar(depth), make<float>({2}, {-1.f, 5.f})},
                     {{"axis", axis}});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    Dims od = idims;
    od.insert(od.begin() + static_cast<long>(a), depth);
    ASSERT_EQ((*r)[0].dims(), od);
    for (int64_t o = 0; o < (*r)[0].num_elements(); ++o) {
      Dims oi = unravel(o, od);
      const int64_t d = oi[a];
      oi.erase(oi.begin() + static_cast<long>(a));
      int64_t v = iv[static_cast<size_t>(ravel(oi, idims))];
      if (v < 0) v += depth;
      EXPECT_EQ((*r)[0].data<float>()[o], v == d ? 5.f : -1.f) << "axis " << axis << " at " << o;
    }
  }
}

TEST(GatherScatterOps, OneHotInputsAndErrors) {
  // Default axis -1, float indices and depth (truncated), string values.
  auto r = eval_op("OneHot",
                   {make<float>({2}, {2.f, 0.7f}), Tensor::scalar<float>(3.9f), make<std::string>({2}, {"off", "on"})});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<std::string>({2, 3}, {"off", "off", "on", "on", "off", "off"})));
  EXPECT_TRUE(fails_with(eval_op("OneHot", {i64s({0}), i64_scalar(0), make<float>({2}, {0, 1})}).status(), "positive"));
  EXPECT_TRUE(fails_with(eval_op("OneHot", {i64s({0}), i64_scalar(2), make<float>({3}, {0, 1, 2})}).status(), "two"));
  EXPECT_TRUE(fails_with(
      eval_op("OneHot", {i64s({0}), i64_scalar(2), make<float>({2}, {0, 1})}, {{"axis", int64_t{2}}}).status(),
      "out of range"));
  // Depth known only at run time.
  auto dyn =
      run_op("OneHot", {make<int32_t>({2}, {0, -1}), i64_scalar(3), make<int32_t>({2}, {0, 1})}, {true, true, true});
  ASSERT_TRUE(dyn.is_ok()) << dyn.status().to_string();
  EXPECT_TRUE(tensors_equal((*dyn)[0], make<int32_t>({2, 3}, {1, 0, 0, 0, 0, 1})));
}

// ---------------------------------------------------------------- NonZero

TEST(GatherScatterOps, NonZero) {
  auto r = eval_op("NonZero", {make<int32_t>({2, 2}, {1, 0, 1, 1})});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<int64_t>({2, 3}, {0, 1, 1, 0, 0, 1})));
  r = eval_op("NonZero", {make<float>({4}, {0.f, -0.f, NAN, 2.f})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<int64_t>({1, 2}, {2, 3})));
  r = eval_op("NonZero", {make<bool>({2, 1, 2}, {false, false, false, false})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].dims(), (Dims{3, 0}));
  r = eval_op("NonZero", {Tensor::scalar<int64_t>(5)});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<int64_t>({1, 1}, {0})));
  r = eval_op("NonZero", {make<core::Float16>({3}, {core::Float16(0.f), core::Float16(1.f), core::Float16(-0.f)})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<int64_t>({1, 1}, {1})));
  // Naive: coordinates of the non-zeros in row-major order.
  std::mt19937 rng(5);
  const Dims dims{3, 1, 4, 2};
  std::vector<uint8_t> v;
  for (int64_t i = 0; i < core::num_elements(dims); ++i) v.push_back(rng() % 3 == 0 ? 7 : 0);
  r = eval_op("NonZero", {make<uint8_t>(dims, v)});
  ASSERT_TRUE(r.is_ok());
  std::vector<Dims> coords;
  for (int64_t i = 0; i < core::num_elements(dims); ++i)
    if (v[static_cast<size_t>(i)]) coords.push_back(unravel(i, dims));
  const int64_t n = static_cast<int64_t>(coords.size());
  ASSERT_EQ((*r)[0].dims(), (Dims{4, n}));
  for (int64_t c = 0; c < n; ++c)
    for (int64_t d = 0; d < 4; ++d)
      EXPECT_EQ((*r)[0].data<int64_t>()[d * n + c], coords[static_cast<size_t>(c)][static_cast<size_t>(d)]);
}

TEST(GatherScatterOps, NonZeroRunsDynamicallyInASession) {
  // Input fed at run time: the executor cannot size the output, so the kernel allocates it, and a
  // downstream op (Transpose) is dynamic too. Runs with different data reuse the same plan.
  auto g = std::make_unique<ir::Graph>("g");
  ir::Value* x = g->add_input("x", ir::ValueType{DType::kF32, ir::Shape(Dims{2, 3})});
  ir::Node* nz = g->add_node("NonZero", {x}, {"nz"});
  ir::Node* tr = g->add_node("Transpose", {nz->output(0)}, {"y"});
  g->add_output(tr->output(0));
  runtime::LoadedModel m;
  m.graph = std::move(g);
  auto s = runtime::Session::from_model(std::move(m));
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  const std::vector<std::pair<std::vector<float>, std::vector<int64_t>>> cases = {
      {{0, 1, 0, 0, 0, 2}, {0, 1, 1, 2}},
      {{0, 0, 0, 0, 0, 0}, {}},
      {{1, 1, 1, 1, 1, 1}, {0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2}}};
  for (const auto& [xv, want] : cases) {
    std::vector<Tensor> out;
    auto st = (*s)->run({{"x", make<float>({2, 3}, xv)}}, out);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_TRUE(tensors_equal(out[0], make<int64_t>({static_cast<int64_t>(want.size() / 2), 2}, want)));
  }
  EXPECT_GE((*s)->plan_stats().dynamic_steps, 2);
}

// ---------------------------------------------------------------- Compress

TEST(GatherScatterOps, Compress) {
  const Tensor x = make<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  struct Case {
    std::vector<bool> cond;
    std::optional<int64_t> axis;
    Tensor want;
  } cases[] = {
      {{false, true}, 0, make<float>({1, 2}, {3, 4})},
      {{false, true, true}, 0, make<float>({2, 2}, {3, 4, 5, 6})},
      {{false, true}, 1, make<float>({3, 1}, {2, 4, 6})},
      {{false, true}, -1, make<float>({3, 1}, {2, 4, 6})},
      {{false, true, false, false, true}, {}, make<float>({2}, {2, 5})},
      {{true, false, true, false}, 0, make<float>({2, 2}, {1, 2, 5, 6})},  // longer, extra entries false
      {{}, 0, make<float>({0, 2}, {})},
  };
  for (const auto& c : cases) {
    testing::Attrs a;
    if (c.axis) a["axis"] = *c.axis;
    auto r = eval_op("Compress", {x, make<bool>({static_cast<int64_t>(c.cond.size())}, c.cond)}, a);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_TRUE(tensors_equal((*r)[0], c.want));
  }
  auto r = eval_op("Compress", {make<std::string>({3}, {"a", "b", "c"}), make<bool>({3}, {true, false, true})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<std::string>({2}, {"a", "c"})));
  EXPECT_TRUE(fails_with(
      eval_op("Compress", {x, make<bool>({4}, {false, false, false, true})}, {{"axis", int64_t{0}}}).status(),
      "selects index 3"));
  EXPECT_TRUE(fails_with(eval_op("Compress", {x, i64s({1, 0})}, {{"axis", int64_t{0}}}).status(), "bool"));
  EXPECT_TRUE(
      fails_with(eval_op("Compress", {x, make<bool>({1}, {true})}, {{"axis", int64_t{2}}}).status(), "out of range"));
  auto dyn = run_op("Compress", {x, make<bool>({2}, {true, false})}, {true, true}, {{"axis", int64_t{1}}});
  ASSERT_TRUE(dyn.is_ok()) << dyn.status().to_string();
  EXPECT_TRUE(tensors_equal((*dyn)[0], make<float>({3, 1}, {1, 3, 5})));
}

TEST(GatherScatterOps, Inference) {
  using ir::Dim;
  using ir::Shape;
  using ir::ValueType;
  const ValueType data{DType::kF32, Shape(std::vector<Dim>{Dim::sym("b"), Dim(5), Dim(7)})};
  const ValueType idx{DType::kI64, Shape(std::vector<Dim>{Dim(2), Dim::sym("k")})};
  auto r = testing::infer_op("Gather", {data, idx}, {}, {{"axis", int64_t{-2}}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].shape.to_string(), "[b,2,k,7]");
  r = testing::infer_op("GatherND", {data, ValueType{DType::kI64, Shape(Dims{4, 2})}}, {});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.to_string(), "[4,7]");
  // OneHot with a depth unknown at load: the rank, with the depth dim unknown.
  r = testing::infer_op("OneHot", {idx, ValueType{DType::kI64, Shape(Dims{})}, ValueType{DType::kF32, Shape(Dims{2})}},
                        {}, {{"axis", int64_t{1}}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.to_string(), "[2,?,k]");
  EXPECT_EQ((*r)[0].dtype, DType::kF32);
  r = testing::infer_op("NonZero", {data}, {});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.to_string(), "[3,?]");
  r = testing::infer_op("Compress", {data, ValueType{DType::kBool, Shape(Dims{3})}}, {}, {{"axis", int64_t{1}}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.to_string(), "[b,?,7]");
  r = testing::infer_op("Compress", {data, ValueType{DType::kBool, Shape(Dims{3})}}, {});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.to_string(), "[?]");
  EXPECT_FALSE(testing::infer_op("Gather", {data, ValueType{DType::kF32, Shape(Dims{2})}}, {}).is_ok());
  EXPECT_FALSE(
      testing::infer_op("ScatterElements", {data, idx, ValueType{DType::kI32, Shape(Dims{2, 3})}}, {}).is_ok());
}

}  // namespace
}  // namespace kestrel

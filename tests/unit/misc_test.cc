// Tests of Unique, ReverseSequence and Shrink: naive re-computations written here (Unique by
// linear search for first occurrences), hand-computed values, every dtype family, NaN and -0,
// data-dependent shapes through a Session, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
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
using testing::i64s;
using testing::make;
using testing::run_op;
using testing::tensors_equal;
using testing::fails_with;

std::vector<int64_t> ints(const Tensor& t) {
  return {t.data<int64_t>(), t.data<int64_t>() + t.num_elements()};
}

// ---------------------------------------------------------------------------------------------
// Unique, naive: items (elements or slices) as vectors of doubles; equality treats NaN == NaN.

bool same(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}
bool less(const std::vector<double>& a, const std::vector<double>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (same(a[i], b[i])) continue;
    if (std::isnan(a[i])) return false;
    if (std::isnan(b[i])) return true;
    return a[i] < b[i];
  }
  return false;
}

struct NaiveUnique {
  std::vector<std::vector<double>> values;
  std::vector<int64_t> indices, inverse, counts;
};

NaiveUnique naive_unique(const Tensor& x, std::optional<int64_t> axis, bool sorted) {
  std::vector<std::vector<double>> items;
  if (!axis) {
    for (int64_t i = 0; i < x.num_elements(); ++i) items.push_back({x.element_as_double(i)});
  } else {
    const auto a = static_cast<size_t>(*axis);
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < a; ++d) outer *= x.dims()[d];
    for (size_t d = a + 1; d < x.dims().size(); ++d) inner *= x.dims()[d];
    for (int64_t j = 0; j < x.dims()[a]; ++j) {
      std::vector<double> s;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) s.push_back(x.element_as_double((o * x.dims()[a] + j) * inner + i));
      items.push_back(s);
    }
  }
  auto eq = [](const std::vector<double>& a, const std::vector<double>& b) {
    for (size_t i = 0; i < a.size(); ++i)
      if (!same(a[i], b[i])) return false;
    return true;
  };
  NaiveUnique r;
  for (size_t j = 0; j < items.size(); ++j) {
    bool seen = false;
    for (const auto& v : r.values) seen = seen || eq(v, items[j]);
    if (!seen) {
      r.values.push_back(items[j]);
      r.indices.push_back(static_cast<int64_t>(j));
    }
  }
  if (sorted) {
    std::vector<size_t> perm(r.values.size());
    for (size_t k = 0; k < perm.size(); ++k) perm[k] = k;
    std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) { return less(r.values[a], r.values[b]); });
    NaiveUnique s;
    for (size_t k : perm) s.values.push_back(r.values[k]), s.indices.push_back(r.indices[k]);
    r = s;
  }
  for (const auto& it : items)
    for (size_t k = 0; k < r.values.size(); ++k)
      if (eq(r.values[k], it)) r.inverse.push_back(static_cast<int64_t>(k));
  for (const auto& v : r.values)
    r.counts.push_back(std::count_if(items.begin(), items.end(), [&](const auto& it) { return eq(v, it); }));
  return r;
}

void expect_unique(const Tensor& x, std::optional<int64_t> axis, bool sorted, const std::vector<Tensor>& got) {
  NaiveUnique want = naive_unique(x, axis, sorted);
  ASSERT_EQ(got.size(), 4u);
  const auto u = static_cast<int64_t>(want.values.size());
  Dims ydims = axis ? x.dims() : Dims{u};
  if (axis) ydims[static_cast<size_t>(*axis)] = u;
  ASSERT_EQ(got[0].dims(), ydims);
  // The items of y, in y's order.
  std::vector<std::vector<double>> ours;
  if (!axis) {
    for (int64_t i = 0; i < got[0].num_elements(); ++i) ours.push_back({got[0].element_as_double(i)});
  } else {
    ours = naive_unique(got[0], axis, false).values;  // y's items are distinct: all of them, in order
  }
  ASSERT_EQ(ours.size(), want.values.size());
  for (size_t k = 0; k < ours.size(); ++k)
    for (size_t i = 0; i < ours[k].size(); ++i) EXPECT_TRUE(same(ours[k][i], want.values[k][i])) << "item " << k;
  EXPECT_EQ(ints(got[1]), want.indices);
  EXPECT_EQ(ints(got[2]), want.inverse);
  EXPECT_EQ(ints(got[3]), want.counts);
}

TEST(UniqueKernel, MatchesNaiveForEveryAxisAndOrder) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> small(0, 3);
  const std::vector<Dims> shapes = {{7}, {3, 3}, {2, 4, 2}, {5, 2}, {1, 6}, {4, 1, 3}};
  for (const Dims& s : shapes) {
    Tensor x = Tensor::allocate(DType::kF32, s).value();
    for (float& v : x.span<float>()) v = static_cast<float>(small(rng)) - 1.5f;
    // Repeat a slice along axis 0 so slices have duplicates too.
    if (s[0] > 2)
      for (int64_t i = 0; i < x.num_elements() / s[0]; ++i)
        x.data<float>()[x.num_elements() / s[0] * 2 + i] = x.data<float>()[i];
    std::vector<std::optional<int64_t>> axes = {std::nullopt};
    for (int64_t a = 0; a < static_cast<int64_t>(s.size()); ++a) axes.push_back(a);
    for (auto axis : axes)
      for (int64_t sorted : {0, 1}) {
        Attrs attrs{{"sorted", Attribute(sorted)}};
        if (axis) attrs["axis"] = Attribute(*axis - static_cast<int64_t>(s.size()) * (*axis % 2));  // some negative
        auto r = eval_op("Unique", {x}, attrs, 4);
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        SCOPED_TRACE(core::dims_to_string(s) + " axis " + (axis ? std::to_string(*axis) : "none") + " sorted " +
                     std::to_string(sorted));
        expect_unique(x, axis, sorted != 0, *r);
      }
  }
}

TEST(UniqueKernel, SpecExampleDtypesNaNAndEmpty) {
  // The ONNX example: unsorted [2, 1, 1, 3, 4, 3].
  auto r = eval_op("Unique", {make<float>({6}, {2, 1, 1, 3, 4, 3})}, Attrs{{"sorted", Attribute(int64_t{0})}}, 4);
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({4}, {2, 1, 3, 4})));
  EXPECT_EQ(ints((*r)[1]), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(ints((*r)[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(ints((*r)[3]), (std::vector<int64_t>{1, 2, 2, 1}));
  // Exact 64-bit integers, strings and bools.
  const int64_t big = (int64_t{1} << 60) + 1;
  KESTREL_EVAL1(i, "Unique", {make<int64_t>({4}, {big, big - 1, big, -big})});
  EXPECT_TRUE(tensors_equal(i, make<int64_t>({3}, {-big, big - 1, big})));
  KESTREL_EVAL1(s, "Unique", {make<std::string>({4}, {"b", "a", "b", "c"})});
  EXPECT_TRUE(tensors_equal(s, make<std::string>({3}, {"a", "b", "c"})));
  KESTREL_EVAL1(b, "Unique", {make<bool>({3}, {true, false, true})}, Attrs{{"sorted", Attribute(int64_t{0})}});
  EXPECT_TRUE(tensors_equal(b, make<bool>({2}, {true, false})));
  // NaNs collapse into one, sorted last; -0 equals +0.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto n = eval_op("Unique", {make<float>({5}, {nan, 1, -0.f, nan, 0.f})}, {}, 4);
  ASSERT_TRUE(n.is_ok());
  ASSERT_EQ((*n)[0].num_elements(), 3);
  EXPECT_EQ((*n)[0].data<float>()[0], 0.f);
  EXPECT_EQ((*n)[0].data<float>()[1], 1.f);
  EXPECT_TRUE(std::isnan((*n)[0].data<float>()[2]));
  EXPECT_EQ(ints((*n)[3]), (std::vector<int64_t>{2, 1, 2}));
  // Empty input: empty outputs.
  auto e =
      eval_op("Unique", {Tensor::allocate(DType::kF32, {0, 3}).value()}, Attrs{{"axis", Attribute(int64_t{1})}}, 4);
  ASSERT_TRUE(e.is_ok());
  EXPECT_EQ((*e)[0].dims(), (Dims{0, 1}));  // three empty columns are equal
  EXPECT_EQ(ints((*e)[3]), (std::vector<int64_t>{3}));
}

TEST(UniqueSession, RuntimeShapesAndErrors) {
  Tensor x = make<int32_t>({2, 3}, {1, 2, 1, 1, 2, 1});
  auto r = run_op("Unique", {x}, {true}, Attrs{{"axis", Attribute(int64_t{1})}}, 4);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<int32_t>({2, 2}, {1, 2, 1, 2})));
  EXPECT_EQ(ints((*r)[2]), (std::vector<int64_t>{0, 1, 0}));
  auto one = run_op("Unique", {x}, {true}, {}, 1);
  ASSERT_TRUE(one.is_ok()) << one.status().to_string();
  EXPECT_TRUE(tensors_equal((*one)[0], make<int32_t>({2}, {1, 2})));
  EXPECT_TRUE(fails_with(eval_op("Unique", {x}, Attrs{{"axis", Attribute(int64_t{2})}}).status(), "out of range"));
  EXPECT_TRUE(fails_with(eval_op("Unique", {x}, Attrs{{"sorted", Attribute(int64_t{2})}}).status(), "sorted"));
}

// ---------------------------------------------------------------------------------------------
// ReverseSequence

TEST(ReverseSequenceKernel, MatchesNaiveBothLayouts) {
  std::mt19937 rng(8);
  for (int64_t batch_axis : {0, 1}) {
    const Dims dims = batch_axis == 0 ? Dims{3, 5, 2} : Dims{5, 3, 2};
    Tensor x = testing::iota<float>(dims);
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<int64_t> lens;
      for (int b = 0; b < 3; ++b) lens.push_back(std::uniform_int_distribution<int64_t>(0, 5)(rng));
      KESTREL_EVAL1(y, "ReverseSequence", {x, i64s(lens)},
                    Attrs{{"batch_axis", Attribute(batch_axis)}, {"time_axis", Attribute(int64_t{1 - batch_axis})}});
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t t = 0; t < 5; ++t)
          for (int64_t k = 0; k < 2; ++k) {
            const int64_t len = lens[static_cast<size_t>(b)];
            const int64_t src = t < len ? len - 1 - t : t;
            auto at = [&](int64_t tt) { return batch_axis == 0 ? (b * 5 + tt) * 2 + k : (tt * 3 + b) * 2 + k; };
            EXPECT_EQ(y.data<float>()[at(t)], x.data<float>()[at(src)]) << b << " " << t << " " << k;
          }
    }
  }
}

TEST(ReverseSequenceKernel, SpecExampleStringsAndBadInput) {
  // The ONNX example (batch_axis 1, time_axis 0 are the defaults).
  KESTREL_EVAL1(y, "ReverseSequence", {testing::iota<float>({4, 4}), i64s({4, 3, 2, 1})});
  EXPECT_TRUE(tensors_equal(y, make<float>({4, 4}, {12, 9, 6, 3, 8, 5, 2, 7, 4, 1, 10, 11, 0, 13, 14, 15})));
  KESTREL_EVAL1(s, "ReverseSequence", {make<std::string>({1, 3}, {"a", "b", "c"}), i64s({3})},
                Attrs{{"batch_axis", Attribute(int64_t{0})}, {"time_axis", Attribute(int64_t{1})}});
  EXPECT_TRUE(tensors_equal(s, make<std::string>({1, 3}, {"c", "b", "a"})));
  Tensor x = testing::iota<float>({4, 2});
  EXPECT_TRUE(fails_with(eval_op("ReverseSequence", {x, i64s({5, 1})}).status(), "outside"));
  EXPECT_TRUE(fails_with(eval_op("ReverseSequence", {x, i64s({-1, 1})}).status(), "outside"));
  EXPECT_TRUE(fails_with(eval_op("ReverseSequence", {x, i64s({1, 1, 1})}).status(), "entries"));
  EXPECT_TRUE(fails_with(
      eval_op("ReverseSequence", {x, i64s({1, 1})}, Attrs{{"batch_axis", Attribute(int64_t{0})}}).status(), "0 and 1"));
  EXPECT_TRUE(fails_with(eval_op("ReverseSequence", {testing::iota<float>({4}), i64s({1})}).status(), "rank"));
  // Run time: bad lengths fail the run.
  EXPECT_TRUE(fails_with(run_op("ReverseSequence", {x, i64s({9, 1})}, {true, true}).status(), "outside"));
}

// ---------------------------------------------------------------------------------------------
// Shrink

TEST(ShrinkKernel, HardSoftIntegersAndHalf) {
  Tensor x = make<float>({5}, {-2, -1, 0, 1, 2});
  KESTREL_EVAL1(hard, "Shrink", {x}, Attrs{{"lambd", Attribute(1.5f)}});
  EXPECT_TRUE(tensors_equal(hard, make<float>({5}, {-2, 0, 0, 0, 2})));
  KESTREL_EVAL1(soft, "Shrink", {x}, Attrs{{"lambd", Attribute(1.5f)}, {"bias", Attribute(1.5f)}});
  EXPECT_TRUE(tensors_equal(soft, make<float>({5}, {-0.5f, 0, 0, 0, 0.5f})));
  KESTREL_EVAL1(def, "Shrink", {x});  // lambd 0.5, bias 0
  EXPECT_TRUE(tensors_equal(def, x));
  // Integers: the result truncates toward zero; saturates at the type's range.
  KESTREL_EVAL1(i, "Shrink", {make<int8_t>({4}, {-3, 3, 127, -128})},
                Attrs{{"lambd", Attribute(1.f)}, {"bias", Attribute(-1.5f)}});
  EXPECT_TRUE(tensors_equal(i, make<int8_t>({4}, {-4, 4, 127, -128})));  // -4.5, 4.5, 128.5, -129.5
  Tensor h = Tensor::allocate(DType::kF16, {2}).value();
  h.data<core::Float16>()[0] = core::Float16(-3.f);
  h.data<core::Float16>()[1] = core::Float16(0.25f);
  KESTREL_EVAL1(hh, "Shrink", {h}, Attrs{{"bias", Attribute(1.f)}});
  EXPECT_EQ(hh.element_as_double(0), -2);
  EXPECT_EQ(hh.element_as_double(1), 0);
  EXPECT_TRUE(fails_with(eval_op("Shrink", {make<std::string>({1}, {"a"})}).status(), "numeric"));
}

}  // namespace
}  // namespace kestrel

// Tests of the data-rearranging ops (Transpose, Concat, Split, Slice, Tile, Pad, DepthToSpace,
// SpaceToDepth, Trilu, Dropout) against hand-checked values and naive re-computations written
// here independently of the kernels, over several shapes, every attribute, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

#include "common/onnx_builder.h"
#include "common/op_test_util.h"

namespace kestrel {
namespace {

using core::Dims;
using core::DType;
using core::Tensor;
using ir::Attribute;
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

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

// Strings "v0", "v1", ... in dims.
Tensor strings(const Dims& dims) {
  std::vector<std::string> v(static_cast<size_t>(core::num_elements(dims)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = "v" + std::to_string(i);
  return make<std::string>(dims, v);
}

// ---------------------------------------------------------------- Transpose

TEST(TransformOps, TransposeEveryPermutation) {
  const Dims dims{2, 3, 5, 7};
  const Tensor x = iota<float>(dims);
  std::vector<int64_t> perm{0, 1, 2, 3};
  do {
    auto r = eval_op("Transpose", {x}, {{"perm", perm}});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    Dims od;
    for (int64_t p : perm) od.push_back(dims[static_cast<size_t>(p)]);
    std::vector<float> want(static_cast<size_t>(x.num_elements()));
    for (int64_t o = 0; o < x.num_elements(); ++o) {
      Dims oi = unravel(o, od), ii(4);
      for (size_t d = 0; d < 4; ++d) ii[static_cast<size_t>(perm[d])] = oi[d];
      want[static_cast<size_t>(o)] = static_cast<float>(ravel(ii, dims));
    }
    EXPECT_TRUE(tensors_equal((*r)[0], make<float>(od, want))) << core::join(perm);
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(TransformOps, TransposeDefaultDtypesAndErrors) {
  auto r = eval_op("Transpose", {iota<int64_t>({2, 3})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<int64_t>({3, 2}, {0, 3, 1, 4, 2, 5})));
  r = eval_op("Transpose", {strings({2, 2})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<std::string>({2, 2}, {"v0", "v2", "v1", "v3"})));
  r = eval_op("Transpose", {make<bool>({1, 3}, {true, false, true})}, {{"perm", std::vector<int64_t>{1, 0}}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<bool>({3, 1}, {true, false, true})));
  r = eval_op("Transpose", {Tensor::scalar<float>(3.f)});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], Tensor::scalar<float>(3.f)));
  const Tensor x = iota<float>({2, 3, 4});
  EXPECT_TRUE(fails_with(eval_op("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 0, 1}}}).status(), "permutation"));
  EXPECT_TRUE(fails_with(eval_op("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 1, 3}}}).status(), "permutation"));
  EXPECT_TRUE(fails_with(eval_op("Transpose", {x}, {{"perm", std::vector<int64_t>{1, 0}}}).status(), "rank"));
}

// ---------------------------------------------------------------- Concat

TEST(TransformOps, ConcatAlongEveryAxis) {
  for (int64_t axis = -3; axis < 3; ++axis) {
    const size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    std::vector<Dims> shapes;
    for (int64_t n : {2, 0, 3, 1}) {
      Dims d{2, 3, 5};
      d[a] = n;
      shapes.push_back(d);
    }
    std::vector<Tensor> xs;
    int64_t base = 0;
    for (const Dims& d : shapes) {
      Tensor t = iota<int32_t>(d);
      for (int64_t i = 0; i < t.num_elements(); ++i) t.data<int32_t>()[i] += static_cast<int32_t>(base);
      base += 1000;
      xs.push_back(t);
    }
    auto r = eval_op("Concat", xs, {{"axis", axis}});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    Dims od{2, 3, 5};
    od[a] = 6;
    ASSERT_EQ((*r)[0].dims(), od);
    // Naive: output index along axis selects the input and its local index.
    for (int64_t o = 0; o < (*r)[0].num_elements(); ++o) {
      Dims idx = unravel(o, od);
      size_t k = 0;
      while (idx[a] >= shapes[k][a]) idx[a] -= shapes[k++][a];
      EXPECT_EQ((*r)[0].data<int32_t>()[o], xs[k].data<int32_t>()[ravel(idx, shapes[k])]) << "axis " << axis;
    }
  }
}

TEST(TransformOps, ConcatStringsZeroSizeAndErrors) {
  auto r = eval_op("Concat", {strings({1, 2}), make<std::string>({1, 1}, {"z"})}, {{"axis", -1}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<std::string>({1, 3}, {"v0", "v1", "z"})));
  r = eval_op("Concat", {Tensor::allocate(DType::kF32, {0, 2}).value(), Tensor::allocate(DType::kF32, {0, 2}).value()},
              {{"axis", 0}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].dims(), (Dims{0, 2}));
  r = eval_op("Concat", {iota<float>({3})}, {{"axis", 0}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], iota<float>({3})));
  EXPECT_TRUE(fails_with(eval_op("Concat", {iota<float>({2, 3}), iota<float>({2, 4})}, {{"axis", 0}}).status(),
                         "does not match"));
  EXPECT_TRUE(fails_with(eval_op("Concat", {iota<float>({2, 3}), iota<float>({6})}, {{"axis", 0}}).status(), "ranks"));
  EXPECT_TRUE(fails_with(eval_op("Concat", {iota<float>({2, 3})}, {{"axis", 2}}).status(), "out of range"));
  EXPECT_TRUE(fails_with(eval_op("Concat", {iota<float>({2}), iota<int32_t>({2})}, {{"axis", 0}}).status(), "dtypes"));
  EXPECT_FALSE(eval_op("Concat", {iota<float>({2})}).is_ok());  // axis is required
}

// ---------------------------------------------------------------- Split

std::vector<Tensor> naive_split(const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes) {
  std::vector<Tensor> out;
  int64_t begin = 0;
  for (int64_t s : sizes) {
    auto r = eval_op("Slice", {x, i64s({begin}), i64s({begin + s}), i64s({axis})});
    EXPECT_TRUE(r.is_ok());
    out.push_back((*r)[0]);
    begin += s;
  }
  return out;
}

TEST(TransformOps, SplitSizesNumOutputsAndEqual) {
  const Tensor x = iota<float>({7, 4});
  struct Case {
    std::optional<std::vector<int64_t>> split;
    std::optional<int64_t> num_outputs;
    int outputs;
    int64_t axis;
    std::vector<int64_t> want;
  } cases[] = {
      {std::vector<int64_t>{2, 0, 5}, {}, 3, 0, {2, 0, 5}},
      {std::vector<int64_t>{1, 3}, {}, 2, -1, {1, 3}},
      {{}, 3, 3, 0, {3, 3, 1}},  // opset 18: ceil(7/3) = 3, last chunk smaller
      {{}, 4, 4, 0, {2, 2, 2, 1}},
      {{}, 2, 2, 1, {2, 2}},
      {{}, {}, 2, 1, {2, 2}},  // legacy equal split
      {{}, {}, 1, 0, {7}},
  };
  for (const auto& c : cases) {
    std::vector<Tensor> ins{x};
    if (c.split) ins.push_back(i64s(*c.split));
    testing::Attrs a{{"axis", c.axis}};
    if (c.num_outputs) a["num_outputs"] = *c.num_outputs;
    auto r = eval_op("Split", ins, a, c.outputs);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    auto want = naive_split(x, c.axis, c.want);
    ASSERT_EQ(r->size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(tensors_equal((*r)[i], want[i])) << i;
  }
  // Hand-checked.
  auto r = eval_op("Split", {iota<int64_t>({5})}, {{"num_outputs", int64_t{2}}}, 2);
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], i64s({0, 1, 2})));
  EXPECT_TRUE(tensors_equal((*r)[1], i64s({3, 4})));
}

TEST(TransformOps, SplitErrors) {
  const Tensor x = iota<float>({7, 4});
  EXPECT_TRUE(fails_with(eval_op("Split", {x, i64s({2, 2})}, {}, 2).status(), "adds up to"));
  EXPECT_TRUE(fails_with(eval_op("Split", {x, i64s({2, 5})}, {}, 3).status(), "entries"));
  EXPECT_TRUE(fails_with(eval_op("Split", {x, i64s({8, -1})}, {}, 2).status(), "negative"));
  EXPECT_TRUE(fails_with(eval_op("Split", {x}, {}, 2).status(), "equal parts"));
  EXPECT_TRUE(fails_with(eval_op("Split", {x, i64s({3, 4})}, {{"num_outputs", int64_t{2}}}, 2).status(), "not both"));
  EXPECT_TRUE(fails_with(eval_op("Split", {x}, {{"num_outputs", int64_t{3}}}, 2).status(), "num_outputs"));
  EXPECT_TRUE(fails_with(eval_op("Split", {iota<float>({5})}, {{"num_outputs", int64_t{4}}}, 4).status(), "chunks"));
  EXPECT_TRUE(fails_with(eval_op("Split", {x}, {{"axis", int64_t{2}}}, 1).status(), "out of range"));
}

TEST(TransformOps, SplitRuntimeValuesAndOldOpset) {
  const Tensor x = iota<int32_t>({6});
  auto r = run_op("Split", {x, i64s({1, 5})}, {true, true}, {}, 2);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<int32_t>({1}, {0})));
  EXPECT_TRUE(tensors_equal((*r)[1], make<int32_t>({5}, {1, 2, 3, 4, 5})));
  // Opset 11 keeps split as an attribute; the importer turns it into the input.
  testing::OnnxBuilder b(11);
  b.input("x", 1, {6});
  auto& n = b.node("Split", {"x"}, {"a", "b"});
  testing::OnnxBuilder::attr(n, "split", std::vector<int64_t>{4, 2});
  b.output("a").output("b");
  std::string bytes = b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ((*s)->outputs()[0].type.shape.to_string(), "[4]");
  EXPECT_EQ((*s)->outputs()[1].type.shape.to_string(), "[2]");
}

// ---------------------------------------------------------------- Slice

// The ONNX Slice rule, spelled out as in the spec text: negative starts/ends get dim added, then
// start is clamped to [0, dim] (step > 0) or [0, dim - 1] (step < 0), end to [0, dim] or
// [-1, dim - 1]; the indices are start, start + step, ... up to (not including) end. (Unlike
// numpy, a start below -dim with a negative step clamps to 0 and selects element 0, as in ONNX
// Runtime.)
std::vector<int64_t> spec_slice(int64_t start, int64_t stop, int64_t step, int64_t length) {
  if (length == 0) return {};
  if (start < 0) start += length;
  if (stop < 0) stop += length;
  if (step > 0) {
    start = std::min(std::max<int64_t>(start, 0), length);
    stop = std::min(std::max<int64_t>(stop, 0), length);
  } else {
    start = std::min(std::max<int64_t>(start, 0), length - 1);
    stop = std::min(std::max<int64_t>(stop, -1), length - 1);
  }
  // Steps may be +-2^63: stop before an addition could overflow.
  std::vector<int64_t> idx;
  if (step > 0) {
    for (int64_t i = start; i < stop;) {
      idx.push_back(i);
      if (step >= stop - i) break;
      i += step;
    }
  } else {
    for (int64_t i = start; i > stop;) {
      idx.push_back(i);
      if (step <= stop - i) break;
      i += step;
    }
  }
  return idx;
}

Tensor naive_slice(const Tensor& x, const std::vector<std::vector<int64_t>>& per_axis) {
  Dims od;
  for (const auto& v : per_axis) od.push_back(static_cast<int64_t>(v.size()));
  Tensor y = Tensor::allocate(x.dtype(), od).value();
  for (int64_t o = 0; o < y.num_elements(); ++o) {
    Dims oi = unravel(o, od), ii(od.size());
    for (size_t d = 0; d < od.size(); ++d) ii[d] = per_axis[d][static_cast<size_t>(oi[d])];
    y.data<float>()[o] = x.data<float>()[ravel(ii, x.dims())];
  }
  return y;
}

TEST(TransformOps, SliceHandChecked) {
  const Tensor x = iota<float>({3, 4});
  // x[1:3, ::-2]
  auto r = eval_op("Slice", {x, i64s({1, -1}), i64s({3, kI64Min}), i64s({0, 1}), i64s({1, -2})});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({2, 2}, {7, 5, 11, 9})));
  // Omitted axes and steps: x[0:2, 1:1000]
  r = eval_op("Slice", {x, i64s({0, 1}), i64s({2, 1000})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({2, 3}, {1, 2, 3, 5, 6, 7})));
  // Empty result: start past end.
  r = eval_op("Slice", {x, i64s({3}), i64s({1}), i64s({-1})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].dims(), (Dims{3, 0}));
  // Strings.
  r = eval_op("Slice", {strings({5}), i64s({-1}), i64s({-6}), i64s({0}), i64s({-2})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<std::string>({3}, {"v4", "v2", "v0"})));
}

TEST(TransformOps, SliceMatchesSpecOnRandomCases) {
  std::mt19937 rng(1234);
  const Dims dims{4, 1, 7, 5};
  const Tensor x = iota<float>(dims);
  const int64_t specials[] = {kI64Max, kI64Min, kI64Max - 1, kI64Min + 1, -1000, 1000};
  auto pick = [&](int64_t dim) -> int64_t {
    if (rng() % 6 == 0) return specials[rng() % 6];
    return static_cast<int64_t>(rng() % static_cast<uint32_t>(2 * dim + 5)) - dim - 2;
  };
  for (int iter = 0; iter < 400; ++iter) {
    // A random subset of axes, in random order, some negative.
    std::vector<int64_t> axes{0, 1, 2, 3};
    std::shuffle(axes.begin(), axes.end(), rng);
    axes.resize(1 + rng() % 4);
    std::vector<int64_t> starts, ends, steps, ax;
    std::vector<std::vector<int64_t>> per_axis(4);
    for (size_t d = 0; d < 4; ++d)
      for (int64_t i = 0; i < dims[d]; ++i) per_axis[d].push_back(i);
    const bool omit_axes = rng() % 4 == 0;
    const bool omit_steps = rng() % 4 == 0;
    if (omit_axes) {  // then starts/ends apply to axes 0..n-1
      axes.clear();
      for (int64_t i = 0, n = 1 + rng() % 4; i < n; ++i) axes.push_back(i);
    }
    for (int64_t a : axes) {
      const int64_t dim = dims[static_cast<size_t>(a)];
      int64_t step =
          omit_steps ? 1 : (rng() % 5 == 0 ? (rng() % 2 ? kI64Max : kI64Min) : static_cast<int64_t>(rng() % 7) - 3);
      if (step == 0) step = 1;
      const int64_t s = pick(dim), e = pick(dim);
      starts.push_back(s);
      ends.push_back(e);
      steps.push_back(step);
      ax.push_back(rng() % 2 ? a - 4 : a);
      per_axis[static_cast<size_t>(a)] = spec_slice(s, e, step, dim);
    }
    std::vector<Tensor> ins{x, i64s(starts), i64s(ends)};
    if (!omit_axes || !omit_steps) ins.push_back(omit_axes ? Tensor() : i64s(ax));
    if (!omit_steps) ins.push_back(i64s(steps));
    auto r = eval_op("Slice", ins);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_TRUE(tensors_equal((*r)[0], naive_slice(x, per_axis)))
        << "starts " << core::join(starts) << " ends " << core::join(ends) << " axes " << core::join(ax) << " steps "
        << core::join(steps);
  }
}

TEST(TransformOps, SliceErrorsAndRuntimeValues) {
  const Tensor x = iota<float>({3, 4});
  EXPECT_TRUE(fails_with(eval_op("Slice", {x, i64s({0}), i64s({1}), i64s({0}), i64s({0})}).status(), "0"));
  EXPECT_TRUE(fails_with(eval_op("Slice", {x, i64s({0, 0}), i64s({1, 1}), i64s({1, -1})}).status(), "more than once"));
  EXPECT_TRUE(fails_with(eval_op("Slice", {x, i64s({0}), i64s({1}), i64s({2})}).status(), "out of range"));
  EXPECT_TRUE(fails_with(eval_op("Slice", {x, i64s({0, 1}), i64s({1})}).status(), "same length"));
  EXPECT_TRUE(fails_with(eval_op("Slice", {x, i64s({0, 0, 0}), i64s({1, 1, 1})}).status(), "rank"));
  // All of starts/ends/axes/steps known only at run time.
  auto r = run_op("Slice", {x, i64s({-1, 3}), i64s({kI64Min, kI64Min}), i64s({1, 0}), i64s({-1, -1})},
                  {true, true, true, true, true});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({3, 4}, {11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0})));
  // int32 index inputs are allowed.
  r = eval_op("Slice", {x, make<int32_t>({1}, {1}), make<int32_t>({1}, {3}), make<int32_t>({1}, {1})});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({3, 2}, {1, 2, 5, 6, 9, 10})));
  // Unknown starts: inference keeps the rank and the dims that are not sliced.
  auto t = testing::infer_op(
      "Slice",
      {ir::ValueType{DType::kF32, ir::Shape(Dims{3, 4})}, ir::ValueType{DType::kI64, ir::Shape(Dims{1})},
       ir::ValueType{DType::kI64, ir::Shape(Dims{1})}, ir::ValueType{DType::kI64, ir::Shape(Dims{1})}},
      {Tensor(), Tensor(), Tensor(), i64s({1})});
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ((*t)[0].shape.to_string(), "[3,?]");
}

// ---------------------------------------------------------------- Tile

TEST(TransformOps, Tile) {
  struct Case {
    Dims x;
    std::vector<int64_t> reps;
  } cases[] = {{{2, 3}, {2, 2}}, {{2, 3}, {1, 3}}, {{3}, {4}}, {{2, 1, 3}, {1, 5, 2}},
               {{2, 3}, {0, 2}}, {{}, {}},         {{1}, {7}}};
  for (const auto& c : cases) {
    const Tensor x = iota<uint16_t>(c.x);
    auto r = eval_op("Tile", {x, i64s(c.reps)});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    Dims od;
    for (size_t d = 0; d < c.x.size(); ++d) od.push_back(c.x[d] * c.reps[d]);
    std::vector<uint16_t> want;
    for (int64_t o = 0; o < core::num_elements(od); ++o) {
      Dims oi = unravel(o, od);
      for (size_t d = 0; d < od.size(); ++d) oi[d] %= c.x[d];
      want.push_back(static_cast<uint16_t>(ravel(oi, c.x)));
    }
    EXPECT_TRUE(tensors_equal((*r)[0], make<uint16_t>(od, want)))
        << core::dims_to_string(c.x) << " x " << core::join(c.reps);
  }
  auto r = eval_op("Tile", {strings({2}), i64s({2})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<std::string>({4}, {"v0", "v1", "v0", "v1"})));
  EXPECT_TRUE(fails_with(eval_op("Tile", {iota<float>({2}), i64s({-1})}).status(), "negative"));
  EXPECT_TRUE(fails_with(eval_op("Tile", {iota<float>({2}), i64s({1, 1})}).status(), "entries"));
  EXPECT_TRUE(fails_with(eval_op("Tile", {iota<float>({2}), i64s({kI64Max})}).status(), "too large"));
  auto dyn = run_op("Tile", {iota<float>({2}), i64s({3})}, {true, true});
  ASSERT_TRUE(dyn.is_ok()) << dyn.status().to_string();
  EXPECT_TRUE(tensors_equal((*dyn)[0], make<float>({6}, {0, 1, 0, 1, 0, 1})));
}

// ---------------------------------------------------------------- Pad

// Source index in [0, n) of padded position j (j relative to the first element), by mode; -1 for
// the constant. Written as repeated reflection / wrapping rather than closed formulas.
int64_t naive_pad_source(int64_t j, int64_t n, const std::string& mode) {
  if (j >= 0 && j < n) return j;
  if (mode == "constant") return -1;
  if (mode == "edge") return j < 0 ? 0 : n - 1;
  if (mode == "wrap") {
    while (j < 0) j += n;
    while (j >= n) j -= n;
    return j;
  }
  if (n == 1) return 0;
  while (j < 0 || j >= n) j = j < 0 ? -j : 2 * (n - 1) - j;
  return j;
}

// Pad x (float) with full pads per dim: crop negative pads first, then pad.
Tensor naive_pad(const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode, float value) {
  const size_t r = x.dims().size();
  Dims od, crop_b, n;
  for (size_t d = 0; d < r; ++d) {
    crop_b.push_back(std::max<int64_t>(-pads[d], 0));
    n.push_back(x.dims()[d] - std::max<int64_t>(-pads[d], 0) - std::max<int64_t>(-pads[d + r], 0));
    od.push_back(x.dims()[d] + pads[d] + pads[d + r]);
  }
  Tensor y = Tensor::allocate(DType::kF32, od).value();
  for (int64_t o = 0; o < y.num_elements(); ++o) {
    Dims oi = unravel(o, od), ii(r);
    bool constant = false;
    for (size_t d = 0; d < r; ++d) {
      const int64_t s = naive_pad_source(oi[d] - std::max<int64_t>(pads[d], 0), n[d], mode);
      if (s < 0) constant = true;
      ii[d] = s + crop_b[d];
    }
    y.data<float>()[o] = constant ? value : x.data<float>()[ravel(ii, x.dims())];
  }
  return y;
}

TEST(TransformOps, PadHandChecked) {
  const Tensor x = make<float>({3}, {1, 2, 3});
  const std::pair<const char*, std::vector<float>> cases[] = {
      {"constant", {0, 0, 1, 2, 3, 0, 0}},
      {"reflect", {3, 2, 1, 2, 3, 2, 1}},
      {"edge", {1, 1, 1, 2, 3, 3, 3}},
      {"wrap", {2, 3, 1, 2, 3, 1, 2}},
  };
  for (const auto& [mode, want] : cases) {
    auto r = eval_op("Pad", {x, i64s({2, 2})}, {{"mode", std::string(mode)}});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_TRUE(tensors_equal((*r)[0], make<float>({7}, want))) << mode;
  }
  // Constant value; negative pads crop.
  auto r = eval_op("Pad", {x, i64s({1, -2}), Tensor::scalar<float>(9.f)});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({2}, {9, 1})));
  // ONNX's test_reflect_pad-like 2-D case, axes input (opset 18) with a negative axis.
  r = eval_op("Pad", {iota<float>({2, 3}), i64s({1, 1}), Tensor(), i64s({-1})}, {{"mode", std::string("reflect")}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({2, 5}, {1, 0, 1, 2, 1, 4, 3, 4, 5, 4})));
  // Strings with a constant.
  r = eval_op("Pad", {strings({2}), i64s({1, 0}), make<std::string>({}, {"pad"})});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<std::string>({3}, {"pad", "v0", "v1"})));
}

TEST(TransformOps, PadMatchesNaiveOnRandomCases) {
  std::mt19937 rng(42);
  const char* modes[] = {"constant", "reflect", "edge", "wrap"};
  for (int iter = 0; iter < 300; ++iter) {
    const size_t rank = 1 + rng() % 3;
    Dims dims;
    for (size_t d = 0; d < rank; ++d) dims.push_back(1 + rng() % 5);
    const std::string mode = modes[rng() % 4];
    std::vector<int64_t> pads(2 * rank);
    for (size_t d = 0; d < rank; ++d) {
      // Pads up to 3x the dim (repeated reflection/wrap), crops that leave at least one element.
      for (size_t side : {d, d + rank}) pads[side] = static_cast<int64_t>(rng() % 9) - 2;
      while (dims[d] - std::max<int64_t>(-pads[d], 0) - std::max<int64_t>(-pads[d + rank], 0) < 1) {
        if (pads[d] < 0)
          ++pads[d];
        else
          ++pads[d + rank];
      }
    }
    const Tensor x = iota<float>(dims);
    auto r = eval_op("Pad", {x, i64s(pads), Tensor::scalar<float>(-5.f)}, {{"mode", mode}});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_TRUE(tensors_equal((*r)[0], naive_pad(x, pads, mode, -5.f)))
        << mode << " " << core::dims_to_string(dims) << " pads " << core::join(pads);
  }
}

TEST(TransformOps, PadErrorsAndRuntimeValues) {
  const Tensor x = iota<float>({2, 3});
  EXPECT_TRUE(fails_with(eval_op("Pad", {x, i64s({1, 1})}).status(), "pads has 2 values"));
  EXPECT_TRUE(fails_with(eval_op("Pad", {x, i64s({-3, 0, 0, 0})}).status(), "crop more"));
  EXPECT_TRUE(fails_with(eval_op("Pad", {x, i64s({1, 1, 1, 1})}, {{"mode", std::string("mirror")}}).status(), "mode"));
  EXPECT_TRUE(fails_with(eval_op("Pad", {Tensor::allocate(DType::kF32, {0, 2}).value(), i64s({1, 0, 0, 0})},
                                 {{"mode", std::string("edge")}})
                             .status(),
                         "empty dim"));
  EXPECT_TRUE(fails_with(eval_op("Pad", {x, i64s({1, 1}), Tensor(), i64s({0, 1})}).status(), "pads has 2 values"));
  EXPECT_TRUE(fails_with(eval_op("Pad", {x, i64s({1, 1, 1, 1}), Tensor(), i64s({0, -2})}).status(), "more than once"));
  EXPECT_TRUE(
      fails_with(eval_op("Pad", {x, i64s({1, 1, 1, 1}), Tensor::scalar<int32_t>(1)}).status(), "constant_value"));
  EXPECT_TRUE(fails_with(eval_op("Pad", {x, i64s({kI64Max, 0, 0, 0})}).status(), "too large"));
  // Constant mode pads an empty dim fine.
  auto r = eval_op("Pad", {Tensor::allocate(DType::kF32, {0}).value(), i64s({1, 1})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({2}, {0, 0})));
  auto dyn = run_op("Pad", {x, i64s({0, 1, 0, -1}), Tensor::scalar<float>(7.f)}, {true, true, true});
  ASSERT_TRUE(dyn.is_ok()) << dyn.status().to_string();
  EXPECT_TRUE(tensors_equal((*dyn)[0], make<float>({2, 3}, {7, 0, 1, 7, 3, 4})));
}

// ---------------------------------------------------------------- DepthToSpace, SpaceToDepth

TEST(TransformOps, DepthToSpaceAndBack) {
  for (int64_t b : {1, 2, 3}) {
    const int64_t n = 2, oc = 3, h = 2, w = 5, c = oc * b * b;
    const Tensor x = iota<float>({n, c, h, w});
    for (const std::string mode : {"DCR", "CRD"}) {
      auto r = eval_op("DepthToSpace", {x}, {{"blocksize", b}, {"mode", mode}});
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      const Dims od{n, oc, h * b, w * b};
      ASSERT_EQ((*r)[0].dims(), od);
      for (int64_t o = 0; o < (*r)[0].num_elements(); ++o) {
        Dims oi = unravel(o, od);
        const int64_t i = oi[2] % b, j = oi[3] % b;
        const int64_t ch = mode == "DCR" ? (i * b + j) * oc + oi[1] : oi[1] * b * b + i * b + j;
        const Dims ii{oi[0], ch, oi[2] / b, oi[3] / b};
        EXPECT_EQ((*r)[0].data<float>()[o], static_cast<float>(ravel(ii, x.dims()))) << mode << " b=" << b;
      }
      if (mode == "DCR") {
        // SpaceToDepth inverts DCR DepthToSpace.
        auto back = eval_op("SpaceToDepth", {(*r)[0]}, {{"blocksize", b}});
        ASSERT_TRUE(back.is_ok()) << back.status().to_string();
        EXPECT_TRUE(tensors_equal((*back)[0], x));
      }
    }
  }
  // Hand-checked SpaceToDepth: [1,1,2,2] -> [1,4,1,1].
  auto r = eval_op("SpaceToDepth", {iota<int8_t>({1, 1, 2, 2})}, {{"blocksize", int64_t{2}}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<int8_t>({1, 4, 1, 1}, {0, 1, 2, 3})));
  EXPECT_TRUE(fails_with(eval_op("DepthToSpace", {iota<float>({1, 6, 2, 2})}, {{"blocksize", int64_t{2}}}).status(),
                         "multiple"));
  EXPECT_TRUE(fails_with(eval_op("SpaceToDepth", {iota<float>({1, 1, 3, 2})}, {{"blocksize", int64_t{2}}}).status(),
                         "multiple"));
  EXPECT_TRUE(fails_with(eval_op("DepthToSpace", {iota<float>({1, 4, 2, 2})}, {{"blocksize", int64_t{0}}}).status(),
                         "blocksize"));
  EXPECT_TRUE(
      fails_with(eval_op("DepthToSpace", {iota<float>({4, 2, 2})}, {{"blocksize", int64_t{2}}}).status(), "rank"));
  EXPECT_TRUE(fails_with(
      eval_op("DepthToSpace", {iota<float>({1, 4, 2, 2})}, {{"blocksize", int64_t{2}}, {"mode", std::string("XYZ")}})
          .status(),
      "mode"));
}

// ---------------------------------------------------------------- Trilu

TEST(TransformOps, Trilu) {
  const Dims dims{2, 3, 5};
  const Tensor x = iota<int32_t>(dims);
  for (int64_t upper : {0, 1}) {
    for (int64_t k :
         {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{4}, int64_t{-3}, int64_t{7}, int64_t{-7}, kI64Max, kI64Min}) {
      auto r = eval_op("Trilu", {x, i64_scalar(k)}, {{"upper", upper}});
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      std::vector<int32_t> want;
      for (int64_t o = 0; o < x.num_elements(); ++o) {
        Dims i = unravel(o, dims);
        const __int128 diff = static_cast<__int128>(i[2]) - i[1];
        const bool keep = upper ? diff >= k : diff <= k;
        want.push_back(keep ? static_cast<int32_t>(o) : 0);
      }
      EXPECT_TRUE(tensors_equal((*r)[0], make<int32_t>(dims, want))) << "upper " << upper << " k " << k;
    }
  }
  // Default: upper, k = 0.
  auto r = eval_op("Trilu", {iota<float>({2, 2})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({2, 2}, {0, 1, 0, 3})));
  r = eval_op("Trilu", {make<bool>({2, 2}, {true, true, true, true}), i64_scalar(0)}, {{"upper", int64_t{0}}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<bool>({2, 2}, {true, false, true, true})));
  EXPECT_TRUE(fails_with(eval_op("Trilu", {iota<float>({3})}).status(), "rank"));
  // k at run time.
  auto dyn = run_op("Trilu", {iota<float>({2, 3}), i64_scalar(1)}, {true, true});
  ASSERT_TRUE(dyn.is_ok()) << dyn.status().to_string();
  EXPECT_TRUE(tensors_equal((*dyn)[0], make<float>({2, 3}, {0, 1, 2, 0, 0, 5})));
}

// ---------------------------------------------------------------- Dropout

TEST(TransformOps, DropoutIsIdentityAtInference) {
  const Tensor x = iota<float>({2, 3});
  auto r = eval_op("Dropout", {x}, {}, 2);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], x));
  EXPECT_TRUE(tensors_equal((*r)[1], make<bool>({2, 3}, {true, true, true, true, true, true})));
  r = eval_op("Dropout", {x, Tensor::scalar<float>(0.3f), Tensor::scalar<bool>(false)}, {}, 1);
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], x));
  // Training mode with ratio 0 drops nothing: still the identity.
  r = eval_op("Dropout", {x, Tensor::scalar<float>(0.f), Tensor::scalar<bool>(true)}, {}, 2);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], x));
  // Real training mode is refused: at load when constant, at run time otherwise.
  auto st = eval_op("Dropout", {x, Tensor::scalar<float>(0.5f), Tensor::scalar<bool>(true)}).status();
  EXPECT_EQ(st.code(), core::StatusCode::kUnsupported) << st.to_string();
  st = eval_op("Dropout", {x, Tensor(), Tensor::scalar<bool>(true)}).status();
  EXPECT_EQ(st.code(), core::StatusCode::kUnsupported) << st.to_string();
  auto dyn = run_op("Dropout", {x, Tensor::scalar<float>(0.5f), Tensor::scalar<bool>(true)}, {true, true, true});
  EXPECT_EQ(dyn.status().code(), core::StatusCode::kUnsupported) << dyn.status().to_string();
  dyn = run_op("Dropout", {x, Tensor::scalar<float>(0.5f), Tensor::scalar<bool>(false)}, {true, true, true});
  ASSERT_TRUE(dyn.is_ok()) << dyn.status().to_string();
  EXPECT_TRUE(tensors_equal((*dyn)[0], x));
}

// Value inputs unknown at load (graph inputs): inference still gives the rank, and the dims it can.
TEST(TransformOps, InferenceWithUnknownValuesKeepsRank) {
  using ir::Dim;
  using ir::Shape;
  using ir::ValueType;
  const ValueType x{DType::kF32, Shape(std::vector<Dim>{Dim(0), Dim(4), Dim::sym("n")})};
  const ValueType len3{DType::kI64, Shape(Dims{3})}, len6{DType::kI64, Shape(Dims{6})},
      len2{DType::kI64, Shape(Dims{2})};
  auto r = testing::infer_op("Tile", {x, len3}, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].shape.to_string(), "[0,?,?]");  // 0 stays 0 whatever the repeats
  r = testing::infer_op("Pad", {x, len6}, {});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.rank(), 3);
  r = testing::infer_op("Split", {x, len2}, {}, {{"axis", int64_t{1}}}, 2);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.to_string(), "[0,?,n]");
  EXPECT_EQ((*r)[1].shape.to_string(), "[0,?,n]");
  r = testing::infer_op("Split", {x}, {}, {{"axis", int64_t{1}}, {"num_outputs", int64_t{3}}}, 3);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[2].shape.to_string(), "[0,0,n]");  // ceil(4/3) = 2, 2, then 0
  r = testing::infer_op("Concat", {x, ValueType{DType::kF32, Shape(std::vector<Dim>{Dim(0), Dim(2), Dim::sym("n")})}},
                        {}, {{"axis", int64_t{1}}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.to_string(), "[0,6,n]");
  r = testing::infer_op("Transpose", {x}, {}, {{"perm", std::vector<int64_t>{2, 0, 1}}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.to_string(), "[n,0,4]");
  r = testing::infer_op("DepthToSpace",
                        {ValueType{DType::kF32, Shape(std::vector<Dim>{Dim::sym("b"), Dim(8), Dim(3), Dim::sym("w")})}},
                        {}, {{"blocksize", int64_t{2}}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.to_string(), "[b,2,6,?]");
}

}  // namespace
}  // namespace kestrel

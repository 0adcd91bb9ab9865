// Tests of the shape ops (Reshape, Shape, Size, Squeeze, Unsqueeze, Flatten, Expand,
// ConstantOfShape, Range, EyeLike): hand-checked cases, naive re-computations, every attribute,
// symbolic inference, the run-time (dynamic) path, and bad input that must fail cleanly.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/onnx_builder.h"
#include "common/op_test_util.h"
#include "ir/onnx_types.h"

namespace kestrel {
namespace {

using core::Dims;
using core::DType;
using core::Tensor;
using ir::Attribute;
using ir::Dim;
using ir::Shape;
using ir::ValueType;
using testing::eval_op;
using testing::i64_scalar;
using testing::i64s;
using testing::infer_op;
using testing::iota;
using testing::make;
using testing::run_op;
using testing::tensors_equal;
using testing::fails_with;

// A tensor of every dtype with the same element pattern (strings "s0", "s1", ...).
std::vector<Tensor> all_dtypes(const Dims& dims) {
  std::vector<Tensor> out;
  for (int d = 1; d < core::kNumDTypes; ++d) {
    Tensor t = Tensor::allocate(static_cast<DType>(d), dims).value();
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      core::visit_dtype(t.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* p = static_cast<T*>(t.raw_data());
        if constexpr (std::is_same_v<T, std::string>)
          p[i] = "s" + std::to_string(i);
        else if constexpr (std::is_same_v<T, bool>)
          p[i] = (i % 3) == 1;
        else if constexpr (std::is_same_v<T, core::Float16> || std::is_same_v<T, core::BFloat16>)
          p[i] = T(static_cast<float>(i) + 0.5f);
        else
          p[i] = static_cast<T>(i + 1);
      });
    }
    out.push_back(t);
  }
  return out;
}

// One Slice axis (ONNX Slice): negative indices, clamping, negative steps, empty ranges, INT64 extremes.
TEST(CoreShape, SliceRange) {
  using core::slice_range;
  auto is = [](core::SliceRange r, int64_t start, int64_t count) { return r.start == start && r.count == count; };
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  EXPECT_TRUE(is(slice_range(1, 4, 1, 10), 1, 3));
  EXPECT_TRUE(is(slice_range(0, 10, 3, 10), 0, 4));       // 0 3 6 9
  EXPECT_TRUE(is(slice_range(-3, kMax, 1, 10), 7, 3));    // from the end, end clamped
  EXPECT_TRUE(is(slice_range(-100, 2, 1, 10), 0, 2));     // start clamped to 0
  EXPECT_TRUE(is(slice_range(5, 5, 1, 10), 0, 0));        // empty
  EXPECT_TRUE(is(slice_range(8, 2, 1, 10), 0, 0));        // backwards with a positive step
  EXPECT_TRUE(is(slice_range(-1, kMin, -1, 10), 9, 10));  // reversed, whole axis
  EXPECT_TRUE(is(slice_range(kMax, -12, -2, 10), 9, 5));  // start clamped to 9: 9 7 5 3 1
  EXPECT_TRUE(is(slice_range(7, 2, kMin, 10), 7, 1));     // a step of INT64_MIN takes one element
  EXPECT_TRUE(is(slice_range(0, 5, 1, 0), 0, 0));         // empty axis
}

// ---------------------------------------------------------------- Reshape

// ir::Shape::known_plane: (H, W) of a rank-4 shape only when both are known.
TEST(IrShape, KnownPlane) {
  EXPECT_EQ(ir::Shape(Dims{1, 3, 7, 9}).known_plane(), std::make_pair(int64_t{7}, int64_t{9}));
  EXPECT_EQ(ir::Shape({Dim::unknown(), Dim::unknown(), Dim(5), Dim(6)}).known_plane(),
            std::make_pair(int64_t{5}, int64_t{6}));
  EXPECT_FALSE(ir::Shape({Dim(1), Dim(3), Dim::unknown(), Dim(6)}).known_plane());
  EXPECT_FALSE(ir::Shape({Dim(1), Dim(3), Dim(5), Dim::unknown()}).known_plane());
  EXPECT_FALSE(ir::Shape(Dims{3, 7, 9}).known_plane());
  EXPECT_FALSE(ir::Shape::unknown_rank().known_plane());
}

TEST(ShapeOps, ReshapeResolvesZeroAndMinusOne) {
  const Tensor x = iota<float>({2, 3, 4});
  struct Case {
    std::vector<int64_t> shape;
    Dims want;
  } cases[] = {
      {{4, -1}, {4, 6}},  {{0, -1}, {2, 12}},           {{0, 0, -1}, {2, 3, 4}},
      {{-1}, {24}},       {{2, 0, 2, 2}, {2, 3, 2, 2}}, {{1, -1, 1, 4}, {1, 6, 1, 4}},
      {{24, 1}, {24, 1}},
  };
  for (const auto& c : cases) {
    auto r = eval_op("Reshape", {x, i64s(c.shape)});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ((*r)[0].dims(), c.want) << core::dims_to_string(c.shape);
    // Same elements in the same order.
    EXPECT_TRUE(tensors_equal(*(*r)[0].reshaped({24}), *x.reshaped({24})));
  }
}

TEST(ShapeOps, ReshapeAllowZero) {
  // allowzero=1: 0 is a real zero-size dim.
  auto r = eval_op("Reshape", {Tensor::allocate(DType::kF32, {0, 3}).value(), i64s({3, 0})}, {{"allowzero", 1}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims(), (Dims{3, 0}));
  // allowzero=0: the same 0 copies input dim 1 (3), so [3, 3] has the wrong element count.
  EXPECT_TRUE(fails_with(eval_op("Reshape", {Tensor::allocate(DType::kF32, {0, 3}).value(), i64s({3, 0})}).status(),
                         "cannot reshape"));
  // allowzero=1 with both 0 and -1 is invalid.
  EXPECT_TRUE(fails_with(eval_op("Reshape", {iota<float>({2, 3}), i64s({0, -1})}, {{"allowzero", 1}}).status(),
                         "both 0 and -1"));
}

TEST(ShapeOps, ReshapeErrorsNameTheNode) {
  const Tensor x = iota<float>({2, 3, 4});
  auto st = eval_op("Reshape", {x, i64s({5, 5})}).status();
  EXPECT_TRUE(fails_with(st, "cannot reshape"));
  EXPECT_TRUE(fails_with(st, "node_under_test"));
  EXPECT_TRUE(fails_with(eval_op("Reshape", {x, i64s({-1, -1})}).status(), "more than one -1"));
  EXPECT_TRUE(fails_with(eval_op("Reshape", {x, i64s({-2, 12})}).status(), "invalid dim -2"));
  EXPECT_TRUE(fails_with(eval_op("Reshape", {x, i64s({5, -1})}).status(), "cannot reshape"));
  EXPECT_TRUE(fails_with(eval_op("Reshape", {x, i64s({0, 0, 0, 0})}).status(), "copies dim 3"));
  EXPECT_TRUE(fails_with(eval_op("Reshape", {Tensor::allocate(DType::kF32, {0, 4}).value(), i64s({0, -1})}).status(),
                         "multiply to 0"));
  EXPECT_TRUE(
      fails_with(eval_op("Reshape", {x, i64s({int64_t{1} << 40, int64_t{1} << 40})}).status(), "too many elements"));
}

TEST(ShapeOps, ReshapeEveryDtype) {
  for (const Tensor& x : all_dtypes({2, 3})) {
    auto r = eval_op("Reshape", {x, i64s({3, 1, 2})});
    ASSERT_TRUE(r.is_ok()) << core::dtype_name(x.dtype()) << ": " << r.status().to_string();
    EXPECT_TRUE(tensors_equal((*r)[0], *x.reshaped({3, 1, 2}))) << core::dtype_name(x.dtype());
  }
}

TEST(ShapeOps, ReshapeSymbolicInference) {
  ValueType x{DType::kF32, Shape(std::vector<Dim>{Dim::sym("batch"), Dim(3), Dim(4)})};
  ValueType s{DType::kI64, Shape(Dims{2})};
  auto r = infer_op("Reshape", {x, s}, {Tensor(), i64s({0, -1})});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].shape.to_string(), "[batch,12]");
  // Shape value unknown: rank from the shape input's length.
  r = infer_op("Reshape", {x, ValueType{DType::kI64, Shape(Dims{3})}}, {});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.rank(), 3);
  EXPECT_FALSE((*r)[0].shape[0].known());
  // A -1 against an unknown dim stays unknown.
  r = infer_op("Reshape", {x, s}, {Tensor(), i64s({-1, 6})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_FALSE((*r)[0].shape[0].known());
  EXPECT_EQ((*r)[0].shape[1].value, 6);
}

TEST(ShapeOps, ReshapeWithRuntimeShapeValue) {
  // The shape is a graph input: inference cannot know it at load, so the step is dynamic and
  // each run sees the new value.
  const Tensor x = iota<float>({4, 6});
  for (const auto& shape : std::vector<std::vector<int64_t>>{{6, 4}, {3, -1}, {2, 0, 2}}) {
    auto r = run_op("Reshape", {x, i64s(shape)}, {true, true});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    auto want = eval_op("Reshape", {x, i64s(shape)});
    ASSERT_TRUE(want.is_ok());
    EXPECT_TRUE(tensors_equal((*r)[0], (*want)[0]));
  }
  auto bad = run_op("Reshape", {x, i64s({5, -1})}, {true, true});
  EXPECT_TRUE(fails_with(bad.status(), "cannot reshape"));

  // One session, new shape values on every run (same input dims, so no re-plan).
  testing::OneNode g = testing::one_node("Reshape", {x, i64s({1, 1})}, {}, 1, {true, true}, /*unknown_dims=*/true);
  runtime::LoadedModel m;
  m.graph = std::move(g.graph);
  auto s = runtime::Session::from_model(std::move(m));
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  for (const auto& shape : std::vector<std::vector<int64_t>>{{2, 12}, {12, 2}, {-1, 8}}) {
    const Tensor sv = i64s(shape);
    const Tensor* feed[] = {&x, &sv};
    std::vector<Tensor> out;
    auto st = (*s)->run(feed, out);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(out[0].dims(), (Dims{shape[0] < 0 ? 3 : shape[0], shape[1]}));
    EXPECT_TRUE(tensors_equal(*out[0].reshaped({24}), *x.reshaped({24})));
  }
}

// ---------------------------------------------------------------- Shape, Size

TEST(ShapeOps, ShapeStartEnd) {
  const Tensor x = Tensor::allocate(DType::kF32, {2, 3, 4, 5}).value();
  struct Case {
    std::optional<int64_t> start, end;
    std::vector<int64_t> want;
  } cases[] = {
      {{}, {}, {2, 3, 4, 5}},  {1, {}, {3, 4, 5}},     {{}, -1, {2, 3, 4}}, {1, 2, {3}},     {-1, {}, {5}},
      {-10, {}, {2, 3, 4, 5}}, {{}, 10, {2, 3, 4, 5}}, {3, 1, {}},          {1, -1, {3, 4}}, {4, {}, {}},
  };
  for (const auto& c : cases) {
    testing::Attrs a;
    if (c.start) a["start"] = *c.start;
    if (c.end) a["end"] = *c.end;
    auto r = eval_op("Shape", {x}, a);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_TRUE(tensors_equal((*r)[0], i64s(c.want))) << (c.start ? *c.start : 0) << ":" << (c.end ? *c.end : 99);
  }
  // Scalars have an empty shape.
  auto r = eval_op("Shape", {Tensor::scalar<float>(1.f)});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].dims(), (Dims{0}));
}

TEST(ShapeOps, SizeCountsElements) {
  for (const Dims& d : std::vector<Dims>{{2, 3, 4}, {}, {0, 5}, {7}}) {
    auto r = eval_op("Size", {Tensor::allocate(DType::kI8, d).value()});
    ASSERT_TRUE(r.is_ok());
    EXPECT_TRUE(tensors_equal((*r)[0], i64_scalar(core::num_elements(d))));
  }
  auto r = eval_op("Size", {testing::make<std::string>({2, 2}, {"a", "b", "c", "d"})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].data<int64_t>()[0], 4);
}

TEST(ShapeOps, ShapeChainIsComputedAtPlanTime) {
  // y = Reshape(x2, Shape(x)): Shape reads only x's dims, so the planner folds it and the
  // Reshape has a static shape (no dynamic step).
  ir::Graph* raw = new ir::Graph("g");
  std::unique_ptr<ir::Graph> g(raw);
  ir::Value* x = g->add_input("x", ValueType{DType::kF32, Shape(Dims{2, 3})});
  ir::Value* x2 = g->add_input("x2", ValueType{DType::kF32, Shape(Dims{6})});
  ir::Node* shape = g->add_node("Shape", {x}, {"s"});
  ir::Node* reshape = g->add_node("Reshape", {x2, shape->output(0)}, {"y"});
  g->add_output(reshape->output(0));
  runtime::LoadedModel m;
  m.graph = std::move(g);
  auto s = runtime::Session::from_model(std::move(m));
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ((*s)->outputs()[0].type.shape.to_string(), "[2,3]");
  Tensor xv = Tensor::allocate(DType::kF32, {2, 3}).value();
  Tensor x2v = iota<float>({6});
  std::vector<Tensor> out;
  ASSERT_TRUE((*s)->run({{"x", xv}, {"x2", x2v}}, out).is_ok());
  EXPECT_TRUE(tensors_equal(out[0], iota<float>({2, 3})));
  EXPECT_EQ((*s)->plan_stats().folded_steps, 1);
  EXPECT_EQ((*s)->plan_stats().dynamic_steps, 0);
}

// ---------------------------------------------------------------- Squeeze, Unsqueeze, Flatten

TEST(ShapeOps, Squeeze) {
  const Tensor x = iota<int32_t>({1, 3, 1, 2});
  struct Case {
    std::optional<std::vector<int64_t>> axes;
    Dims want;
  } cases[] = {
      {{}, {3, 2}},
      {std::vector<int64_t>{0}, {3, 1, 2}},
      {std::vector<int64_t>{-2, 0}, {3, 2}},
      {std::vector<int64_t>{2}, {1, 3, 2}},
      {std::vector<int64_t>{}, {3, 2}},
  };
  for (const auto& c : cases) {
    std::vector<Tensor> ins{x};
    if (c.axes) ins.push_back(i64s(*c.axes));
    auto r = eval_op("Squeeze", ins);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_TRUE(tensors_equal((*r)[0], *x.reshaped(c.want)));
  }
  // [1] -> scalar.
  auto r = eval_op("Squeeze", {iota<float>({1})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].dims(), Dims{});
  EXPECT_TRUE(fails_with(eval_op("Squeeze", {x, i64s({1})}).status(), "size is not 1"));
  EXPECT_TRUE(fails_with(eval_op("Squeeze", {x, i64s({4})}).status(), "out of range"));
  EXPECT_TRUE(fails_with(eval_op("Squeeze", {x, i64s({0, -4})}).status(), "more than once"));
}

TEST(ShapeOps, SqueezeInference) {
  ValueType x{DType::kF32, Shape(std::vector<Dim>{Dim(1), Dim::sym("n"), Dim(1)})};
  // Without axes, an unknown dim might be 1: the rank is unknown.
  auto r = infer_op("Squeeze", {x}, {});
  ASSERT_TRUE(r.is_ok());
  EXPECT_FALSE((*r)[0].shape.rank_known());
  // Axes known: exact.
  r = infer_op("Squeeze", {x, ValueType{DType::kI64, Shape(Dims{2})}}, {Tensor(), i64s({0, 2})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.to_string(), "[n]");
  // Axes value unknown, length known: the rank.
  r = infer_op("Squeeze", {x, ValueType{DType::kI64, Shape(Dims{2})}}, {});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.rank(), 1);
}

TEST(ShapeOps, Unsqueeze) {
  const Tensor x = iota<float>({3, 4});
  struct Case {
    std::vector<int64_t> axes;
    Dims want;
  } cases[] = {
      {{0}, {1, 3, 4}},
      {{-1}, {3, 4, 1}},
      {{3, 0}, {1, 3, 4, 1}},
      {{1, -1}, {3, 1, 4, 1}},
      {{2, 0, 1}, {1, 1, 1, 3, 4}},
      {{}, {3, 4}},
  };
  for (const auto& c : cases) {
    auto r = eval_op("Unsqueeze", {x, i64s(c.axes)});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_TRUE(tensors_equal((*r)[0], *x.reshaped(c.want))) << core::dims_to_string(c.axes);
  }
  auto r = eval_op("Unsqueeze", {Tensor::scalar<float>(2.f), i64s({0})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].dims(), Dims{1});
  EXPECT_TRUE(fails_with(eval_op("Unsqueeze", {x, i64s({3})}).status(), "out of range"));
  EXPECT_TRUE(fails_with(eval_op("Unsqueeze", {x, i64s({0, -4})}).status(), "more than once"));
}

TEST(ShapeOps, SqueezeUnsqueezeFromOldOpsetAttributes) {
  // Opset 11: axes are attributes; the importer moves them to inputs.
  testing::OnnxBuilder b(11);
  b.input("x", 1, {1, 3, 1});
  auto& sq = b.node("Squeeze", {"x"}, {"s"});
  testing::OnnxBuilder::attr(sq, "axes", std::vector<int64_t>{-1});
  auto& un = b.node("Unsqueeze", {"s"}, {"y"});
  testing::OnnxBuilder::attr(un, "axes", std::vector<int64_t>{3, 1});
  b.output("y");
  std::string bytes = b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ((*s)->outputs()[0].type.shape.to_string(), "[1,1,3,1]");
}

TEST(ShapeOps, Flatten) {
  const Tensor x = iota<uint8_t>({2, 3, 4, 5});
  struct Case {
    int64_t axis;
    Dims want;
  } cases[] = {{0, {1, 120}}, {1, {2, 60}}, {2, {6, 20}}, {4, {120, 1}}, {-1, {24, 5}}, {-4, {1, 120}}, {-3, {2, 60}}};
  for (const auto& c : cases) {
    auto r = eval_op("Flatten", {x}, {{"axis", c.axis}});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_TRUE(tensors_equal((*r)[0], *x.reshaped(c.want))) << c.axis;
  }
  auto r = eval_op("Flatten", {x});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].dims(), (Dims{2, 60}));
  r = eval_op("Flatten", {Tensor::scalar<float>(1.f)}, {{"axis", 0}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].dims(), (Dims{1, 1}));
  EXPECT_TRUE(fails_with(eval_op("Flatten", {x}, {{"axis", 5}}).status(), "out of range"));
  EXPECT_TRUE(fails_with(eval_op("Flatten", {x}, {{"axis", -5}}).status(), "out of range"));
  auto sym = infer_op("Flatten", {ValueType{DType::kF32, Shape(std::vector<Dim>{Dim::sym("b"), Dim(3), Dim(4)})}}, {});
  ASSERT_TRUE(sym.is_ok());
  EXPECT_EQ((*sym)[0].shape.to_string(), "[b,12]");
}

// ---------------------------------------------------------------- Expand

// Naive numpy broadcast of x to `to` (both right-aligned).
template <class T>
Tensor naive_expand(const Tensor& x, const Dims& to) {
  Tensor y = Tensor::allocate(x.dtype(), to).value();
  const Dims ys = core::row_major_strides(to), xs = core::row_major_strides(x.dims());
  const int64_t lead = static_cast<int64_t>(to.size()) - x.rank();
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    int64_t src = 0;
    for (int64_t d = lead; d < static_cast<int64_t>(to.size()); ++d) {
      const int64_t idx = (i / ys[static_cast<size_t>(d)]) % to[static_cast<size_t>(d)];
      if (x.dims()[static_cast<size_t>(d - lead)] != 1) src += idx * xs[static_cast<size_t>(d - lead)];
    }
    y.data<T>()[i] = x.data<T>()[src];
  }
  return y;
}

TEST(ShapeOps, ExpandBidirectional) {
  struct Case {
    Dims x;
    std::vector<int64_t> shape;
    Dims want;
  } cases[] = {
      {{3, 1}, {2, 1, 6}, {2, 3, 6}}, {{3}, {1}, {3}}, {{1}, {5}, {5}},          {{2, 1, 3}, {2, 4, 1}, {2, 4, 3}},
      {{}, {2, 2}, {2, 2}},           {{4}, {}, {4}},  {{1, 7}, {3, 1}, {3, 7}}, {{0, 1}, {0, 3}, {0, 3}},
  };
  for (const auto& c : cases) {
    const Tensor x = iota<int16_t>(c.x);
    auto r = eval_op("Expand", {x, i64s(c.shape)});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ((*r)[0].dims(), c.want);
    EXPECT_TRUE(tensors_equal((*r)[0], naive_expand<int16_t>(x, c.want)));
  }
  const Tensor s = testing::make<std::string>({2, 1}, {"a", "b"});
  auto r = eval_op("Expand", {s, i64s({2, 3})});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], testing::make<std::string>({2, 3}, {"a", "a", "a", "b", "b", "b"})));
  EXPECT_TRUE(fails_with(eval_op("Expand", {iota<float>({3}), i64s({4})}).status(), "cannot expand"));
  EXPECT_TRUE(fails_with(eval_op("Expand", {iota<float>({3}), i64s({-1})}).status(), "negative"));
  // Runtime shape value.
  auto dyn = run_op("Expand", {iota<float>({3, 1}), i64s({2, 3, 4})}, {true, true});
  ASSERT_TRUE(dyn.is_ok()) << dyn.status().to_string();
  EXPECT_TRUE(tensors_equal((*dyn)[0], naive_expand<float>(iota<float>({3, 1}), {2, 3, 4})));
}

// ---------------------------------------------------------------- ConstantOfShape

TEST(ShapeOps, ConstantOfShape) {
  auto r = eval_op("ConstantOfShape", {i64s({2, 3})});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<float>({2, 3}, {0, 0, 0, 0, 0, 0})));
  r = eval_op("ConstantOfShape", {i64s({3})}, {{"value", Attribute(make<int64_t>({1}, {7}))}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], i64s({7, 7, 7})));
  r = eval_op("ConstantOfShape", {i64s({2})}, {{"value", Attribute(make<bool>({1}, {true}))}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<bool>({2}, {true, true})));
  r = eval_op("ConstantOfShape", {i64s({2})}, {{"value", Attribute(make<core::Float16>({1}, {core::Float16(1.5f)}))}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].dtype(), DType::kF16);
  EXPECT_EQ((*r)[0].element_as_double(1), 1.5);
  // Empty shape: a scalar; a zero dim: no elements.
  r = eval_op("ConstantOfShape", {make<int64_t>({0}, {})}, {{"value", Attribute(make<float>({1}, {4.f}))}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], Tensor::scalar<float>(4.f)));
  r = eval_op("ConstantOfShape", {i64s({3, 0})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].dims(), (Dims{3, 0}));
  EXPECT_TRUE(fails_with(eval_op("ConstantOfShape", {i64s({2, -1})}).status(), "negative"));
  EXPECT_TRUE(
      fails_with(eval_op("ConstantOfShape", {i64s({2})}, {{"value", Attribute(make<float>({2}, {1.f, 2.f}))}}).status(),
                 "exactly one element"));
  // Shape known only at run time.
  auto dyn = run_op("ConstantOfShape", {i64s({2, 2})}, {true}, {{"value", Attribute(make<int32_t>({1}, {-3}))}});
  ASSERT_TRUE(dyn.is_ok()) << dyn.status().to_string();
  EXPECT_TRUE(tensors_equal((*dyn)[0], make<int32_t>({2, 2}, {-3, -3, -3, -3})));
}

// ---------------------------------------------------------------- Range

template <class T>
std::vector<T> naive_range(T start, T limit, T delta) {
  std::vector<T> v;
  // Same definition as the spec: n = max(ceil((limit - start) / delta), 0), v[i] = start + i * delta.
  const double n =
      std::max(std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta)), 0.0);
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) v.push_back(static_cast<T>(start + static_cast<T>(i) * delta));
  return v;
}

TEST(ShapeOps, RangeIntAndFloat) {
  auto check = [](auto start, auto limit, auto delta) {
    using T = decltype(start);
    auto r = eval_op("Range", {Tensor::scalar<T>(start), Tensor::scalar<T>(limit), Tensor::scalar<T>(delta)});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    auto want = naive_range<T>(start, limit, delta);
    EXPECT_TRUE(tensors_equal((*r)[0], make<T>({static_cast<int64_t>(want.size())}, want)))
        << start << " " << limit << " " << delta;
  };
  check(int64_t{0}, int64_t{10}, int64_t{3});
  check(int64_t{10}, int64_t{0}, int64_t{-3});
  check(int64_t{5}, int64_t{1}, int64_t{1});  // empty
  check(int32_t{-7}, int32_t{7}, int32_t{7});
  check(int16_t{3}, int16_t{-4}, int16_t{-2});
  check(1.0f, 2.0f, 0.3f);
  check(10.0, 3.0, -2.5);
  check(0.f, 0.f, 1.f);  // empty
  // Hand-checked.
  auto r = eval_op("Range", {Tensor::scalar<int64_t>(10), Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(-3)});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], i64s({10, 7, 4, 1})));
  // Extreme int64 bounds do not overflow.
  r = eval_op("Range", {Tensor::scalar<int64_t>(std::numeric_limits<int64_t>::max() - 2),
                        Tensor::scalar<int64_t>(std::numeric_limits<int64_t>::max()), Tensor::scalar<int64_t>(1)});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].num_elements(), 2);
}

TEST(ShapeOps, RangeErrors) {
  auto r3 = [](Tensor a, Tensor b, Tensor c) { return eval_op("Range", {a, b, c}).status(); };
  using I = int64_t;
  EXPECT_TRUE(fails_with(r3(Tensor::scalar<I>(0), Tensor::scalar<I>(5), Tensor::scalar<I>(0)), "delta"));
  EXPECT_TRUE(fails_with(r3(Tensor::scalar<float>(0), Tensor::scalar<float>(5), Tensor::scalar<float>(0)), "delta"));
  EXPECT_TRUE(fails_with(r3(Tensor::scalar<I>(0), Tensor::scalar<float>(5), Tensor::scalar<I>(1)), "same dtype"));
  EXPECT_TRUE(fails_with(r3(Tensor::scalar<I>(std::numeric_limits<I>::min()),
                            Tensor::scalar<I>(std::numeric_limits<I>::max()), Tensor::scalar<I>(1)),
                         "too many"));
  EXPECT_TRUE(
      fails_with(r3(Tensor::scalar<float>(0), Tensor::scalar<float>(INFINITY), Tensor::scalar<float>(1)), "finite"));
  EXPECT_TRUE(fails_with(r3(i64s({0, 1}), Tensor::scalar<I>(5), Tensor::scalar<I>(1)), "scalar"));
}

TEST(ShapeOps, RangeAtRunTime) {
  auto r = run_op("Range", {Tensor::scalar<int32_t>(2), Tensor::scalar<int32_t>(9), Tensor::scalar<int32_t>(2)},
                  {true, true, true});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(tensors_equal((*r)[0], make<int32_t>({4}, {2, 4, 6, 8})));
  auto t = infer_op("Range",
                    {ValueType{DType::kF32, Shape(Dims{})}, ValueType{DType::kF32, Shape(Dims{})},
                     ValueType{DType::kF32, Shape(Dims{})}},
                    {});
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ((*t)[0].shape.rank(), 1);
  EXPECT_FALSE((*t)[0].shape[0].known());
}

// ---------------------------------------------------------------- EyeLike

TEST(ShapeOps, EyeLike) {
  const Tensor x = Tensor::allocate(DType::kF32, {3, 4}).value();
  for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{3}, int64_t{-2}, int64_t{10}, int64_t{-10},
                    std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}) {
    auto r = eval_op("EyeLike", {x}, {{"k", k}});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    std::vector<float> want(12, 0.f);
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j)
        if (static_cast<__int128>(j) - i == k) want[static_cast<size_t>(i * 4 + j)] = 1.f;
    EXPECT_TRUE(tensors_equal((*r)[0], make<float>({3, 4}, want))) << "k=" << k;
  }
  // dtype attribute overrides the input's.
  auto r = eval_op("EyeLike", {x}, {{"dtype", int64_t{7}}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<int64_t>({3, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0})));
  r = eval_op("EyeLike", {iota<int32_t>({2, 2})}, {{"dtype", int64_t{9}}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(tensors_equal((*r)[0], make<bool>({2, 2}, {true, false, false, true})));
  r = eval_op("EyeLike", {iota<int32_t>({2, 2})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].dtype(), DType::kI32);
  EXPECT_TRUE(fails_with(eval_op("EyeLike", {iota<float>({2, 2, 2})}).status(), "rank 2"));
  EXPECT_FALSE(eval_op("EyeLike", {x}, {{"dtype", int64_t{8}}}).is_ok());  // strings have no 1
}

// Value inputs unknown at load (graph inputs): inference still gives the rank, and the dims it can.
TEST(ShapeOps, InferenceWithUnknownValuesKeepsRank) {
  const ValueType x{DType::kF32, Shape(std::vector<Dim>{Dim(3), Dim(1), Dim::sym("n")})};
  const ValueType len2{DType::kI64, Shape(Dims{2})}, len4{DType::kI64, Shape(Dims{4})};
  auto r = infer_op("Expand", {x, len4}, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].shape.rank(), 4);
  EXPECT_EQ((*r)[0].shape[1].value, 3);  // a non-1 input dim survives broadcasting
  r = infer_op("Unsqueeze", {x, len2}, {});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.rank(), 5);
  r = infer_op("ConstantOfShape", {len4}, {});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.rank(), 4);
  EXPECT_EQ((*r)[0].dtype, DType::kF32);
  r = infer_op("Shape", {x}, {}, {{"start", int64_t{1}}});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.to_string(), "[2]");
  EXPECT_EQ((*r)[0].dtype, DType::kI64);
  r = infer_op("Size", {x}, {});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape.to_string(), "[]");
  // Unknown rank in, unknown rank out (not an error).
  r = infer_op("Reshape",
               {ValueType{DType::kF32, Shape::unknown_rank()}, ValueType{DType::kI64, Shape::unknown_rank()}}, {});
  ASSERT_TRUE(r.is_ok());
  EXPECT_FALSE((*r)[0].shape.rank_known());
  // A shape input that is not 1-D is an error even when its value is unknown.
  EXPECT_FALSE(infer_op("Reshape", {x, ValueType{DType::kI64, Shape(Dims{2, 2})}}, {}).is_ok());
}

}  // namespace
}  // namespace kestrel

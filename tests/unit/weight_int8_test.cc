// Weight-only int8 MatMul / Gemm: DequantizeLinear(int8 W, scale) feeding MatMul, Gemm, FusedMatMul
// and FusedGemm is lowered at load to kestrel.MatMulWeightInt8; the fast kernel (every ISA) and the
// reference kernel are checked against a naive double computation in this file; patterns that must
// not be lowered still give the right answer; quantize_weights_int8 (kestrel convert --int8-weights)
// produces that form with the documented scales.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/cpu_features.h"
#include "ir/graph.h"
#include "ir/op_schema.h"
#include "passes/weight_only_int8.h"
#include "runtime/lower_weight_int8.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::DType;
using core::Isa;
using core::Tensor;

Tensor f32(std::vector<int64_t> dims, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  Tensor t = Tensor::allocate(DType::kF32, std::move(dims)).value();
  std::uniform_real_distribution<float> d(lo, hi);
  for (float& x : t.span<float>()) x = d(rng);
  return t;
}

Tensor i8(std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor t = Tensor::allocate(DType::kI8, std::move(dims)).value();
  std::uniform_int_distribution<int> d(-127, 127);
  for (int8_t& x : t.span<int8_t>()) x = static_cast<int8_t>(d(rng));
  return t;
}

// One test graph: Y = op(A, DequantizeLinear(W, scale[, zp])[, C / bias][, Z]).
struct Case {
  std::string op = "MatMul";  // MatMul, Gemm, FusedMatMul, FusedGemm
  std::vector<int64_t> a_dims{2, 3, 16};
  int64_t n = 8;
  bool trans_b = false;
  float alpha = 1.f, beta = 1.f;
  bool c = false;         // Gemm C [N] (or bias of FusedMatMul)
  bool residual = false;  // FusedMatMul Z
  std::string activation = "";
  std::vector<float> activation_params = {};
  bool per_tensor = false;
  int zero_point = -1;  // >= 0: a zero point input with this value
  bool a_from_dq = false;
};

struct Built {
  std::unique_ptr<ir::Graph> g;
  Tensor a, aq, z;  // aq defined: the graph input instead of a; z defined: a second graph input
  std::vector<double> want;
};

double act_ref(const std::string& act, const std::vector<float>& p, double x) {
  if (act == "Relu") return x > 0 ? x : 0;
  if (act == "Clip") return std::min<double>(std::max<double>(x, p[0]), p[1]);
  if (act == "GeluTanh") return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  if (act == "Sigmoid") return 1 / (1 + std::exp(-x));
  return x;
}

Built build(const Case& cs, uint32_t seed) {
  std::mt19937 rng(seed);
  Built b;
  b.g = std::make_unique<ir::Graph>("test");
  ir::Graph& g = *b.g;
  const int64_t k = cs.a_dims.back(), n = cs.n;
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < cs.a_dims.size(); ++i) rows *= cs.a_dims[i];
  std::vector<int64_t> y_dims = cs.a_dims;
  y_dims.back() = n;
  b.a = f32(cs.a_dims, rng);
  Tensor w = cs.trans_b ? i8({n, k}, rng) : i8({k, n}, rng);
  Tensor s = cs.per_tensor ? f32({1}, rng, 0.001f, 0.02f) : f32({n}, rng, 0.001f, 0.02f);
  Tensor c = f32({n}, rng);
  ir::Value* av = nullptr;
  if (!cs.a_from_dq) {
    av = g.add_input("a", {DType::kF32, ir::Shape(b.a.dims())});
  } else {
    // A = DequantizeLinear(int8 input) (a QDQ activation): left to the full int8 lowering.
    Tensor aq = i8(b.a.dims(), rng);
    av = g.add_input("aq", {DType::kI8, ir::Shape(aq.dims())});
    for (int64_t i = 0; i < aq.num_elements(); ++i) b.a.data<float>()[i] = 0.01f * aq.data<int8_t>()[i];
    Tensor as = Tensor::allocate(DType::kF32, {}).value();
    as.data<float>()[0] = 0.01f;
    ir::Node* adq = g.add_node("DequantizeLinear", {av, g.add_constant("as", as)}, {"a_dq"}, "a_dq");
    av = adq->output(0);
    b.aq = aq;
  }
  std::vector<ir::Value*> dq_in = {g.add_constant("w", w), g.add_constant("s", s)};
  if (cs.zero_point >= 0) {
    Tensor zp = Tensor::allocate(DType::kI8, cs.per_tensor ? std::vector<int64_t>{1} : std::vector<int64_t>{n}).value();
    for (int8_t& x : zp.span<int8_t>()) x = static_cast<int8_t>(cs.zero_point);
    dq_in.push_back(g.add_constant("zp", zp));
  }
  ir::Node* dq = g.add_node("DequantizeLinear", dq_in, {"w_dq"}, "dq");
  if (!cs.per_tensor) dq->set_attr("axis", ir::Attribute(int64_t{cs.trans_b ? 0 : 1}));
  std::vector<ir::Value*> ins = {av, dq->output(0)};
  const bool fused = cs.op == "FusedMatMul" || cs.op == "FusedGemm";
  const bool gemm = cs.op == "Gemm" || cs.op == "FusedGemm";
  if (cs.c) ins.push_back(g.add_constant("c", c));
  Tensor z;
  if (cs.residual) {
    z = f32(y_dims, rng);
    if (!cs.c) ins.push_back(nullptr);
    ins.push_back(g.add_input("z", {DType::kF32, ir::Shape(z.dims())}));
    b.z = z;
  }
  ir::Node* node = g.add_node(cs.op, ins, {"y"}, "op", fused ? ir::kKestrelDomain : "");
  if (gemm) {
    node->set_attr("transB", ir::Attribute(int64_t{cs.trans_b}));
    node->set_attr("alpha", ir::Attribute(cs.alpha));
    node->set_attr("beta", ir::Attribute(cs.beta));
  }
  if (!cs.activation.empty()) {
    node->set_attr("activation", ir::Attribute(cs.activation));
    if (!cs.activation_params.empty()) node->set_attr("activation_params", ir::Attribute(cs.activation_params));
  }
  g.add_output(node->output(0));

  b.want.resize(static_cast<size_t>(rows * n));
  const float* ad = b.a.data<float>();
  const int zp = cs.zero_point >= 0 ? cs.zero_point : 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      const double sc = s.data<float>()[cs.per_tensor ? 0 : j];
      for (int64_t p = 0; p < k; ++p) {
        const int q = cs.trans_b ? w.data<int8_t>()[j * k + p] : w.data<int8_t>()[p * n + j];
        acc += static_cast<double>(ad[r * k + p]) * (q - zp) * sc;
      }
      double y = gemm ? cs.alpha * acc : acc;
      if (cs.c) y += (gemm ? cs.beta : 1.0) * c.data<float>()[j];
      if (cs.residual) y += z.data<float>()[r * n + j];
      b.want[static_cast<size_t>(r * n + j)] = act_ref(cs.activation, cs.activation_params, y);
    }
  return b;
}

struct Result {
  Tensor y;
  std::string impl;  // impl of the node computing y
  std::string op;    // its op type
};

Result run(Built b, const runtime::SessionOptions& opts) {
  Result r;
  runtime::LoadedModel m;
  m.graph = std::move(b.g);
  auto s = runtime::Session::from_model(std::move(m), opts);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  if (!s.is_ok()) return r;
  (*s)->executor().set_profiler([&](const runtime::Executor::ProfileEvent& e) {
    if (e.node.output(0)->name() == "y") {
      r.impl = e.impl;
      r.op = e.node.op_type();
    }
  });
  std::vector<const Tensor*> feed = {b.aq.defined() ? &b.aq : &b.a};
  if (b.z.defined()) feed.push_back(&b.z);
  std::vector<Tensor> outs;
  auto st = (*s)->run(feed, outs);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  if (st.is_ok()) r.y = std::move(outs[0]);
  return r;
}

void expect_close(const Tensor& y, const std::vector<double>& want, double tol) {
  ASSERT_TRUE(y.defined());
  ASSERT_EQ(y.num_elements(), static_cast<int64_t>(want.size()));
  double scale = 1e-30;
  for (double x : want) scale = std::max(scale, std::fabs(x));
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(y.data<float>()[i], want[i], tol * scale + 1e-6) << "element " << i;
}

class WeightInt8Test : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (GetParam() > core::detected_isa()) GTEST_SKIP() << core::isa_name(GetParam()) << " not available on this CPU";
  }
  // Lowered: the fast kernel on this ISA and the reference kernel both match the naive result.
  void check_lowered(const Case& cs, uint32_t seed) {
    runtime::SessionOptions fast, ref;
    fast.isa = core::isa_name(GetParam());
    ref.reference_only = true;
    Result f = run(build(cs, seed), fast);
    EXPECT_EQ(f.op, "MatMulWeightInt8");
    EXPECT_NE(f.impl.find("sgemm_int8w"), std::string::npos) << f.impl;
    Built b = build(cs, seed);
    expect_close(f.y, b.want, 1e-5);
    Result r = run(build(cs, seed), ref);
    EXPECT_EQ(r.op, "MatMulWeightInt8");
    expect_close(r.y, b.want, 1e-5);
  }
};

TEST_P(WeightInt8Test, MatMulRandomShapes) {
  std::mt19937 rng(42);
  const int64_t sizes[] = {1, 2, 7, 16, 17, 31, 33, 64, 100};
  for (int iter = 0; iter < 12; ++iter) {
    Case cs;
    const int64_t k = sizes[rng() % std::size(sizes)];
    cs.n = sizes[rng() % std::size(sizes)];
    switch (iter % 3) {
      case 0:
        cs.a_dims = {k};
        break;
      case 1:
        cs.a_dims = {sizes[rng() % std::size(sizes)], k};
        break;
      default:
        cs.a_dims = {2, sizes[rng() % std::size(sizes)], k};
        break;
    }
    cs.per_tensor = iter % 4 == 3;
    cs.zero_point = iter % 5 == 4 ? 0 : -1;  // an explicit all-zero zero point is still symmetric
    check_lowered(cs, 100 + static_cast<uint32_t>(iter));
  }
}

TEST_P(WeightInt8Test, FusedMatMulEpilogues) {
  uint32_t seed = 200;
  check_lowered({.op = "FusedMatMul", .a_dims = {3, 5, 40}, .n = 37, .c = true}, seed++);
  check_lowered({.op = "FusedMatMul", .a_dims = {3, 5, 40}, .n = 37, .c = true, .residual = true, .activation = "Relu"},
                seed++);
  check_lowered({.op = "FusedMatMul", .a_dims = {7, 64}, .n = 48, .residual = true, .activation = "Sigmoid"}, seed++);
  check_lowered({.op = "FusedMatMul", .a_dims = {7, 64}, .n = 48, .c = true, .activation = "GeluTanh"}, seed++);
  check_lowered({.op = "FusedMatMul",
                 .a_dims = {9, 20},
                 .n = 19,
                 .c = true,
                 .activation = "Clip",
                 .activation_params = {-0.1f, 0.1f}},
                seed++);
}

TEST_P(WeightInt8Test, GemmAlphaBetaTransB) {
  uint32_t seed = 300;
  for (bool tb : {false, true}) {
    check_lowered({.op = "Gemm", .a_dims = {13, 50}, .n = 70, .trans_b = tb}, seed++);
    check_lowered({.op = "Gemm", .a_dims = {13, 50}, .n = 70, .trans_b = tb, .alpha = 0.5f, .beta = -2.f, .c = true},
                  seed++);
    check_lowered({.op = "FusedGemm",
                   .a_dims = {1, 200},
                   .n = 1000,
                   .trans_b = tb,
                   .alpha = 1.5f,
                   .c = true,
                   .activation = "Relu"},
                  seed++);
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, WeightInt8Test, ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(core::isa_name(info.param));
                         });

// Patterns outside the weight-only form stay DequantizeLinear + MatMul / Gemm and are still right.
TEST(WeightInt8Lowering, LeavesOtherPatternsAlone) {
  uint32_t seed = 400;
  const Case cases[] = {
      {.a_dims = {4, 16}, .n = 8, .zero_point = 3},                        // asymmetric weight
      {.a_dims = {4, 16}, .n = 8, .a_from_dq = true},                      // QDQ activation too
      {.op = "Gemm", .a_dims = {4, 16}, .n = 8, .beta = 0.5f, .c = true},  // C is [N]: lowered (control)
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    Built b = build(cases[i], seed);
    auto lowered = runtime::lower_weight_int8(*b.g);
    ASSERT_TRUE(lowered.is_ok());
    EXPECT_EQ(*lowered, i == 2 ? 1 : 0) << "case " << i;
    Result r = run(build(cases[i], seed), {});
    expect_close(r.y, b.want, 1e-5);
    ++seed;
  }
}

// A float Conv reading DequantizeLinear(int8 constant), as a QDQ model leaves a layer it does not
// quantize: the session folds the weights to float at load, so the conv gets the fast kernel (weights
// packed once) instead of the reference one, and computes what it computes on the float weights.
TEST(WeightInt8Lowering, FloatConvOfDequantizedWeightsGetsTheFastKernel) {
  std::mt19937 rng(7);
  const Tensor w = i8({32, 16, 3, 3}, rng), scale = f32({32}, rng, 0.001f, 0.01f), bias = f32({32}, rng);
  const Tensor x = f32({1, 16, 12, 12}, rng);
  Tensor wf = Tensor::allocate(DType::kF32, w.dims()).value();
  for (int64_t i = 0; i < wf.num_elements(); ++i)
    wf.data<float>()[i] = static_cast<float>(w.data<int8_t>()[i]) * scale.data<float>()[i / (16 * 9)];
  struct Out {
    std::string impl;
    Tensor y;
    bool has_dq = false;
    int folded = -1;
  };
  auto run_conv = [&](bool dequantize) -> Out {
    auto g = std::make_unique<ir::Graph>("conv");
    ir::Value* xv = g->add_input("x", {DType::kF32, ir::Shape(x.dims())});
    ir::Value* wv = nullptr;
    if (dequantize) {
      ir::Node* dq =
          g->add_node("DequantizeLinear", {g->add_constant("w", w), g->add_constant("s", scale)}, {"wd"}, "dq");
      dq->set_attr("axis", int64_t{0});
      wv = dq->output(0);
    } else {
      wv = g->add_constant("wf", wf);
    }
    ir::Node* conv = g->add_node("Conv", {xv, wv, g->add_constant("b", bias)}, {"y"}, "conv");
    conv->set_attr("pads", std::vector<int64_t>{1, 1, 1, 1});
    g->add_output(conv->output(0));
    runtime::LoadedModel m;
    m.graph = std::move(g);
    auto s = runtime::Session::from_model(std::move(m), {});
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    if (!s.is_ok()) return {};
    Out o;
    for (const ir::Node* n : (*s)->graph().nodes()) o.has_dq |= n->op_type() == "DequantizeLinear";
    (*s)->executor().set_profiler([&](const runtime::Executor::ProfileEvent& e) {
      if (e.node.op_type() == "Conv") o.impl = e.impl;
    });
    const std::vector<const Tensor*> ins = {&x};
    std::vector<Tensor> outs;
    EXPECT_TRUE((*s)->run(ins, outs).is_ok());
    if (!outs.empty()) o.y = std::move(outs[0]);
    o.folded = (*s)->plan_stats().folded_steps;  // planned by the first run
    return o;
  };
  Out q = run_conv(true), f = run_conv(false);
  EXPECT_FALSE(q.has_dq);
  EXPECT_EQ(q.folded, 0);
  EXPECT_NE(q.impl, "reference");
  EXPECT_EQ(q.impl, f.impl);
  ASSERT_TRUE(q.y.defined() && f.y.defined());
  expect_close(q.y, std::vector<double>(f.y.data<float>(), f.y.data<float>() + f.y.num_elements()), 1e-6);
}

TEST(WeightInt8Schema, RejectsBadScale) {
  std::mt19937 rng(1);
  auto g = std::make_unique<ir::Graph>("test");
  ir::Value* a = g->add_input("a", {DType::kF32, ir::Shape(core::Dims{2, 4})});
  ir::Node* n =
      g->add_node("MatMulWeightInt8", {a, g->add_constant("w", i8({4, 3}, rng)), g->add_constant("s", f32({5}, rng))},
                  {"y"}, "bad", ir::kKestrelDomain);
  g->add_output(n->output(0));
  runtime::LoadedModel m;
  m.graph = std::move(g);
  auto s = runtime::Session::from_model(std::move(m), {});
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("scale"), std::string::npos) << s.status().to_string();
}

// kestrel convert --int8-weights: scales are max |W| / 127 per output channel, values round(W / s).
TEST(QuantizeWeightsInt8, PerOutputChannelSymmetric) {
  std::mt19937 rng(7);
  auto g = std::make_unique<ir::Graph>("test");
  ir::Value* a = g->add_input("a", {DType::kF32, ir::Shape(core::Dims{3, 64})});
  Tensor w1 = f32({64, 32}, rng);
  Tensor w2 = f32({16, 32}, rng);                                       // Gemm transB = 1: [N, K], channels on axis 0
  Tensor small = f32({32, 4}, rng);                                     // below min_elements: stays f32
  for (int64_t i = 0; i < 64; ++i) w1.data<float>()[i * 32 + 5] = 0.f;  // an all-zero channel
  ir::Value* w1v = g->add_constant("w1", w1);
  ir::Node* mm = g->add_node("MatMul", {a, w1v}, {"h"}, "mm");
  ir::Node* mm2 = g->add_node("MatMul", {a, w1v}, {"h2"}, "mm2");  // shares w1
  ir::Node* ge = g->add_node("Gemm", {mm->output(0), g->add_constant("w2", w2)}, {"y"}, "gemm");
  ge->set_attr("transB", ir::Attribute(int64_t{1}));
  ir::Node* sm = g->add_node("MatMul", {mm2->output(0), g->add_constant("small", small)}, {"y2"}, "small");
  g->add_output(ge->output(0));
  g->add_output(sm->output(0));
  ASSERT_TRUE(ir::infer_graph(*g).is_ok());

  auto st = passes::quantize_weights_int8(*g, {.min_elements = 256});
  ASSERT_TRUE(st.is_ok()) << st.status().to_string();
  EXPECT_EQ(st->weights, 2);
  EXPECT_EQ(st->nodes, 3);
  EXPECT_EQ(st->f32_bytes, (64u * 32 + 16 * 32) * 4);
  EXPECT_EQ(mm->input(1), mm2->input(1));
  EXPECT_TRUE(sm->input(1)->is_constant());
  ASSERT_TRUE(ir::infer_graph(*g).is_ok());
  for (auto [node, src, axis] : {std::tuple{mm, &w1, 1}, std::tuple{ge, &w2, 0}}) {
    ir::Node* dq = node->input(1)->producer();
    ASSERT_NE(dq, nullptr);
    EXPECT_EQ(dq->op_type(), "DequantizeLinear");
    EXPECT_EQ(dq->attr_int("axis", 1).value(), axis);
    const Tensor& q = dq->input(0)->constant();
    const Tensor& s = dq->input(1)->constant();
    ASSERT_EQ(q.dtype(), DType::kI8);
    const int64_t rows = src->dim(0), cols = src->dim(1);
    for (int64_t c = 0; c < (axis == 1 ? cols : rows); ++c) {
      float m = 0;
      for (int64_t i = 0; i < (axis == 1 ? rows : cols); ++i)
        m = std::max(m, std::fabs(src->data<float>()[axis == 1 ? i * cols + c : c * cols + i]));
      EXPECT_FLOAT_EQ(s.data<float>()[c], m > 0 ? m / 127 : 1.f);
    }
    for (int64_t i = 0; i < rows * cols; ++i) {
      const int64_t c = axis == 1 ? i % cols : i / cols;
      EXPECT_EQ(q.data<int8_t>()[i], static_cast<int8_t>(std::nearbyint(src->data<float>()[i] / s.data<float>()[c])));
    }
  }
  // The f32 originals are gone; the model still runs (lowered) and stays close to the float result.
  EXPECT_EQ(g->find_value("w1"), nullptr);
  EXPECT_EQ(g->find_value("w2"), nullptr);
  Tensor x = f32({3, 64}, rng);
  std::vector<double> want(3 * 16);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t j = 0; j < 16; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < 32; ++p) {
        double h = 0;
        for (int64_t q = 0; q < 64; ++q)
          h += static_cast<double>(x.data<float>()[r * 64 + q]) * w1.data<float>()[q * 32 + p];
        acc += h * w2.data<float>()[j * 32 + p];
      }
      want[static_cast<size_t>(r * 16 + j)] = acc;
    }
  runtime::LoadedModel m;
  m.graph = std::move(g);
  auto s = runtime::Session::from_model(std::move(m), {});
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  std::vector<const Tensor*> feed = {&x};
  std::vector<Tensor> outs;
  ASSERT_TRUE((*s)->run(feed, outs).is_ok());
  expect_close(outs[0], want, 2e-2);
}

}  // namespace
}  // namespace kestrel

// Unit tests of the -O2 fusion passes on small graphs built here: each test runs one pass (or the
// few it needs) and checks the node list after it, and that the optimized graph computes what the
// unfused graph does on random inputs. Negative cases check that patterns with outside consumers
// or broadcasting operands are left alone.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "ir/graph.h"
#include "ir/op_schema.h"
#include "passes/pass.h"
#include "runtime/kernel.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::DType;
using core::Tensor;
using GraphFn = std::function<void(ir::Graph&)>;
using Ops = std::vector<std::string>;

Tensor rnd(core::Dims dims, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  Tensor t = Tensor::allocate(DType::kF32, std::move(dims)).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

ir::ValueType f32(core::Dims d) {
  return {DType::kF32, ir::Shape(d)};
}
Tensor i64(std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())});
}
Tensor scalar(float v) {
  return Tensor::scalar<float>(v);
}

const ir::NodeEvaluator& evaluator() {
  static const ir::NodeEvaluator ev = [](const ir::Node& n, std::span<const Tensor* const> ins) {
    return runtime::evaluate_node(n, ins);
  };
  return ev;
}

Ops op_list(const ir::Graph& g) {
  Ops ops;
  for (const ir::Node* n : g.nodes())
    ops.push_back(n->domain().empty() ? n->op_type() : n->domain() + "." + n->op_type());
  return ops;
}

std::vector<Tensor> run_graph(std::unique_ptr<ir::Graph> g, const std::vector<Tensor>& feed,
                              const runtime::SessionOptions& opts = {}) {
  runtime::LoadedModel m;
  m.graph = std::move(g);
  auto s = runtime::Session::from_model(std::move(m), opts);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  if (!s.is_ok()) return {};
  std::vector<const Tensor*> in;
  for (const Tensor& t : feed) in.push_back(&t);
  std::vector<Tensor> out;
  core::Status st = (*s)->run(in, out);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return out;
}

// Builds the graph twice; optimizes one with `passes`, checks its node list, and compares the two
// on random inputs (one per graph input, uniform in [-2, 2)).
void check(const GraphFn& build, std::vector<std::unique_ptr<passes::Pass>> passes, const Ops& want_ops,
           double tol = 1e-5) {
  auto make = [&] {
    auto g = std::make_unique<ir::Graph>();
    build(*g);
    return g;
  };
  auto g = make();
  ASSERT_TRUE(ir::infer_graph(*g, &evaluator()).is_ok());
  passes::PassManager pm;
  for (auto& p : passes) pm.add(std::move(p));
  pm.add(passes::make_dead_code_elimination());
  passes::PassContext ctx;
  ctx.evaluator = &evaluator();
  core::Status st = pm.run(*g, ctx);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(op_list(*g), want_ops);
  std::vector<Tensor> feed;
  uint32_t seed = 100;
  for (const ir::Value* v : g->inputs()) feed.push_back(rnd(v->shape().concrete(), seed++, -2, 2));
  std::vector<std::string> out_names;
  for (const ir::Value* v : g->outputs()) out_names.push_back(v->name());
  auto ref = make();
  std::vector<std::string> ref_names;
  for (const ir::Value* v : ref->outputs()) ref_names.push_back(v->name());
  EXPECT_EQ(out_names, ref_names) << "graph output names must survive the pass";
  std::vector<Tensor> want = run_graph(std::move(ref), feed);
  std::vector<Tensor> got = run_graph(std::move(g), feed);
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(got[o].dims(), want[o].dims());
    for (int64_t i = 0; i < got[o].num_elements(); ++i) {
      const double a = got[o].data<float>()[i], b = want[o].data<float>()[i];
      ASSERT_NEAR(a, b, tol * (1 + std::abs(b))) << "output " << o << " element " << i;
    }
  }
}

// The graph `build` makes, inferred and optimized at -O2.
std::unique_ptr<ir::Graph> optimized_o2(const GraphFn& build) {
  auto g = std::make_unique<ir::Graph>();
  build(*g);
  EXPECT_TRUE(ir::infer_graph(*g, &evaluator()).is_ok());
  passes::PassContext ctx;
  ctx.evaluator = &evaluator();
  EXPECT_TRUE(passes::optimize(*g, 2, ctx).is_ok());
  return g;
}

template <class... F>
std::vector<std::unique_ptr<passes::Pass>> P(F... makers) {
  std::vector<std::unique_ptr<passes::Pass>> v;
  (v.push_back(makers()), ...);
  return v;
}

ir::Value* out(ir::Node* n) {
  return n->output(0);
}

ir::Value* conv(ir::Graph& g, ir::Value* x, int64_t cin, int64_t m, uint32_t seed, bool bias = true,
                int64_t group = 1) {
  std::vector<ir::Value*> ins{x, g.add_constant(g.unique_value_name("w"), rnd({m, cin / group, 3, 3}, seed))};
  if (bias) ins.push_back(g.add_constant(g.unique_value_name("b"), rnd({m}, seed + 1)));
  ir::Node* n = g.add_node("Conv", ins, {g.unique_value_name("conv")});
  n->set_attr("pads", std::vector<int64_t>{1, 1, 1, 1});
  n->set_attr("group", group);
  return out(n);
}

ir::Value* bn(ir::Graph& g, ir::Value* x, int64_t c, uint32_t seed) {
  ir::Node* n = g.add_node("BatchNormalization",
                           {x, g.add_constant(g.unique_value_name("s"), rnd({c}, seed, 0.5f, 2.f)),
                            g.add_constant(g.unique_value_name("bb"), rnd({c}, seed + 1)),
                            g.add_constant(g.unique_value_name("mean"), rnd({c}, seed + 2)),
                            g.add_constant(g.unique_value_name("var"), rnd({c}, seed + 3, 0.1f, 2.f))},
                           {g.unique_value_name("bn")});
  n->set_attr("epsilon", 1e-3f);
  return out(n);
}

ir::Value* c(ir::Graph& g, Tensor t) {
  return g.add_constant(g.unique_value_name("c"), std::move(t));
}
ir::Value* op(ir::Graph& g, const char* type, std::vector<ir::Value*> ins) {
  return out(g.add_node(type, std::move(ins), {g.unique_value_name(type)}));
}

// --- BatchNormalization folding ---

TEST(FoldBatchNorm, ConvWithAndWithoutBias) {
  for (bool bias : {true, false})
    check(
        [&](ir::Graph& g) {
          ir::Value* x = g.add_input("x", f32({1, 4, 5, 6}));
          g.add_output(bn(g, conv(g, x, 4, 6, 1, bias, 2), 6, 10));
        },
        P(passes::make_fold_batch_norm), {"Conv"});
}

TEST(FoldBatchNorm, ConvTransposeGroupedGemmAndMatMul) {
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({1, 4, 3, 3}));
        ir::Node* ct = g.add_node("ConvTranspose", {x, c(g, rnd({4, 3, 2, 2}, 2)), c(g, rnd({6}, 3))}, {"ct"});
        ct->set_attr("group", int64_t{2});
        ct->set_attr("strides", std::vector<int64_t>{2, 2});
        g.add_output(bn(g, out(ct), 6, 20));
      },
      P(passes::make_fold_batch_norm), {"ConvTranspose"});
  check(
      [](ir::Graph& g) {
        ir::Value* a = g.add_input("a", f32({3, 5}));
        ir::Node* gm = g.add_node("Gemm", {a, c(g, rnd({4, 5}, 4)), c(g, rnd({1, 4}, 5))}, {"gm"});
        gm->set_attr("transB", int64_t{1});
        gm->set_attr("beta", 0.5f);
        gm->set_attr("alpha", 2.0f);
        g.add_output(bn(g, out(gm), 4, 30));
      },
      P(passes::make_fold_batch_norm), {"Gemm"});
  check(
      [](ir::Graph& g) {
        ir::Value* a = g.add_input("a", f32({3, 5}));
        g.add_output(bn(g, op(g, "MatMul", {a, c(g, rnd({5, 4}, 6))}), 4, 40));
      },
      P(passes::make_fold_batch_norm), {"Gemm"});
}

TEST(FoldBatchNorm, LeavesSharedConvOutputAlone) {
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({1, 2, 4, 4}));
        ir::Value* y = conv(g, x, 2, 3, 7);
        g.add_output(bn(g, y, 3, 50));
        g.add_output(op(g, "Relu", {y}));
      },
      P(passes::make_fold_batch_norm), {"Conv", "BatchNormalization", "Relu"});
}

// --- constant Add / Mul into conv ---

TEST(FoldConvAddMul, PerChannelAndScalarConstantsFold) {
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({2, 3, 5, 5}));
        ir::Value* y = conv(g, x, 3, 4, 8, false);
        y = op(g, "Mul", {c(g, rnd({4, 1, 1}, 9)), y});
        y = op(g, "Add", {y, c(g, rnd({1, 4, 1, 1}, 10))});
        y = op(g, "Sub", {y, c(g, scalar(0.25f))});
        g.add_output(op(g, "Mul", {y, c(g, scalar(-3.f))}));
      },
      P(passes::make_fold_conv_add_mul), {"Conv"});
}

TEST(FoldConvAddMul, KeepsSpatialBroadcastAndConstantMinusConv) {
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({1, 3, 5, 5}));
        ir::Value* y = op(g, "Add", {conv(g, x, 3, 4, 11), c(g, rnd({1, 1, 1, 5}, 12))});
        g.add_output(op(g, "Sub", {c(g, scalar(1.f)), conv(g, y, 4, 2, 13)}));
      },
      P(passes::make_fold_conv_add_mul), {"Conv", "Add", "Conv", "Sub"});
}

// --- activation fusion ---

struct ActCase {
  const char* op;
  std::function<void(ir::Graph&, ir::Node*)> setup;
};

TEST(FuseActivation, EveryActivationIntoConvGemmAndMatMul) {
  const std::vector<ActCase> cases = {
      {"Relu", nullptr},
      {"Sigmoid", nullptr},
      {"Tanh", nullptr},
      {"HardSwish", nullptr},
      {"LeakyRelu", [](ir::Graph&, ir::Node* n) { n->set_attr("alpha", 0.2f); }},
      {"HardSigmoid", [](ir::Graph&, ir::Node* n) { n->set_attr("alpha", 0.3f); }},
      {"Gelu", nullptr},
      {"Gelu", [](ir::Graph&, ir::Node* n) { n->set_attr("approximate", std::string("tanh")); }},
      {"Clip",
       [](ir::Graph& g, ir::Node* n) {
         n->add_input(c(g, scalar(0.f)));
         n->add_input(c(g, scalar(6.f)));
       }},
      {"Clip", [](ir::Graph& g, ir::Node* n) { n->add_input(c(g, scalar(-0.5f))); }},
  };
  for (const ActCase& ac : cases)
    for (int producer = 0; producer < 3; ++producer) {
      SCOPED_TRACE(std::string(ac.op) + " producer " + std::to_string(producer));
      check(
          [&](ir::Graph& g) {
            ir::Value* y;
            if (producer == 0) {
              y = conv(g, g.add_input("x", f32({1, 3, 4, 4})), 3, 5, 14);
            } else if (producer == 1) {
              y = op(g, "Gemm", {g.add_input("a", f32({3, 5})), c(g, rnd({5, 4}, 15)), c(g, rnd({4}, 16))});
            } else {
              y = op(g, "MatMul", {g.add_input("a", f32({2, 3, 5})), c(g, rnd({5, 4}, 17))});
            }
            ir::Node* act = g.add_node(ac.op, {y}, {"y"});
            if (ac.setup) ac.setup(g, act);
            g.add_output(act->output(0));
          },
          P(passes::make_fuse_activation),
          {producer == 0   ? "kestrel.FusedConv"
           : producer == 1 ? "kestrel.FusedGemm"
                           : "kestrel.FusedMatMul"},
          1e-4);
    }
}

TEST(FuseActivation, SiluAndHardSwishMulForms) {
  check(
      [](ir::Graph& g) {
        ir::Value* y = conv(g, g.add_input("x", f32({1, 2, 4, 4})), 2, 3, 18);
        g.add_output(op(g, "Mul", {op(g, "Sigmoid", {y}), y}));
      },
      P(passes::make_fuse_activation), {"kestrel.FusedConv"});
  check(
      [](ir::Graph& g) {
        ir::Value* y = op(g, "MatMul", {g.add_input("a", f32({3, 5})), c(g, rnd({5, 4}, 19))});
        ir::Node* hs = g.add_node("HardSigmoid", {y}, {"hs"});
        hs->set_attr("alpha", 1.0f / 6);
        g.add_output(op(g, "Mul", {y, out(hs)}));
      },
      P(passes::make_fuse_activation), {"kestrel.FusedMatMul"});
}

TEST(FuseActivation, LeavesGraphOutputsAndSharedValuesAlone) {
  check(
      [](ir::Graph& g) {
        ir::Value* y = conv(g, g.add_input("x", f32({1, 2, 4, 4})), 2, 3, 20);
        g.add_output(y);
        g.add_output(op(g, "Relu", {y}));
      },
      P(passes::make_fuse_activation), {"Conv", "Relu"});
  check(
      [](ir::Graph& g) {
        ir::Value* y = conv(g, g.add_input("x", f32({1, 2, 4, 4})), 2, 3, 21);
        ir::Value* s = op(g, "Sigmoid", {y});
        g.add_output(op(g, "Mul", {y, s}));
        g.add_output(op(g, "Neg", {y}));
      },
      P(passes::make_fuse_activation), {"Conv", "Sigmoid", "Mul", "Neg"});
  // A HardSigmoid that is not x/6 + 1/2 makes no HardSwish.
  check(
      [](ir::Graph& g) {
        ir::Value* y = conv(g, g.add_input("x", f32({1, 2, 4, 4})), 2, 3, 22);
        g.add_output(op(g, "Mul", {y, op(g, "HardSigmoid", {y})}));
      },
      P(passes::make_fuse_activation), {"Conv", "HardSigmoid", "Mul"});
}

// --- residual Add ---

TEST(FuseResidualAdd, ConvAndMatMulResidualThenActivation) {
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({1, 3, 4, 4}));
        ir::Value* y = conv(g, x, 3, 3, 23);
        g.add_output(op(g, "Relu", {op(g, "Add", {x, y})}));
      },
      P(passes::make_fuse_residual_add, passes::make_fuse_activation), {"kestrel.FusedConv"});
  check(
      [](ir::Graph& g) {
        ir::Value* a = g.add_input("a", f32({2, 3, 5}));
        ir::Value* z = g.add_input("z", f32({2, 3, 4}));
        ir::Value* y = op(g, "Add", {op(g, "MatMul", {a, c(g, rnd({5, 4}, 24))}), c(g, rnd({4}, 25))});
        g.add_output(op(g, "Add", {y, z}));
      },
      P(passes::make_fuse_matmul_add, passes::make_fuse_residual_add), {"kestrel.FusedMatMul"});
}

TEST(FuseResidualAdd, LeavesBroadcastAddsAndActivatedConvsAlone) {
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({1, 3, 4, 4}));
        ir::Value* z = g.add_input("z", f32({1, 3, 1, 4}));
        g.add_output(op(g, "Add", {conv(g, x, 3, 3, 26), z}));
      },
      P(passes::make_fuse_residual_add), {"Conv", "Add"});
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({1, 3, 4, 4}));
        g.add_output(op(g, "Add", {op(g, "Relu", {conv(g, x, 3, 3, 27)}), x}));
      },
      P(passes::make_fuse_activation, passes::make_fuse_residual_add), {"kestrel.FusedConv", "Add"});
}

// --- MatMul + Add ---

TEST(FuseMatMulAdd, BiasBecomesGemmOrFusedMatMul) {
  check(
      [](ir::Graph& g) {
        ir::Value* a = g.add_input("a", f32({3, 5}));
        g.add_output(op(g, "Add", {c(g, rnd({4}, 28)), op(g, "MatMul", {a, c(g, rnd({5, 4}, 29))})}));
      },
      P(passes::make_fuse_matmul_add), {"Gemm"});
  check(
      [](ir::Graph& g) {
        ir::Value* a = g.add_input("a", f32({2, 3, 5}));
        g.add_output(op(g, "Add", {op(g, "MatMul", {a, c(g, rnd({5, 4}, 30))}), c(g, rnd({1, 1, 4}, 31))}));
      },
      P(passes::make_fuse_matmul_add), {"kestrel.FusedMatMul"});
  // [3, 4] is not a bias over N: stays an Add.
  check(
      [](ir::Graph& g) {
        ir::Value* a = g.add_input("a", f32({2, 3, 5}));
        g.add_output(op(g, "Add", {op(g, "MatMul", {a, c(g, rnd({5, 4}, 32))}), c(g, rnd({3, 4}, 33))}));
      },
      P(passes::make_fuse_matmul_add), {"MatMul", "Add"});
}

// --- GELU ---

TEST(FuseGelu, ErfFormsAndTanhForm) {
  // 0: (x * (1 + erf(x / sqrt2))) * 0.5   1: (0.5 * x) * (1 + erf(x * 1/sqrt2))   2: x * ((1 + erf) * 0.5)
  for (int form = 0; form < 3; ++form) {
    SCOPED_TRACE(form);
    check(
        [&](ir::Graph& g) {
          ir::Value* x = g.add_input("x", f32({2, 7}));
          ir::Value* d =
              form == 1 ? op(g, "Mul", {x, c(g, scalar(0.70710678f))}) : op(g, "Div", {x, c(g, scalar(1.41421356f))});
          ir::Value* a = op(g, "Add", {op(g, "Erf", {d}), c(g, scalar(1.f))});
          ir::Value* y = nullptr;
          if (form == 0) y = op(g, "Mul", {op(g, "Mul", {x, a}), c(g, scalar(0.5f))});
          if (form == 1) y = op(g, "Mul", {op(g, "Mul", {c(g, scalar(0.5f)), x}), a});
          if (form == 2) y = op(g, "Mul", {x, op(g, "Mul", {a, c(g, scalar(0.5f))})});
          g.add_output(y);
        },
        P(passes::make_fuse_gelu), {"Gelu"});
  }
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({3, 5}));
        ir::Value* cube = op(g, "Pow", {x, c(g, scalar(3.f))});
        ir::Value* inner = op(g, "Add", {x, op(g, "Mul", {cube, c(g, scalar(0.044715f))})});
        ir::Value* t = op(g, "Tanh", {op(g, "Mul", {c(g, scalar(0.7978845608f)), inner})});
        g.add_output(op(g, "Mul", {op(g, "Mul", {x, c(g, scalar(0.5f))}), op(g, "Add", {t, c(g, scalar(1.f))})}));
      },
      P(passes::make_fuse_gelu), {"Gelu"}, 1e-5);
  // Wrong constant (not 1/sqrt 2): not GELU.
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({2, 3}));
        ir::Value* a = op(g, "Add", {op(g, "Erf", {op(g, "Div", {x, c(g, scalar(2.f))})}), c(g, scalar(1.f))});
        g.add_output(op(g, "Mul", {op(g, "Mul", {x, a}), c(g, scalar(0.5f))}));
      },
      P(passes::make_fuse_gelu), {"Div", "Erf", "Add", "Mul", "Mul"});
}

// --- LayerNorm ---

ir::Value* decomposed_ln(ir::Graph& g, ir::Value* x, bool pow, std::vector<int64_t> axes) {
  ir::Value* m = op(g, "ReduceMean", {x, c(g, i64(axes))});
  ir::Value* d = op(g, "Sub", {x, m});
  ir::Value* sq = pow ? op(g, "Pow", {d, c(g, scalar(2.f))}) : op(g, "Mul", {d, d});
  ir::Value* v = op(g, "ReduceMean", {sq, c(g, i64(axes))});
  return op(g, "Div", {d, op(g, "Sqrt", {op(g, "Add", {v, c(g, scalar(1e-5f))})})});
}

TEST(FuseLayerNorm, WithAndWithoutAffineOverOneOrTwoAxes) {
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({2, 3, 8}));
        ir::Value* y = decomposed_ln(g, x, true, {-1});
        g.add_output(op(g, "Add", {op(g, "Mul", {y, c(g, rnd({8}, 34))}), c(g, rnd({8}, 35))}));
      },
      P(passes::make_fuse_layer_norm), {"LayerNormalization"});
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({2, 3, 4}));
        g.add_output(decomposed_ln(g, x, false, {1, 2}));
      },
      P(passes::make_fuse_layer_norm), {"LayerNormalization"});
  // Mean over a middle axis: not a layer norm.
  check(
      [](ir::Graph& g) {
        g.add_output(decomposed_ln(g, g.add_input("x", f32({2, 3, 4})), true, {1}));
      },
      P(passes::make_fuse_layer_norm), {"ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div"});
}

// --- attention ---

TEST(FuseAttention, ScaledMaskedAttentionWithTransposedK) {
  check(
      [](ir::Graph& g) {
        ir::Value* q = g.add_input("q", f32({1, 2, 3, 4}));
        ir::Value* k = g.add_input("k", f32({1, 2, 5, 4}));
        ir::Value* v = g.add_input("v", f32({1, 2, 5, 6}));
        ir::Value* mask = g.add_input("mask", f32({1, 1, 1, 5}));
        ir::Node* kt = g.add_node("Transpose", {k}, {"kt"});
        kt->set_attr("perm", std::vector<int64_t>{0, 1, 3, 2});
        ir::Value* s = op(g, "Div", {op(g, "MatMul", {q, out(kt)}), c(g, scalar(2.f))});
        ir::Node* sm = g.add_node("Softmax", {op(g, "Add", {s, mask})}, {"p"});
        sm->set_attr("axis", int64_t{-1});
        g.add_output(op(g, "MatMul", {out(sm), v}));
      },
      P(passes::make_fuse_attention), {"kestrel.Attention"});
}

TEST(FuseAttention, HeadSplitTransposesAndUnscaledForm) {
  // BERT's form: K^T = Transpose(Y, [0,2,3,1]) of the [B,S,H,D] projection; K becomes
  // Transpose(Y, [0,2,1,3]). No scale, no mask.
  check(
      [](ir::Graph& g) {
        ir::Value* xq = g.add_input("xq", f32({1, 3, 2, 4}));
        ir::Value* xk = g.add_input("xk", f32({1, 5, 2, 4}));
        ir::Value* v = g.add_input("v", f32({1, 2, 5, 4}));
        ir::Node* q = g.add_node("Transpose", {xq}, {"q"});
        q->set_attr("perm", std::vector<int64_t>{0, 2, 1, 3});
        ir::Node* kt = g.add_node("Transpose", {xk}, {"kt"});
        kt->set_attr("perm", std::vector<int64_t>{0, 2, 3, 1});
        ir::Node* sm = g.add_node("Softmax", {op(g, "MatMul", {out(q), out(kt)})}, {"p"});
        sm->set_attr("axis", int64_t{3});
        g.add_output(op(g, "MatMul", {out(sm), v}));
      },
      P(passes::make_fuse_attention), {"Transpose", "Transpose", "kestrel.Attention"});
  // K^T given directly: a Transpose is inserted; scale as Mul on the left.
  check(
      [](ir::Graph& g) {
        ir::Value* q = g.add_input("q", f32({2, 1, 3, 4}));
        ir::Value* kt = g.add_input("kt", f32({2, 1, 4, 5}));
        ir::Value* v = g.add_input("v", f32({2, 1, 5, 2}));
        ir::Value* s = op(g, "Mul", {c(g, scalar(0.5f)), op(g, "MatMul", {q, kt})});
        g.add_output(op(g, "MatMul", {op(g, "Softmax", {s}), v}));
      },
      P(passes::make_fuse_attention), {"Transpose", "kestrel.Attention"});
  // Softmax over another axis is not attention.
  check(
      [](ir::Graph& g) {
        ir::Value* q = g.add_input("q", f32({1, 1, 3, 4}));
        ir::Value* kt = g.add_input("kt", f32({1, 1, 4, 3}));
        ir::Node* sm = g.add_node("Softmax", {op(g, "MatMul", {q, kt})}, {"p"});
        sm->set_attr("axis", int64_t{2});
        g.add_output(op(g, "MatMul", {out(sm), g.add_input("v", f32({1, 1, 3, 2}))}));
      },
      P(passes::make_fuse_attention), {"MatMul", "Softmax", "MatMul"});
}

// --- Transpose and Reshape chains ---

TEST(MergeTransposes, CancelAndCompose) {
  check(
      [](ir::Graph& g) {
        ir::Node* a = g.add_node("Transpose", {g.add_input("x", f32({2, 3, 4}))}, {"a"});
        a->set_attr("perm", std::vector<int64_t>{1, 2, 0});
        ir::Node* b = g.add_node("Transpose", {out(a)}, {"b"});
        b->set_attr("perm", std::vector<int64_t>{2, 0, 1});
        g.add_output(op(g, "Neg", {out(b)}));
      },
      P(passes::make_merge_transposes), {"Neg"});
  check(
      [](ir::Graph& g) {
        ir::Node* a = g.add_node("Transpose", {g.add_input("x", f32({2, 3, 4, 5}))}, {"a"});
        a->set_attr("perm", std::vector<int64_t>{0, 2, 1, 3});
        ir::Node* b = g.add_node("Transpose", {out(a)}, {"b"});
        b->set_attr("perm", std::vector<int64_t>{0, 1, 3, 2});
        g.add_output(out(b));
        g.add_output(op(g, "Neg", {out(a)}));  // the inner Transpose stays for this use
      },
      P(passes::make_merge_transposes), {"Transpose", "Transpose", "Neg"});
}

TEST(MergeReshapes, SqueezeUnsqueezeFlattenReshapeChainBecomesOneReshape) {
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({2, 1, 6}));
        ir::Value* y = op(g, "Squeeze", {x, c(g, i64({1}))});
        y = op(g, "Reshape", {y, c(g, i64({3, 4}))});
        y = op(g, "Unsqueeze", {y, c(g, i64({0, 3}))});
        g.add_output(op(g, "Flatten", {y}));
      },
      P(passes::make_merge_reshapes), {"Reshape"});
}

// --- MaxPool into the stem conv ---

// A network stem: 3x3 stride 2 over `cin` channels, pads 1.
ir::Value* stem(ir::Graph& g, ir::Value* x, int64_t cin, int64_t m, uint32_t seed) {
  ir::Node* n = g.add_node("Conv",
                           {x, g.add_constant(g.unique_value_name("w"), rnd({m, cin, 3, 3}, seed)),
                            g.add_constant(g.unique_value_name("b"), rnd({m}, seed + 1))},
                           {g.unique_value_name("conv")});
  n->set_attr("pads", std::vector<int64_t>{1, 1, 1, 1});
  n->set_attr("strides", std::vector<int64_t>{2, 2});
  return out(n);
}

ir::Node* max_pool(ir::Graph& g, ir::Value* x, std::vector<int64_t> k, std::vector<int64_t> s,
                   std::vector<int64_t> pads, int64_t ceil_mode = 0, bool indices = false) {
  std::vector<std::string> outs{g.unique_value_name("pool")};
  if (indices) outs.push_back(g.unique_value_name("idx"));
  ir::Node* n = g.add_node("MaxPool", {x}, outs);
  n->set_attr("kernel_shape", std::move(k));
  n->set_attr("strides", std::move(s));
  n->set_attr("pads", std::move(pads));
  n->set_attr("ceil_mode", ceil_mode);
  return n;
}

TEST(FuseConvMaxPool, StemWithActivationAndWithout) {
  // Relu'd stem (SqueezeNet / ShuffleNet), odd sizes, ceil_mode; and a plain conv with padding in the pool.
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({2, 3, 29, 23}));
        g.add_output(out(max_pool(g, op(g, "Relu", {stem(g, x, 3, 20, 60)}), {3, 3}, {2, 2}, {0, 0, 0, 0}, 1)));
      },
      P(passes::make_fuse_activation, passes::make_fuse_conv_max_pool), {"kestrel.FusedConv"});
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({1, 4, 17, 30}));
        g.add_output(out(max_pool(g, stem(g, x, 4, 9, 61), {2, 3}, {1, 2}, {1, 1, 0, 2})));
      },
      P(passes::make_fuse_activation, passes::make_fuse_conv_max_pool), {"kestrel.FusedConv"});
}

TEST(FuseConvMaxPool, LeavesOtherConvsIndicesSharedValuesAndLaterActivationsAlone) {
  auto passes = [] { return P(passes::make_fuse_activation, passes::make_fuse_conv_max_pool); };
  check(  // 8 input channels: not a stem
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({1, 8, 12, 12}));
        g.add_output(out(max_pool(g, stem(g, x, 8, 4, 62), {3, 3}, {2, 2}, {0, 0, 0, 0})));
      },
      passes(), {"Conv", "MaxPool"});
  check(  // stride 1
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({1, 3, 12, 12}));
        g.add_output(out(max_pool(g, conv(g, x, 3, 4, 63), {3, 3}, {2, 2}, {0, 0, 0, 0})));
      },
      passes(), {"Conv", "MaxPool"});
  check(  // the Indices output is wanted
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({1, 3, 12, 12}));
        ir::Node* p = max_pool(g, stem(g, x, 3, 4, 64), {3, 3}, {2, 2}, {0, 0, 0, 0}, 0, true);
        g.add_output(p->output(0));
        g.add_output(p->output(1));
      },
      passes(), {"Conv", "MaxPool"});
  check(  // the conv output is read elsewhere too
      [](ir::Graph& g) {
        ir::Value* y = stem(g, g.add_input("x", f32({1, 3, 12, 12})), 3, 4, 65);
        g.add_output(out(max_pool(g, y, {3, 3}, {2, 2}, {0, 0, 0, 0})));
        g.add_output(y);
      },
      passes(), {"Conv", "MaxPool"});
  check(  // an activation after the pool stays (HardSwish does not commute with max)
      [](ir::Graph& g) {
        ir::Value* y = stem(g, g.add_input("x", f32({1, 3, 12, 12})), 3, 4, 66);
        g.add_output(op(g, "HardSwish", {out(max_pool(g, y, {3, 3}, {2, 2}, {0, 0, 0, 0}))}));
      },
      passes(), {"kestrel.FusedConv", "HardSwish"});
}

// --- inverted residuals into kestrel.FusedPointwiseDepthwise ---

// A Conv with constant weights [m, cin / group, k, k] (in [-0.5, 0.5)) and bias [m].
ir::Node* conv_k(ir::Graph& g, ir::Value* x, int64_t cin, int64_t m, int64_t k, uint32_t seed, int64_t group = 1,
                 std::vector<int64_t> strides = {1, 1}, std::vector<int64_t> pads = {0, 0, 0, 0}) {
  ir::Node* n = g.add_node("Conv", {x, c(g, rnd({m, cin / group, k, k}, seed, -0.5f, 0.5f)), c(g, rnd({m}, seed + 1))},
                           {g.unique_value_name("conv")});
  n->set_attr("group", group);
  n->set_attr("strides", std::move(strides));
  n->set_attr("pads", std::move(pads));
  return n;
}

// An activation as ONNX ops ("" = none, "Relu6" = Clip(0, 6), "GeluTanh" = Gelu with approximate = tanh).
ir::Value* activate(ir::Graph& g, ir::Value* x, const std::string& a) {
  if (a.empty()) return x;
  if (a == "Relu6") return op(g, "Clip", {x, c(g, scalar(0.f)), c(g, scalar(6.f))});
  if (a == "GeluTanh") {
    ir::Node* n = g.add_node("Gelu", {x}, {g.unique_value_name("gelu")});
    n->set_attr("approximate", std::string("tanh"));
    return out(n);
  }
  return op(g, a.c_str(), {x});
}

struct InvertedResidual {
  int64_t c = 5, m = 19, p = 7, k = 3, stride = 1;  // p = 0: no projection
  std::vector<int64_t> pads{1, 1, 1, 1};
  std::string act1 = "Relu6", act2 = "Relu6", act3;
  bool residual = false;  // + x after the projection (p == c, stride 1, same size)
  int64_t expand_stride = 1, dilation = 1;
  int64_t group = 0;  // the middle conv's; 0: m (depthwise)
  bool expand = true;  // false: no expand conv, the middle conv reads x (c must be m; act1 unused)
};

struct BlockValues {
  ir::Node *expand, *depthwise, *project;  // expand / project null without one
  ir::Value* y;                            // the block's output
};

// [expand 1x1 (+ act1) ->] depthwise (or grouped) k x k (+ act2) -> [project 1x1 (+ x) (+ act3)], as ONNX ops.
BlockValues inverted_residual(ir::Graph& g, ir::Value* x, const InvertedResidual& b, uint32_t seed) {
  BlockValues v{};
  ir::Value* e = x;
  if (b.expand) {
    v.expand = conv_k(g, x, b.c, b.m, 1, seed, 1, {b.expand_stride, b.expand_stride});
    e = activate(g, out(v.expand), b.act1);
  }
  v.depthwise = conv_k(g, e, b.m, b.m, b.k, seed + 2, b.group ? b.group : b.m, {b.stride, b.stride}, b.pads);
  if (b.dilation != 1) v.depthwise->set_attr("dilations", std::vector<int64_t>{b.dilation, b.dilation});
  v.y = activate(g, out(v.depthwise), b.act2);
  if (b.p == 0) return v;
  v.project = conv_k(g, v.y, b.m, b.p, 1, seed + 4);
  v.y = out(v.project);
  if (b.residual) v.y = op(g, "Add", {v.y, x});
  v.y = activate(g, v.y, b.act3);
  return v;
}

auto pwdw_passes() {
  return P(passes::make_fuse_residual_add, passes::make_fuse_activation, passes::make_fuse_pointwise_depthwise);
}

TEST(FusePointwiseDepthwise, ExpandDepthwiseProjectWithAndWithoutResidual) {
  struct Case {
    InvertedResidual b;
    int64_t h, w;
  };
  std::vector<Case> cases;
  Case relu6;  // MobileNetV2: Relu6, Relu6, linear projection
  relu6.h = relu6.w = 37;
  cases.push_back(relu6);
  Case residual = relu6;  // MobileNetV2's repeated blocks: + x
  residual.b.c = residual.b.p = 7;
  residual.b.residual = true;
  cases.push_back(residual);
  Case hswish;  // MobileNetV3: HardSwish, 5x5 stride 2, asymmetric pads
  hswish.b.act1 = hswish.b.act2 = "HardSwish";
  hswish.b.k = 5;
  hswish.b.stride = 2;
  hswish.b.pads = {1, 0, 1, 2};
  hswish.h = 37, hswish.w = 41;
  cases.push_back(hswish);
  Case relu = residual;  // Relu everywhere, residual then Relu (the epilogue adds Z, then activates)
  relu.b.act1 = relu.b.act2 = relu.b.act3 = "Relu";
  relu.b.pads = {1, 0, 1, 2};
  relu.h = 14, relu.w = 14;  // output 14 x 14: exactly the threshold
  cases.push_back(relu);
  Case none = relu6;  // no activation at all
  none.b.act1 = none.b.act2 = "";
  none.b.k = 5;
  none.b.pads = {2, 2, 2, 2};
  cases.push_back(none);
  int i = 0;
  for (const Case& cs : cases) {
    SCOPED_TRACE(i++);
    check(
        [&](ir::Graph& g) {
          ir::Value* x = g.add_input("x", f32({2, cs.b.c, cs.h, cs.w}));
          g.add_output(inverted_residual(g, x, cs.b, 70).y);
        },
        pwdw_passes(), {"kestrel.FusedPointwiseDepthwise"}, 1e-4);
  }
}

TEST(FusePointwiseDepthwise, ExpandDepthwiseWithoutProjection) {
  InvertedResidual b;
  b.p = 0;
  // The depthwise output read by a global pool (a classifier head) and by a squeeze-excite gate.
  check(
      [&](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({1, 5, 32, 29}));
        g.add_output(op(g, "GlobalAveragePool", {inverted_residual(g, x, b, 71).y}));
      },
      pwdw_passes(), {"kestrel.FusedPointwiseDepthwise", "GlobalAveragePool"}, 1e-4);
  check(
      [&](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({1, 5, 32, 29}));
        ir::Value* d = inverted_residual(g, x, b, 72).y;
        ir::Value* gate = op(g, "Sigmoid", {op(g, "GlobalAveragePool", {d})});
        g.add_output(out(conv_k(g, op(g, "Mul", {d, gate}), 19, 7, 1, 73)));
      },
      pwdw_passes(), {"kestrel.FusedPointwiseDepthwise", "GlobalAveragePool", "Sigmoid", "Mul", "Conv"}, 1e-4);
  // Without a projection the expansion's input plane must be 28 x 28 (kMinUnprojectedPlane); with one, the
  // depthwise output's 14 x 14 (kMinProjectedPlane) is enough. So on 27 x 28 (and on 14 x 14) the squeeze-excite
  // block stays unfused, and on 14 x 14 the plain block fuses.
  for (int64_t h : {27, 14}) {
    SCOPED_TRACE(h);
    check(
        [&](ir::Graph& g) {
          ir::Value* x = g.add_input("x", f32({1, 5, h, 28}));
          ir::Value* d = inverted_residual(g, x, b, 75).y;
          ir::Value* gate = op(g, "Sigmoid", {op(g, "GlobalAveragePool", {d})});
          g.add_output(out(conv_k(g, op(g, "Mul", {d, gate}), 19, 7, 1, 76)));
        },
        pwdw_passes(), {"kestrel.FusedConv", "kestrel.FusedConv", "GlobalAveragePool", "Sigmoid", "Mul", "Conv"}, 1e-4);
  }
  check(
      [&](ir::Graph& g) {
        InvertedResidual full;
        g.add_output(inverted_residual(g, g.add_input("x", f32({1, 5, 14, 14})), full, 77).y);
      },
      pwdw_passes(), {"kestrel.FusedPointwiseDepthwise"}, 1e-4);
  // The depthwise output is a graph output: expand + depthwise fuse, the projection stays.
  check(
      [&](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({1, 5, 32, 29}));
        InvertedResidual full;
        BlockValues v = inverted_residual(g, x, full, 74);
        g.add_output(v.y);
        g.add_output(v.project->input(0));
      },
      pwdw_passes(), {"kestrel.FusedPointwiseDepthwise", "Conv"}, 1e-4);
}

// An expand conv that cannot fuse stays, and then its depthwise conv and projection fuse without it (the
// expanded value is the fused node's X).
TEST(FusePointwiseDepthwise, LeavesSharedValuesDilationSmallPlanesStridedExpandAndFedWeightsAlone) {
  auto single = [](InvertedResidual b, int64_t h, int64_t w, const Ops& want) {
    check(
        [&](ir::Graph& g) {
          ir::Value* x = g.add_input("x", f32({1, b.c, h, w}));
          g.add_output(inverted_residual(g, x, b, 80).y);
        },
        pwdw_passes(), want, 1e-4);
  };
  const Ops unfused = {"kestrel.FusedConv", "kestrel.FusedConv", "Conv"};
  const Ops expand_alone = {"kestrel.FusedConv", "kestrel.FusedPointwiseDepthwise"};
  InvertedResidual b;
  {
    SCOPED_TRACE("dilation 2");
    InvertedResidual d = b;
    d.dilation = 2;
    d.pads = {2, 2, 2, 2};
    single(d, 37, 37, unfused);
  }
  {
    SCOPED_TRACE("stride 2, output 13 x 15 < 14 x 14");
    InvertedResidual s2 = b;
    s2.stride = 2;
    single(s2, 26, 30, unfused);
  }
  {
    // Small planes (FastConvChain::small_plane: at most 14 x 14 outputs at stride 1, 8 x 8 at stride 2):
    // expand -> depthwise -> project fuses again.
    SCOPED_TRACE("output 8 x 8 and 13 x 15, and 16 x 15 with stride 2; 18 x 16 with stride 2 stays");
    single(b, 8, 8, {"kestrel.FusedPointwiseDepthwise"});
    single(b, 13, 15, {"kestrel.FusedPointwiseDepthwise"});
    InvertedResidual s2 = b;
    s2.stride = 2;
    single(s2, 16, 15, {"kestrel.FusedPointwiseDepthwise"});
    single(s2, 18, 16, unfused);
    InvertedResidual grouped = b;  // the small-plane path is depthwise only
    grouped.m = 32;
    grouped.group = 2;
    single(grouped, 7, 7, unfused);
  }
  {
    SCOPED_TRACE("expand stride 2: depthwise + projection fuse on the 37 x 37 plane");
    InvertedResidual s = b;
    s.expand_stride = 2;
    single(s, 74, 74, expand_alone);
  }
  {
    SCOPED_TRACE("7x7 depthwise");
    InvertedResidual k = b;
    k.k = 7;
    k.pads = {3, 3, 3, 3};
    single(k, 37, 37, unfused);
  }
  {
    SCOPED_TRACE("pads not smaller than the kernel");
    InvertedResidual p = b;
    p.pads = {3, 1, 1, 1};
    single(p, 37, 37, unfused);
  }
  {
    SCOPED_TRACE("GeluTanh (no fast epilogue) on the expansion: depthwise + projection fuse");
    InvertedResidual a = b;
    a.act1 = "GeluTanh";
    single(a, 37, 37, expand_alone);
  }
  {
    SCOPED_TRACE("GeluTanh (no fast epilogue) on the depthwise conv");
    InvertedResidual a = b;
    a.act2 = "GeluTanh";
    single(a, 37, 37, unfused);
  }
  {
    SCOPED_TRACE("the expanded value has two readers: depthwise + projection fuse");
    check(
        [&](ir::Graph& g) {
          ir::Value* x = g.add_input("x", f32({1, 5, 37, 37}));
          BlockValues v = inverted_residual(g, x, b, 82);
          g.add_output(v.y);
          g.add_output(op(g, "Neg", {v.depthwise->input(0)}));
        },
        pwdw_passes(), {"kestrel.FusedConv", "kestrel.FusedPointwiseDepthwise", "Neg"}, 1e-4);
  }
  {
    SCOPED_TRACE("the expanded value is a graph output: depthwise + projection fuse");
    check(
        [&](ir::Graph& g) {
          ir::Value* x = g.add_input("x", f32({1, 5, 37, 37}));
          BlockValues v = inverted_residual(g, x, b, 83);
          g.add_output(v.y);
          g.add_output(v.depthwise->input(0));
        },
        pwdw_passes(), expand_alone, 1e-4);
  }
  {
    SCOPED_TRACE("the depthwise output has two readers: expand + depthwise fuse");
    check(
        [&](ir::Graph& g) {
          ir::Value* x = g.add_input("x", f32({1, 5, 37, 37}));
          BlockValues v = inverted_residual(g, x, b, 84);
          g.add_output(v.y);
          g.add_output(op(g, "Neg", {v.project->input(0)}));
        },
        pwdw_passes(), {"kestrel.FusedPointwiseDepthwise", "Conv", "Neg"}, 1e-4);
  }
  for (int which : {1, 3}) {
    SCOPED_TRACE(which == 1 ? "W1 fed at run time" : "W2 fed at run time");
    check(
        [&](ir::Graph& g) {
          ir::Value* x = g.add_input("x", f32({1, 5, 37, 37}));
          BlockValues v = inverted_residual(g, x, b, 85);
          ir::Node* n = which == 1 ? v.expand : v.depthwise;
          n->set_input(1, g.add_input("w", n->input(1)->type()));
          g.add_output(v.y);
        },
        pwdw_passes(), which == 1 ? expand_alone : unfused, 1e-4);
  }
}

// The graph `build` makes after shape inference and pwdw_passes() (as `check` runs them).
std::unique_ptr<ir::Graph> pwdw_fused(const GraphFn& build) {
  auto g = std::make_unique<ir::Graph>();
  build(*g);
  EXPECT_TRUE(ir::infer_graph(*g, &evaluator()).is_ok());
  passes::PassManager pm;
  for (auto& p : pwdw_passes()) pm.add(std::move(p));
  pm.add(passes::make_dead_code_elimination());
  passes::PassContext ctx;
  ctx.evaluator = &evaluator();
  core::Status st = pm.run(*g, ctx);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return g;
}

std::vector<const ir::Node*> pwdw_nodes(const ir::Graph& g) {
  std::vector<const ir::Node*> v;
  for (const ir::Node* n : g.nodes())
    if (n->domain() == ir::kKestrelDomain && n->op_type() == "FusedPointwiseDepthwise") v.push_back(n);
  return v;
}

// MobileNet-V2 / V3's and MnasNet's first block (and ShuffleNet's downsampling branch): depthwise -> project 1x1
// with no expand conv before it fuses into one node without W1 / B1 / activation1 that reads the block input.
TEST(FusePointwiseDepthwise, DepthwiseProjectWithoutExpansion) {
  struct Case {
    const char* what;
    InvertedResidual b;
    int64_t h, w;
  };
  std::vector<Case> cases;
  Case v2{"MobileNetV2 features.1: dw 32 3x3 Relu -> 1x1 32 -> 16", {}, 112, 112};
  v2.b.expand = false;
  v2.b.c = v2.b.m = 32;
  v2.b.p = 16;
  v2.b.act2 = "Relu";
  cases.push_back(v2);
  Case res{"MobileNetV3-Large features.1: dw 16 Relu -> 1x1 16 -> 16, + x", v2.b, 56, 56};
  res.b.c = res.b.m = res.b.p = 16;
  res.b.residual = true;
  cases.push_back(res);
  Case s2{"stride 2, no activation on dw, Relu on the projection, odd plane", v2.b, 57, 57};
  s2.b.c = s2.b.m = 24;
  s2.b.p = 40;
  s2.b.stride = 2;
  s2.b.act2 = "";
  s2.b.act3 = "Relu";
  cases.push_back(s2);
  Case k5{"5x5 stride 2 HardSwish, asymmetric pads, 29 x 30 (output 14 x 14: the threshold)", v2.b, 29, 30};
  k5.b.c = k5.b.m = 19;
  k5.b.p = 7;
  k5.b.k = 5;
  k5.b.stride = 2;
  k5.b.pads = {1, 0, 1, 2};
  k5.b.act2 = "HardSwish";
  cases.push_back(k5);
  Case grouped{"grouped 3x3 (groups of 16), + x, Relu Relu", v2.b, 30, 29};
  grouped.b.c = grouped.b.m = grouped.b.p = 48;
  grouped.b.group = 3;
  grouped.b.residual = true;
  grouped.b.act3 = "Relu";
  cases.push_back(grouped);
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.what);
    std::string dw_name;
    GraphFn build = [&](ir::Graph& g) {
      ir::Value* x = g.add_input("x", f32({1, cs.b.c, cs.h, cs.w}));
      BlockValues v = inverted_residual(g, x, cs.b, 75);
      v.depthwise->set_name("dw");
      g.add_output(v.y);
    };
    check(build, pwdw_passes(), {"kestrel.FusedPointwiseDepthwise"}, 1e-4);
    auto g = pwdw_fused(build);
    std::vector<const ir::Node*> fused = pwdw_nodes(*g);
    ASSERT_EQ(fused.size(), 1u);
    const ir::Node& n = *fused[0];
    EXPECT_EQ(n.name(), "dw") << "the fused node keeps the first conv's name";
    EXPECT_EQ(n.input(0), g->inputs()[0]) << "X is the block input";
    EXPECT_EQ(n.input(1), nullptr) << "no W1";
    EXPECT_EQ(n.input(2), nullptr) << "no B1";
    EXPECT_FALSE(n.has_attr("activation1"));
    EXPECT_FALSE(n.has_attr("activation1_params"));
    EXPECT_EQ(n.has_attr("activation2"), !cs.b.act2.empty());
    EXPECT_EQ(n.has_attr("activation3"), !cs.b.act3.empty());
    ASSERT_NE(n.input(3), nullptr);
    ASSERT_TRUE(n.input(3)->is_constant());
    const int64_t cg = cs.b.group ? cs.b.m / cs.b.group : 1;
    EXPECT_EQ(n.input(3)->constant().dims(), (core::Dims{cs.b.m, cg, cs.b.k, cs.b.k}));
    ASSERT_NE(n.input(5), nullptr);
    EXPECT_EQ(n.input(5)->constant().dims(), (core::Dims{cs.b.p, cs.b.m, 1, 1}));
    EXPECT_EQ(n.input(7), cs.b.residual ? g->inputs()[0] : nullptr) << "the residual Z is the block input";
    EXPECT_EQ(n.attr_int("group", 0).value(), cs.b.group) << "group written only when grouped";
  }
}

TEST(FusePointwiseDepthwise, DepthwiseProjectWithoutExpansionRefusals) {
  InvertedResidual b;
  b.expand = false;
  b.c = b.m = 32;
  b.p = 16;
  b.act2 = "Relu";
  auto block = [&](ir::Graph& g, int64_t h, int64_t w) {
    return inverted_residual(g, g.add_input("x", f32({1, b.c, h, w})), b, 76);
  };
  const Ops unfused = {"kestrel.FusedConv", "Conv"};
  {
    SCOPED_TRACE("the depthwise output has a second reader");
    check(
        [&](ir::Graph& g) {
          BlockValues v = block(g, 56, 56);
          g.add_output(v.y);
          g.add_output(op(g, "Neg", {v.project->input(0)}));
        },
        pwdw_passes(), {"kestrel.FusedConv", "Conv", "Neg"}, 1e-4);
  }
  {
    SCOPED_TRACE("a squeeze-excite gate reads the depthwise output (MobileNetV3-Small, EfficientNet)");
    check(
        [&](ir::Graph& g) {
          ir::Value* x = g.add_input("x", f32({1, 32, 56, 56}));
          ir::Node* dw = conv_k(g, x, 32, 32, 3, 77, 32, {1, 1}, {1, 1, 1, 1});
          ir::Value* d = op(g, "Relu", {out(dw)});
          ir::Value* gate = op(g, "Sigmoid", {op(g, "GlobalAveragePool", {d})});
          g.add_output(out(conv_k(g, op(g, "Mul", {d, gate}), 32, 16, 1, 78)));
        },
        pwdw_passes(), {"kestrel.FusedConv", "GlobalAveragePool", "Sigmoid", "Mul", "Conv"}, 1e-4);
  }
  {
    SCOPED_TRACE("the depthwise output is a graph output");
    check(
        [&](ir::Graph& g) {
          BlockValues v = block(g, 56, 56);
          g.add_output(v.y);
          g.add_output(v.project->input(0));
        },
        pwdw_passes(), unfused, 1e-4);
  }
  {
    SCOPED_TRACE("output 13 x 15 < 14 x 14");
    check([&](ir::Graph& g) { g.add_output(block(g, 13, 15).y); }, pwdw_passes(), unfused, 1e-4);
  }
  {
    SCOPED_TRACE("stride 2 on 26 x 28: output 13 x 14 < 14 x 14");
    InvertedResidual s = b;
    s.stride = 2;
    check(
        [&](ir::Graph& g) {
          g.add_output(inverted_residual(g, g.add_input("x", f32({1, 32, 26, 28})), s, 79).y);
        },
        pwdw_passes(), unfused, 1e-4);
  }
  {
    SCOPED_TRACE("7x7 depthwise");
    InvertedResidual k = b;
    k.k = 7;
    k.pads = {3, 3, 3, 3};
    check(
        [&](ir::Graph& g) {
          g.add_output(inverted_residual(g, g.add_input("x", f32({1, 32, 40, 40})), k, 79).y);
        },
        pwdw_passes(), unfused, 1e-4);
  }
  {
    SCOPED_TRACE("no projection: a lone depthwise conv stays a FusedConv");
    InvertedResidual d = b;
    d.p = 0;
    check(
        [&](ir::Graph& g) {
          g.add_output(inverted_residual(g, g.add_input("x", f32({1, 32, 40, 40})), d, 79).y);
        },
        pwdw_passes(), {"kestrel.FusedConv"}, 1e-4);
  }
}

// Where the expand conv fuses, the chain keeps it: expand -> depthwise -> project is one 3-conv node (W1, B1 and
// activation1 given), never an expand conv left alone next to a depthwise + projection node. Here after a block
// without expansion, as MobileNetV2's features.1 -> features.2 (with a residual on the second block).
TEST(FusePointwiseDepthwise, ExpandPatternKeepsItsExpansion) {
  InvertedResidual first;
  first.expand = false;
  first.c = first.m = 32;
  first.p = 16;
  InvertedResidual second;
  second.c = second.p = 16;
  second.m = 96;
  second.residual = true;
  GraphFn build = [&](ir::Graph& g) {
    ir::Value* x = g.add_input("x", f32({1, 32, 40, 40}));
    ir::Value* y = inverted_residual(g, x, first, 81).y;
    g.add_output(inverted_residual(g, y, second, 82).y);
  };
  check(build, pwdw_passes(), {"kestrel.FusedPointwiseDepthwise", "kestrel.FusedPointwiseDepthwise"}, 1e-4);
  auto g = pwdw_fused(build);
  std::vector<const ir::Node*> fused = pwdw_nodes(*g);
  ASSERT_EQ(fused.size(), 2u);
  EXPECT_EQ(fused[0]->input(1), nullptr);
  EXPECT_FALSE(fused[0]->has_attr("activation1"));
  ASSERT_NE(fused[1]->input(1), nullptr) << "the second block's expansion is in its fused node";
  ASSERT_TRUE(fused[1]->input(1)->is_constant());
  EXPECT_EQ(fused[1]->input(1)->constant().dims(), (core::Dims{96, 16, 1, 1}));
  EXPECT_NE(fused[1]->input(2), nullptr);
  EXPECT_TRUE(fused[1]->has_attr("activation1"));
  EXPECT_EQ(fused[1]->input(0), fused[0]->output(0));
  EXPECT_EQ(fused[1]->input(7), fused[0]->output(0)) << "the residual is the first block's output";
}

// RegNet's block: 1x1 -> grouped 3x3 (groups of 16 channels) -> 1x1 + x, Relu. Fuses where the group width is a
// multiple of 16 (whole vectors on every ISA) up to 256, with k up to 7; the fused node carries `group`.
TEST(FusePointwiseDepthwise, GroupedMiddleConvFusesOnlyWithWholeVectorGroups) {
  InvertedResidual regnet;
  regnet.c = regnet.p = 24;
  regnet.m = 48;
  regnet.group = 3;  // groups of 16
  regnet.residual = true;
  regnet.act1 = regnet.act2 = regnet.act3 = "Relu";
  auto single = [](const InvertedResidual& b, int64_t h, int64_t w, const Ops& want, int64_t want_group) {
    check(
        [&](ir::Graph& g) {
          ir::Value* x = g.add_input("x", f32({1, b.c, h, w}));
          g.add_output(inverted_residual(g, x, b, 86).y);
        },
        pwdw_passes(), want, 1e-4);
    auto g = std::make_unique<ir::Graph>();
    g->add_output(inverted_residual(*g, g->add_input("x", f32({1, b.c, h, w})), b, 86).y);
    ASSERT_TRUE(ir::infer_graph(*g, &evaluator()).is_ok());
    passes::PassManager pm;
    for (auto& p : pwdw_passes()) pm.add(std::move(p));
    passes::PassContext ctx;
    ctx.evaluator = &evaluator();
    ASSERT_TRUE(pm.run(*g, ctx).is_ok());
    for (const ir::Node* n : g->nodes())
      if (n->op_type() == "FusedPointwiseDepthwise") {
        auto group = n->attr_int("group", 0);  // 0: not written (depthwise)
        ASSERT_TRUE(group.is_ok());
        EXPECT_EQ(*group, want_group);
      }
  };
  const Ops fused = {"kestrel.FusedPointwiseDepthwise"};
  const Ops unfused = {"kestrel.FusedConv", "kestrel.FusedConv", "kestrel.FusedConv"};
  {
    SCOPED_TRACE("groups of 16, stride 1, residual");
    single(regnet, 30, 29, fused, 3);
  }
  {
    SCOPED_TRACE("groups of 16, stride 2, no residual");
    InvertedResidual s = regnet;
    s.stride = 2;
    s.residual = false;
    single(s, 37, 36, fused, 3);
  }
  {
    SCOPED_TRACE("groups of 32, 7x7");
    InvertedResidual k = regnet;
    k.m = 64;
    k.group = 2;
    k.k = 7;
    k.pads = {3, 3, 3, 3};
    single(k, 30, 30, fused, 2);
  }
  {
    SCOPED_TRACE("depthwise: no group attribute");
    InvertedResidual d = regnet;
    d.group = 0;
    single(d, 30, 30, fused, 0);
  }
  {
    SCOPED_TRACE("groups of 8 (not whole AVX-512 vectors)");
    InvertedResidual e = regnet;
    e.m = 24;
    single(e, 30, 30, unfused, 0);
  }
  {
    SCOPED_TRACE("groups of 272 > 256");
    InvertedResidual w = regnet;
    w.m = 544;
    w.group = 2;
    single(w, 28, 28, unfused, 0);
  }
  {
    SCOPED_TRACE("group 1 (a full 3x3 conv)");
    InvertedResidual f = regnet;
    f.m = 32;
    f.group = 1;
    single(f, 30, 30, unfused, 0);
  }
}

// RegNet's downsampling block, act(proj(x) + f(x)) with proj a 1x1 stride-2 conv of x: the chain takes proj as its
// shortcut (W4, B4), from either operand order of the Add, with or without the expansion; what stops it.
TEST(FusePointwiseDepthwise, StridedShortcutJoinsTheChain) {
  InvertedResidual regnet;
  regnet.c = 24;
  regnet.m = 48;
  regnet.p = 40;
  regnet.group = 3;  // groups of 16
  regnet.stride = 2;
  regnet.act1 = regnet.act2 = "Relu";
  regnet.act3 = "";
  struct Case {
    const char* name;
    InvertedResidual b;
    bool proj_first = true, proj_stride1 = false, proj_reads_other = false, f_is_output = false;
    bool proj_relu = false;  // proj's own activation before the Add (then it is no shortcut)
    Ops want;
  };
  const Ops one = {"kestrel.FusedPointwiseDepthwise"};
  std::vector<Case> cases;
  cases.push_back({"proj(x) + f(x)", regnet, true, false, false, false, false, one});
  cases.push_back({"f(x) + proj(x)", regnet, false, false, false, false, false, one});
  InvertedResidual dw = regnet;  // no expansion: the depthwise reads x's 48 channels
  dw.expand = false;
  dw.c = dw.m = 48;
  dw.group = 0;
  cases.push_back({"no expansion, depthwise", dw, true, false, false, false, false, one});
  InvertedResidual s1 = regnet;  // stride 1 with a 1x1 shortcut (channel change only)
  s1.stride = 1;
  cases.push_back({"stride 1", s1, false, true, false, false, false, one});
  cases.push_back({"proj reads Relu(x)",
                   regnet,
                   true,
                   false,
                   true,
                   false,
                   false,
                   {"Relu", "kestrel.FusedPointwiseDepthwise", "kestrel.FusedConv"}});
  cases.push_back({"f(x) is a graph output",
                   regnet,
                   true,
                   false,
                   false,
                   true,
                   false,
                   {"kestrel.FusedPointwiseDepthwise", "kestrel.FusedConv"}});
  cases.push_back({"proj has its own Relu",
                   regnet,
                   false,
                   false,
                   false,
                   false,
                   true,
                   {"kestrel.FusedConv", "kestrel.FusedPointwiseDepthwise"}});
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.name);
    check(
        [&](ir::Graph& g) {
          ir::Value* x = g.add_input("x", f32({1, cs.b.c, 29, 30}));
          const int64_t ps = cs.b.stride;
          ir::Value* px = cs.proj_reads_other ? op(g, "Relu", {x}) : x;
          ir::Value* f = inverted_residual(g, x, cs.b, 90).y;
          ir::Value* proj = out(conv_k(g, px, cs.b.c, cs.b.p, 1, 96, 1, {ps, ps}));
          if (cs.proj_relu) proj = activate(g, proj, "Relu");
          g.add_output(activate(
              g, op(g, "Add", cs.proj_first ? std::vector<ir::Value*>{proj, f} : std::vector<ir::Value*>{f, proj}),
              "Relu"));
          if (cs.f_is_output) g.add_output(f);
        },
        pwdw_passes(), cs.want, 1e-4);
  }
}

// The whole -O2 pipeline on blocks above the plane threshold, then the fused graph on the fast chain and on the
// reference, with 1 and 2 threads, against the unfused graph on reference kernels.
TEST(FusePointwiseDepthwise, O2FusedChainMatchesUnfusedReference) {
  struct Case {
    InvertedResidual b;
    int64_t n, h, w;
  };
  std::vector<Case> cases;
  Case a;  // C 5, M 19, P 7, 3x3 stride 1, asymmetric pads, N 2
  a.b.pads = {1, 0, 1, 2};
  a.n = 2, a.h = 37, a.w = 37;
  cases.push_back(a);
  Case r = a;  // residual, 5x5, odd width, HardSwish
  r.b.c = r.b.p = 7;
  r.b.k = 5;
  r.b.pads = {2, 1, 2, 3};
  r.b.residual = true;
  r.b.act1 = r.b.act2 = "HardSwish";
  r.w = 39;
  cases.push_back(r);
  Case s = a;  // stride 2, 5x5, odd width, no projection
  s.b.k = 5;
  s.b.stride = 2;
  s.b.pads = {1, 0, 1, 2};
  s.b.p = 0;
  s.b.act1 = "Relu";
  s.b.act2 = "";
  s.w = 41;
  cases.push_back(s);
  Case t = a;  // stride 2, 3x3, projection with Relu after the residual-free projection
  t.b.stride = 2;
  t.b.act3 = "Relu";
  t.b.act1 = "LeakyRelu";
  t.n = 1, t.h = 38, t.w = 37;
  cases.push_back(t);
  Case regnet;  // RegNet: grouped 3x3 (groups of 16), Relu, residual
  regnet.b.c = regnet.b.p = 24;
  regnet.b.m = 48;
  regnet.b.group = 3;
  regnet.b.residual = true;
  regnet.b.act1 = regnet.b.act2 = regnet.b.act3 = "Relu";
  regnet.n = 2, regnet.h = 30, regnet.w = 29;
  cases.push_back(regnet);
  Case regnet2 = regnet;  // stride 2, asymmetric pads, no residual
  regnet2.b.stride = 2;
  regnet2.b.residual = false;
  regnet2.b.pads = {1, 0, 1, 1};
  regnet2.n = 1, regnet2.h = 37, regnet2.w = 40;
  cases.push_back(regnet2);
  // Without the expansion (depthwise -> project; the fused node reads X itself).
  Case v2 = a;  // MobileNetV2's features.1: dw 32 Relu6 -> 1x1 32 -> 16
  v2.b.expand = false;
  v2.b.c = v2.b.m = 32;
  v2.b.p = 16;
  v2.b.pads = {1, 1, 1, 1};
  v2.n = 1, v2.h = 112, v2.w = 112;
  cases.push_back(v2);
  Case v3 = v2;  // MobileNetV3-Large's features.1 with a 5x5 HardSwish dw: + x, odd width, N 2
  v3.b.c = v3.b.m = v3.b.p = 16;
  v3.b.k = 5;
  v3.b.pads = {2, 1, 2, 3};
  v3.b.residual = true;
  v3.b.act2 = "HardSwish";
  v3.n = 2, v3.h = 37, v3.w = 39;
  cases.push_back(v3);
  Case s2 = v2;  // stride 2, asymmetric pads, Relu on the projection
  s2.b.c = s2.b.m = 24;
  s2.b.p = 40;
  s2.b.stride = 2;
  s2.b.pads = {1, 0, 1, 2};
  s2.b.act2 = "";
  s2.b.act3 = "Relu";
  s2.n = 1, s2.h = 57, s2.w = 58;
  cases.push_back(s2);
  Case g3 = v2;  // grouped 3x3 (groups of 16), + x, Relu
  g3.b.c = g3.b.m = g3.b.p = 48;
  g3.b.group = 3;
  g3.b.residual = true;
  g3.b.act2 = g3.b.act3 = "Relu";
  g3.n = 2, g3.h = 30, g3.w = 29;
  cases.push_back(g3);
  int i = 0;
  for (const Case& cs : cases) {
    SCOPED_TRACE(i++);
    auto build = [&] {
      auto g = std::make_unique<ir::Graph>();
      ir::Value* x = g->add_input("x", f32({cs.n, cs.b.c, cs.h, cs.w}));
      g->add_output(inverted_residual(*g, x, cs.b, 90).y);
      return g;
    };
    Tensor x = rnd({cs.n, cs.b.c, cs.h, cs.w}, 91, -2, 2);
    auto run = [&](std::unique_ptr<ir::Graph> g, runtime::SessionOptions so, std::string* impl) {
      runtime::LoadedModel m;
      m.graph = std::move(g);
      auto sess = runtime::Session::from_model(std::move(m), so);
      EXPECT_TRUE(sess.is_ok()) << sess.status().to_string();
      std::vector<Tensor> outs;
      if (!sess.is_ok()) return outs;
      (*sess)->executor().set_profiler([&](const runtime::Executor::ProfileEvent& e) {
        if (e.node.op_type() == "FusedPointwiseDepthwise" && impl) *impl = e.impl;
      });
      const Tensor* in[] = {&x};
      core::Status st = (*sess)->run(in, outs);
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      return outs;
    };
    runtime::SessionOptions ref_opts;
    ref_opts.reference_only = true;
    std::vector<Tensor> want = run(build(), ref_opts, nullptr);
    ASSERT_EQ(want.size(), 1u);
    for (int threads : {1, 2})
      for (bool reference_only : {false, true}) {
        SCOPED_TRACE(std::to_string(threads) + (reference_only ? " threads, reference" : " threads, fast"));
        auto g = build();
        passes::PassContext ctx;
        ctx.evaluator = &evaluator();
        ASSERT_TRUE(passes::optimize(*g, 2, ctx).is_ok());
        ASSERT_EQ(op_list(*g), Ops{"kestrel.FusedPointwiseDepthwise"});
        EXPECT_EQ(g->nodes()[0]->input(1) != nullptr, cs.b.expand) << "W1 given exactly with the expansion";
        runtime::SessionOptions so;
        so.num_threads = threads;
        so.reference_only = reference_only;
        std::string impl;
        std::vector<Tensor> got = run(std::move(g), so, &impl);
        ASSERT_EQ(got.size(), 1u);
        if (reference_only) {
          EXPECT_EQ(impl, "reference");
        } else {
          EXPECT_EQ(impl.rfind("conv_chain.", 0), 0u) << impl << ": the fast chain should run";
        }
        ASSERT_EQ(got[0].dims(), want[0].dims());
        for (int64_t e = 0; e < got[0].num_elements(); ++e) {
          const double gv = got[0].data<float>()[e], wv = want[0].data<float>()[e];
          ASSERT_NEAR(gv, wv, 1e-4 * (1 + std::abs(wv))) << "element " << e;
        }
      }
  }
}

// --- Squeeze-excite scale folded into the projection ---

// x [n, c, h, w] -> s = Sigmoid(GlobalAveragePool(x)) -> Mul(x, s) (or Mul(s, x)) -> 1x1 conv c -> m, with a
// residual (m == c) and a Relu when asked.
ir::Value* se_block(ir::Graph& g, ir::Value* x, int64_t c, int64_t m, uint32_t seed, bool scale_first, bool residual,
                    bool relu) {
  ir::Value* s = op(g, "Sigmoid", {op(g, "GlobalAveragePool", {x})});
  ir::Value* y = op(g, "Mul", scale_first ? std::vector<ir::Value*>{s, x} : std::vector<ir::Value*>{x, s});
  ir::Node* n = g.add_node("Conv",
                           {y, g.add_constant(g.unique_value_name("w"), rnd({m, c, 1, 1}, seed)),
                            g.add_constant(g.unique_value_name("b"), rnd({m}, seed + 1))},
                           {g.unique_value_name("conv")});
  ir::Value* out_v = out(n);
  if (residual) out_v = op(g, "Add", {out_v, x});
  if (relu) out_v = op(g, "Relu", {out_v});
  return out_v;
}

TEST(FuseSeScale, MulFoldsIntoThePointwiseConv) {
  // Planes of at least 8 x M pixels; batch 1 and 2; residuals where M == C.
  for (const auto& [dims, m] : std::vector<std::pair<core::Dims, int64_t>>{
           {{1, 8, 6, 6}, 4}, {{2, 8, 4, 4}, 2}, {{1, 4, 6, 6}, 4}, {{2, 3, 5, 5}, 3}, {{1, 7, 3, 5}, 1}}) {
    for (int variant = 0; variant < 4; ++variant) {
      const bool scale_first = variant & 1, residual = (variant & 2) && dims[1] == m;
      SCOPED_TRACE(testing::Message() << "x " << core::dims_to_string(dims) << " m " << m << " variant " << variant);
      check(
          [&](ir::Graph& g) {
            ir::Value* x = g.add_input("x", f32(dims));
            g.add_output(
                se_block(g, x, dims[1], m, 50 + static_cast<uint32_t>(variant), scale_first, residual, variant == 3));
          },
          P(passes::make_fuse_residual_add, passes::make_fuse_activation, passes::make_fuse_se_scale),
          {"GlobalAveragePool", "Sigmoid", "kestrel.FusedConv"});
    }
  }
}

TEST(FuseSeScale, FusedMatchesTheReferenceKernels) {
  // The fast channel-scaled kernel against the reference FusedConv (X * S, then the conv) on random shapes.
  std::mt19937 rng(7);
  for (int t = 0; t < 12; ++t) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 2), h = 3 + static_cast<int64_t>(rng() % 15),
                  w = 3 + static_cast<int64_t>(rng() % 15);
    const int64_t max_m = h * w / 8;  // the pass's plane rule
    const int64_t c = 1 + static_cast<int64_t>(rng() % 37), m = 1 + static_cast<int64_t>(rng()) % max_m;
    const bool residual = c <= max_m && t % 3 == 0, relu = t % 2 == 1;
    const int64_t mm = residual ? c : m;
    SCOPED_TRACE(testing::Message() << "n " << n << " c " << c << " m " << mm << " h " << h << " w " << w);
    auto build = [&](ir::Graph& g) {
      ir::Value* x = g.add_input("x", f32({n, c, h, w}));
      g.add_output(se_block(g, x, c, mm, 70 + static_cast<uint32_t>(t), t % 2 == 0, residual, relu));
    };
    auto g = optimized_o2(build), g2 = optimized_o2(build);
    ASSERT_EQ(op_list(*g), (Ops{"GlobalAveragePool", "Sigmoid", "kestrel.FusedConv"}));
    Tensor x = rnd({n, c, h, w}, 90 + static_cast<uint32_t>(t), -2, 2);
    runtime::SessionOptions ro;
    ro.reference_only = true;
    std::vector<Tensor> fast = run_graph(std::move(g), {x}), ref = run_graph(std::move(g2), {x}, ro);
    ASSERT_EQ(fast.size(), 1u);
    ASSERT_EQ(ref.size(), 1u);
    ASSERT_EQ(fast[0].dims(), ref[0].dims());
    for (int64_t i = 0; i < fast[0].num_elements(); ++i)
      ASSERT_NEAR(fast[0].data<float>()[i], ref[0].data<float>()[i], 1e-4 * (1 + std::abs(ref[0].data<float>()[i])))
          << "element " << i;
  }
}

TEST(FuseSeScale, LeavesOtherScalesAndConvsAlone) {
  auto pass = [] { return P(passes::make_fuse_se_scale); };
  // The scaled value has another reader (the planes here are large enough: 36 >= 8 x 2).
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({1, 4, 6, 6}));
        ir::Value* y = op(g, "Mul", {x, op(g, "Sigmoid", {op(g, "GlobalAveragePool", {x})})});
        g.add_output(op(g, "Conv", {y, c(g, rnd({2, 4, 1, 1}, 80))}));
        g.add_output(op(g, "Relu", {y}));
      },
      pass(), {"GlobalAveragePool", "Sigmoid", "Mul", "Conv", "Relu"});
  // A plane smaller than 8 x M pixels (9 < 8 x 4).
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({1, 8, 3, 3}));
        ir::Value* y = op(g, "Mul", {x, op(g, "Sigmoid", {op(g, "GlobalAveragePool", {x})})});
        g.add_output(op(g, "Conv", {y, c(g, rnd({4, 8, 1, 1}, 84))}));
      },
      pass(), {"GlobalAveragePool", "Sigmoid", "Mul", "Conv"});
  // A spatial scale, a 3x3 conv, a strided 1x1 conv.
  check(
      [](ir::Graph& g) {
        ir::Value* x = g.add_input("x", f32({1, 4, 6, 6}));
        ir::Value* sp = g.add_input("sp", f32({1, 1, 6, 6}));
        g.add_output(op(g, "Conv", {op(g, "Mul", {x, sp}), c(g, rnd({2, 4, 1, 1}, 81))}));
        ir::Value* s = op(g, "Sigmoid", {op(g, "GlobalAveragePool", {x})});
        g.add_output(conv(g, op(g, "Mul", {x, s}), 4, 2, 82));
        ir::Node* strided = g.add_node("Conv", {op(g, "Mul", {x, s}), c(g, rnd({2, 4, 1, 1}, 83))}, {"strided"});
        strided->set_attr("strides", std::vector<int64_t>{2, 2});
        g.add_output(out(strided));
      },
      pass(), {"Mul", "Conv", "GlobalAveragePool", "Sigmoid", "Mul", "Conv", "Mul", "Conv"});
}

TEST(FusionPipeline, O2RunsEveryFusionAndKeepsNumerics) {
  // Conv -> BN -> (+ x) -> Relu, then Gemm + Sigmoid-gated: the whole -O2 pipeline.
  auto build = [](ir::Graph& g) {
    ir::Value* x = g.add_input("x", f32({1, 3, 4, 4}));
    ir::Value* y = op(g, "Relu", {op(g, "Add", {bn(g, conv(g, x, 3, 3, 40), 3, 41), x})});
    ir::Value* f = op(g, "Reshape", {y, c(g, i64({1, 48}))});
    ir::Value* h = op(g, "MatMul", {f, c(g, rnd({48, 5}, 42))});
    g.add_output(op(g, "Mul", {h, op(g, "Sigmoid", {h})}));
  };
  auto g = optimized_o2(build);
  EXPECT_EQ(op_list(*g), (Ops{"kestrel.FusedConv", "Reshape", "kestrel.FusedMatMul"}));
  auto ref = std::make_unique<ir::Graph>();
  build(*ref);
  Tensor x = rnd({1, 3, 4, 4}, 43);
  std::vector<Tensor> want = run_graph(std::move(ref), {x}), got = run_graph(std::move(g), {x});
  ASSERT_EQ(got.size(), 1u);
  for (int64_t i = 0; i < got[0].num_elements(); ++i)
    EXPECT_NEAR(got[0].data<float>()[i], want[0].data<float>()[i], 1e-4);
}

}  // namespace
}  // namespace kestrel

// Unit tests of the lower-qdq pass on small QDQ graphs built here: the node list after the -O2
// pipeline (int8 ops, no Q / DQ left between them), and the numbers against the un-lowered QDQ
// graph run with the float ops and the reference Q / DQ kernels: within one quantum of the output
// scale for one lowered op (a few quanta for chains, where one-quantum differences propagate).
// Negative cases: patterns with outside consumers or unsupported parameters stay float.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "ir/graph.h"
#include "ir/op_schema.h"
#include "passes/pass.h"
#include "runtime/executor.h"
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

std::vector<Tensor> run_graph(std::unique_ptr<ir::Graph> g, const std::vector<Tensor>& feed) {
  runtime::LoadedModel m;
  m.graph = std::move(g);
  auto s = runtime::Session::from_model(std::move(m));
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  if (!s.is_ok()) return {};
  std::vector<const Tensor*> in;
  for (const Tensor& t : feed) in.push_back(&t);
  std::vector<Tensor> out;
  core::Status st = (*s)->run(in, out);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return out;
}

// Graph-building helpers for QDQ graphs.
struct Q {
  ir::Graph& g;
  ir::Value* cf(float v) { return g.add_constant(g.unique_value_name("s"), Tensor::scalar<float>(v)); }
  ir::Value* cu8(uint8_t v) { return g.add_constant(g.unique_value_name("z"), Tensor::scalar<uint8_t>(v)); }
  ir::Value* node(const std::string& op, std::vector<ir::Value*> ins) {
    return g.add_node(op, std::move(ins), {g.unique_value_name(op)})->output(0);
  }
  ir::Node* raw(const std::string& op, std::vector<ir::Value*> ins) {
    return g.add_node(op, std::move(ins), {g.unique_value_name(op)});
  }
  ir::Value* q(ir::Value* x, float s, uint8_t z) { return node("QuantizeLinear", {x, cf(s), cu8(z)}); }
  ir::Value* dq(ir::Value* x, float s, uint8_t z) { return node("DequantizeLinear", {x, cf(s), cu8(z)}); }
  ir::Value* qdq(ir::Value* x, float s, uint8_t z) { return dq(q(x, s, z), s, z); }
  // DequantizeLinear of random int8 weights with per-channel scales along `axis`.
  ir::Value* wdq(core::Dims dims, int64_t axis, uint32_t seed, bool with_zp = true) {
    std::mt19937 rng(seed);
    Tensor w = Tensor::allocate(DType::kI8, dims).value();
    for (int64_t i = 0; i < w.num_elements(); ++i) w.data<int8_t>()[i] = static_cast<int8_t>(int(rng() % 255) - 127);
    const int64_t n = dims[static_cast<size_t>(axis)];
    Tensor s = Tensor::allocate(DType::kF32, {n}).value();
    Tensor z = Tensor::allocate(DType::kI8, {n}).value();
    for (int64_t i = 0; i < n; ++i) {
      s.data<float>()[i] = 0.002f + 0.004f * static_cast<float>(rng() % 100) / 100.f;
      z.data<int8_t>()[i] = 0;
    }
    std::vector<ir::Value*> ins{g.add_constant(g.unique_value_name("w"), std::move(w)),
                                g.add_constant(g.unique_value_name("ws"), std::move(s))};
    if (with_zp) ins.push_back(g.add_constant(g.unique_value_name("wz"), std::move(z)));
    ir::Node* d = raw("DequantizeLinear", ins);
    d->set_attr("axis", axis);
    return d->output(0);
  }
  ir::Value* input(core::Dims d) { return g.add_input(g.unique_value_name("x"), {DType::kF32, ir::Shape(d)}); }
};

// Builds the graph twice; runs the -O2 pipeline on one, checks its node list, and compares both on
// random inputs in [lo, hi). tol_quanta: allowed difference in units of `out_scale`.
void check(const GraphFn& build, const Ops& want_ops, float out_scale, double tol_quanta = 1.0, float lo = -2.f,
           float hi = 2.f) {
  auto make = [&] {
    auto g = std::make_unique<ir::Graph>();
    build(*g);
    return g;
  };
  auto g = make();
  passes::PassContext ctx;
  ctx.evaluator = &evaluator();
  core::Status st = passes::optimize(*g, 2, ctx);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(op_list(*g), want_ops);
  std::vector<Tensor> feed;
  uint32_t seed = 100;
  for (const ir::Value* v : g->inputs()) feed.push_back(rnd(v->shape().concrete(), seed++, lo, hi));
  std::vector<Tensor> want = run_graph(make(), feed);
  std::vector<Tensor> got = run_graph(std::move(g), feed);
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(got[o].dims(), want[o].dims());
    int off = 0;
    for (int64_t i = 0; i < got[o].num_elements(); ++i) {
      const double a = got[o].data<float>()[i], b = want[o].data<float>()[i];
      ASSERT_LE(std::abs(a - b), tol_quanta * out_scale * 1.0001) << "output " << o << " element " << i;
      off += a != b;
    }
    // Most elements agree exactly.
    EXPECT_LE(off, got[o].num_elements() / 10 + 1);
  }
}

ir::Node* conv_node(Q& q, ir::Value* x, ir::Value* w, ir::Value* b, std::vector<int64_t> pads,
                    std::vector<int64_t> strides, int64_t group) {
  std::vector<ir::Value*> ins{x, w};
  if (b) ins.push_back(b);
  ir::Node* n = q.raw("Conv", ins);
  n->set_attr("pads", pads);
  n->set_attr("strides", strides);
  n->set_attr("group", group);
  return n;
}

TEST(LowerQdq, ConvReluBecomesQConv) {
  check(
      [](ir::Graph& g) {
        Q q{g};
        ir::Value* x = q.qdq(q.input({1, 5, 9, 11}), 0.02f, 128);
        ir::Value* b = g.add_constant("bias", rnd({7}, 3));
        ir::Value* c = conv_node(q, x, q.wdq({7, 5, 3, 3}, 0, 1), b, {1, 1, 1, 1}, {1, 1}, 1)->output(0);
        g.add_output(q.qdq(q.node("Relu", {c}), 0.03f, 0));
      },
      {"QuantizeLinear", "kestrel.QConv", "DequantizeLinear"}, 0.03f);
}

TEST(LowerQdq, DepthwiseClipAndPointwise) {
  check(
      [](ir::Graph& g) {
        Q q{g};
        ir::Value* x = q.qdq(q.input({1, 6, 13, 12}), 0.015f, 120);
        ir::Value* c =
            conv_node(q, x, q.wdq({6, 1, 3, 3}, 0, 2), g.add_constant("b1", rnd({6}, 4)), {1, 1, 1, 1}, {2, 2}, 6)
                ->output(0);
        ir::Value* r = q.node("Clip", {c, q.cf(0.f), q.cf(6.f)});
        ir::Value* y = q.qdq(r, 0.025f, 0);
        ir::Value* p = conv_node(q, y, q.wdq({10, 6, 1, 1}, 0, 3, false), nullptr, {0, 0, 0, 0}, {1, 1}, 1)->output(0);
        g.add_output(q.qdq(p, 0.02f, 131));
      },
      {"QuantizeLinear", "kestrel.QConv", "kestrel.QConv", "DequantizeLinear"}, 0.02f, 3.0);
}

TEST(LowerQdq, GemmTransBAndMatMul) {
  check(
      [](ir::Graph& g) {
        Q q{g};
        ir::Value* x = q.qdq(q.input({3, 17}), 0.02f, 128);
        ir::Node* gm = q.raw("Gemm", {x, q.wdq({9, 17}, 0, 5), g.add_constant("gb", rnd({9}, 6))});
        gm->set_attr("transB", int64_t{1});
        g.add_output(q.qdq(gm->output(0), 0.05f, 127));
        ir::Value* a = q.qdq(q.input({2, 3, 8}), 0.02f, 100);
        ir::Value* m = q.node("MatMul", {a, q.wdq({8, 5}, 1, 7)});
        g.add_output(q.qdq(q.node("Relu", {m}), 0.01f, 0));
      },
      {"QuantizeLinear", "kestrel.QMatMul", "DequantizeLinear", "QuantizeLinear", "kestrel.QMatMul",
       "DequantizeLinear"},
      0.05f);
}

TEST(LowerQdq, AddMulBroadcast) {
  check(
      [](ir::Graph& g) {
        Q q{g};
        ir::Value* a = q.qdq(q.input({2, 3, 4, 5}), 0.02f, 128);
        ir::Value* b = q.qdq(q.input({1, 3, 1, 1}), 0.01f, 100);
        g.add_output(q.qdq(q.node("Relu", {q.node("Add", {a, b})}), 0.03f, 0));
        g.add_output(q.qdq(q.node("Mul", {a, b}), 0.005f, 128));
      },
      {"QuantizeLinear", "QuantizeLinear", "kestrel.QAdd", "DequantizeLinear", "kestrel.QMul", "DequantizeLinear"},
      0.03f);
}

// SiLU as x * Sigmoid(x): QMul(q, QLookup(q)) folds into one QLookup (either operand order);
// when the sigmoid's codes have another use, the QMul stays.
TEST(LowerQdq, SiluMulOfLookupBecomesOneLookup) {
  for (int order = 0; order < 2; ++order)
    check(
        [order](ir::Graph& g) {
          Q q{g};
          ir::Value* x = q.qdq(q.input({1, 4, 9, 9}), 0.03f, 120);
          ir::Value* sg = q.qdq(q.node("Sigmoid", {x}), 1.f / 255, 0);
          ir::Value* m = order == 0 ? q.node("Mul", {x, sg}) : q.node("Mul", {sg, x});
          g.add_output(q.qdq(m, 0.02f, 15));
        },
        {"QuantizeLinear", "kestrel.QLookup", "DequantizeLinear"}, 0.02f, 1.0, -4.f, 4.f);
  check(
      [](ir::Graph& g) {
        Q q{g};
        ir::Value* x = q.qdq(q.input({1, 4, 9, 9}), 0.03f, 120);
        ir::Value* sg = q.qdq(q.node("Sigmoid", {x}), 1.f / 255, 0);
        g.add_output(q.qdq(q.node("Mul", {x, sg}), 0.02f, 15));
        g.add_output(q.qdq(q.node("Add", {sg, sg}), 0.01f, 0));
      },
      {"QuantizeLinear", "kestrel.QLookup", "kestrel.QMul", "DequantizeLinear", "kestrel.QAdd", "DequantizeLinear"},
      0.02f, 1.0, -4.f, 4.f);
}

// ShuffleNet's channel shuffle between int8 convs: Reshape -> Transpose -> Reshape -> Slice after a
// DQ run on the u8 codes (the DQ sinks below each), and the final Q(DQ) pair with equal
// parameters cancels: no float left between the two QConvs.
TEST(LowerQdq, ChannelShuffleMovesBytes) {
  auto i64 = [](ir::Graph& g, std::vector<int64_t> v) {
    Tensor t = Tensor::allocate(DType::kI64, {static_cast<int64_t>(v.size())}).value();
    for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
    return g.add_constant(g.unique_value_name("c"), std::move(t));
  };
  check(
      [&](ir::Graph& g) {
        Q q{g};
        ir::Value* x = q.qdq(q.input({1, 8, 5, 5}), 0.02f, 128);
        ir::Value* c = q.qdq(conv_node(q, x, q.wdq({8, 8, 1, 1}, 0, 7), nullptr, {0, 0, 0, 0}, {1, 1}, 1)->output(0),
                             0.05f, 120);
        ir::Value* r = q.node("Reshape", {c, i64(g, {1, 2, 4, 5, 5})});
        ir::Node* tr = q.raw("Transpose", {r});
        tr->set_attr("perm", std::vector<int64_t>{0, 2, 1, 3, 4});
        ir::Value* r2 = q.node("Reshape", {tr->output(0), i64(g, {1, 8, 5, 5})});
        ir::Value* sl = q.node("Slice", {r2, i64(g, {4}), i64(g, {8}), i64(g, {1})});
        ir::Value* s = q.qdq(sl, 0.05f, 120);
        g.add_output(q.qdq(conv_node(q, s, q.wdq({6, 4, 1, 1}, 0, 9), nullptr, {0, 0, 0, 0}, {1, 1}, 1)->output(0),
                           0.05f, 128));
      },
      {"QuantizeLinear", "kestrel.QConv", "Reshape", "Transpose", "Reshape", "Slice", "kestrel.QConv",
       "DequantizeLinear"},
      0.05f);
}

TEST(LowerQdq, ConcatPoolsAndLookups) {
  check(
      [](ir::Graph& g) {
        Q q{g};
        ir::Value* a = q.qdq(q.input({1, 2, 7, 7}), 0.02f, 128);
        ir::Value* b = q.qdq(q.input({1, 3, 7, 7}), 0.01f, 100);
        ir::Node* cat = q.raw("Concat", {a, b});
        cat->set_attr("axis", int64_t{1});
        ir::Value* c = q.qdq(cat->output(0), 0.02f, 128);
        ir::Node* mp = q.raw("MaxPool", {c});
        mp->set_attr("kernel_shape", std::vector<int64_t>{3, 3});
        mp->set_attr("strides", std::vector<int64_t>{2, 2});
        ir::Value* m = q.qdq(mp->output(0), 0.02f, 128);
        g.add_output(q.qdq(q.node("GlobalAveragePool", {m}), 0.01f, 128));
        g.add_output(q.qdq(q.node("Sigmoid", {m}), 1.f / 256, 0));
        ir::Node* hs = q.raw("HardSigmoid", {m});
        hs->set_attr("alpha", 0.3f);
        g.add_output(q.qdq(hs->output(0), 1.f / 255, 0));
        g.add_output(q.qdq(q.node("HardSwish", {m}), 0.02f, 20));
        g.add_output(q.qdq(q.node("Clip", {m, q.cf(-0.5f), q.cf(1.f)}), 0.01f, 60));
      },
      {"QuantizeLinear", "QuantizeLinear", "kestrel.QConcat", "kestrel.QMaxPool", "kestrel.QGlobalAveragePool",
       "DequantizeLinear", "kestrel.QLookup", "DequantizeLinear", "kestrel.QLookup", "DequantizeLinear",
       "kestrel.QLookup", "DequantizeLinear", "kestrel.QLookup", "DequantizeLinear"},
      0.02f);
}

TEST(LowerQdq, ConcatOfEqualParamsIsPlainConcatAndRequantIsLookup) {
  check(
      [](ir::Graph& g) {
        Q q{g};
        ir::Value* a = q.qdq(q.input({2, 3}), 0.02f, 128);
        ir::Value* b = q.qdq(q.input({2, 4}), 0.02f, 128);
        ir::Node* cat = q.raw("Concat", {a, b});
        cat->set_attr("axis", int64_t{-1});
        ir::Value* c = q.qdq(cat->output(0), 0.02f, 128);
        // Q(DQ(t)) with other parameters: a requantizing lookup.
        g.add_output(q.qdq(c, 0.03f, 120));
      },
      {"QuantizeLinear", "QuantizeLinear", "Concat", "kestrel.QLookup", "DequantizeLinear"}, 0.03f);
}

TEST(LowerQdq, ConvsFeedingConcatRequantizeToItsParameters) {
  check(
      [](ir::Graph& g) {
        Q q{g};
        ir::Value* x = q.qdq(q.input({1, 4, 6, 6}), 0.02f, 128);
        ir::Value* a = conv_node(q, x, q.wdq({3, 4, 1, 1}, 0, 21), nullptr, {0, 0, 0, 0}, {1, 1}, 1)->output(0);
        ir::Value* b = conv_node(q, x, q.wdq({5, 4, 3, 3}, 0, 22), nullptr, {1, 1, 1, 1}, {1, 1}, 1)->output(0);
        ir::Value* ar = q.qdq(q.node("Relu", {a}), 0.01f, 0);
        ir::Value* br = q.qdq(q.node("Relu", {b}), 0.02f, 0);
        ir::Node* cat = q.raw("Concat", {ar, br});
        cat->set_attr("axis", int64_t{1});
        g.add_output(q.qdq(cat->output(0), 0.025f, 0));
      },
      {"QuantizeLinear", "kestrel.QConv", "kestrel.QConv", "Concat", "DequantizeLinear"}, 0.025f);
}

TEST(LowerQdq, OutsideConsumerKeepsFloat) {
  check(
      [](ir::Graph& g) {
        Q q{g};
        ir::Value* x = q.qdq(q.input({1, 3, 5, 5}), 0.02f, 128);
        ir::Value* c = conv_node(q, x, q.wdq({4, 3, 3, 3}, 0, 9), nullptr, {1, 1, 1, 1}, {1, 1}, 1)->output(0);
        g.add_output(q.qdq(c, 0.05f, 128));
        g.add_output(c);  // the float conv output is used outside the pattern
      },
      {"QuantizeLinear", "DequantizeLinear", "DequantizeLinear", "Conv", "QuantizeLinear", "DequantizeLinear"}, 0.05f);
}

TEST(LowerQdq, PerTensorWeightScaleAndDequantizedInt32Bias) {
  check(
      [](ir::Graph& g) {
        Q q{g};
        ir::Value* x = q.qdq(q.input({1, 4, 6, 6}), 0.02f, 128);
        Tensor w = Tensor::allocate(DType::kI8, {5, 4, 3, 3}).value();
        for (int64_t i = 0; i < w.num_elements(); ++i) w.data<int8_t>()[i] = static_cast<int8_t>((i * 37) % 255 - 127);
        ir::Value* wd = q.node("DequantizeLinear", {g.add_constant("w", std::move(w)), q.cf(0.004f)});
        Tensor b = Tensor::from_vector<int32_t>({100, -2000, 30, 0, 77}, {5});
        ir::Value* bd = q.node("DequantizeLinear", {g.add_constant("b", std::move(b)), q.cf(0.02f * 0.004f)});
        ir::Value* c = conv_node(q, x, wd, bd, {0, 0, 0, 0}, {1, 1}, 1)->output(0);
        g.add_output(q.qdq(c, 0.05f, 128));
      },
      {"QuantizeLinear", "kestrel.QConv", "DequantizeLinear"}, 0.05f);
}

// --- ONNX integer ops bound to the fast int8 kernels: fast session == reference session ---

Tensor u8_tensor(core::Dims d, uint32_t seed) {
  Tensor t = Tensor::allocate(DType::kU8, std::move(d)).value();
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(rng() & 255);
  return t;
}
Tensor i8_tensor(core::Dims d, uint32_t seed) {
  Tensor t = Tensor::allocate(DType::kI8, std::move(d)).value();
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<int8_t>()[i] = static_cast<int8_t>(int(rng() % 256) - 128);
  return t;
}

// Runs the graph with the fast kernels and with reference kernels only; outputs must agree to
// within `tol` (integers: exactly when 0).
void compare_fast_and_reference(const GraphFn& build, const std::vector<Tensor>& feed, double tol, const char* impl) {
  std::vector<std::vector<Tensor>> outs;
  for (bool ref : {false, true}) {
    auto g = std::make_unique<ir::Graph>();
    build(*g);
    ASSERT_TRUE(ir::infer_graph(*g, &evaluator()).is_ok());
    runtime::LoadedModel m;
    m.graph = std::move(g);
    runtime::SessionOptions so;
    so.reference_only = ref;
    auto s = runtime::Session::from_model(std::move(m), so);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    std::vector<const Tensor*> in;
    for (const Tensor& t : feed) in.push_back(&t);
    std::vector<Tensor> out;
    std::vector<std::string> impls;
    (*s)->executor().set_profiler([&](const runtime::Executor::ProfileEvent& e) { impls.push_back(e.impl); });
    ASSERT_TRUE((*s)->run(in, out).is_ok());
    if (!ref) {
      bool found = false;
      for (const auto& n : impls) found = found || n.find(impl) != std::string::npos;
      EXPECT_TRUE(found) << "no kernel named like " << impl << " ran";
    }
    outs.push_back(std::move(out));
  }
  ASSERT_EQ(outs[0].size(), outs[1].size());
  for (size_t o = 0; o < outs[0].size(); ++o) {
    ASSERT_EQ(outs[0][o].dims(), outs[1][o].dims());
    ASSERT_EQ(outs[0][o].dtype(), outs[1][o].dtype());
    for (int64_t i = 0; i < outs[0][o].num_elements(); ++i)
      ASSERT_LE(std::abs(outs[0][o].element_as_double(i) - outs[1][o].element_as_double(i)), tol) << "element " << i;
  }
}

TEST(Int8Bindings, QLinearConvAndConvIntegerUseTheFastKernels) {
  Tensor x = u8_tensor({2, 6, 9, 10}, 1);
  for (int64_t group : {1, 3, 6}) {
    for (const char* op : {"QLinearConv", "ConvInteger"}) {
      const bool ql = std::string(op) == "QLinearConv";
      compare_fast_and_reference(
          [&](ir::Graph& g) {
            Q q{g};
            ir::Value* xin = g.add_input("x", {DType::kU8, ir::Shape(core::Dims{2, 6, 9, 10})});
            const int64_t m = group == 6 ? 6 : 4 * (group == 3 ? 3 : 1);
            ir::Value* w = g.add_constant("w", i8_tensor({m, 6 / group, 3, 3}, 2));
            Tensor ws = Tensor::allocate(DType::kF32, {m}).value();
            for (int64_t i = 0; i < m; ++i) ws.data<float>()[i] = 0.001f * static_cast<float>(i + 1);
            Tensor wz = Tensor::allocate(DType::kI8, {m}).value();
            for (int64_t i = 0; i < m; ++i) wz.data<int8_t>()[i] = 0;
            std::vector<ir::Value*> ins;
            if (ql) {
              Tensor b = Tensor::allocate(DType::kI32, {m}).value();
              for (int64_t i = 0; i < m; ++i) b.data<int32_t>()[i] = static_cast<int32_t>(i * 1000 - 2500);
              ins = {xin,
                     q.cf(0.02f),
                     q.cu8(117),
                     w,
                     g.add_constant("ws", std::move(ws)),
                     g.add_constant("wz", std::move(wz)),
                     q.cf(0.1f),
                     q.cu8(128),
                     g.add_constant("b", std::move(b))};
            } else {
              ins = {xin, w, q.cu8(117), g.add_constant("wz", std::move(wz))};
            }
            ir::Node* n = q.raw(op, ins);
            n->set_attr("pads", std::vector<int64_t>{1, 0, 1, 2});
            n->set_attr("strides", std::vector<int64_t>{1, 2});
            n->set_attr("group", group);
            g.add_output(n->output(0));
          },
          {x}, ql ? 1.0 : 0.0, "qconv");
    }
  }
}

TEST(Int8Bindings, QLinearMatMulAndMatMulIntegerUseTheFastKernels) {
  Tensor a = u8_tensor({2, 5, 37}, 3);
  for (const char* op : {"QLinearMatMul", "MatMulInteger"}) {
    const bool ql = std::string(op) == "QLinearMatMul";
    compare_fast_and_reference(
        [&](ir::Graph& g) {
          Q q{g};
          ir::Value* ain = g.add_input("a", {DType::kU8, ir::Shape(core::Dims{2, 5, 37})});
          ir::Value* b = g.add_constant("b", i8_tensor({37, 11}, 4));
          Tensor bz = Tensor::allocate(DType::kI8, {11}).value();
          for (int64_t i = 0; i < 11; ++i) bz.data<int8_t>()[i] = 0;
          std::vector<ir::Value*> ins;
          if (ql) {
            Tensor bs = Tensor::allocate(DType::kF32, {11}).value();
            for (int64_t i = 0; i < 11; ++i) bs.data<float>()[i] = 0.002f * static_cast<float>(i + 1);
            ins = {ain,
                   q.cf(0.03f),
                   q.cu8(100),
                   b,
                   g.add_constant("bs", std::move(bs)),
                   g.add_constant("bz", std::move(bz)),
                   q.cf(0.2f),
                   q.cu8(120)};
          } else {
            ins = {ain, b, q.cu8(100), g.add_constant("bz", std::move(bz))};
          }
          g.add_output(q.raw(op, ins)->output(0));
        },
        {a}, ql ? 1.0 : 0.0, "qgemm");
  }
}

}  // namespace
}  // namespace kestrel

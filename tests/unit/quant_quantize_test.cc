// The QDQ rewrite on small graphs: where Q/DQ pairs go, weight quantization (per channel and per
// tensor, axes), fused Relu, graph outputs, --keep-float, the report and the automatic mode.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "format/kst_loader.h"
#include "quant/graph_runner.h"
#include "quant/quantize.h"
#include "runtime/session.h"

namespace kestrel::quant {
namespace {

core::Tensor random_tensor(core::Dims dims, uint32_t seed, float scale = 1.0f) {
  core::Tensor t = core::Tensor::allocate(core::DType::kF32, dims).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  for (float& v : t.span<float>()) v = u(rng);
  return t;
}

// x[1,2,6,6] -> Conv(3x2x3x3, bias) -> Relu -> MaxPool 2x2 -> GlobalAveragePool -> Flatten
//   -> Gemm(transB=1, [4,3]) -> out; plus x2 = Sigmoid(conv relu) added back: Add(relu, sig).
std::unique_ptr<ir::Graph> small_cnn() {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->add_input("x", {core::DType::kF32, ir::Shape(core::Dims{1, 2, 6, 6})});
  ir::Value* w = g->add_constant("w", random_tensor({3, 2, 3, 3}, 1));
  ir::Value* b = g->add_constant("b", random_tensor({3}, 2));
  ir::Node* conv = g->add_node("Conv", {x, w, b}, {"c"}, "conv");
  conv->set_attr("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Node* relu = g->add_node("Relu", {conv->output(0)}, {"r"}, "relu");
  ir::Node* sig = g->add_node("Sigmoid", {relu->output(0)}, {"s"}, "sig");
  ir::Node* add = g->add_node("Add", {relu->output(0), sig->output(0)}, {"a"}, "add");
  ir::Node* pool = g->add_node("MaxPool", {add->output(0)}, {"p"}, "pool");
  pool->set_attr("kernel_shape", std::vector<int64_t>{2, 2});
  pool->set_attr("strides", std::vector<int64_t>{2, 2});
  ir::Node* gap = g->add_node("GlobalAveragePool", {pool->output(0)}, {"gap"}, "gap");
  ir::Node* flat = g->add_node("Flatten", {gap->output(0)}, {"f"}, "flatten");
  ir::Value* gw = g->add_constant("gw", random_tensor({4, 3}, 3));
  ir::Value* gb = g->add_constant("gb", random_tensor({4}, 4));
  ir::Node* gemm = g->add_node("Gemm", {flat->output(0), gw, gb}, {"out"}, "gemm");
  gemm->set_attr("transB", int64_t{1});
  g->add_output(gemm->output(0));
  EXPECT_TRUE(runtime::prepare_graph(*g).is_ok());
  return g;
}

std::vector<Sample> samples_of(const core::Dims& dims, size_t n, uint32_t seed) {
  std::vector<Sample> s;
  for (size_t i = 0; i < n; ++i) s.push_back({random_tensor(dims, seed + static_cast<uint32_t>(i), 2.0f)});
  return s;
}
std::vector<Sample> samples(size_t n, uint32_t seed) {
  return samples_of({1, 2, 6, 6}, n, seed);
}

const ir::Node* producer_of(const ir::Graph& g, const std::string& value) {
  const ir::Value* v = g.find_value(value);
  return v ? v->producer() : nullptr;
}

TEST(QuantQdq, PlanFindsOpsAndFusesRelu) {
  auto g = small_cnn();
  QdqPlan p = plan_qdq(*g, {});
  std::vector<std::string> names;
  for (const QuantizedNode& n : p.nodes) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv", "sig", "add", "pool", "gap", "gemm"}));
  EXPECT_EQ(p.nodes[0].fused, "relu");
  EXPECT_EQ(p.nodes[0].output, "r");
  // Tensors: x, r (Conv+Relu), s, a, p, gap, f (Gemm input; Flatten itself stays float), out;
  // never c (inside the Conv -> Relu pair).
  EXPECT_EQ(p.tensors, (std::vector<std::string>{"x", "r", "s", "a", "p", "gap", "f", "out"}));
}

TEST(QuantQdq, InsertsStandardQdqPairsAndInt8Weights) {
  auto g = small_cnn();
  const core::Tensor w_float = g->find_value("w")->constant();
  auto s = samples(4, 10);
  QdqPlan plan = plan_qdq(*g, {});
  auto ranges = calibrate(*g, s, plan.tensors, {CalibMethod::kMinMax});
  ASSERT_TRUE(ranges.is_ok()) << ranges.status().message();
  auto float_copy = copy_graph(*g);
  ASSERT_TRUE(float_copy.is_ok());
  auto r = insert_qdq(*g, *ranges, {});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->quantized_weights, 2);
  EXPECT_EQ(r->tensors.size(), 8u);

  // The Conv reads a DequantizeLinear of its input and of an int8 weight (axis 0, zero points 0).
  const ir::Node* conv = producer_of(*g, "c");
  ASSERT_TRUE(conv);
  const ir::Node* dq_x = conv->input(0)->producer();
  ASSERT_TRUE(dq_x);
  EXPECT_EQ(dq_x->op_type(), "DequantizeLinear");
  const ir::Node* q_x = dq_x->input(0)->producer();
  ASSERT_TRUE(q_x);
  EXPECT_EQ(q_x->op_type(), "QuantizeLinear");
  EXPECT_EQ(q_x->input(0)->name(), "x");
  EXPECT_EQ(q_x->input(2)->constant().dtype(), core::DType::kU8);
  EXPECT_EQ(q_x->input(1), dq_x->input(1));  // same scale and zero point
  const ir::Node* dq_w = conv->input(1)->producer();
  ASSERT_TRUE(dq_w);
  EXPECT_EQ(dq_w->op_type(), "DequantizeLinear");
  EXPECT_EQ(*dq_w->attr_int("axis"), 0);
  const core::Tensor& wq = dq_w->input(0)->constant();
  const core::Tensor& ws = dq_w->input(1)->constant();
  const core::Tensor& wz = dq_w->input(2)->constant();
  ASSERT_EQ(wq.dtype(), core::DType::kI8);
  ASSERT_EQ(ws.dims(), (core::Dims{3}));
  ASSERT_EQ(wz.dtype(), core::DType::kI8);
  for (int c = 0; c < 3; ++c) {
    float amax = 0;
    for (int i = 0; i < 18; ++i) amax = std::max(amax, std::fabs(w_float.data<float>()[c * 18 + i]));
    EXPECT_FLOAT_EQ(ws.data<float>()[c], amax / 127);
    EXPECT_EQ(wz.data<int8_t>()[c], 0);
    for (int i = 0; i < 18; ++i) {
      const float orig = w_float.data<float>()[c * 18 + i];
      EXPECT_EQ(wq.data<int8_t>()[c * 18 + i], static_cast<int8_t>(std::lround(orig / ws.data<float>()[c])));
    }
  }
  // The bias stays float; the Relu reads the Conv directly and its output goes through Q -> DQ.
  EXPECT_EQ(conv->input(2)->name(), "b");
  EXPECT_EQ(conv->input(2)->constant().dtype(), core::DType::kF32);
  const ir::Node* relu = producer_of(*g, "r");
  EXPECT_EQ(relu->input(0), conv->output(0));
  ASSERT_EQ(g->find_value("r")->uses().size(), 1u);
  EXPECT_EQ(g->find_value("r")->uses()[0].node->op_type(), "QuantizeLinear");
  // Sigmoid and Add share the one pair of r.
  const ir::Node* sig = producer_of(*g, "s");
  const ir::Node* add = producer_of(*g, "a");
  EXPECT_EQ(sig->input(0), add->input(0));
  EXPECT_EQ(sig->input(0)->producer()->op_type(), "DequantizeLinear");
  // Gemm transB=1: weight axis 0. The graph output keeps its name on the dequantized value.
  const ir::Node* gemm = producer_of(*g, "out_float");
  ASSERT_TRUE(gemm);
  EXPECT_EQ(gemm->op_type(), "Gemm");
  EXPECT_EQ(*gemm->input(1)->producer()->attr_int("axis"), 0);
  EXPECT_EQ(g->outputs()[0]->name(), "out");
  EXPECT_EQ(g->outputs()[0]->producer()->op_type(), "DequantizeLinear");
  // Flatten is float: it reads the DQ of gap.
  const ir::Node* flat = producer_of(*g, "f");
  EXPECT_EQ(flat->input(0)->producer()->op_type(), "DequantizeLinear");

  // Runs, and stays close to the float model.
  auto a = compare_models(*float_copy->graph, *g, samples(3, 100));
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  EXPECT_GT(a->cosine, 0.999);
  EXPECT_EQ(a->top1_total, 3);
}

TEST(QuantQdq, MatMulAndGemmWeightAxes) {
  ir::Graph g;
  ir::Value* x = g.add_input("x", {core::DType::kF32, ir::Shape(core::Dims{2, 5})});
  ir::Node* mm = g.add_node("MatMul", {x, g.add_constant("b", random_tensor({5, 3}, 5))}, {"m"}, "mm");
  ir::Node* gm = g.add_node("Gemm", {mm->output(0), g.add_constant("gb", random_tensor({3, 7}, 6))}, {"y"}, "gemm");
  g.add_output(gm->output(0));
  ASSERT_TRUE(runtime::prepare_graph(g).is_ok());
  std::map<std::string, TensorRange> ranges = {{"x", {-1, 1}}, {"m", {-2, 2}}, {"y", {-3, 3}}};
  auto r = insert_qdq(g, ranges, {});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  const ir::Node* dq_mm = mm->input(1)->producer();
  const ir::Node* dq_gm = gm->input(1)->producer();
  EXPECT_EQ(*dq_mm->attr_int("axis"), 1);
  EXPECT_EQ(dq_mm->input(1)->constant().dims(), (core::Dims{3}));
  EXPECT_EQ(*dq_gm->attr_int("axis"), 1);
  EXPECT_EQ(dq_gm->input(1)->constant().dims(), (core::Dims{7}));
  // A missing range is an error naming the tensor.
  ir::Graph g2;
  ir::Value* x2 = g2.add_input("x", {core::DType::kF32, ir::Shape(core::Dims{2, 5})});
  g2.add_output(g2.add_node("MatMul", {x2, g2.add_constant("b", random_tensor({5, 3}, 5))}, {"m"}, "mm")->output(0));
  ASSERT_TRUE(runtime::prepare_graph(g2).is_ok());
  auto bad = insert_qdq(g2, {{"x", {-1, 1}}}, {});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("'m'"), std::string::npos);
}

TEST(QuantQdq, PerTensorAndKeepFloat) {
  auto g = small_cnn();
  auto s = samples(2, 20);
  QdqOptions o;
  o.per_tensor = true;
  o.keep_float = {"gemm"};
  QdqPlan plan = plan_qdq(*g, o);
  auto ranges = calibrate(*g, s, plan.tensors, {CalibMethod::kMinMax});
  ASSERT_TRUE(ranges.is_ok());
  auto r = insert_qdq(*g, *ranges, o);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->quantized_weights, 1);
  const ir::Node* conv = producer_of(*g, "c");
  const ir::Node* dq_w = conv->input(1)->producer();
  EXPECT_FALSE(dq_w->has_attr("axis"));
  EXPECT_EQ(dq_w->input(1)->constant().rank(), 0);
  // The kept Gemm reads its float weight; its output is not quantized.
  const ir::Node* gemm = producer_of(*g, "out");
  ASSERT_TRUE(gemm);
  EXPECT_EQ(gemm->op_type(), "Gemm");
  EXPECT_TRUE(gemm->input(1)->is_constant());
}

// small_cnn's tensors: x 72 elements, r / s / a 108, p 27, gap / f 3, out 4; the conv does 18 multiply-adds per
// output element. A float set pays its multiply-adds and kBoundaryMacs per element of every tensor with int8 on one
// side and float on the other (the graph input and output, and the Flatten between gap and gemm, are float).
TEST(QuantQdq, FloatSetCostCountsMultiplyAddsAndEdges) {
  auto g = small_cnn();
  const std::vector<QuantizedNode> nodes = plan_qdq(*g, {}).nodes;
  const double e = kBoundaryMacs;
  // All int8: x in, gap -> Flatten, Flatten -> gemm, out.
  EXPECT_DOUBLE_EQ(float_set_cost(*g, nodes, {}), e * (72 + 3 + 3 + 4));
  // The conv in float: its 108 x 18 multiply-adds; x is float on both sides, r float to int8.
  EXPECT_DOUBLE_EQ(float_set_cost(*g, nodes, {"conv"}), 108 * 18 + e * (108 + 3 + 3 + 4));
  // Cutting inside the block costs an edge more than closing it after the Add.
  EXPECT_DOUBLE_EQ(float_set_cost(*g, nodes, {"conv", "sig"}), 108 * 18 + 108 + e * (108 + 108 + 3 + 3 + 4));
  EXPECT_DOUBLE_EQ(float_set_cost(*g, nodes, {"conv", "sig", "add"}), 108 * 18 + 108 + 108 + e * (108 + 3 + 3 + 4));
  // The Gemm in float: 4 outputs x 3; f and out are float on both sides now.
  EXPECT_DOUBLE_EQ(float_set_cost(*g, nodes, {"gemm"}), 4 * 3 + e * (72 + 3));
}

TEST(QuantQdq, PtqReportAndAutoMode) {
  auto g = small_cnn();
  auto calib = samples(6, 30), hold = samples(3, 60);
  PtqOptions o;
  o.calib.method = CalibMethod::kPercentile;
  auto r = quantize_ptq(*g, calib, hold, o);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->layers.size(), 8u);
  for (const LayerStat& l : r->layers) {
    EXPECT_GT(l.cosine, 0.99) << l.tensor;
    EXPECT_GT(l.snr_db, 15) << l.tensor;
  }
  EXPECT_TRUE(r->auto_float.empty());
  // An unreachable target keeps every layer in float, most sensitive first.
  o.target_cosine = 1.0;
  auto a = quantize_ptq(*g, calib, hold, o);
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  EXPECT_EQ(a->auto_float.size(), 6u);
  EXPECT_TRUE(a->qdq.nodes.empty());
  EXPECT_NEAR(a->holdout_cosine, 1.0, 1e-6);
  // A target the int8 model meets: the cosine the automatic mode measured is the one of the model
  // `kestrel quantize` writes (lowered at -O2, int8 kernels), not of the QDQ graph's simulation.
  o.target_cosine = 0.5;
  auto b = quantize_ptq(*g, calib, hold, o);
  ASSERT_TRUE(b.is_ok()) << b.status().message();
  EXPECT_TRUE(b->auto_float.empty());
  auto kst = optimized_kst(*b->graph, int8_kst_options(o));
  ASSERT_TRUE(kst.is_ok());
  auto lowered = format::load_kst_memory(kst->data(), kst->size(), "int8.kst");
  ASSERT_TRUE(lowered.is_ok());
  auto fo = run_model(*g, hold), qo = run_model(*lowered->graph, hold);
  ASSERT_TRUE(fo.is_ok() && qo.is_ok());
  EXPECT_DOUBLE_EQ(b->holdout_cosine, compare_outputs(*fo, *qo).cosine);
}

TEST(QuantQdq, OptimizedKstKeepsInt8Weights) {
  auto g = small_cnn();
  auto s = samples(3, 40);
  auto r = quantize_ptq(*g, s, {}, {});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  auto f = optimized_kst(*g);
  auto q = optimized_kst(*r->graph);
  ASSERT_TRUE(f.is_ok() && q.is_ok());
  auto sess = runtime::Session::open_memory(q->data(), q->size());
  ASSERT_TRUE(sess.is_ok()) << sess.status().message();
  int int8_constants = 0;
  for (const ir::Value* v : (*sess)->graph().constants()) int8_constants += v->constant().dtype() == core::DType::kI8;
  EXPECT_EQ(int8_constants, 4);  // two weights and their zero points
  // The file as written (weights dequantized at run time) computes what the measuring runs
  // (weights dequantized once into constants) compute.
  auto written = copy_graph((*sess)->graph());
  ASSERT_TRUE(written.is_ok());
  auto folded = run_model(*written->graph, s);
  ASSERT_TRUE(folded.is_ok()) << folded.status().message();
  for (size_t i = 0; i < s.size(); ++i) {
    std::vector<const core::Tensor*> ins = {&s[i][0]};
    std::vector<core::Tensor> outs;
    ASSERT_TRUE((*sess)->run(ins, outs).is_ok());
    ASSERT_EQ(outs[0].num_elements(), (*folded)[i][0].num_elements());
    for (int64_t k = 0; k < outs[0].num_elements(); ++k)
      EXPECT_NEAR(outs[0].data<float>()[k], (*folded)[i][0].data<float>()[k], 1e-5);
  }
}

// The weights of a layer left in float are stored as f16 in the int8 file, and only those (the
// widened bytes are conv1's weights); the outputs stay close to those of the f32-stored file.
TEST(QuantQdq, FloatLayerWeightsStoredAsF16) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->add_input("x", {core::DType::kF32, ir::Shape(core::Dims{1, 8, 6, 6})});
  ir::Node* c1 =
      g->add_node("Conv", {x, g->add_constant("w1", random_tensor({64, 8, 3, 3}, 1, 0.2f))}, {"c1"}, "conv1");
  c1->set_attr("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Node* r = g->add_node("Relu", {c1->output(0)}, {"r"}, "relu");
  ir::Node* c2 = g->add_node("Conv", {r->output(0), g->add_constant("w2", random_tensor({64, 64, 1, 1}, 2, 0.2f))},
                             {"y"}, "conv2");
  g->add_output(c2->output(0));
  ASSERT_TRUE(runtime::prepare_graph(*g).is_ok());
  auto s = samples_of({1, 8, 6, 6}, 4, 5);
  PtqOptions o;
  o.qdq.keep_float = {"conv1"};
  auto q = quantize_ptq(*g, s, {}, o);
  ASSERT_TRUE(q.is_ok()) << q.status().message();
  ASSERT_EQ(q->qdq.nodes.size(), 1u);
  auto half = optimized_kst(*q->graph, int8_kst_options(o));
  o.fp16_float_weights = false;
  auto full = optimized_kst(*q->graph, int8_kst_options(o));
  ASSERT_TRUE(half.is_ok() && full.is_ok());
  EXPECT_GE(full->size() - half->size(), 64u * 8 * 9 * 2 - 64);  // conv1's weights, half the bytes
  auto mh = format::load_kst_memory(half->data(), half->size(), "half.kst");
  auto mf = format::load_kst_memory(full->data(), full->size(), "full.kst");
  ASSERT_TRUE(mh.is_ok() && mf.is_ok());
  EXPECT_EQ(mh->info.widened_bytes, 64u * 8 * 9 * 4);
  EXPECT_EQ(mf->info.widened_bytes, 0u);
  auto oh = run_model(*mh->graph, s), of = run_model(*mf->graph, s);
  ASSERT_TRUE(oh.is_ok() && of.is_ok());
  Agreement a = compare_outputs(*of, *oh);
  EXPECT_GT(a.cosine, 0.9999);
  EXPECT_LT(a.cosine, 1.0) << "f16 weights should change the float layer's output";
}

// The int8 file lets its float layers compute in bf16 (the metadata the session reads), unless told not to.
TEST(QuantQdq, FloatLayersMayRunInBf16) {
  PtqOptions o;
  EXPECT_EQ(int8_kst_options(o).metadata.at(runtime::kFloatMathKey), "bf16");
  o.bf16_float_layers = false;
  EXPECT_EQ(int8_kst_options(o).metadata.count(runtime::kFloatMathKey), 0u);
}

}  // namespace
}  // namespace kestrel::quant

// Tests of Kestrel's fused ops (kestrel.FusedConv / FusedGemm / FusedMatMul / FusedPointwiseDepthwise /
// Attention) and the ONNX Gelu op against naive computations written here, plus their load-time checks.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ir/graph.h"
#include "ir/op_schema.h"
#include "kernels/cpu/gemm/bf16_gemm.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::DType;
using core::Tensor;
using Attrs = std::map<std::string, ir::Attribute>;

Tensor random_tensor(core::Dims dims, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  Tensor t = Tensor::allocate(DType::kF32, std::move(dims)).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// Runs one node (all inputs fed at run time unless `constant` says otherwise; undefined tensors =
// omitted inputs).
core::Result<Tensor> run_one(const std::string& domain, const std::string& op, const std::vector<Tensor>& inputs,
                             const Attrs& attrs, const std::vector<bool>& constant = {},
                             const runtime::SessionOptions& so = {}) {
  auto g = std::make_unique<ir::Graph>("test");
  std::vector<ir::Value*> ins;
  std::vector<const Tensor*> feed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      ins.push_back(nullptr);
      continue;
    }
    if (i < constant.size() && constant[i]) {
      ins.push_back(g->add_constant("in" + std::to_string(i), inputs[i]));
      continue;
    }
    ins.push_back(g->add_input("in" + std::to_string(i), {inputs[i].dtype(), ir::Shape(inputs[i].dims())}));
    feed.push_back(&inputs[i]);
  }
  ir::Node* n = g->add_node(op, ins, {"y"}, "fused_under_test", domain);
  for (const auto& [k, a] : attrs) n->set_attr(k, a);
  g->add_output(n->output(0));
  runtime::LoadedModel m;
  m.graph = std::move(g);
  KESTREL_ASSIGN_OR_RETURN(auto s, runtime::Session::from_model(std::move(m), so));
  std::vector<Tensor> outs;
  KESTREL_RETURN_IF_ERROR(s->run(feed, outs));
  return std::move(outs[0]);
}

struct Act {
  const char* name;
  std::vector<float> params;
};

double act_naive(const Act& a, double x) {
  const std::string n = a.name;
  if (n.empty()) return x;
  if (n == "Relu") return x > 0 ? x : 0;
  if (n == "Clip") return std::min<double>(std::max<double>(x, a.params[0]), a.params[1]);
  if (n == "LeakyRelu") return x >= 0 ? x : (a.params.empty() ? 0.01 : a.params[0]) * x;
  if (n == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (n == "HardSigmoid") {
    double al = a.params.empty() ? 0.2 : a.params[0], be = a.params.empty() ? 0.5 : a.params[1];
    return std::max(0.0, std::min(1.0, al * x + be));
  }
  if (n == "HardSwish") return x * std::max(0.0, std::min(1.0, x / 6 + 0.5));
  if (n == "Silu") return x / (1 + std::exp(-x));
  if (n == "Gelu") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  if (n == "GeluTanh") return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  if (n == "Tanh") return std::tanh(x);
  ADD_FAILURE() << "no naive form for " << n;
  return 0;
}

const std::vector<Act>& all_acts() {
  static const std::vector<Act> a = {{"", {}},
                                     {"Relu", {}},
                                     {"Clip", {0.f, 0.6f}},
                                     {"LeakyRelu", {0.3f}},
                                     {"LeakyRelu", {}},
                                     {"Sigmoid", {}},
                                     {"HardSigmoid", {0.25f, 0.4f}},
                                     {"HardSigmoid", {}},
                                     {"HardSwish", {}},
                                     {"Silu", {}},
                                     {"Gelu", {}},
                                     {"GeluTanh", {}},
                                     {"Tanh", {}}};
  return a;
}

void add_act(Attrs& attrs, const Act& a) {
  if (*a.name) attrs["activation"] = std::string(a.name);
  if (!a.params.empty()) attrs["activation_params"] = a.params;
}

void expect_close(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want[i], 1e-4 + 1e-4 * std::abs(want[i])) << what << " at " << i;
}

TEST(FusedConv, MatchesNaiveConvResidualAndEveryActivation) {
  // X [2,4,5,7], W [6,2,3,3] with group 2, stride (1,2), pads 1: Y [2,6,5,4].
  const int64_t N = 2, C = 4, H = 5, W = 7, M = 6, G = 2, KH = 3, KW = 3, SH = 1, SW = 2;
  const int64_t OH = (H + 2 - KH) / SH + 1, OW = (W + 2 - KW) / SW + 1;
  Tensor x = random_tensor({N, C, H, W}, 1), w = random_tensor({M, C / G, KH, KW}, 2), b = random_tensor({M}, 3);
  Tensor z = random_tensor({N, M, OH, OW}, 4);
  std::vector<double> conv(static_cast<size_t>(N * M * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = b.data<float>()[m];
          const int64_t g = m / (M / G);
          for (int64_t c = 0; c < C / G; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t ih = oh * SH - 1 + kh, iw = ow * SW - 1 + kw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += double(x.data<float>()[((n * C + g * (C / G) + c) * H + ih) * W + iw]) *
                       w.data<float>()[((m * (C / G) + c) * KH + kh) * KW + kw];
              }
          conv[static_cast<size_t>(((n * M + m) * OH + oh) * OW + ow)] = acc;
        }
  for (bool residual : {false, true})
    for (const Act& a : all_acts()) {
      Attrs attrs{
          {"group", int64_t{G}}, {"strides", std::vector<int64_t>{SH, SW}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
      add_act(attrs, a);
      std::vector<Tensor> ins = {x, w, b};
      if (residual) ins.push_back(z);
      auto y = run_one("kestrel", "FusedConv", ins, attrs);
      ASSERT_TRUE(y.is_ok()) << y.status().to_string();
      std::vector<double> want(conv.size());
      for (size_t i = 0; i < want.size(); ++i) want[i] = act_naive(a, conv[i] + (residual ? z.data<float>()[i] : 0));
      expect_close(*y, want, std::string("FusedConv act=") + a.name + (residual ? " +Z" : ""));
    }
}

// FusedConv with a channel scale S (a squeeze-excite gate folded into a 1x1 projection) and constant weights: the
// fast kernel scales the weights per image; with bf16 float math it rounds the scaled weights and X to bf16.
TEST(FusedConv, ChannelScaledPointwiseInF32AndBf16) {
  const int64_t N = 2, C = 40, H = 9, W = 15, M = 32, HW = H * W;
  Tensor x = random_tensor({N, C, H, W}, 31), w = random_tensor({M, C, 1, 1}, 32), b = random_tensor({M}, 33);
  Tensor z = random_tensor({N, M, H, W}, 34), sc = random_tensor({N, C, 1, 1}, 35, 0.f, 1.f);
  const Act act{"HardSwish", {}};
  for (const char* math : {"f32", "bf16"}) {
    const bool bf16 = std::string(math) == "bf16" && kernels::cpu::bf16_gemm_available();
    auto round = [&](float v) { return bf16 ? kernels::cpu::bf16_round(v) : v; };
    std::vector<double> want(static_cast<size_t>(N * M * HW));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t p = 0; p < HW; ++p) {
          double acc = b.data<float>()[m];
          for (int64_t c = 0; c < C; ++c)
            acc += double(round(w.data<float>()[m * C + c] * sc.data<float>()[n * C + c])) *
                   round(x.data<float>()[(n * C + c) * HW + p]);
          const size_t i = static_cast<size_t>((n * M + m) * HW + p);
          want[i] = act_naive(act, acc + z.data<float>()[i]);
        }
    Attrs attrs;
    add_act(attrs, act);
    runtime::SessionOptions so;
    so.float_math = math;
    auto y = run_one("kestrel", "FusedConv", {x, w, b, z, sc}, attrs, {false, true}, so);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    expect_close(*y, want, std::string("channel-scaled FusedConv, float math ") + math);
  }
}

TEST(FusedMatMul, BiasResidualActivationAndBatchBroadcast) {
  // A [2,3,5] x B [5,4] and A [3,5] x B [2,5,4] (B broadcast the other way), N = 4.
  for (bool batched_b : {false, true}) {
    Tensor a = batched_b ? random_tensor({3, 5}, 5) : random_tensor({2, 3, 5}, 5);
    Tensor b = batched_b ? random_tensor({2, 5, 4}, 6) : random_tensor({5, 4}, 6);
    Tensor bias = random_tensor({4}, 7), z = random_tensor({2, 3, 4}, 8);
    std::vector<double> mm(24);
    for (int64_t bb = 0; bb < 2; ++bb)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < 5; ++k)
            acc += double(a.data<float>()[(batched_b ? 0 : bb * 15) + i * 5 + k]) *
                   b.data<float>()[(batched_b ? bb * 20 : 0) + k * 4 + j];
          mm[static_cast<size_t>((bb * 3 + i) * 4 + j)] = acc;
        }
    for (int with = 0; with < 4; ++with)  // bit 0 bias, bit 1 residual
      for (const Act& act : all_acts()) {
        Attrs attrs;
        add_act(attrs, act);
        std::vector<Tensor> ins = {a, b, (with & 1) ? bias : Tensor()};
        if (with & 2) ins.push_back(z);
        auto y = run_one("kestrel", "FusedMatMul", ins, attrs);
        ASSERT_TRUE(y.is_ok()) << y.status().to_string();
        std::vector<double> want(24);
        for (size_t i = 0; i < 24; ++i)
          want[i] = act_naive(
              act, mm[i] + ((with & 1) ? bias.data<float>()[i % 4] : 0) + ((with & 2) ? z.data<float>()[i] : 0));
        expect_close(*y, want, std::string("FusedMatMul act=") + act.name + " with=" + std::to_string(with));
      }
  }
}

TEST(FusedGemm, TransposesAlphaBetaBiasAndActivation) {
  Tensor a = random_tensor({5, 3}, 9), b = random_tensor({4, 5}, 10), c = random_tensor({4}, 11);
  for (const Act& act : all_acts()) {
    Attrs attrs{{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}};
    add_act(attrs, act);
    auto y = run_one("kestrel", "FusedGemm", {a, b, c}, attrs);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    std::vector<double> want(12);
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < 5; ++k) acc += double(a.data<float>()[k * 3 + i]) * b.data<float>()[j * 5 + k];
        want[static_cast<size_t>(i * 4 + j)] = act_naive(act, 0.5 * acc + 2.0 * c.data<float>()[j]);
      }
    expect_close(*y, want, std::string("FusedGemm act=") + act.name);
  }
}

TEST(Attention, MatchesNaiveSoftmaxWithBroadcastAndMask) {
  const int64_t B = 2, H = 3, SQ = 4, SK = 5, D = 6, DV = 3;
  Tensor q = random_tensor({B, H, SQ, D}, 12), k = random_tensor({B, 1, SK, D}, 13);
  Tensor v = random_tensor({1, H, SK, DV}, 14), mask = random_tensor({SQ, SK}, 15, -3, 0);
  mask.data<float>()[0] = -INFINITY;  // a masked-out key
  const float scale = 0.4f;
  for (bool with_mask : {false, true}) {
    std::vector<Tensor> ins = {q, k, v};
    if (with_mask) ins.push_back(mask);
    auto y = run_one("kestrel", "Attention", ins, {{"scale", scale}});
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    ASSERT_EQ(y->dims(), (core::Dims{B, H, SQ, DV}));
    std::vector<double> want;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < SQ; ++i) {
          std::vector<double> s(SK);
          double mx = -INFINITY, sum = 0;
          for (int64_t j = 0; j < SK; ++j) {
            double dot = 0;
            for (int64_t c = 0; c < D; ++c)
              dot += double(q.data<float>()[((b * H + h) * SQ + i) * D + c]) * k.data<float>()[(b * SK + j) * D + c];
            s[j] = scale * dot + (with_mask ? mask.data<float>()[i * SK + j] : 0);
            mx = std::max(mx, s[j]);
          }
          for (auto& e : s) sum += (e = std::exp(e - mx));
          for (int64_t c = 0; c < DV; ++c) {
            double acc = 0;
            for (int64_t j = 0; j < SK; ++j) acc += s[j] / sum * v.data<float>()[(h * SK + j) * DV + c];
            want.push_back(acc);
          }
        }
    expect_close(*y, want, with_mask ? "Attention with mask" : "Attention");
  }
}

TEST(Gelu, ErfAndTanhForms) {
  Tensor x = random_tensor({3, 7}, 16, -4, 4);
  for (const char* approx : {"none", "tanh"}) {
    auto y = run_one("", "Gelu", {x}, {{"approximate", std::string(approx)}});
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    std::vector<double> want;
    for (int64_t i = 0; i < x.num_elements(); ++i)
      want.push_back(act_naive({std::string(approx) == "tanh" ? "GeluTanh" : "Gelu", {}}, x.data<float>()[i]));
    expect_close(*y, want, approx);
  }
  EXPECT_FALSE(run_one("", "Gelu", {x}, {{"approximate", std::string("fast")}}).is_ok());
}

// FusedConv with a MaxPool (pool_* attributes) equals FusedConv then MaxPool: on the stem kernel
// (constant W, 3 input channels, stride 2: pooled in the epilogue), on another fast path
// (8 input channels: conv into a buffer, then the fast pool) and on the reference (W fed at run time).
TEST(FusedConv, MaxPoolAttributesMatchConvThenMaxPool) {
  struct Case {
    int64_t c, m, h, w;
    std::vector<int64_t> k, s, pads;
    int64_t ceil_mode;
  };
  const Case cases[] = {{3, 16, 37, 29, {3, 3}, {2, 2}, {0, 0, 0, 0}, 1},
                        {8, 5, 20, 23, {2, 3}, {1, 2}, {1, 0, 0, 2}, 0},
                        {2, 7, 15, 15, {3, 2}, {2, 1}, {2, 1, 1, 0}, 1}};
  uint32_t seed = 60;
  for (const Case& cs : cases)
    for (bool constant_w : {true, false}) {
      Tensor x = random_tensor({2, cs.c, cs.h, cs.w}, seed++), w = random_tensor({cs.m, cs.c, 3, 3}, seed++);
      Tensor b = random_tensor({cs.m}, seed++);
      Attrs conv{{"strides", std::vector<int64_t>{2, 2}},
                 {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                 {"activation", std::string("HardSwish")}};
      auto y = run_one("kestrel", "FusedConv", {x, w, b}, conv, {false, constant_w, constant_w});
      ASSERT_TRUE(y.is_ok()) << y.status().to_string();
      Attrs pool{{"kernel_shape", cs.k}, {"strides", cs.s}, {"pads", cs.pads}, {"ceil_mode", cs.ceil_mode}};
      auto want = run_one("", "MaxPool", {*y}, pool);
      ASSERT_TRUE(want.is_ok()) << want.status().to_string();
      Attrs fused = conv;
      fused["pool_kernel_shape"] = cs.k;
      fused["pool_strides"] = cs.s;
      fused["pool_pads"] = cs.pads;
      fused["pool_ceil_mode"] = cs.ceil_mode;
      auto got = run_one("kestrel", "FusedConv", {x, w, b}, fused, {false, constant_w, constant_w});
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      ASSERT_EQ(got->dims(), want->dims());
      std::vector<double> expect(want->data<float>(), want->data<float>() + want->num_elements());
      expect_close(*got, expect, "pooled FusedConv, C " + std::to_string(cs.c) + (constant_w ? "" : ", W fed"));
    }
}

// kestrel.FusedPointwiseDepthwise in doubles: [act1(1x1 conv) ->] act2(depthwise or grouped k x k) ->
// [act3(1x1 conv + Z)].
struct PwDwCase {
  int64_t n, c, h, w, m, p, k, stride;  // c = 0: no expansion (X has m channels); p = 0: no projection
  std::vector<int64_t> pads;            // [top, left, bottom, right]
  int64_t group = 0;                    // the middle conv's; 0: m (depthwise)
};

// w1 null (cs.c 0): the middle conv reads x. w4 (with b4): the shortcut, a 1x1 conv of x at the middle conv's stride
// added before act3.
std::vector<double> naive_pointwise_depthwise(const PwDwCase& cs, const Tensor& x, const Tensor* w1, const Tensor* b1,
                                              const Tensor& w2, const Tensor* b2, const Tensor* w3, const Tensor* b3,
                                              const Tensor* z, const Act& a1, const Act& a2, const Act& a3,
                                              const Tensor* w4 = nullptr, const Tensor* b4 = nullptr) {
  const int64_t oh = (cs.h + cs.pads[0] + cs.pads[2] - cs.k) / cs.stride + 1;
  const int64_t ow = (cs.w + cs.pads[1] + cs.pads[3] - cs.k) / cs.stride + 1;
  auto f = [](const Tensor* t, int64_t i) { return t ? double(t->data<float>()[i]) : 0.0; };
  const int64_t cg = cs.group ? cs.m / cs.group : 1;  // the middle conv's channels per group
  std::vector<double> e(static_cast<size_t>(cs.n * cs.m * cs.h * cs.w)), d(static_cast<size_t>(cs.n * cs.m * oh * ow));
  for (int64_t n = 0; n < cs.n; ++n)
    for (int64_t m = 0; m < cs.m; ++m)
      for (int64_t i = 0; i < cs.h * cs.w; ++i) {
        double acc = f(b1, m);
        if (!w1) acc = f(&x, (n * cs.m + m) * cs.h * cs.w + i);
        for (int64_t c = 0; w1 && c < cs.c; ++c) acc += f(&x, (n * cs.c + c) * cs.h * cs.w + i) * f(w1, m * cs.c + c);
        e[static_cast<size_t>((n * cs.m + m) * cs.h * cs.w + i)] = w1 ? act_naive(a1, acc) : acc;
      }
  for (int64_t n = 0; n < cs.n; ++n)
    for (int64_t m = 0; m < cs.m; ++m)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          double acc = f(b2, m);
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < cs.k; ++ky)
              for (int64_t kx = 0; kx < cs.k; ++kx) {
                const int64_t iy = y * cs.stride - cs.pads[0] + ky, ix = xo * cs.stride - cs.pads[1] + kx;
                if (iy < 0 || iy >= cs.h || ix < 0 || ix >= cs.w) continue;
                const int64_t in_c = m / cg * cg + ci;
                acc += e[static_cast<size_t>(((n * cs.m + in_c) * cs.h + iy) * cs.w + ix)] *
                       f(&w2, ((m * cg + ci) * cs.k + ky) * cs.k + kx);
              }
          d[static_cast<size_t>(((n * cs.m + m) * oh + y) * ow + xo)] = act_naive(a2, acc);
        }
  if (!w3) return d;
  std::vector<double> out(static_cast<size_t>(cs.n * cs.p * oh * ow));
  for (int64_t n = 0; n < cs.n; ++n)
    for (int64_t p = 0; p < cs.p; ++p)
      for (int64_t i = 0; i < oh * ow; ++i) {
        const int64_t o = (n * cs.p + p) * oh * ow + i;
        double acc = f(b3, p) + f(z, o) + f(b4, p);
        for (int64_t m = 0; m < cs.m; ++m)
          acc += d[static_cast<size_t>((n * cs.m + m) * oh * ow + i)] * f(w3, p * cs.m + m);
        const int64_t xc = cs.c ? cs.c : cs.m, iy = i / ow * cs.stride, ix = i % ow * cs.stride;
        for (int64_t c = 0; w4 && c < xc; ++c) acc += f(&x, ((n * xc + c) * cs.h + iy) * cs.w + ix) * f(w4, p * xc + c);
        out[static_cast<size_t>(o)] = act_naive(a3, acc);
      }
  return out;
}

// The node's attributes for a case: its window, `group` when given, and the activations (null: none given).
Attrs pwdw_attrs(const PwDwCase& cs, const Act* a1, const Act& a2, const Act* a3) {
  Attrs attrs{{"kernel_shape", std::vector<int64_t>{cs.k, cs.k}},
              {"strides", std::vector<int64_t>{cs.stride, cs.stride}},
              {"pads", cs.pads}};
  if (cs.group) attrs["group"] = cs.group;
  auto put = [&](const char* name, const Act& act) {
    if (*act.name) attrs[name] = std::string(act.name);
    if (!act.params.empty()) attrs[std::string(name) + "_params"] = act.params;
  };
  if (a1) put("activation1", *a1);
  put("activation2", a2);
  if (a3) put("activation3", *a3);
  return attrs;
}

// Every activation in each place the cases have, with and without biases / residual, on the reference (weights
// fed at run time) and with constant weights (the fast chain where it applies), against the naive chain. Cases
// with c = 0 have no expansion: W1 / B1 absent, no activation1.
void expect_matches_naive(const std::vector<PwDwCase>& cases, uint32_t seed) {
  const std::vector<Act>& acts = all_acts();
  int i = 0;
  for (const PwDwCase& cs : cases) {
    const int64_t oh = (cs.h + cs.pads[0] + cs.pads[2] - cs.k) / cs.stride + 1;
    const int64_t ow = (cs.w + cs.pads[1] + cs.pads[3] - cs.k) / cs.stride + 1;
    const bool expand = cs.c > 0, project = cs.p > 0;
    const int64_t out_c = project ? cs.p : cs.m;
    Tensor x = random_tensor({cs.n, expand ? cs.c : cs.m, cs.h, cs.w}, seed++);
    Tensor w1 = expand ? random_tensor({cs.m, cs.c, 1, 1}, seed++) : Tensor();
    const int64_t cg = cs.group ? cs.m / cs.group : 1;
    Tensor b1 = expand ? random_tensor({cs.m}, seed++) : Tensor(), w2 = random_tensor({cs.m, cg, cs.k, cs.k}, seed++);
    Tensor b2 = random_tensor({cs.m}, seed++);
    Tensor w3 = project ? random_tensor({cs.p, cs.m, 1, 1}, seed++) : Tensor();
    Tensor b3 = project ? random_tensor({cs.p}, seed++) : Tensor();
    Tensor z = project ? random_tensor({cs.n, cs.p, oh, ow}, seed++) : Tensor();
    for (size_t a = 0; a < acts.size(); ++a, ++i) {
      const Act &a1 = acts[a], &a2 = acts[(a + 3) % acts.size()], &a3 = acts[(a + 7) % acts.size()];
      const bool with_b = i % 3 != 0, with_z = project && i % 2 == 0;
      const Attrs attrs = pwdw_attrs(cs, expand ? &a1 : nullptr, a2, project ? &a3 : nullptr);
      std::vector<Tensor> ins = {x, w1, expand && with_b ? b1 : Tensor(), w2, with_b ? b2 : Tensor()};
      if (project) {
        ins.push_back(w3);
        ins.push_back(with_b ? b3 : Tensor());
        if (with_z) ins.push_back(z);
      }
      std::vector<double> want =
          naive_pointwise_depthwise(cs, x, expand ? &w1 : nullptr, expand && with_b ? &b1 : nullptr, w2,
                                    with_b ? &b2 : nullptr, project ? &w3 : nullptr, project && with_b ? &b3 : nullptr,
                                    with_z ? &z : nullptr, expand ? a1 : Act{"", {}}, a2, project ? a3 : Act{"", {}});
      for (bool constant_w : {false, true}) {
        const std::string what = "case " + std::to_string(i) + " group " + std::to_string(cs.group) + " acts " +
                                 (expand ? a1.name : "-") + "/" + a2.name + "/" + (project ? a3.name : "-") +
                                 (constant_w ? " (constant W)" : " (W fed)");
        std::vector<bool> constant(ins.size(), false);
        for (size_t j = 1; j < ins.size() && j < 7; ++j) constant[j] = constant_w;
        auto y = run_one("kestrel", "FusedPointwiseDepthwise", ins, attrs, constant);
        ASSERT_TRUE(y.is_ok()) << what << ": " << y.status().to_string();
        ASSERT_EQ(y->dims(), (core::Dims{cs.n, out_c, oh, ow})) << what;
        expect_close(*y, want, what);
      }
    }
  }
}

// Every activation in each of the three places, with and without biases / projection / residual, depthwise and
// grouped middle convs (`group`: groups of 16, the fast chain on every ISA; of 8 and 3, the fast chain where they
// are whole vectors, else the reference; k 3 / 5 / 7), on the reference (weights fed at run time) and with
// constant weights (the fast chain where it applies).
TEST(FusedPointwiseDepthwise, MatchesNaiveChainWithEveryActivation) {
  expect_matches_naive({{2, 3, 9, 11, 6, 4, 3, 2, {1, 0, 1, 2}},
                        {1, 5, 8, 7, 9, 5, 5, 1, {2, 2, 2, 2}},
                        {2, 4, 10, 9, 12, 0, 3, 1, {1, 1, 0, 1}},
                        {1, 2, 12, 13, 5, 3, 5, 2, {0, 2, 1, 0}},
                        {2, 5, 9, 11, 48, 7, 3, 1, {1, 1, 1, 1}, 3},
                        {1, 4, 10, 9, 32, 0, 5, 2, {2, 1, 2, 2}, 2},
                        {1, 3, 8, 8, 24, 6, 3, 2, {1, 0, 1, 1}, 3},
                        {1, 3, 9, 9, 12, 4, 7, 1, {3, 3, 3, 3}, 4}},
                       200);
}

// Without the expansion (W1 / B1 absent, no activation1; the projection required): the middle conv reads X
// [N, M, H, W]. Every activation on the middle conv and the projection, with and without biases and residual,
// depthwise 3x3 / 5x5 and grouped (groups of 16: the fast chain on every ISA; of 8 and 3: where whole vectors,
// else the reference; k 3 / 7), strides 1 and 2.
TEST(FusedPointwiseDepthwise, MatchesNaiveChainWithoutExpansion) {
  expect_matches_naive({{2, 0, 9, 11, 6, 4, 3, 2, {1, 0, 1, 2}},
                        {1, 0, 8, 7, 9, 5, 5, 1, {2, 2, 2, 2}},
                        {2, 0, 12, 13, 16, 16, 3, 1, {1, 1, 1, 1}},
                        {1, 0, 12, 13, 5, 3, 5, 2, {0, 2, 1, 0}},
                        {2, 0, 9, 11, 48, 7, 3, 1, {1, 1, 1, 1}, 3},
                        {1, 0, 10, 9, 32, 8, 5, 2, {2, 1, 2, 2}, 2},
                        {1, 0, 8, 8, 24, 6, 3, 2, {1, 0, 1, 1}, 3},
                        {1, 0, 9, 9, 12, 4, 7, 1, {3, 3, 3, 3}, 4}},
                       400);
}

// The strided 1x1 shortcut of X (W4, B4 at inputs 8, 9; RegNet's downsampling blocks) in Z's place, with and without
// the expansion and biases, depthwise and grouped middle conv, strides 1 and 2, on the reference (weights fed) and
// with constant weights (the fast chain, [W3 | W4] as one projection), against the naive chain.
TEST(FusedPointwiseDepthwise, MatchesNaiveChainWithShortcut) {
  const std::vector<PwDwCase> cases = {{2, 24, 13, 15, 48, 40, 3, 2, {1, 1, 1, 1}, 3},
                                       {1, 5, 12, 11, 9, 7, 5, 2, {2, 2, 2, 2}},
                                       {1, 0, 9, 10, 32, 8, 3, 1, {1, 1, 1, 1}, 2},
                                       {2, 6, 8, 9, 16, 5, 3, 1, {1, 1, 1, 1}}};
  const std::vector<Act>& acts = all_acts();
  uint32_t seed = 500;
  int i = 0;
  for (const PwDwCase& cs : cases) {
    const int64_t oh = (cs.h - 1) / cs.stride + 1, ow = (cs.w - 1) / cs.stride + 1, xc = cs.c ? cs.c : cs.m;
    const bool expand = cs.c > 0;
    Tensor x = random_tensor({cs.n, xc, cs.h, cs.w}, seed++);
    Tensor w1 = expand ? random_tensor({cs.m, cs.c, 1, 1}, seed++) : Tensor();
    Tensor b1 = expand ? random_tensor({cs.m}, seed++) : Tensor();
    Tensor w2 = random_tensor({cs.m, cs.group ? cs.m / cs.group : 1, cs.k, cs.k}, seed++);
    Tensor b2 = random_tensor({cs.m}, seed++), w3 = random_tensor({cs.p, cs.m, 1, 1}, seed++);
    Tensor b3 = random_tensor({cs.p}, seed++), w4 = random_tensor({cs.p, xc, 1, 1}, seed++);
    Tensor b4 = random_tensor({cs.p}, seed++);
    for (size_t a = 0; a < acts.size(); a += 3, ++i) {
      const Act &a1 = acts[a], &a2 = acts[(a + 3) % acts.size()], &a3 = acts[(a + 7) % acts.size()];
      const bool with_b = i % 2 == 0;
      const Attrs attrs = pwdw_attrs(cs, expand ? &a1 : nullptr, a2, &a3);
      const Tensor none;
      std::vector<Tensor> ins = {x,
                                 w1,
                                 expand && with_b ? b1 : none,
                                 w2,
                                 with_b ? b2 : none,
                                 w3,
                                 with_b ? b3 : none,
                                 none,
                                 w4,
                                 with_b ? b4 : none};
      std::vector<double> want = naive_pointwise_depthwise(
          cs, x, expand ? &w1 : nullptr, expand && with_b ? &b1 : nullptr, w2, with_b ? &b2 : nullptr, &w3,
          with_b ? &b3 : nullptr, nullptr, expand ? a1 : Act{"", {}}, a2, a3, &w4, with_b ? &b4 : nullptr);
      for (bool constant_w : {false, true}) {
        const std::string what = "case " + std::to_string(i) + (constant_w ? " (constant W)" : " (W fed)");
        std::vector<bool> constant(ins.size(), constant_w);
        constant[0] = false;
        auto y = run_one("kestrel", "FusedPointwiseDepthwise", ins, attrs, constant);
        ASSERT_TRUE(y.is_ok()) << what << ": " << y.status().to_string();
        ASSERT_EQ(y->dims(), (core::Dims{cs.n, cs.p, oh, ow})) << what;
        expect_close(*y, want, what);
      }
    }
  }
}

TEST(FusedPointwiseDepthwise, RefusesBadShapesAndAttributesWithTheNodeName) {
  // C 3, M 6, P 4, k 3: X [1,3,8,8] -> Y [1,4,8,8] with pads 1.
  Tensor x = random_tensor({1, 3, 8, 8}, 300), w1 = random_tensor({6, 3, 1, 1}, 301), b = random_tensor({6}, 302);
  Tensor w2 = random_tensor({6, 1, 3, 3}, 303), w3 = random_tensor({4, 6, 1, 1}, 304);
  Tensor z = random_tensor({1, 4, 8, 8}, 305);
  const Attrs attrs{{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  auto with = [&](Attrs extra) {
    Attrs a = attrs;
    for (auto& [k, v] : extra) a[k] = v;
    return a;
  };
  auto expect_error = [](const core::Result<Tensor>& r, const std::string& fragment) {
    ASSERT_FALSE(r.is_ok()) << "expected an error containing " << fragment;
    EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().to_string();
    EXPECT_NE(r.status().message().find("fused_under_test"), std::string::npos) << r.status().to_string();
  };
  const std::string op = "FusedPointwiseDepthwise";
  auto ok = run_one("kestrel", op, {x, w1, b, w2, b, w3, Tensor(), z}, attrs);
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(ok->dims(), (core::Dims{1, 4, 8, 8}));
  // Z / B3 / activation3 without W3.
  expect_error(run_one("kestrel", op, {x, w1, b, w2, b, Tensor(), Tensor(), z}, attrs), "without W3");
  expect_error(run_one("kestrel", op, {x, w1, b, w2, b, Tensor(), random_tensor({4}, 306)}, attrs), "without W3");
  expect_error(run_one("kestrel", op, {x, w1, b, w2}, with({{"activation3", std::string("Relu")}})), "activation3");
  // W2 not depthwise-shaped, or not kernel_shape's size; no W2 at all.
  expect_error(run_one("kestrel", op, {x, w1, b, random_tensor({6, 2, 3, 3}, 307)}, attrs), "depthwise");
  expect_error(run_one("kestrel", op, {x, w1, b, random_tensor({6, 1, 5, 5}, 308)}, attrs), "depthwise");
  expect_error(run_one("kestrel", op, {x, w1}, attrs), "W2");
  // A grouped middle conv: W2 [M, M / group, k, k] with group dividing M.
  const Tensor w2g = random_tensor({6, 2, 3, 3}, 319);
  auto grouped = run_one("kestrel", op, {x, w1, b, w2g, b, w3}, with({{"group", int64_t{3}}}));
  ASSERT_TRUE(grouped.is_ok()) << grouped.status().to_string();
  EXPECT_EQ(grouped->dims(), (core::Dims{1, 4, 8, 8}));
  expect_error(run_one("kestrel", op, {x, w1, b, w2g}, with({{"group", int64_t{4}}})), "must divide");
  expect_error(run_one("kestrel", op, {x, w1, b, w2}, with({{"group", int64_t{3}}})), "[6, 2, 3, 3]");
  expect_error(run_one("kestrel", op, {x, w1, b, w2g}, with({{"group", int64_t{2}}})), "[6, 3, 3, 3]");
  expect_error(run_one("kestrel", op, {x, w1, b, random_tensor({6, 2, 5, 5}, 320)}, with({{"group", int64_t{3}}})),
               "M / group");
  expect_error(run_one("kestrel", op, {x, w1, b, w2g}, with({{"group", int64_t{0}}})), "group must be >= 1");
  // Channels that do not match.
  expect_error(run_one("kestrel", op, {x, random_tensor({6, 4, 1, 1}, 309), b, w2}, attrs), "input channels C");
  expect_error(run_one("kestrel", op, {x, w1, b, random_tensor({5, 1, 3, 3}, 310)}, attrs), "expanded channels M");
  expect_error(run_one("kestrel", op, {x, w1, random_tensor({5}, 311), w2}, attrs), "expanded channels M");
  expect_error(run_one("kestrel", op, {x, w1, b, w2, b, random_tensor({4, 5, 1, 1}, 312)}, attrs),
               "expanded channels M");
  expect_error(run_one("kestrel", op, {x, w1, b, w2, b, w3, random_tensor({3}, 313)}, attrs), "output channels P");
  expect_error(run_one("kestrel", op, {x, w1, b, w2, b, w3, Tensor(), random_tensor({1, 4, 8, 7}, 314)}, attrs),
               "residual");
  // Ranks, 1x1 weights, dtypes.
  expect_error(run_one("kestrel", op, {x, random_tensor({6, 3, 1}, 315), b, w2}, attrs), "rank 4");
  expect_error(run_one("kestrel", op, {x, random_tensor({6, 3, 3, 3}, 316), b, w2}, attrs), "1x1");
  expect_error(run_one("kestrel", op, {x, w1, b, w2, b, random_tensor({4, 6, 3, 3}, 317)}, attrs), "1x1");
  expect_error(run_one("kestrel", op, {x, w1, b, w2, Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {6})}, attrs),
               "dtype");
  // Attributes.
  expect_error(run_one("kestrel", op, {x, w1, b, w2}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}), "kernel_shape");
  expect_error(run_one("kestrel", op, {x, w1, b, w2}, with({{"kernel_shape", std::vector<int64_t>{3, 5}}})),
               "kernel_shape");
  expect_error(run_one("kestrel", op, {x, w1, b, w2}, with({{"strides", std::vector<int64_t>{1, 2}}})), "strides");
  expect_error(run_one("kestrel", op, {x, w1, b, w2}, with({{"dilations", std::vector<int64_t>{2, 2}}})), "dilations");
  expect_error(run_one("kestrel", op, {x, w1, b, w2}, with({{"auto_pad", std::string("SAME_UPPER")}})), "auto_pad");
  expect_error(run_one("kestrel", op, {x, w1, b, w2}, with({{"pads", std::vector<int64_t>{1, 1, -1, 1}}})), "pads");
  expect_error(run_one("kestrel", op, {x, w1, b, w2}, with({{"activation2", std::string("Swish")}})), "activation2");
  expect_error(run_one("kestrel", op, {x, w1, b, w2}, with({{"activation1", std::string("Clip")}})),
               "activation1_params");
  // The shortcut W4 [P, C, 1, 1] (B4 [P]): needs W3, excludes Z, and must map X to Y's size (1x1, stride, no pads).
  const Tensor none, w4 = random_tensor({4, 3, 1, 1}, 321), b4 = random_tensor({4}, 322);
  auto shortcut = run_one("kestrel", op, {x, w1, b, w2, b, w3, none, none, w4, b4}, attrs);
  ASSERT_TRUE(shortcut.is_ok()) << shortcut.status().to_string();
  EXPECT_EQ(shortcut->dims(), (core::Dims{1, 4, 8, 8}));
  expect_error(run_one("kestrel", op, {x, w1, b, w2, b, none, none, none, w4}, attrs), "without W3");
  expect_error(run_one("kestrel", op, {x, w1, b, w2, b, w3, none, z, w4}, attrs), "exclude each other");
  expect_error(run_one("kestrel", op, {x, w1, b, w2, b, w3, none, none, none, b4}, attrs), "B4 (input 9)");
  expect_error(run_one("kestrel", op, {x, w1, b, w2, b, w3, none, none, random_tensor({4, 5, 1, 1}, 323)}, attrs),
               "the shortcut's input channels C");
  expect_error(run_one("kestrel", op, {x, w1, b, w2, b, w3, none, none, random_tensor({3, 3, 1, 1}, 324)}, attrs),
               "output channels P");
  expect_error(run_one("kestrel", op, {x, w1, b, w2, b, w3, none, none, w4, random_tensor({5}, 325)}, attrs),
               "output channels P");
  expect_error(run_one("kestrel", op, {x, w1, b, w2, b, w3, none, none, random_tensor({4, 3, 3, 3}, 326)}, attrs),
               "[P, C, 1, 1]");
  expect_error(
      run_one("kestrel", op, {x, w1, b, w2, b, w3, none, none, w4}, with({{"pads", std::vector<int64_t>{0, 0, 0, 0}}})),
      "the shortcut W4 (1x1, stride 1, no pads) maps X's 8 to 8, the middle conv to 6");
  // No depthwise window fits: 8 + 0 < 9.
  expect_error(run_one("kestrel", op, {x, w1, b, random_tensor({6, 1, 9, 9}, 318)},
                       {{"kernel_shape", std::vector<int64_t>{9, 9}}}),
               "depthwise");
}

// Without W1 (input 1): B1 and activation1 are refused, W3 is required, and X's channels are the middle conv's M.
TEST(FusedPointwiseDepthwise, RefusesBadInputsWithoutExpansion) {
  // M 6, P 4, k 3: X [1,6,8,8] -> Y [1,4,8,8] with pads 1.
  Tensor x = random_tensor({1, 6, 8, 8}, 330), b = random_tensor({6}, 331), w2 = random_tensor({6, 1, 3, 3}, 332);
  Tensor w3 = random_tensor({4, 6, 1, 1}, 333), z = random_tensor({1, 4, 8, 8}, 334);
  const Attrs attrs{{"kernel_shape", std::vector<int64_t>{3, 3}},
                    {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                    {"activation2", std::string("Relu")}};
  auto with = [&](Attrs extra) {
    Attrs a = attrs;
    for (auto& [k, v] : extra) a[k] = v;
    return a;
  };
  auto expect_error = [](const core::Result<Tensor>& r, const std::string& fragment) {
    ASSERT_FALSE(r.is_ok()) << "expected an error containing " << fragment;
    EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().to_string();
    EXPECT_NE(r.status().message().find("fused_under_test"), std::string::npos) << r.status().to_string();
  };
  const std::string op = "FusedPointwiseDepthwise";
  const Tensor none;
  for (bool constant_w : {false, true}) {
    const std::vector<bool> constant{false, constant_w, constant_w, constant_w, constant_w, constant_w, constant_w};
    auto ok = run_one("kestrel", op, {x, none, none, w2, b, w3, none, z}, attrs, constant);
    ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
    EXPECT_EQ(ok->dims(), (core::Dims{1, 4, 8, 8}));
  }
  // B1 / activation1 without W1.
  expect_error(run_one("kestrel", op, {x, none, b, w2, b, w3}, attrs), "B1 (input 2) is given without W1");
  expect_error(run_one("kestrel", op, {x, none, none, w2, b, w3}, with({{"activation1", std::string("Relu")}})),
               "activation1 is given without W1");
  expect_error(run_one("kestrel", op, {x, none, none, w2, b, w3},
                       with({{"activation1", std::string("Clip")}, {"activation1_params", std::vector<float>{0, 6}}})),
               "activation1 is given without W1");
  // Neither W1 nor W3: a plain depthwise conv.
  expect_error(run_one("kestrel", op, {x, none, none, w2, b}, attrs), "W1 (input 1), W3 (input 5) or both");
  expect_error(run_one("kestrel", op, {x, none, none, w2}, attrs), "plain depthwise conv");
  // X's channels are M: X [1,5,8,8] against W2 [6,1,3,3]; B2 / W3 against X's 6 channels.
  expect_error(run_one("kestrel", op, {random_tensor({1, 5, 8, 8}, 335), none, none, w2, b, w3}, attrs),
               "no W1: X's channels");
  expect_error(run_one("kestrel", op, {x, none, none, w2, random_tensor({5}, 336), w3}, attrs), "no W1: X's channels");
  expect_error(run_one("kestrel", op, {x, none, none, w2, b, random_tensor({4, 5, 1, 1}, 337)}, attrs),
               "no W1: X's channels");
  // A grouped middle conv: W2 [M, M / group, k, k] with M X's channels.
  expect_error(
      run_one("kestrel", op, {x, none, none, random_tensor({6, 2, 3, 3}, 338), b, w3}, with({{"group", int64_t{2}}})),
      "[6, 3, 3, 3]");
}

TEST(FusedOps, RefuseBadAttributesAndShapesWithTheNodeName) {
  Tensor x = random_tensor({1, 2, 4, 4}, 17), w = random_tensor({3, 2, 1, 1}, 18);
  auto expect_error = [](const core::Result<Tensor>& r, const std::string& fragment) {
    ASSERT_FALSE(r.is_ok()) << "expected an error containing " << fragment;
    EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().to_string();
    EXPECT_NE(r.status().message().find("fused_under_test"), std::string::npos) << r.status().to_string();
  };
  expect_error(run_one("kestrel", "FusedConv", {x, w}, {{"activation", std::string("Swish")}}), "unknown activation");
  expect_error(run_one("kestrel", "FusedConv", {x, w}, {{"activation", std::string("Clip")}}), "activation_params");
  expect_error(run_one("kestrel", "FusedConv", {x, w},
                       {{"activation", std::string("Clip")}, {"activation_params", std::vector<float>{6, 0}}}),
               "min <= max");
  expect_error(run_one("kestrel", "FusedConv", {x, w},
                       {{"activation", std::string("Relu")}, {"activation_params", std::vector<float>{1}}}),
               "activation_params");
  expect_error(run_one("kestrel", "FusedConv", {x, w, Tensor(), random_tensor({1, 3, 4, 5}, 19)}, {}), "residual Z");
  expect_error(run_one("kestrel", "FusedConv", {x, w},
                       {{"pool_kernel_shape", std::vector<int64_t>{2, 2}}, {"pool_pads", std::vector<int64_t>{2, 0, 0, 0}}}),
               "pool_pads");
  expect_error(run_one("kestrel", "FusedConv", {x, w}, {{"pool_strides", std::vector<int64_t>{2, 2}}}),
               "without pool_kernel_shape");
  expect_error(run_one("kestrel", "FusedConv", {x, w, Tensor(), random_tensor({1, 3, 4, 4}, 19)},
                       {{"pool_kernel_shape", std::vector<int64_t>{2, 2}}}),
               "residual");
  expect_error(run_one("kestrel", "FusedConv", {x, w}, {{"pool_kernel_shape", std::vector<int64_t>{5, 5}}}), "MaxPool");
  expect_error(run_one("kestrel", "FusedConv", {x, w, Tensor(), Tensor(), random_tensor({1, 3, 1, 1}, 27)}, {}),
               "channel scale S");
  expect_error(run_one("kestrel", "FusedConv", {x, w, Tensor(), Tensor(), random_tensor({1, 2, 4, 4}, 27)}, {}),
               "channel scale S");
  expect_error(run_one("kestrel", "FusedConv", {x, w, Tensor(), Tensor(), random_tensor({1, 2, 1, 1}, 27)},
                       {{"pool_kernel_shape", std::vector<int64_t>{2, 2}}}),
               "channel scale S");
  expect_error(run_one("kestrel", "FusedMatMul", {random_tensor({2, 3}, 20), random_tensor({3}, 21)}, {}), "rank");
  expect_error(run_one("kestrel", "FusedMatMul",
                       {random_tensor({2, 3}, 20), random_tensor({3, 4}, 21), random_tensor({3}, 22)}, {}),
               "bias");
  expect_error(
      run_one("kestrel", "FusedMatMul",
              {random_tensor({2, 3}, 20), random_tensor({3, 4}, 21), random_tensor({4}, 22), random_tensor({2, 5}, 28)},
              {}),
      "residual Z");
  expect_error(
      run_one("kestrel", "Attention",
              {random_tensor({1, 1, 2, 4}, 23), random_tensor({1, 1, 3, 5}, 24), random_tensor({1, 1, 3, 2}, 25)}, {}),
      "head size");
  expect_error(run_one("kestrel", "Attention",
                       {random_tensor({1, 1, 2, 4}, 23), random_tensor({1, 1, 3, 4}, 24),
                        random_tensor({1, 1, 3, 2}, 25), random_tensor({2, 4}, 26)},
                       {}),
               "mask");
}

}  // namespace
}  // namespace kestrel

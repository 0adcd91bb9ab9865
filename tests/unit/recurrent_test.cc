// RNN, GRU and LSTM through Session against a naive implementation written here (per-gate
// matrices, canonical layout, explicit masking), plus hand-computed cases and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/onnx_builder.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::DType;
using core::Tensor;
using testing::OnnxBuilder;

enum class Cell { kRnn, kGru, kLstm };

const char* op_name(Cell c) {
  return c == Cell::kRnn ? "RNN" : c == Cell::kGru ? "GRU" : "LSTM";
}
int gates(Cell c) {
  return c == Cell::kRnn ? 1 : c == Cell::kGru ? 3 : 4;
}
int acts_per_dir(Cell c) {
  return c == Cell::kRnn ? 1 : c == Cell::kGru ? 2 : 3;
}

struct Act {
  std::string name;
  float alpha = 0, beta = 0;
  bool has_alpha = false, has_beta = false;  // emitted into activation_alpha / activation_beta
};

double apply(const Act& a, double x) {
  const std::string& n = a.name;
  const double al = a.alpha, be = a.beta;
  if (n == "Relu") return std::max(0.0, x);
  if (n == "Tanh") return std::tanh(x);
  if (n == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (n == "Affine") return al * x + be;
  if (n == "LeakyRelu") return x >= 0 ? x : al * x;
  if (n == "ThresholdedRelu") return x >= al ? x : 0.0;
  if (n == "ScaledTanh") return al * std::tanh(be * x);
  if (n == "HardSigmoid") return std::min(1.0, std::max(0.0, al * x + be));
  if (n == "Elu") return x >= 0 ? x : al * (std::exp(x) - 1);
  if (n == "Softsign") return x / (1 + std::fabs(x));
  if (n == "Softplus") return std::log(1 + std::exp(x));
  ADD_FAILURE() << "unknown activation " << n;
  return 0;
}

struct Case {
  Cell cell = Cell::kLstm;
  std::string direction = "forward";
  int S = 3, B = 2, I = 4, H = 3;
  int layout = 0;
  bool bias = false, seq_lens = false, init_h = false, init_c = false, peepholes = false;
  std::vector<int> lens;  // used when seq_lens
  float clip = 0;         // 0: no clip attribute
  bool input_forget = false, linear_before_reset = false;
  std::vector<Act> acts;  // empty: defaults, else all directions' activations
  bool weights_constant = false;
  bool hidden_size_attr = true;
  std::vector<std::string> outputs = {"Y", "Y_h", "Y_c"};  // "" = absent output
  int D() const { return direction == "bidirectional" ? 2 : 1; }
};

std::string describe(const Case& c) {
  std::string s = std::string(op_name(c.cell)) + " " + c.direction + " S" + std::to_string(c.S) + " B" +
                  std::to_string(c.B) + " I" + std::to_string(c.I) + " H" + std::to_string(c.H) + " layout" +
                  std::to_string(c.layout);
  if (c.bias) s += " bias";
  if (c.seq_lens) s += " seq_lens";
  if (c.init_h) s += " init_h";
  if (c.init_c) s += " init_c";
  if (c.peepholes) s += " P";
  if (c.clip > 0) s += " clip";
  if (c.input_forget) s += " input_forget";
  if (c.linear_before_reset) s += " lbr";
  for (const auto& a : c.acts) s += " " + a.name;
  return s;
}

// Canonical data: x[t][b][i], w[d][row][i], r[d][row][k], bias[d][2*G*H], h0/c0[d][b][j], p[d][3H].
struct Data {
  std::vector<double> x, w, r, bias, h0, c0, p;
  std::vector<int> lens;
};

Data make_data(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  auto fill = [&](size_t n, double scale) {
    std::vector<double> v(n);
    for (auto& e : v) e = static_cast<double>(static_cast<float>(scale * u(rng)));  // representable as f32
    return v;
  };
  const size_t D = static_cast<size_t>(c.D()), G = static_cast<size_t>(gates(c.cell));
  const size_t S = static_cast<size_t>(c.S), B = static_cast<size_t>(c.B), I = static_cast<size_t>(c.I),
               H = static_cast<size_t>(c.H);
  Data d;
  d.x = fill(S * B * I, 1.5);
  d.w = fill(D * G * H * I, 0.8);
  d.r = fill(D * G * H * H, 0.8);
  d.bias = fill(D * 2 * G * H, 0.5);
  d.h0 = fill(D * B * H, 1.0);
  d.c0 = fill(D * B * H, 1.0);
  d.p = fill(D * 3 * H, 0.5);
  d.lens = c.lens;
  if (d.lens.empty()) d.lens.assign(B, c.S);
  return d;
}

struct Outputs {
  std::vector<double> y, yh, yc;  // canonical: y[t][d][b][j], yh/yc[d][b][j]
};

// The spec's equations, one sequence at a time, written independently of the kernel.
Outputs naive(const Case& c, const Data& data) {
  const int D = c.D(), G = gates(c.cell), S = c.S, B = c.B, I = c.I, H = c.H, A = acts_per_dir(c.cell);
  std::vector<Act> acts = c.acts;
  if (acts.empty()) {
    for (int d = 0; d < D; ++d) {
      if (c.cell == Cell::kRnn) acts.push_back({"Tanh"});
      if (c.cell == Cell::kGru) acts.insert(acts.end(), {{"Sigmoid"}, {"Tanh"}});
      if (c.cell == Cell::kLstm) acts.insert(acts.end(), {{"Sigmoid"}, {"Tanh"}, {"Tanh"}});
    }
  }
  Outputs o;
  o.y.assign(static_cast<size_t>(S * D * B * H), 0.0);
  o.yh.assign(static_cast<size_t>(D * B * H), 0.0);
  o.yc.assign(static_cast<size_t>(D * B * H), 0.0);
  auto cl = [&](double v) { return c.clip > 0 ? std::max<double>(-c.clip, std::min<double>(c.clip, v)) : v; };
  for (int d = 0; d < D; ++d) {
    const bool rev = c.direction == "reverse" || d == 1;
    const Act* f = &acts[static_cast<size_t>(d * A)];
    // Per-gate views: Wg[j][i], Rg[j][k], wb/rb per gate.
    auto Wg = [&](int g, int j, int i) { return data.w[static_cast<size_t>(((d * G + g) * H + j) * I + i)]; };
    auto Rg = [&](int g, int j, int k) { return data.r[static_cast<size_t>(((d * G + g) * H + j) * H + k)]; };
    auto wb = [&](int g, int j) { return c.bias ? data.bias[static_cast<size_t>(d * 2 * G * H + g * H + j)] : 0.0; };
    auto rb = [&](int g, int j) {
      return c.bias ? data.bias[static_cast<size_t>(d * 2 * G * H + (G + g) * H + j)] : 0.0;
    };
    auto pp = [&](int k, int j) {  // peephole k: 0 i, 1 o, 2 f
      return c.peepholes ? data.p[static_cast<size_t>(d * 3 * H + k * H + j)] : 0.0;
    };
    for (int b = 0; b < B; ++b) {
      std::vector<double> h(static_cast<size_t>(H)), cs(static_cast<size_t>(H));
      for (int j = 0; j < H; ++j) {
        h[static_cast<size_t>(j)] = c.init_h ? data.h0[static_cast<size_t>((d * B + b) * H + j)] : 0.0;
        cs[static_cast<size_t>(j)] = c.init_c ? data.c0[static_cast<size_t>((d * B + b) * H + j)] : 0.0;
      }
      const int len = data.lens[static_cast<size_t>(b)];
      std::vector<int> order;
      for (int t = 0; t < len; ++t) order.push_back(rev ? len - 1 - t : t);
      for (int t : order) {
        auto xw = [&](int g, int j) {
          double s = wb(g, j);
          for (int i = 0; i < I; ++i) s += data.x[static_cast<size_t>((t * B + b) * I + i)] * Wg(g, j, i);
          return s;
        };
        auto hr = [&](int g, int j, const std::vector<double>& hv) {
          double s = 0;
          for (int k = 0; k < H; ++k) s += hv[static_cast<size_t>(k)] * Rg(g, j, k);
          return s;
        };
        std::vector<double> hn(static_cast<size_t>(H)), cn(static_cast<size_t>(H));
        if (c.cell == Cell::kRnn) {
          for (int j = 0; j < H; ++j) hn[static_cast<size_t>(j)] = apply(f[0], cl(xw(0, j) + hr(0, j, h) + rb(0, j)));
        } else if (c.cell == Cell::kGru) {
          std::vector<double> z(static_cast<size_t>(H)), r(static_cast<size_t>(H)), rh(static_cast<size_t>(H));
          for (int j = 0; j < H; ++j) {
            z[static_cast<size_t>(j)] = apply(f[0], cl(xw(0, j) + hr(0, j, h) + rb(0, j)));
            r[static_cast<size_t>(j)] = apply(f[0], cl(xw(1, j) + hr(1, j, h) + rb(1, j)));
            rh[static_cast<size_t>(j)] = r[static_cast<size_t>(j)] * h[static_cast<size_t>(j)];
          }
          for (int j = 0; j < H; ++j) {
            double pre = c.linear_before_reset ? xw(2, j) + r[static_cast<size_t>(j)] * (hr(2, j, h) + rb(2, j))
                                               : xw(2, j) + hr(2, j, rh) + rb(2, j);
            double hh = apply(f[1], cl(pre));
            hn[static_cast<size_t>(j)] =
                (1 - z[static_cast<size_t>(j)]) * hh + z[static_cast<size_t>(j)] * h[static_cast<size_t>(j)];
          }
        } else {
          for (int j = 0; j < H; ++j) {
            const double cp = cs[static_cast<size_t>(j)];
            double it = apply(f[0], cl(xw(0, j) + hr(0, j, h) + rb(0, j) + pp(0, j) * cp));
            double ft = c.input_forget ? 1 - it : apply(f[0], cl(xw(2, j) + hr(2, j, h) + rb(2, j) + pp(2, j) * cp));
            double ct = apply(f[1], cl(xw(3, j) + hr(3, j, h) + rb(3, j)));
            double cnew = ft * cp + it * ct;
            double ot = apply(f[0], cl(xw(1, j) + hr(1, j, h) + rb(1, j) + pp(1, j) * cnew));
            cn[static_cast<size_t>(j)] = cnew;
            hn[static_cast<size_t>(j)] = ot * apply(f[2], cnew);
          }
          cs = cn;
        }
        h = hn;
        for (int j = 0; j < H; ++j) o.y[static_cast<size_t>(((t * D + d) * B + b) * H + j)] = h[static_cast<size_t>(j)];
      }
      for (int j = 0; j < H; ++j) {
        o.yh[static_cast<size_t>((d * B + b) * H + j)] = h[static_cast<size_t>(j)];
        o.yc[static_cast<size_t>((d * B + b) * H + j)] = cs[static_cast<size_t>(j)];
      }
    }
  }
  return o;
}

void add_strings_attr(onnx::NodeProto& n, const std::string& name, const std::vector<std::string>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const auto& s : v) a->add_strings(s);
}

template <class T>
Tensor to_tensor(const std::vector<double>& v, core::Dims dims) {
  std::vector<T> f(v.begin(), v.end());
  return Tensor::from_vector<T>(f, std::move(dims));
}

// Layout 1 moves batch in front: x [S,B,I] -> [B,S,I]; states [D,B,H] -> [B,D,H].
std::vector<double> swap01(const std::vector<double>& v, int n0, int n1, int rest) {
  std::vector<double> o(v.size());
  for (int a = 0; a < n0; ++a)
    for (int b = 0; b < n1; ++b)
      for (int k = 0; k < rest; ++k)
        o[static_cast<size_t>((b * n0 + a) * rest + k)] = v[static_cast<size_t>((a * n1 + b) * rest + k)];
  return o;
}

// y [S,D,B,H] -> [B,S,D,H]
std::vector<double> y_to_layout1(const std::vector<double>& y, int S, int D, int B, int H) {
  std::vector<double> o(y.size());
  for (int t = 0; t < S; ++t)
    for (int d = 0; d < D; ++d)
      for (int b = 0; b < B; ++b)
        for (int j = 0; j < H; ++j)
          o[static_cast<size_t>(((b * S + t) * D + d) * H + j)] = y[static_cast<size_t>(((t * D + d) * B + b) * H + j)];
  return o;
}

struct Built {
  OnnxBuilder b{14};
  std::vector<std::pair<std::string, Tensor>> feeds;
};

template <class T = float>
Built build(const Case& c, const Data& data) {
  const int elem = std::is_same_v<T, double> ? 11 : 1;
  const int D = c.D(), G = gates(c.cell), S = c.S, B = c.B, I = c.I, H = c.H;
  Built bt;
  auto& b = bt.b;
  auto add = [&](const std::string& name, std::vector<double> v, core::Dims dims, bool weight) {
    if (weight && c.weights_constant) {
      auto* t = b.raw_initializer(name);
      t->set_data_type(elem);
      for (int64_t d : dims) t->add_dims(d);
      for (double e : v) {
        if (elem == 1)
          t->add_float_data(static_cast<float>(e));
        else
          t->add_double_data(e);
      }
    } else {
      b.input(name, elem, dims);
      bt.feeds.emplace_back(name, to_tensor<T>(v, dims));
    }
  };
  const bool l1 = c.layout == 1;
  add("X", l1 ? swap01(data.x, S, B, I) : data.x, l1 ? core::Dims{B, S, I} : core::Dims{S, B, I}, false);
  add("W", data.w, {D, G * H, I}, true);
  add("R", data.r, {D, G * H, H}, true);
  std::vector<std::string> ins = {"X", "W", "R", "", "", "", "", ""};
  if (c.bias) {
    add("B", data.bias, {D, 2 * G * H}, true);
    ins[3] = "B";
  }
  if (c.seq_lens) {
    b.input("L", 6, {B});
    std::vector<int32_t> l(data.lens.begin(), data.lens.end());
    bt.feeds.emplace_back("L", Tensor::from_vector<int32_t>(l, {B}));
    ins[4] = "L";
  }
  const core::Dims state = l1 ? core::Dims{B, D, H} : core::Dims{D, B, H};
  if (c.init_h) {
    add("H0", l1 ? swap01(data.h0, D, B, H) : data.h0, state, false);
    ins[5] = "H0";
  }
  if (c.init_c) {
    add("C0", l1 ? swap01(data.c0, D, B, H) : data.c0, state, false);
    ins[6] = "C0";
  }
  if (c.peepholes) {
    add("P", data.p, {D, 3 * H}, true);
    ins[7] = "P";
  }
  while (!ins.empty() && ins.back().empty()) ins.pop_back();
  std::vector<std::string> outs = c.outputs;
  if (c.cell != Cell::kLstm && outs.size() > 2) outs.resize(2);
  while (!outs.empty() && outs.back().empty()) outs.pop_back();
  auto& n = b.node(op_name(c.cell), ins, outs);
  if (c.hidden_size_attr) OnnxBuilder::attr(n, "hidden_size", int64_t{H});
  OnnxBuilder::attr(n, "direction", c.direction);
  if (c.layout) OnnxBuilder::attr(n, "layout", int64_t{c.layout});
  if (c.clip > 0) OnnxBuilder::attr(n, "clip", c.clip);
  if (c.input_forget) OnnxBuilder::attr(n, "input_forget", int64_t{1});
  if (c.linear_before_reset) OnnxBuilder::attr(n, "linear_before_reset", int64_t{1});
  if (!c.acts.empty()) {
    std::vector<std::string> names;
    std::vector<float> alphas, betas;
    for (const auto& a : c.acts) {
      names.push_back(a.name);
      if (a.has_alpha) alphas.push_back(a.alpha);
      if (a.has_beta) betas.push_back(a.beta);
    }
    add_strings_attr(n, "activations", names);
    if (!alphas.empty()) OnnxBuilder::attr(n, "activation_alpha", alphas);
    if (!betas.empty()) OnnxBuilder::attr(n, "activation_beta", betas);
  }
  for (const auto& o : outs)
    if (!o.empty()) b.output(o, elem);
  return bt;
}

// Runs the case through Session and compares every present output with the naive result.
template <class T = float>
void check(const Case& c, uint32_t seed = 1) {
  SCOPED_TRACE(describe(c));
  Data data = make_data(c, seed);
  Outputs want = naive(c, data);
  Built bt = build<T>(c, data);
  std::string bytes = bt.b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  std::vector<Tensor> out;
  auto st = (*s)->run(bt.feeds, out);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const int D = c.D(), S = c.S, B = c.B, H = c.H;
  const bool l1 = c.layout == 1;
  size_t k = 0;
  for (size_t i = 0; i < c.outputs.size() && i < (c.cell == Cell::kLstm ? 3u : 2u); ++i) {
    if (c.outputs[i].empty()) continue;
    ASSERT_LT(k, out.size());
    const Tensor& got = out[k++];
    std::vector<double> w;
    core::Dims dims;
    if (i == 0) {
      w = l1 ? y_to_layout1(want.y, S, D, B, H) : want.y;
      dims = l1 ? core::Dims{B, S, D, H} : core::Dims{S, D, B, H};
    } else {
      const auto& v = i == 1 ? want.yh : want.yc;
      w = l1 ? swap01(v, D, B, H) : v;
      dims = l1 ? core::Dims{B, D, H} : core::Dims{D, B, H};
    }
    ASSERT_EQ(got.dims(), dims) << "output " << c.outputs[i];
    ASSERT_EQ(got.dtype(), core::dtype_of<T>);
    for (size_t e = 0; e < w.size(); ++e) {
      double g = static_cast<double>(got.data<T>()[e]);
      ASSERT_NEAR(g, w[e], 1e-5 + 1e-5 * std::fabs(w[e])) << "output " << c.outputs[i] << " element " << e;
    }
  }
  EXPECT_EQ(k, out.size());
}

// Every cell x direction x layout over several shapes and combinations of optional inputs.
TEST(Recurrent, SweepMatchesNaive) {
  struct Shape {
    int S, B, I, H;
  };
  const Shape shapes[] = {{1, 1, 1, 1}, {5, 3, 7, 4}, {3, 2, 2, 5}};
  struct Opts {
    bool bias, seq_lens, init_h, init_c, peepholes;
  };
  const Opts opts[] = {{false, false, false, false, false},
                       {true, true, true, true, true},
                       {true, true, false, false, false},
                       {false, false, true, true, false},
                       {true, false, false, false, true}};
  uint32_t seed = 10;
  for (Cell cell : {Cell::kRnn, Cell::kGru, Cell::kLstm}) {
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      for (int layout : {0, 1}) {
        for (const Shape& sh : shapes) {
          for (const Opts& o : opts) {
            Case c;
            c.cell = cell;
            c.direction = dir;
            c.layout = layout;
            c.S = sh.S, c.B = sh.B, c.I = sh.I, c.H = sh.H;
            c.bias = o.bias;
            c.seq_lens = o.seq_lens;
            c.init_h = o.init_h;
            c.init_c = o.init_c && cell == Cell::kLstm;
            c.peepholes = o.peepholes && cell == Cell::kLstm;
            if (c.seq_lens)  // unequal lengths, including a full one and (when S > 1) a shorter one
              for (int b = 0; b < c.B; ++b) c.lens.push_back(b % 2 == 0 ? c.S : std::max(1, c.S - 1 - b));
            check(c, seed++);
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TEST(Recurrent, SequenceLensZeroPadsAndKeepsLastValidState) {
  for (Cell cell : {Cell::kRnn, Cell::kGru, Cell::kLstm}) {
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      Case c;
      c.cell = cell;
      c.direction = dir;
      c.S = 6, c.B = 4, c.I = 3, c.H = 2;
      c.bias = c.seq_lens = c.init_h = true;
      c.init_c = cell == Cell::kLstm;
      c.lens = {6, 2, 0, 5};
      check(c);
    }
  }
  // Spot-check the padding directly: Y past the length is exactly zero, and a length-0 sequence
  // keeps its initial state.
  Case c;
  c.cell = Cell::kGru;
  c.direction = "bidirectional";
  c.S = 4, c.B = 2, c.I = 2, c.H = 3;
  c.seq_lens = c.init_h = c.bias = true;
  c.lens = {1, 0};
  Data data = make_data(c, 5);
  Built bt = build(c, data);
  std::string bytes = bt.b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  std::vector<Tensor> out;
  ASSERT_TRUE((*s)->run(bt.feeds, out).is_ok());
  ASSERT_EQ(out.size(), 2u);
  const Tensor& y = out[0];  // [S, D, B, H]
  for (int t = 0; t < 4; ++t)
    for (int d = 0; d < 2; ++d)
      for (int b = 0; b < 2; ++b)
        for (int j = 0; j < 3; ++j) {
          float v = y.data<float>()[((t * 2 + d) * 2 + b) * 3 + j];
          if (t >= c.lens[static_cast<size_t>(b)])
            EXPECT_EQ(v, 0.f) << t << d << b << j;
          else
            EXPECT_NE(v, 0.f);
        }
  for (int d = 0; d < 2; ++d)
    for (int j = 0; j < 3; ++j)
      EXPECT_FLOAT_EQ(out[1].data<float>()[(d * 2 + 1) * 3 + j],
                      static_cast<float>(data.h0[static_cast<size_t>((d * 2 + 1) * 3 + j)]));
}

TEST(Recurrent, OptionalOutputsMayBeAbsent) {
  const std::vector<std::vector<std::string>> sets = {{"Y"},           {"", "Y_h"},        {"Y", "", "Y_c"},
                                                      {"", "", "Y_c"}, {"", "Y_h", "Y_c"}, {"Y", "Y_h"}};
  for (Cell cell : {Cell::kRnn, Cell::kGru, Cell::kLstm}) {
    for (const auto& outs : sets) {
      if (cell != Cell::kLstm && outs.size() == 3 && outs[0].empty() && outs[1].empty()) continue;
      Case c;
      c.cell = cell;
      c.direction = "bidirectional";
      c.bias = c.init_h = true;
      c.outputs = outs;
      check(c);
    }
  }
}

TEST(Recurrent, LstmClipInputForgetAndPeepholes) {
  for (const char* dir : {"forward", "reverse", "bidirectional"}) {
    for (bool input_forget : {false, true}) {
      for (float clip : {0.f, 0.3f, 2.f}) {
        Case c;
        c.direction = dir;
        c.S = 4, c.B = 3, c.I = 5, c.H = 3;
        c.bias = c.init_h = c.init_c = c.peepholes = true;
        c.input_forget = input_forget;
        c.clip = clip;
        check(c);
      }
    }
  }
}

TEST(Recurrent, GruLinearBeforeResetAndClip) {
  for (const char* dir : {"forward", "reverse", "bidirectional"}) {
    for (bool lbr : {false, true}) {
      for (float clip : {0.f, 0.5f}) {
        for (int layout : {0, 1}) {
          Case c;
          c.cell = Cell::kGru;
          c.direction = dir;
          c.S = 5, c.B = 2, c.I = 3, c.H = 4;
          c.bias = c.init_h = c.seq_lens = true;
          c.lens = {5, 3};
          c.linear_before_reset = lbr;
          c.clip = clip;
          c.layout = layout;
          check(c);
        }
      }
    }
  }
}

TEST(Recurrent, EveryActivationWithAlphaBeta) {
  // Each activation once as an RNN's f, with explicit parameters where it takes them.
  const std::vector<Act> all = {
      {"Relu"},
      {"Tanh"},
      {"Sigmoid"},
      {"Affine", 0.7f, -0.2f, true, true},
      {"LeakyRelu", 0.3f, 0, true, false},
      {"ThresholdedRelu", 0.4f, 0, true, false},
      {"ScaledTanh", 1.5f, 0.8f, true, true},
      {"HardSigmoid", 0.3f, 0.4f, true, true},
      {"Elu", 0.9f, 0, true, false},
      {"Softsign"},
      {"Softplus"},
  };
  for (const Act& a : all) {
    Case c;
    c.cell = Cell::kRnn;
    c.bias = c.init_h = true;
    c.acts = {a};
    check(c);
  }
  // Mixed lists per direction: alphas/betas are consumed only by the activations that take them.
  Case g;
  g.cell = Cell::kGru;
  g.direction = "bidirectional";
  g.bias = g.init_h = true;
  g.acts = {{"HardSigmoid", 0.25f, 0.45f, true, true},
            {"LeakyRelu", 0.2f, 0, true, false},
            {"Sigmoid"},
            {"ScaledTanh", 0.9f, 1.1f, true, true}};
  check(g);
  Case l;
  l.cell = Cell::kLstm;
  l.direction = "bidirectional";
  l.bias = l.init_h = l.init_c = l.peepholes = true;
  l.acts = {{"Sigmoid"}, {"Elu", 0.5f, 0, true, false},     {"Softsign"}, {"HardSigmoid", 0.15f, 0.55f, true, true},
            {"Tanh"},    {"Affine", 0.8f, 0.1f, true, true}};
  check(l);
}

TEST(Recurrent, ActivationDefaultsAndNamesAreCaseInsensitive) {
  // No activation_alpha/beta: ONNX defaults (LeakyRelu 0.01, HardSigmoid 0.2/0.5, Elu 1).
  Case c;
  c.cell = Cell::kGru;
  c.bias = true;
  c.acts = {{"hardsigmoid", 0.2f, 0.5f}, {"LEAKYRELU", 0.01f}};
  // The naive side needs canonical names; build the model with the odd spellings by hand.
  Data data = make_data(c, 3);
  Case canon = c;
  canon.acts = {{"HardSigmoid", 0.2f, 0.5f}, {"LeakyRelu", 0.01f}};
  Outputs want = naive(canon, data);
  Built bt = build(c, data);
  std::string bytes = bt.b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  std::vector<Tensor> out;
  ASSERT_TRUE((*s)->run(bt.feeds, out).is_ok());
  ASSERT_EQ(out[0].num_elements(), static_cast<int64_t>(want.y.size()));
  for (size_t e = 0; e < want.y.size(); ++e) EXPECT_NEAR(out[0].data<float>()[e], want.y[e], 1e-5);
  // A single direction's list on a bidirectional op applies to both directions.
  Case b;
  b.cell = Cell::kRnn;
  b.direction = "bidirectional";
  b.acts = {{"Relu"}};
  Data bd = make_data(b, 4);
  Case b2 = b;
  b2.acts = {{"Relu"}, {"Relu"}};
  Outputs bw = naive(b2, bd);
  Built bb = build(b, bd);
  bytes = bb.b.bytes();
  auto s2 = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s2.is_ok()) << s2.status().to_string();
  ASSERT_TRUE((*s2)->run(bb.feeds, out).is_ok());
  for (size_t e = 0; e < bw.y.size(); ++e) EXPECT_NEAR(out[0].data<float>()[e], bw.y[e], 1e-5);
}

TEST(Recurrent, ConstantWeightsAndNoHiddenSizeAttr) {
  for (Cell cell : {Cell::kRnn, Cell::kGru, Cell::kLstm}) {
    Case c;
    c.cell = cell;
    c.direction = "bidirectional";
    c.bias = c.init_h = c.peepholes = cell == Cell::kLstm;
    c.weights_constant = true;
    c.hidden_size_attr = false;
    check(c);
  }
}

TEST(Recurrent, Float64) {
  for (Cell cell : {Cell::kRnn, Cell::kGru, Cell::kLstm}) {
    Case c;
    c.cell = cell;
    c.direction = "reverse";
    c.layout = 1;
    c.bias = c.init_h = c.seq_lens = true;
    c.init_c = c.peepholes = cell == Cell::kLstm;
    c.lens = {3, 1};
    check<double>(c);
  }
}

// Values worked out by hand from the equations.
TEST(Recurrent, HandComputedRnnAndLstm) {
  // RNN, H = I = 1: h1 = tanh(0.5*1 + 0.1 + 0.2), h2 = tanh(0.5*2 + 0.25*h1 + 0.3).
  {
    OnnxBuilder b(14);
    b.input("X", 1, {2, 1, 1});
    b.initializer_f32("W", {1, 1, 1}, {0.5f}).initializer_f32("R", {1, 1, 1}, {0.25f});
    b.initializer_f32("B", {1, 2}, {0.1f, 0.2f});
    auto& n = b.node("RNN", {"X", "W", "R", "B"}, {"Y", "Y_h"});
    OnnxBuilder::attr(n, "hidden_size", int64_t{1});
    b.output("Y").output("Y_h");
    std::string bytes = b.bytes();
    auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    std::vector<Tensor> out;
    ASSERT_TRUE((*s)->run({{"X", Tensor::from_vector<float>({1, 2}, {2, 1, 1})}}, out).is_ok());
    double h1 = std::tanh(0.5 + 0.3), h2 = std::tanh(1.0 + 0.25 * h1 + 0.3);
    EXPECT_NEAR(out[0].data<float>()[0], h1, 1e-6);
    EXPECT_NEAR(out[0].data<float>()[1], h2, 1e-6);
    EXPECT_NEAR(out[1].data<float>()[0], h2, 1e-6);
  }
  // LSTM, H = I = 1, one step, all weights 1, no bias, x = 0.5, h0 = 0, c0 = 2:
  // i = o = f = sigmoid(0.5), g = tanh(0.5), c = f*2 + i*g, h = o * tanh(c).
  {
    OnnxBuilder b(14);
    b.input("X", 1, {1, 1, 1});
    b.initializer_f32("W", {1, 4, 1}, {1, 1, 1, 1}).initializer_f32("R", {1, 4, 1}, {1, 1, 1, 1});
    b.initializer_f32("C0", {1, 1, 1}, {2});
    auto& n = b.node("LSTM", {"X", "W", "R", "", "", "", "C0"}, {"", "Y_h", "Y_c"});
    OnnxBuilder::attr(n, "hidden_size", int64_t{1});
    b.output("Y_h").output("Y_c");
    std::string bytes = b.bytes();
    auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    std::vector<Tensor> out;
    ASSERT_TRUE((*s)->run({{"X", Tensor::from_vector<float>({0.5f}, {1, 1, 1})}}, out).is_ok());
    double sg = 1 / (1 + std::exp(-0.5)), c = sg * 2 + sg * std::tanh(0.5), h = sg * std::tanh(c);
    EXPECT_NEAR(out[0].data<float>()[0], h, 1e-6);
    EXPECT_NEAR(out[1].data<float>()[0], c, 1e-6);
  }
}

TEST(Recurrent, SymbolicDimsReplanAndInferShapes) {
  OnnxBuilder b(14);
  b.input("X", 1, {-1, -1, 3}, {"seq", "batch", ""});
  b.input("W", 1, {2, 8, 3}).input("R", 1, {2, 8, 2});
  auto& n = b.node("LSTM", {"X", "W", "R"}, {"Y", "Y_h", "Y_c"});
  OnnxBuilder::attr(n, "hidden_size", int64_t{2});
  OnnxBuilder::attr(n, "direction", std::string("bidirectional"));
  b.output("Y").output("Y_h").output("Y_c");
  std::string bytes = b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ((*s)->outputs()[0].type.shape.to_string(), "[seq,2,batch,2]");
  EXPECT_EQ((*s)->outputs()[1].type.shape.to_string(), "[2,batch,2]");
  Case c;
  c.direction = "bidirectional";
  c.I = 3, c.H = 2;
  for (auto [S, B] : {std::pair{4, 3}, std::pair{1, 1}, std::pair{6, 2}}) {
    c.S = S, c.B = B;
    Data data = make_data(c, static_cast<uint32_t>(S * 10 + B));
    Outputs want = naive(c, data);
    std::vector<Tensor> out;
    auto st = (*s)->run({{"X", to_tensor<float>(data.x, {S, B, 3})},
                         {"W", to_tensor<float>(data.w, {2, 8, 3})},
                         {"R", to_tensor<float>(data.r, {2, 8, 2})}},
                        out);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_EQ(out[0].dims(), (core::Dims{S, 2, B, 2}));
    for (size_t e = 0; e < want.y.size(); ++e) EXPECT_NEAR(out[0].data<float>()[e], want.y[e], 1e-5);
    for (size_t e = 0; e < want.yc.size(); ++e) EXPECT_NEAR(out[2].data<float>()[e], want.yc[e], 1e-5);
  }
}

// Malformed nodes fail at load with a message naming the node; bad run-time values fail the run.
TEST(Recurrent, BadInputIsRejected) {
  auto open_lstm = [](const std::function<void(OnnxBuilder&, onnx::NodeProto&)>& edit,
                      std::vector<int64_t> wdims = {1, 8, 3}) {
    OnnxBuilder b(14);
    b.input("X", 1, {2, 1, 3}).input("W", 1, wdims).input("R", 1, {1, 8, 2});
    auto& n = b.node("LSTM", {"X", "W", "R"}, {"Y"}, "lstm0");
    OnnxBuilder::attr(n, "hidden_size", int64_t{2});
    edit(b, n);
    b.output("Y");
    std::string bytes = b.bytes();
    return runtime::Session::open_memory(bytes.data(), bytes.size());
  };
  auto expect_fail = [](const auto& r, const std::string& what) {
    ASSERT_FALSE(r.is_ok()) << what;
    EXPECT_NE(r.status().message().find("lstm0"), std::string::npos) << r.status().to_string();
  };
  ASSERT_TRUE(open_lstm([](OnnxBuilder&, onnx::NodeProto&) {}).is_ok());
  expect_fail(
      open_lstm([](OnnxBuilder&, onnx::NodeProto& n) { OnnxBuilder::attr(n, "direction", std::string("sideways")); }),
      "direction");
  expect_fail(open_lstm([](OnnxBuilder&, onnx::NodeProto& n) { OnnxBuilder::attr(n, "layout", int64_t{2}); }),
              "layout");
  expect_fail(open_lstm([](OnnxBuilder&, onnx::NodeProto& n) { OnnxBuilder::attr(n, "clip", -1.f); }), "clip");
  expect_fail(open_lstm([](OnnxBuilder&, onnx::NodeProto& n) {
                add_strings_attr(n, "activations", {"Sigmoid", "Tanh", "Gelu"});
              }),
              "activation name");
  expect_fail(open_lstm([](OnnxBuilder&, onnx::NodeProto& n) {
                add_strings_attr(n, "activations", {"Sigmoid", "Tanh"});
              }),
              "activation count");
  expect_fail(open_lstm([](OnnxBuilder&, onnx::NodeProto&) {}, {1, 8, 4}), "W input size");
  expect_fail(open_lstm([](OnnxBuilder&, onnx::NodeProto&) {}, {2, 8, 3}), "W directions");
  expect_fail(open_lstm([](OnnxBuilder&, onnx::NodeProto&) {}, {1, 6, 3}), "W gates");
  expect_fail(open_lstm([](OnnxBuilder&, onnx::NodeProto&) {}, {1, 8}), "W rank");

  {  // float16 is valid ONNX but not implemented: Unsupported at load, naming the node.
    OnnxBuilder b(14);
    b.input("X", 10, {2, 1, 3}).input("W", 10, {1, 4, 3}).input("R", 10, {1, 4, 4});
    b.node("RNN", {"X", "W", "R"}, {"Y"}, "rnn_f16");
    b.output("Y", 10);
    std::string bytes = b.bytes();
    auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
    ASSERT_FALSE(s.is_ok());
    EXPECT_EQ(s.status().code(), core::StatusCode::kUnsupported) << s.status().to_string();
    EXPECT_NE(s.status().message().find("rnn_f16"), std::string::npos) << s.status().to_string();
  }

  // sequence_lens outside [0, seq_length] is a run-time error, not a crash.
  OnnxBuilder b(14);
  b.input("X", 1, {2, 2, 1}).input("L", 6, {2});
  b.initializer_f32("W", {1, 1, 1}, {1}).initializer_f32("R", {1, 1, 1}, {1});
  b.node("RNN", {"X", "W", "R", "", "L"}, {"Y"}, "rnn0");
  b.output("Y");
  std::string bytes = b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2, 1});
  std::vector<Tensor> out;
  for (std::vector<int32_t> lens : {std::vector<int32_t>{3, 1}, std::vector<int32_t>{1, -1}}) {
    auto st = (*s)->run({{"X", x}, {"L", Tensor::from_vector<int32_t>(lens, {2})}}, out);
    ASSERT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find("sequence_lens"), std::string::npos) << st.to_string();
  }
  ASSERT_TRUE((*s)->run({{"X", x}, {"L", Tensor::from_vector<int32_t>({2, 0}, {2})}}, out).is_ok());
  // Wrong-shaped initial_h fed at run time.
  OnnxBuilder b2(14);
  b2.input("X", 1, {2, 2, 1}).input("H0", 1, {-1, -1, -1});
  b2.initializer_f32("W", {1, 1, 1}, {1}).initializer_f32("R", {1, 1, 1}, {1});
  b2.node("RNN", {"X", "W", "R", "", "", "H0"}, {"Y"}, "rnn1");
  b2.output("Y");
  bytes = b2.bytes();
  auto s2 = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s2.is_ok()) << s2.status().to_string();
  auto st = (*s2)->run({{"X", x}, {"H0", Tensor::from_vector<float>({0, 0, 0}, {1, 3, 1})}}, out);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("initial_h"), std::string::npos) << st.to_string();
}

}  // namespace
}  // namespace kestrel

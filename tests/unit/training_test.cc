// Tests of the optimizer ops (Adagrad, Adam, Momentum in ai.onnx.preview.training): hand-computed
// steps, a naive re-computation from the spec's pseudo code over several shapes, dtypes and every
// attribute, multi-tensor models through the ONNX importer, and bad input.
#include "kernels/reference/training.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/nn_test_util.h"
#include "ir/op_schema.h"
#include "runtime/kernel.h"

namespace kestrel {
namespace {

using core::Dims;
using core::DType;
using core::Tensor;
using testing::OnnxBuilder;
namespace ref = kernels::ref;

Tensor f32(const std::vector<float>& v, const Dims& d) {
  return Tensor::from_vector<float>(v, d);
}
Tensor r_scalar(double r, DType dt = DType::kF32) {
  return dt == DType::kF32 ? Tensor::scalar<float>(static_cast<float>(r)) : Tensor::scalar<double>(r);
}
Tensor t_scalar(int64_t t) {
  return Tensor::scalar<int64_t>(t);
}
Tensor like(const Tensor& t) {
  return Tensor::allocate(t.dtype(), t.dims()).value();
}

// ---------------------------------------------------------------------------------------------
// Hand-computed single steps (numbers chosen so every intermediate is exact).

TEST(TrainingReference, AdagradHandComputed) {
  // r = 1 / (1 + 1 * 1) = 0.5; g = 0.5 * 2 + 1 = 2; H_new = 0 + 4; X_new = 2 - 0.5 * 2 / 2 = 1.5.
  Tensor x = f32({2}, {1}), g = f32({1}, {1}), h = f32({0}, {1});
  Tensor xn = like(x), hn = like(h);
  ref::AdagradParams p{.norm_coefficient = 0.5, .decay_factor = 1, .epsilon = 0};
  ASSERT_TRUE(ref::adagrad(r_scalar(1), t_scalar(1), x, g, h, p, xn, hn).is_ok());
  testing::expect_close(xn, {1.5});
  testing::expect_close(hn, {4});
  // decay_factor applies through T: T = 0 keeps the full rate, X_new = 2 - 1 * 2 / 2 = 1.
  ASSERT_TRUE(ref::adagrad(r_scalar(1), t_scalar(0), x, g, h, p, xn, hn).is_ok());
  testing::expect_close(xn, {1});
  // epsilon is added to sqrt(H_new): X_new = 2 - 1 * 2 / (2 + 2) = 1.5.
  p.epsilon = 2;
  ASSERT_TRUE(ref::adagrad(r_scalar(1), t_scalar(0), x, g, h, p, xn, hn).is_ok());
  testing::expect_close(xn, {1.5});
}

TEST(TrainingReference, AdamHandComputed) {
  // alpha 0.5, beta 0.75, T = 1: R' = R sqrt(0.25) / 0.5 = R. g = 1, V_new = 0.5 + 0.5 = 1,
  // H_new = 0.75 + 0.25 = 1, X_new = 3 - 1 * 1 / 1 = 2, then (1 - 0.5) * 2 = 1.
  Tensor x = f32({3}, {1}), g = f32({1}, {1}), v = f32({1}, {1}), h = f32({1}, {1});
  Tensor xn = like(x), vn = like(v), hn = like(h);
  ref::AdamParams p{.alpha = 0.5, .beta = 0.75, .epsilon = 0, .norm_coefficient = 0, .norm_coefficient_post = 0.5};
  ASSERT_TRUE(ref::adam(r_scalar(1), t_scalar(1), x, g, v, h, p, xn, vn, hn).is_ok());
  testing::expect_close(xn, {1});
  testing::expect_close(vn, {1});
  testing::expect_close(hn, {1});
  // T = 2: R' = sqrt(1 - 0.5625) / (1 - 0.25) = 0.661437827766 / 0.75; X_new = 0.5 * (3 - R').
  ASSERT_TRUE(ref::adam(r_scalar(1), t_scalar(2), x, g, v, h, p, xn, vn, hn).is_ok());
  testing::expect_close(xn, {0.5 * (3 - std::sqrt(0.4375) / 0.75)});
  // T = 0: R' = R. norm_coefficient 1 and epsilon 1: g = 3 + 1 = 4, V_new = 0.5 + 2 = 2.5,
  // H_new = 0.75 + 4 = 4.75, X_new = 0.5 * (3 - 2.5 / (sqrt(4.75) + 1)).
  p.norm_coefficient = 1;
  p.epsilon = 1;
  ASSERT_TRUE(ref::adam(r_scalar(1), t_scalar(0), x, g, v, h, p, xn, vn, hn).is_ok());
  testing::expect_close(vn, {2.5});
  testing::expect_close(hn, {4.75});
  testing::expect_close(xn, {0.5 * (3 - 2.5 / (std::sqrt(4.75) + 1))});
}

TEST(TrainingReference, MomentumHandComputed) {
  Tensor x = f32({1}, {1}), g = f32({2}, {1}), v = f32({4}, {1});
  Tensor xn = like(x), vn = like(v);
  ref::MomentumParams p{.alpha = 0.5, .beta = 0.25, .norm_coefficient = 0, .nesterov = false};
  // T = 0: beta is replaced by 1. V_new = 2 + 2 = 4, X_new = 1 - 0.5 * 4 = -1.
  ASSERT_TRUE(ref::momentum(r_scalar(0.5), t_scalar(0), x, g, v, p, xn, vn).is_ok());
  testing::expect_close(vn, {4});
  testing::expect_close(xn, {-1});
  // T = 1: V_new = 2 + 0.25 * 2 = 2.5, X_new = 1 - 1.25 = -0.25.
  ASSERT_TRUE(ref::momentum(r_scalar(0.5), t_scalar(1), x, g, v, p, xn, vn).is_ok());
  testing::expect_close(vn, {2.5});
  testing::expect_close(xn, {-0.25});
  // Nesterov: X_new = 1 - 0.5 * (2 + 0.5 * 2.5) = -0.625.
  p.nesterov = true;
  ASSERT_TRUE(ref::momentum(r_scalar(0.5), t_scalar(1), x, g, v, p, xn, vn).is_ok());
  testing::expect_close(xn, {-0.625});
  // norm_coefficient 1: g = 1 + 2 = 3, V_new = 2 + 0.75 = 2.75, X_new = 1 - 0.5 * (3 + 1.375).
  p.norm_coefficient = 1;
  ASSERT_TRUE(ref::momentum(r_scalar(0.5), t_scalar(1), x, g, v, p, xn, vn).is_ok());
  testing::expect_close(vn, {2.75});
  testing::expect_close(xn, {1 - 0.5 * 4.375});
}

// ---------------------------------------------------------------------------------------------
// Naive re-computation over shapes, dtypes, T values and non-default attributes.

struct Case {
  Dims dims;
  DType dt;
  int64_t t;
};
std::vector<Case> cases() {
  std::vector<Case> r;
  for (const Dims& d : {Dims{}, Dims{1}, Dims{7}, Dims{2, 3, 5}, Dims{0, 3}})
    for (DType dt : {DType::kF32, DType::kF64})
      for (int64_t t : {0, 1, 5}) r.push_back({d, dt, t});
  return r;
}
double tol(DType dt) {
  return dt == DType::kF32 ? 1e-5 : 1e-12;
}

TEST(TrainingReference, AdagradMatchesNaive) {
  const ref::AdagradParams p{.norm_coefficient = 0.03, .decay_factor = 0.2, .epsilon = 1e-3};
  uint32_t seed = 1;
  for (const Case& c : cases()) {
    Tensor x = testing::to_dtype(testing::random_tensor(c.dims, seed++), c.dt);
    Tensor g = testing::to_dtype(testing::random_tensor(c.dims, seed++), c.dt);
    Tensor h = testing::to_dtype(testing::random_tensor(c.dims, seed++, 0.f, 2.f), c.dt);
    Tensor xn = like(x), hn = like(h);
    ASSERT_TRUE(ref::adagrad(r_scalar(0.3, c.dt), t_scalar(c.t), x, g, h, p, xn, hn).is_ok());
    auto xv = testing::values(x), gv = testing::values(g), hv = testing::values(h);
    std::vector<double> want_x, want_h;
    const double r = 0.3 / (1 + static_cast<double>(c.t) * 0.2);
    for (size_t i = 0; i < xv.size(); ++i) {
      const double gr = 0.03 * xv[i] + gv[i];
      want_h.push_back(hv[i] + gr * gr);
      want_x.push_back(xv[i] - r * gr / (std::sqrt(want_h.back()) + 1e-3));
    }
    const std::string what = core::dims_to_string(c.dims) + " T=" + std::to_string(c.t);
    testing::expect_close(xn, want_x, tol(c.dt), tol(c.dt), what);
    testing::expect_close(hn, want_h, tol(c.dt), tol(c.dt), what);
  }
}

TEST(TrainingReference, AdamMatchesNaive) {
  const ref::AdamParams p{
      .alpha = 0.8, .beta = 0.95, .epsilon = 1e-2, .norm_coefficient = 0.05, .norm_coefficient_post = 0.01};
  uint32_t seed = 100;
  for (const Case& c : cases()) {
    Tensor x = testing::to_dtype(testing::random_tensor(c.dims, seed++), c.dt);
    Tensor g = testing::to_dtype(testing::random_tensor(c.dims, seed++), c.dt);
    Tensor v = testing::to_dtype(testing::random_tensor(c.dims, seed++), c.dt);
    Tensor h = testing::to_dtype(testing::random_tensor(c.dims, seed++, 0.f, 2.f), c.dt);
    Tensor xn = like(x), vn = like(v), hn = like(h);
    ASSERT_TRUE(ref::adam(r_scalar(0.2, c.dt), t_scalar(c.t), x, g, v, h, p, xn, vn, hn).is_ok());
    auto xv = testing::values(x), gv = testing::values(g), vv = testing::values(v), hv = testing::values(h);
    double r = 0.2;
    if (c.t > 0) {
      double at = 1, bt = 1;
      for (int64_t k = 0; k < c.t; ++k) at *= 0.8, bt *= 0.95;
      r = 0.2 * std::sqrt(1 - bt) / (1 - at);
    }
    std::vector<double> want_x, want_v, want_h;
    for (size_t i = 0; i < xv.size(); ++i) {
      const double gr = 0.05 * xv[i] + gv[i];
      want_v.push_back(0.8 * vv[i] + 0.2 * gr);
      want_h.push_back(0.95 * hv[i] + 0.05 * gr * gr);
      want_x.push_back(0.99 * (xv[i] - r * want_v.back() / (std::sqrt(want_h.back()) + 1e-2)));
    }
    const std::string what = core::dims_to_string(c.dims) + " T=" + std::to_string(c.t);
    testing::expect_close(xn, want_x, tol(c.dt), tol(c.dt), what);
    testing::expect_close(vn, want_v, tol(c.dt), tol(c.dt), what);
    testing::expect_close(hn, want_h, tol(c.dt), tol(c.dt), what);
  }
}

TEST(TrainingReference, MomentumMatchesNaive) {
  uint32_t seed = 200;
  for (bool nesterov : {false, true})
    for (const Case& c : cases()) {
      const ref::MomentumParams p{.alpha = 0.7, .beta = 0.4, .norm_coefficient = 0.02, .nesterov = nesterov};
      Tensor x = testing::to_dtype(testing::random_tensor(c.dims, seed++), c.dt);
      Tensor g = testing::to_dtype(testing::random_tensor(c.dims, seed++), c.dt);
      Tensor v = testing::to_dtype(testing::random_tensor(c.dims, seed++), c.dt);
      Tensor xn = like(x), vn = like(v);
      ASSERT_TRUE(ref::momentum(r_scalar(0.1, c.dt), t_scalar(c.t), x, g, v, p, xn, vn).is_ok());
      auto xv = testing::values(x), gv = testing::values(g), vv = testing::values(v);
      std::vector<double> want_x, want_v;
      for (size_t i = 0; i < xv.size(); ++i) {
        const double gr = 0.02 * xv[i] + gv[i];
        want_v.push_back(0.7 * vv[i] + (c.t > 0 ? 0.4 : 1.0) * gr);
        want_x.push_back(nesterov ? xv[i] - 0.1 * (gr + 0.7 * want_v.back()) : xv[i] - 0.1 * want_v.back());
      }
      const std::string what =
          core::dims_to_string(c.dims) + " T=" + std::to_string(c.t) + (nesterov ? " nesterov" : "");
      testing::expect_close(xn, want_x, tol(c.dt), tol(c.dt), what);
      testing::expect_close(vn, want_v, tol(c.dt), tol(c.dt), what);
    }
}

TEST(TrainingReference, MixedDtypesAndInPlace) {
  // Variadic inputs are not homogeneous: X f64 with G/H f32 and R f64; outputs follow their inputs.
  Tensor x = Tensor::from_vector<double>({2}, {1}), g = f32({1}, {1}), h = f32({0}, {1});
  Tensor xn = like(x), hn = like(h);
  ref::AdagradParams p{.norm_coefficient = 0.5, .decay_factor = 1, .epsilon = 0};
  ASSERT_TRUE(ref::adagrad(r_scalar(1, DType::kF64), t_scalar(1), x, g, h, p, xn, hn).is_ok());
  EXPECT_EQ(xn.dtype(), DType::kF64);
  testing::expect_close(xn, {1.5});
  // Outputs may be the inputs themselves (an in-place update).
  Tensor x2 = f32({1, 2, 3}, {3}), g2 = f32({1, 1, 1}, {3}), v2 = f32({0, 0, 0}, {3});
  ref::MomentumParams mp{.alpha = 0.5, .beta = 0.5, .norm_coefficient = 0, .nesterov = false};
  ASSERT_TRUE(ref::momentum(r_scalar(1), t_scalar(0), x2, g2, v2, mp, x2, v2).is_ok());
  testing::expect_close(x2, {0, 1, 2});
  testing::expect_close(v2, {1, 1, 1});
}

TEST(TrainingReference, BadInput) {
  Tensor x = f32({1, 2}, {2}), g = f32({1, 2}, {2}), h = f32({1, 2}, {2});
  Tensor xn = like(x), hn = like(h);
  const ref::AdagradParams p;
  auto err = [&](const Tensor& r, const Tensor& t, const Tensor& xx, const Tensor& gg, const std::string& needle) {
    core::Status st = ref::adagrad(r, t, xx, gg, h, p, xn, hn);
    EXPECT_FALSE(st.is_ok()) << needle;
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.to_string();
  };
  err(r_scalar(1), t_scalar(-1), x, g, "must be >= 0");
  err(r_scalar(1), Tensor::scalar<int32_t>(1), x, g, "T must be one int64");
  err(f32({1, 2}, {2}), t_scalar(0), x, g, "R must be one float");
  err(Tensor::scalar<int64_t>(1), t_scalar(0), x, g, "R must be one float");
  err(r_scalar(1), t_scalar(0), x, f32({1, 2, 3}, {3}), "must have the shape of X");
  err(r_scalar(1), t_scalar(0), Tensor::from_vector<int64_t>({1, 2}, {2}), g, "must be float or double");
  Tensor wrong = Tensor::allocate(DType::kF64, {2}).value();
  EXPECT_FALSE(ref::adagrad(r_scalar(1), t_scalar(0), x, g, h, p, wrong, hn).is_ok());
  Tensor v = f32({0, 0}, {2}), vn = like(v);
  EXPECT_FALSE(ref::momentum(r_scalar(1), t_scalar(-3), x, g, v, {}, xn, vn).is_ok());
  EXPECT_FALSE(ref::adam(r_scalar(1), t_scalar(0), x, g, f32({0}, {1}), h, {}, xn, vn, hn).is_ok());
}

// ---------------------------------------------------------------------------------------------
// Models through the ONNX importer: the training domain, several optimized tensors, errors.

// A model of one optimizer node over `n` f32 tensors of the given dims; `groups` input groups
// named X, G, then `states`; outputs X*_new and <state>*_new.
OnnxBuilder optimizer_model(const std::string& op, const std::vector<Dims>& dims,
                            const std::vector<std::string>& states, bool import_training = true,
                            bool import_default = false, int64_t training_version = 1) {
  OnnxBuilder m(18);
  auto* ops = m.model().mutable_opset_import();
  if (!import_default) ops->Clear();
  if (import_training) {
    auto* os = m.model().add_opset_import();
    os->set_domain(ir::kOnnxTrainingDomain);
    os->set_version(training_version);
  }
  m.input("R", 1, {}).input("T", 7, {});
  std::vector<std::string> groups = {"X", "G"};
  for (const auto& s : states) groups.push_back(s);
  std::vector<std::string> ins = {"R", "T"}, outs;
  for (const auto& gname : groups)
    for (size_t j = 0; j < dims.size(); ++j) {
      const std::string name = gname + std::to_string(j + 1);
      m.input(name, 1, std::vector<int64_t>(dims[j].begin(), dims[j].end()));
      ins.push_back(name);
    }
  for (const auto& gname : groups) {
    if (gname == "G") continue;
    for (size_t j = 0; j < dims.size(); ++j) outs.push_back(gname + std::to_string(j + 1) + "_new");
  }
  auto& n = m.node(op, ins, outs, "opt");
  n.set_domain(ir::kOnnxTrainingDomain);
  for (const auto& o : outs) m.output(o);
  return m;
}

onnx::NodeProto& node_of(OnnxBuilder& m) {
  return *m.graph().mutable_node(0);
}

TEST(TrainingModel, AdagradTwoTensors) {
  OnnxBuilder m = optimizer_model("Adagrad", {{1}, {2, 3}}, {"H"});
  OnnxBuilder::attr(node_of(m), "norm_coefficient", 0.01f);
  OnnxBuilder::attr(node_of(m), "decay_factor", 0.5f);
  OnnxBuilder::attr(node_of(m), "epsilon", 1e-3f);
  std::vector<Tensor> in = {r_scalar(0.2), t_scalar(2)};
  for (uint32_t k = 0; k < 3; ++k) {
    in.push_back(testing::random_tensor({1}, 10 + k, k == 2 ? 0.f : -1.f, 1.f));
    in.push_back(testing::random_tensor({2, 3}, 20 + k, k == 2 ? 0.f : -1.f, 1.f));
  }
  // Made in input order: R, T, X1, X2, G1, G2, H1, H2 (H non-negative).
  const std::vector<Tensor>& feed = in;
  auto out = testing::run_model(m, feed);
  ASSERT_EQ(out.size(), 4u);
  const double r = 0.2 / (1 + 2 * static_cast<double>(0.5f));
  for (size_t j = 0; j < 2; ++j) {
    auto xv = testing::values(feed[2 + j]), gv = testing::values(feed[4 + j]), hv = testing::values(feed[6 + j]);
    std::vector<double> want_x, want_h;
    for (size_t i = 0; i < xv.size(); ++i) {
      const double gr = static_cast<double>(0.01f) * xv[i] + gv[i];
      want_h.push_back(hv[i] + gr * gr);
      want_x.push_back(xv[i] - r * gr / (std::sqrt(want_h.back()) + static_cast<double>(1e-3f)));
    }
    EXPECT_EQ(out[j].dims(), feed[2 + j].dims());
    testing::expect_close(out[j], want_x, 1e-6, 1e-5, "X_new");
    testing::expect_close(out[2 + j], want_h, 1e-6, 1e-5, "H_new");
  }
}

TEST(TrainingModel, AdamDefaultsAndMomentumModes) {
  // Adam with no attributes: alpha 0.9, beta 0.999, epsilon 1e-6, no regularization.
  OnnxBuilder adam = optimizer_model("Adam", {{2}}, {"V", "H"});
  std::vector<Tensor> feed = {r_scalar(0.1),          t_scalar(3),           f32({1, -2}, {2}), f32({0.5f, 0.25f}, {2}),
                              f32({0.1f, 0.2f}, {2}), f32({0.3f, 0.4f}, {2})};
  auto out = testing::run_model(adam, feed);
  ASSERT_EQ(out.size(), 3u);
  const double a = static_cast<double>(0.9f), b = static_cast<double>(0.999f), eps = static_cast<double>(1e-6f);
  const double r = 0.1 * std::sqrt(1 - std::pow(b, 3)) / (1 - std::pow(a, 3));
  std::vector<double> wx, wv, wh;
  const double xs[] = {1, -2}, gs[] = {0.5, 0.25}, vs[] = {0.1, 0.2}, hs[] = {0.3, 0.4};
  for (int i = 0; i < 2; ++i) {
    wv.push_back(a * static_cast<double>(static_cast<float>(vs[i])) + (1 - a) * gs[i]);
    wh.push_back(b * static_cast<double>(static_cast<float>(hs[i])) + (1 - b) * gs[i] * gs[i]);
    wx.push_back(xs[i] - r * wv.back() / (std::sqrt(wh.back()) + eps));
  }
  testing::expect_close(out[0], wx, 1e-6, 1e-5);
  testing::expect_close(out[1], wv, 1e-6, 1e-5);
  testing::expect_close(out[2], wh, 1e-6, 1e-5);

  // Momentum, both modes, through a model: hand values of MomentumHandComputed.
  for (const char* mode : {"standard", "nesterov"}) {
    OnnxBuilder mom = optimizer_model("Momentum", {{1}}, {"V"});
    OnnxBuilder::attr(node_of(mom), "alpha", 0.5f);
    OnnxBuilder::attr(node_of(mom), "beta", 0.25f);
    OnnxBuilder::attr(node_of(mom), "norm_coefficient", 0.0f);
    OnnxBuilder::attr(node_of(mom), "mode", std::string(mode));
    auto o = testing::run_model(mom, {r_scalar(0.5), t_scalar(1), f32({1}, {1}), f32({2}, {1}), f32({4}, {1})});
    ASSERT_EQ(o.size(), 2u);
    testing::expect_close(o[0], {std::string(mode) == "standard" ? -0.25 : -0.625});
    testing::expect_close(o[1], {2.5});
  }
}

TEST(TrainingModel, WithDefaultDomainNodes) {
  // Both domains imported: an Add feeds the gradient of a Momentum node.
  OnnxBuilder m = optimizer_model("Momentum", {{2}}, {"V"}, true, true);
  OnnxBuilder::attr(node_of(m), "alpha", 0.f);
  OnnxBuilder::attr(node_of(m), "beta", 1.f);
  OnnxBuilder::attr(node_of(m), "norm_coefficient", 0.f);
  OnnxBuilder::attr(node_of(m), "mode", std::string("standard"));
  node_of(m).set_input(3, "G2x");
  m.node("Add", {"G1", "G1"}, {"G2x"}, "double_g");
  // Nodes must be in topological order: move the Add first.
  m.graph().mutable_node()->SwapElements(0, 1);
  auto out = testing::run_model(m, {r_scalar(1), t_scalar(0), f32({1, 2}, {2}), f32({3, 4}, {2}), f32({0, 0}, {2})});
  ASSERT_EQ(out.size(), 2u);
  testing::expect_close(out[0], {-5, -6});  // X - 1 * (2 G)
  testing::expect_close(out[1], {6, 8});
}

TEST(TrainingModel, ConstantInputsAreFolded) {
  // Every input constant: inference plus the binding through runtime::evaluate_node (plan-time
  // folding), with the op looked up in its own domain.
  ir::Graph g("fold");
  std::vector<ir::Value*> ins = {g.add_constant("R", r_scalar(0.5)), g.add_constant("T", t_scalar(1)),
                                 g.add_constant("X", f32({1}, {1})), g.add_constant("G", f32({2}, {1})),
                                 g.add_constant("V", f32({4}, {1}))};
  ir::Node* n = g.add_node("Momentum", ins, {"X_new", "V_new"}, "opt", ir::kOnnxTrainingDomain);
  n->set_attr("alpha", 0.5f);
  n->set_attr("beta", 0.25f);
  n->set_attr("norm_coefficient", 0.f);
  n->set_attr("mode", std::string("nesterov"));
  std::vector<const Tensor*> values;
  for (ir::Value* v : ins) values.push_back(&v->constant());
  auto out = runtime::evaluate_node(*n, values);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ(out->size(), 2u);
  testing::expect_close((*out)[0], {-0.625});
  testing::expect_close((*out)[1], {2.5});
}

TEST(TrainingModel, BadModels) {
  auto momentum = [](const std::string& mode, bool with_alpha = true) {
    OnnxBuilder m = optimizer_model("Momentum", {{2}}, {"V"});
    if (with_alpha) OnnxBuilder::attr(node_of(m), "alpha", 0.5f);
    OnnxBuilder::attr(node_of(m), "beta", 0.5f);
    OnnxBuilder::attr(node_of(m), "norm_coefficient", 0.f);
    OnnxBuilder::attr(node_of(m), "mode", mode);
    return m;
  };
  EXPECT_TRUE(testing::contains(testing::open_error(momentum("heavy_ball"), "opt"), "mode"));
  EXPECT_TRUE(testing::contains(testing::open_error(momentum("standard", false), "opt"), "alpha"));
  // Output count must match the tensor count: drop one output.
  OnnxBuilder few = optimizer_model("Adagrad", {{2}, {3}}, {"H"});
  node_of(few).mutable_output()->RemoveLast();
  few.graph().mutable_output()->RemoveLast();
  EXPECT_TRUE(testing::contains(testing::open_error(few, "opt"), "outputs"));
  // Inputs not in whole groups.
  OnnxBuilder odd = optimizer_model("Adam", {{2}}, {"V", "H"});
  node_of(odd).add_input("X1");
  EXPECT_TRUE(testing::contains(testing::open_error(odd, "opt"), "groups"));
  // G with another shape than X.
  OnnxBuilder shape = optimizer_model("Adagrad", {{2}}, {"H"});
  shape.graph().mutable_input(3)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(
      3);
  EXPECT_TRUE(testing::contains(testing::open_error(shape, "opt"), "shape of X"));
  // T must be int64.
  OnnxBuilder tf = optimizer_model("Adagrad", {{2}}, {"H"});
  tf.graph().mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  EXPECT_TRUE(testing::contains(testing::open_error(tf, "opt"), "int64"));
  // Domain not imported, or another version of it.
  auto st = testing::open_error(optimizer_model("Adagrad", {{2}}, {"H"}, false, true), "opt");
  EXPECT_TRUE(testing::contains(st, "does not import")) << st.to_string();
  auto v2 = testing::open_model(optimizer_model("Adagrad", {{2}}, {"H"}, true, false, 2));
  ASSERT_FALSE(v2.is_ok());
  EXPECT_EQ(v2.status().code(), core::StatusCode::kUnsupported);
  // A default-domain node in a model that imports only the training domain.
  OnnxBuilder no_default = optimizer_model("Adagrad", {{2}}, {"H"});
  no_default.node("Relu", {"X1"}, {"relu_out"}, "relu");
  no_default.output("relu_out");
  EXPECT_TRUE(testing::contains(testing::open_error(no_default, "relu"), "default ONNX domain"));
  // Negative T is a run-time error, not a crash.
  OnnxBuilder ok = optimizer_model("Adagrad", {{2}}, {"H"});
  auto s = testing::open_model(ok);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  Tensor r = r_scalar(1), t = t_scalar(-1), x = f32({1, 2}, {2});
  std::vector<Tensor> outs;
  std::vector<const Tensor*> ptrs = {&r, &t, &x, &x, &x};
  core::Status run = (*s)->run(ptrs, outs);
  EXPECT_FALSE(run.is_ok());
  EXPECT_NE(run.message().find("update count"), std::string::npos) << run.to_string();
}

}  // namespace
}  // namespace kestrel

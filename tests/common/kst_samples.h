// Test helper: IR graphs that exercise everything the .kst format stores (kst tests, fuzz corpus).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"

namespace kestrel::testing {

// A tensor of any numeric dtype filled with a deterministic pattern that differs per seed.
inline core::Tensor pattern_tensor(core::DType dt, const core::Dims& dims, int seed) {
  core::Tensor t = core::Tensor::allocate(dt, dims).value();
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    int64_t v = (i * 7 + seed * 13) % 23 - 11;
    core::visit_numeric_dtype(dt, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>)
        t.data<T>()[i] = (v & 1) != 0;
      else if constexpr (std::is_same_v<T, core::Float16> || std::is_same_v<T, core::BFloat16>)
        t.data<T>()[i] = T(static_cast<float>(v) * 0.25f);
      else if constexpr (std::is_floating_point_v<T>)
        t.data<T>()[i] = static_cast<T>(v) * static_cast<T>(0.3);
      else
        t.data<T>()[i] = static_cast<T>(v);
    });
  }
  return t;
}

inline core::Tensor string_tensor(const std::vector<std::string>& v, const core::Dims& dims) {
  core::Tensor t = core::Tensor::allocate(core::DType::kString, dims).value();
  for (size_t i = 0; i < v.size() && i < static_cast<size_t>(t.num_elements()); ++i) t.data<std::string>()[i] = v[i];
  return t;
}

inline core::Tensor random_f32(const core::Dims& dims, uint32_t seed, float scale = 1.0f) {
  core::Tensor t = core::Tensor::allocate(core::DType::kF32, dims).value();
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  for (float& x : t.span<float>()) x = dist(rng);
  return t;
}

// Every value kind, every dtype, every attribute kind, symbolic / unknown dims and unknown rank,
// an omitted optional input, a Kestrel-domain node, nested subgraphs with outer-scope values and
// implicit inputs, graph outputs that are inputs or constants, and metadata of every sort.
// The op types need not exist: the format stores graphs, it does not run them.
inline std::unique_ptr<ir::Graph> make_feature_graph() {
  using core::DType;
  using ir::Dim;
  using ir::Shape;
  using ir::ValueType;
  auto g = std::make_unique<ir::Graph>("main");
  ir::Value* x = g->add_input("x", {DType::kF32, Shape({Dim::sym("batch"), Dim(3), Dim::unknown()})});
  ir::Value* ids = g->add_input("ids", {DType::kI64, Shape::unknown_rank()});
  g->add_input("text", {DType::kString, Shape({Dim(2)})});
  g->add_input("untyped", {DType::kUndefined, Shape(std::vector<Dim>{})});

  std::vector<ir::Value*> consts;
  int seed = 0;
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI8, DType::kU8, DType::kI16,
                   DType::kU16, DType::kI32, DType::kU32, DType::kI64, DType::kU64, DType::kBool})
    consts.push_back(g->add_constant(std::string("c_") + core::dtype_name(dt), pattern_tensor(dt, {2, 3}, ++seed)));
  ir::Value* scale = g->add_constant("scale", core::Tensor::scalar<float>(0.5f));
  g->add_constant("empty", core::Tensor::allocate(DType::kF32, {0, 3}).value());
  g->add_constant("labels", string_tensor({"alpha", "", std::string("nul\0inside", 10)}, {3}));
  g->add_constant("big", random_f32({64, 33}, 7));

  ir::Node* add = g->add_node("Add", {x, consts[0]}, {"sum"});
  add->output(0)->set_type({DType::kF32, Shape({Dim::sym("batch"), Dim(3), Dim(3)})});
  ir::Node* clip = g->add_node("Clip", {add->output(0), nullptr, scale}, {"clipped"}, "clip_node");
  clip->output(0)->set_type(add->output(0)->type());

  ir::Node* fused = g->add_node("FusedThing", {clip->output(0), ids}, {"f0", ""}, "fused", "kestrel");
  fused->output(0)->set_type({DType::kF32, Shape({Dim::sym("batch"), Dim::sym("n")})});
  fused->set_attr("alpha", 0.125f);
  fused->set_attr("neg_zero", -0.0f);
  fused->set_attr("axis", int64_t{-1});
  fused->set_attr("mode", std::string("bin\0ary", 7));
  fused->set_attr("value", pattern_tensor(DType::kI32, {4}, 3));
  fused->set_attr("scales", std::vector<float>{1.5f, -2.0f, 1e-30f});
  fused->set_attr("pads", std::vector<int64_t>{0, 1, INT64_MAX, INT64_MIN});
  fused->set_attr("names", std::vector<std::string>{"a", "", "ccc"});
  fused->set_attr("tables", std::vector<core::Tensor>{pattern_tensor(DType::kF32, {2, 2}, 4), string_tensor({"s"}, {1}),
                                                      pattern_tensor(DType::kBool, {3}, 5)});
  fused->set_attr("empty_ints", std::vector<int64_t>{});

  // If with two branches; `then` uses `clipped` and, through a nested body, the root's `x`.
  ir::Node* iff = g->add_node("If", {consts[12]}, {"if_out"}, "if_node");
  iff->output(0)->set_type({DType::kF32, Shape::unknown_rank()});
  auto then_g = std::make_shared<ir::Graph>("then_branch", g.get());
  {
    ir::Value* c = then_g->add_outer_scope("clipped", clip->output(0)->type());
    ir::Value* tx = then_g->add_outer_scope("x", x->type());
    ir::Node* loop = then_g->add_node("Loop", {nullptr, nullptr, c}, {"loop_out"}, "inner_loop");
    auto body = std::make_shared<ir::Graph>("body", then_g.get());
    ir::Value* i = body->add_input("i", {DType::kI64, Shape(std::vector<Dim>{})});
    ir::Value* bx = body->add_outer_scope("x", x->type());
    ir::Value* k = body->add_constant("k", pattern_tensor(DType::kF32, {3}, 9));
    ir::Node* bn = body->add_node("Mul", {bx, k}, {"prod"});
    body->add_output(i);
    body->add_output(bn->output(0));
    loop->set_attr("body", ir::Attribute::GraphPtr(body));
    loop->add_implicit_input(tx);
    ir::Node* neg = then_g->add_node("Neg", {loop->output(0)}, {"t_out"});
    then_g->add_output(neg->output(0));
  }
  auto else_g = std::make_shared<ir::Graph>("else_branch", g.get());
  {
    ir::Value* e = else_g->add_constant("e", pattern_tensor(DType::kF32, {1}, 11));
    else_g->add_output(e);
  }
  iff->set_attr("then_branch", ir::Attribute::GraphPtr(then_g));
  iff->set_attr("else_branch", ir::Attribute::GraphPtr(else_g));
  iff->add_implicit_input(clip->output(0));
  iff->add_implicit_input(x);

  std::vector<ir::Attribute::GraphPtr> branches;
  for (int b = 0; b < 2; ++b) {
    auto bg = std::make_shared<ir::Graph>("branch" + std::to_string(b), g.get());
    ir::Value* in = bg->add_input("bin", {DType::kF32, Shape({Dim(b + 1)})});
    ir::Node* r = bg->add_node("Relu", {in}, {"bout"});
    bg->add_output(r->output(0));
    branches.push_back(bg);
  }
  ir::Node* sw = g->add_node("Switch", {iff->output(0)}, {"sw_out"}, "switch");
  sw->set_attr("branches", branches);

  g->add_output(fused->output(0));
  g->add_output(iff->output(0));
  g->add_output(sw->output(0));
  g->add_output(consts[10]);  // a constant straight out
  g->add_output(ids);         // an input straight out

  auto& md = g->metadata();
  md["producer"] = "kestrel-tests 1.0";
  md["source_format"] = "onnx";
  md["onnx_opset"] = "13";
  md["onnx_ir_version"] = "8";
  md["user.author"] = "someone";
  md["user."] = "empty user key";
  md["convert.opt_level"] = "2";
  md["plain"] = "";
  return g;
}

}  // namespace kestrel::testing

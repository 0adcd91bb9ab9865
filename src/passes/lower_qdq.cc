// Lowers QDQ graphs (DequantizeLinear -> float op -> QuantizeLinear) to Kestrel's int8 ops so that
// u8 tensors flow between int8 kernels: Conv / Gemm / MatMul (+ Relu / Clip) -> kestrel.QConv /
// QMatMul, Add / Mul -> QAdd / QMul, Concat -> Concat on u8 or QConcat, MaxPool -> QMaxPool,
// GlobalAveragePool -> QGlobalAveragePool, unary functions -> QLookup (a 256-entry table computed
// here), data-movement ops -> the same op on u8, and Q(DQ(t)) -> t (equal parameters) or a
// requantizing QLookup. What does not match stays float between its DQ / Q nodes (correct, slower).
// The contract of the QDQ graphs and of the ops: docs/quantization.md.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "ir/op_schema.h"
#include "kernels/reference/quantize.h"
#include "passes/fusion_util.h"
#include "passes/pass.h"
#include "passes/rewrite_util.h"

namespace kestrel::passes {

namespace {

using core::DType;

// A per-tensor u8 quantization: the u8 tensor (or, for a Q node, its float input), scale and
// zero point values (zp may be null: 0) and their numbers.
struct ActQ {
  ir::Value* q = nullptr;
  ir::Value* scale = nullptr;
  ir::Value* zp = nullptr;
  double s = 1;
  int32_t z = 0;
};

bool same_params(const ActQ& a, const ActQ& b) {
  return a.z == b.z && static_cast<float>(a.s) == static_cast<float>(b.s);
}

// scale: a one-element positive finite f32 constant; zp: absent or a one-element u8 constant.
std::optional<ActQ> read_params(ir::Value* scale, ir::Value* zp) {
  if (!scale || !scale->is_constant() || scale->constant().dtype() != DType::kF32 ||
      scale->constant().num_elements() != 1)
    return std::nullopt;
  ActQ a;
  a.scale = scale;
  a.s = scale->constant().data<float>()[0];
  if (!std::isfinite(a.s) || !(a.s > 0)) return std::nullopt;
  if (zp) {
    if (!zp->is_constant() || zp->constant().dtype() != DType::kU8 || zp->constant().num_elements() != 1)
      return std::nullopt;
    a.zp = zp;
    a.z = zp->constant().data<uint8_t>()[0];
  }
  return a;
}

// v = DequantizeLinear(u8 q, scalar scale, scalar u8 zp).
std::optional<ActQ> dq_act(ir::Value* v) {
  ir::Node* d = producer_is(v, "DequantizeLinear");
  if (!d || !d->input(0) || d->input(0)->dtype() != DType::kU8) return std::nullopt;
  auto bs = d->attr_int("block_size", 0);
  if (!bs.is_ok() || *bs != 0) return std::nullopt;
  auto a = read_params(d->input(1), d->input(2));
  if (!a) return std::nullopt;
  a->q = d->input(0);
  return a;
}

// n = QuantizeLinear(x, scalar scale, scalar u8 zp) producing u8.
std::optional<ActQ> q_params(const ir::Node* n) {
  if (!n->domain().empty() || n->op_type() != "QuantizeLinear" || n->output(0)->dtype() != DType::kU8)
    return std::nullopt;
  auto bs = n->attr_int("block_size", 0);
  if (!bs.is_ok() || *bs != 0) return std::nullopt;
  auto a = read_params(n->input(1), n->input(2));
  if (!a) return std::nullopt;
  a->q = n->input(0);
  return a;
}

// Quantized value of the real x with (s, z), saturated to u8 (the QuantizeLinear rule).
int32_t quantize_u8(double x, const ActQ& p) {
  return static_cast<int32_t>(kernels::ref::quantize_value(x / p.s, p.z, 0, 255));
}

// Symmetric int8 weights: DequantizeLinear(i8 constant, f32 scale [1 or n along `axis`], zp absent or 0).
struct WeightQ {
  ir::Value* w = nullptr;
  ir::Value* scale = nullptr;
  ir::Value* zp = nullptr;
  std::vector<double> s;  // n values
};

std::optional<WeightQ> dq_weight(ir::Value* v, int64_t axis, int64_t rank) {
  ir::Node* d = producer_is(v, "DequantizeLinear");
  if (!d || !d->input(0) || !d->input(0)->is_constant() || d->input(0)->constant().dtype() != DType::kI8)
    return std::nullopt;
  const core::Tensor& w = d->input(0)->constant();
  if (w.rank() != rank) return std::nullopt;
  auto bs = d->attr_int("block_size", 0);
  auto ax = d->attr_int("axis", 1);
  if (!bs.is_ok() || *bs != 0 || !ax.is_ok()) return std::nullopt;
  const int64_t n = w.dim(axis);
  ir::Value* sv = d->input(1);
  if (!sv || !sv->is_constant() || sv->constant().dtype() != DType::kF32) return std::nullopt;
  const core::Tensor& st = sv->constant();
  if (st.num_elements() != 1) {
    const int64_t a = *ax < 0 ? *ax + rank : *ax;
    if (a != axis || st.num_elements() != n) return std::nullopt;
  }
  WeightQ q;
  q.w = d->input(0);
  q.scale = sv;
  q.s.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    q.s[static_cast<size_t>(i)] = st.data<float>()[st.num_elements() == 1 ? 0 : i];
    if (!std::isfinite(q.s[static_cast<size_t>(i)]) || !(q.s[static_cast<size_t>(i)] > 0)) return std::nullopt;
  }
  if (ir::Value* zp = d->input(2)) {
    if (!zp->is_constant() || zp->constant().dtype() != DType::kI8 || !is_constant_all(zp, 0)) return std::nullopt;
    if (zp->constant().num_elements() == 1 || zp->constant().num_elements() == n) q.zp = zp;
  }
  return q;
}

// Float bias values of a Conv / Gemm bias input: an f32 constant (n values, or broadcastable
// [1, n]), or DequantizeLinear of an int32 constant.
std::optional<std::vector<double>> bias_values(ir::Value* b, int64_t n) {
  if (!b) return std::vector<double>(static_cast<size_t>(n), 0.0);
  if (b->is_constant()) {
    if (b->constant().dtype() != DType::kF32 || b->constant().num_elements() != n) return std::nullopt;
    return f32_constant(b);
  }
  ir::Node* d = producer_is(b, "DequantizeLinear");
  if (!d || !d->input(0)->is_constant() || d->input(0)->constant().dtype() != DType::kI32) return std::nullopt;
  const core::Tensor& q = d->input(0)->constant();
  if (q.num_elements() != n || !d->input(1)->is_constant()) return std::nullopt;
  const core::Tensor& s = d->input(1)->constant();
  if (s.dtype() != DType::kF32 || (s.num_elements() != 1 && s.num_elements() != n)) return std::nullopt;
  if (d->input(2) && !is_constant_all(d->input(2), 0)) return std::nullopt;
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[static_cast<size_t>(i)] =
        static_cast<double>(q.data<int32_t>()[i]) * s.data<float>()[s.num_elements() == 1 ? 0 : i];
  return out;
}

ir::Value* add_tensor(ir::Graph& g, const std::string& hint, core::Tensor t) {
  return g.add_constant(g.unique_value_name(hint), std::move(t));
}

ir::Value* u8_scalar(ir::Graph& g, const std::string& hint, uint8_t v) {
  return add_tensor(g, hint, core::Tensor::scalar<uint8_t>(v));
}

// The activation between the op and its Q: Relu, or Clip with constant bounds; as a clamp in the
// output's quantized domain.
struct Clamp {
  int32_t lo = 0, hi = 255;
};
std::optional<Clamp> activation_clamp(const ir::Node* a, const ActQ& out) {
  if (!a->domain().empty()) return std::nullopt;
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  if (a->op_type() == "Relu") {
    lo = 0;
  } else if (a->op_type() == "Clip") {
    if (a->input(1)) {
      auto v = scalar_constant(a->input(1));
      if (!v) return std::nullopt;
      lo = *v;
    }
    if (a->input(2)) {
      auto v = scalar_constant(a->input(2));
      if (!v) return std::nullopt;
      hi = *v;
    }
    if (std::isnan(lo) || std::isnan(hi) || lo > hi) return std::nullopt;
  } else {
    return std::nullopt;
  }
  Clamp c;
  c.lo = std::isinf(lo) ? 0 : quantize_u8(lo, out);
  c.hi = std::isinf(hi) ? 255 : quantize_u8(hi, out);
  return c;
}

// Scalar real function of a unary node, for lookup tables (null if not supported).
std::optional<std::function<double(double)>> unary_function(const ir::Node* n) {
  if (!n->domain().empty()) return std::nullopt;
  if (n->op_type() == "Clip") {
    double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
    for (size_t i = 1; i < 3; ++i) {
      if (!n->input(i)) continue;
      auto v = scalar_constant(n->input(i));
      if (!v || std::isnan(*v)) return std::nullopt;
      (i == 1 ? lo : hi) = *v;
    }
    if (lo > hi) return std::nullopt;
    return [lo, hi](double x) { return std::min(hi, std::max(lo, x)); };
  }
  if (n->num_inputs() != 1) return std::nullopt;
  const std::string& op = n->op_type();
  if (op == "Sigmoid") return [](double x) { return 1 / (1 + std::exp(-x)); };
  if (op == "Tanh") return [](double x) { return std::tanh(x); };
  if (op == "Relu") return [](double x) { return x > 0 ? x : 0; };
  if (op == "HardSwish") return [](double x) { return x * std::min(1.0, std::max(0.0, x / 6 + 0.5)); };
  if (op == "Exp") return [](double x) { return std::exp(x); };
  if (op == "Abs") return [](double x) { return std::abs(x); };
  if (op == "Neg") return [](double x) { return -x; };
  if (op == "Erf") return [](double x) { return std::erf(x); };
  if (op == "HardSigmoid") {
    auto a = n->attr_float("alpha", 0.2f);
    auto b = n->attr_float("beta", 0.5f);
    if (!a.is_ok() || !b.is_ok()) return std::nullopt;
    const double al = *a, be = *b;
    return [al, be](double x) { return std::min(1.0, std::max(0.0, al * x + be)); };
  }
  if (op == "LeakyRelu") {
    auto a = n->attr_float("alpha", 0.01f);
    if (!a.is_ok()) return std::nullopt;
    const double al = *a;
    return [al](double x) { return x >= 0 ? x : al * x; };
  }
  if (op == "Gelu") {
    auto ap = n->attr_string("approximate", std::string("none"));
    if (!ap.is_ok() || *ap != "none") return std::nullopt;
    return [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); };
  }
  return std::nullopt;
}

ir::Value* lookup_table(ir::Graph& g, const ActQ& in, const ActQ& out, const std::function<double(double)>& f) {
  core::Tensor t = core::Tensor::allocate(DType::kU8, {256}).value();
  for (int v = 0; v < 256; ++v) t.data<uint8_t>()[v] = static_cast<uint8_t>(quantize_u8(f((v - in.z) * in.s), out));
  return add_tensor(g, "qlookup_table", std::move(t));
}

class LowerQdq final : public Pass {
 public:
  const char* name() const override { return "lower-qdq"; }

  core::Result<PassStats> run(ir::Graph& g, const PassContext&) override {
    PassStats stats;
    KESTREL_RETURN_IF_ERROR(sink_dequantize(g, stats));
    for (ir::Node* n : g.nodes()) {
      auto out = q_params(n);
      if (!out) continue;
      KESTREL_ASSIGN_OR_RETURN(bool done, lower(g, n, *out));
      if (done) ++stats.fused;
    }
    KESTREL_RETURN_IF_ERROR(fold_lookup_mul(g, stats));
    return stats;
  }

 private:
  // Data-movement ops commute with a per-tensor dequantize: Reshape(DQ(q)) -> DQ(Reshape(q)), so
  // that a DQ -> Flatten -> Gemm chain (PyTorch's QAT export of a classifier head) meets its Gemm
  // as DQ -> Gemm and lowers to QMatMul, and a channel shuffle (Reshape -> Transpose -> Reshape ->
  // Slice, ShuffleNet) moves bytes instead of floats, its trailing Q(DQ) pair cancelling.
  static core::Status sink_dequantize(ir::Graph& g, PassStats& stats) {
    for (ir::Node* n : g.nodes()) {
      if (!n->domain().empty() || n->num_outputs() != 1 || n->num_inputs() < 1) continue;
      const std::string& t = n->op_type();
      if (t != "Flatten" && t != "Reshape" && t != "Squeeze" && t != "Unsqueeze" && t != "Transpose" && t != "Slice")
        continue;
      auto in = dq_act(n->input(0));
      if (!in) continue;
      ir::Node* dq = n->input(0)->producer();
      std::vector<ir::Value*> inputs = n->inputs();
      inputs[0] = in->q;
      ir::Node* moved = g.insert_node_before(n, t, inputs, {g.unique_value_name(n->output(0)->name() + "_u8")},
                                             n->name() + "_u8");
      for (const auto& [k, a] : n->attributes()) moved->set_attr(k, a);
      ir::ValueType vt = n->output(0)->type();
      vt.dtype = DType::kU8;
      moved->output(0)->set_type(vt);
      std::vector<ir::Value*> dq_inputs = {moved->output(0), dq->input(1)};
      if (dq->num_inputs() > 2 && dq->input(2)) dq_inputs.push_back(dq->input(2));
      KESTREL_RETURN_IF_ERROR(
          replace_chain(g, n, {n}, "DequantizeLinear", "", dq_inputs, {}, n->name() + "_dequantize").status());
      if (dq->output(0)->uses().empty() && !dq->output(0)->is_graph_output()) KESTREL_RETURN_IF_ERROR(g.remove_node(dq));
      ++stats.fused;
    }
    return core::Status::ok();
  }

  // x * f(x) on one u8 tensor (SiLU exported as x * Sigmoid(x), or what the quantizer makes of it):
  // QMul(q, QLookup(q, t)) depends on the code q alone, so one QLookup whose table applies QMul's
  // own arithmetic (qops_inl.h binary_row) to each of the 256 codes replaces both, bit for bit.
  static core::Status fold_lookup_mul(ir::Graph& g, PassStats& stats) {
    for (ir::Node* n : g.nodes()) {
      if (n->domain() != ir::kKestrelDomain || n->op_type() != "QMul" || n->num_inputs() != 8) continue;
      for (int side = 0; side < 2; ++side) {
        ir::Value* xq = n->input(side == 0 ? 0 : 3);
        ir::Value* lq = n->input(side == 0 ? 3 : 0);
        ir::Node* l = lq ? lq->producer() : nullptr;
        if (!xq || !l || l->domain() != ir::kKestrelDomain || l->op_type() != "QLookup" || l->num_inputs() != 2 ||
            l->input(0) != xq || lq->uses().size() != 1 || lq->is_graph_output())
          continue;
        ir::Value* tv = l->input(1);
        if (!tv || !tv->is_constant() || tv->constant().dtype() != DType::kU8 || tv->constant().num_elements() != 256)
          continue;
        auto px = read_params(n->input(side == 0 ? 1 : 4), n->input(side == 0 ? 2 : 5));
        auto pl = read_params(n->input(side == 0 ? 4 : 1), n->input(side == 0 ? 5 : 2));
        auto py = read_params(n->input(6), n->input(7));
        auto lo = n->attr_int("out_min", 0);
        auto hi = n->attr_int("out_max", 255);
        if (!px || !pl || !py || !lo.is_ok() || !hi.is_ok()) continue;
        const uint8_t* t = tv->constant().data<uint8_t>();
        // Exactly the float steps of the QMul row kernel (operand order does not change a product).
        const float k = static_cast<float>(px->s) * static_cast<float>(pl->s) / static_cast<float>(py->s);
        const float flo = static_cast<float>(*lo - py->z), fhi = static_cast<float>(*hi - py->z);
        core::Tensor table = core::Tensor::allocate(DType::kU8, {256}).value();
        for (int c = 0; c < 256; ++c) {
          float f = (static_cast<float>(c) - static_cast<float>(px->z)) *
                    (static_cast<float>(t[c]) - static_cast<float>(pl->z)) * k;
          f = f > flo ? f : flo;
          f = f < fhi ? f : fhi;
          table.data<uint8_t>()[c] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(f)) + py->z);
        }
        ir::Value* tab = add_tensor(g, "qlookup_mul_table", std::move(table));
        KESTREL_RETURN_IF_ERROR(
            replace_chain(g, n, {l, n}, "QLookup", ir::kKestrelDomain, {xq, tab}, {}, n->name() + "_lookup").status());
        ++stats.fused;
        break;
      }
    }
    return core::Status::ok();
  }

  // Parameters of the Q node's output as node inputs (a zero point constant is made when absent).
  static std::pair<ir::Value*, ir::Value*> out_inputs(ir::Graph& g, const ActQ& a) {
    return {a.scale, a.zp ? a.zp : u8_scalar(g, "zero_point_u8", 0)};
  }
  static ir::Value* zp_input(ir::Graph& g, const ActQ& a) { return a.zp ? a.zp : u8_scalar(g, "zero_point_u8", 0); }

  core::Result<bool> lower(ir::Graph& g, ir::Node* qn, const ActQ& out) {
    ir::Value* y = qn->input(0);
    ir::Node* p = y->producer();
    if (!p || !only_consumer(y, qn) || p->num_outputs() != 1) {
      // Q(DQ(t)): the identity when the parameters agree, else a requantizing table.
      auto in = dq_act(y);
      if (!in) return false;
      if (same_params(*in, out)) {
        if (!can_forward(qn->output(0), in->q)) return false;
        forward_value(g, qn->output(0), in->q);
        KESTREL_RETURN_IF_ERROR(g.remove_node(qn));
        return true;
      }
      return lookup(g, qn, {qn}, *in, out, [](double x) { return x; });
    }
    if (auto in = dq_act(y); in && p->domain().empty() && p->op_type() == "DequantizeLinear") {
      if (same_params(*in, out) && can_forward(qn->output(0), in->q)) {
        forward_value(g, qn->output(0), in->q);
        KESTREL_RETURN_IF_ERROR(g.remove_node(qn));
        return true;
      }
      return lookup(g, qn, {qn}, *in, out, [](double x) { return x; });
    }
    // An activation between the op and the Q becomes the output clamp.
    Clamp clamp;
    ir::Node* act = nullptr;
    ir::Node* op = p;
    if (auto c = activation_clamp(p, out); c && p->input(0) && p->input(0)->producer()) {
      ir::Node* pp = p->input(0)->producer();
      if (only_consumer(p->input(0), p) && pp->domain().empty() &&
          (pp->op_type() == "Conv" || pp->op_type() == "Gemm" || pp->op_type() == "MatMul" || pp->op_type() == "Add" ||
           pp->op_type() == "Mul")) {
        act = p;
        op = pp;
        clamp = *c;
      }
    }
    if (!op->domain().empty()) return false;
    std::vector<ir::Node*> dead = {op, qn};
    if (act) dead.push_back(act);
    const std::string& t = op->op_type();
    if (t == "Conv") return lower_conv(g, qn, op, dead, out, clamp);
    if (t == "Gemm" || t == "MatMul") return lower_matmul(g, qn, op, dead, out, clamp);
    if (t == "Add" || t == "Mul") return lower_binary(g, qn, op, dead, out, clamp);
    if (act) return false;
    if (t == "Concat") return lower_concat(g, qn, op, out);
    if (t == "GlobalAveragePool") {
      auto in = dq_act(op->input(0));
      if (!in) return false;
      auto [ys, yz] = out_inputs(g, out);
      KESTREL_RETURN_IF_ERROR(replace_chain(g, qn, dead, "QGlobalAveragePool", ir::kKestrelDomain,
                                            {in->q, in->scale, zp_input(g, *in), ys, yz}, {}, op->name())
                                  .status());
      return true;
    }
    if (t == "MaxPool" || t == "Reshape" || t == "Flatten" || t == "Transpose" || t == "Squeeze" || t == "Unsqueeze" ||
        t == "Identity")
      return lower_monotone(g, qn, op, out);
    if (auto f = unary_function(op)) {
      auto in = dq_act(op->input(0));
      if (!in) return false;
      return lookup(g, qn, {op, qn}, *in, out, *f);
    }
    return false;
  }

  core::Result<bool> lookup(ir::Graph& g, ir::Node* qn, std::vector<ir::Node*> dead, const ActQ& in, const ActQ& out,
                            const std::function<double(double)>& f) {
    ir::Value* table = lookup_table(g, in, out, f);
    KESTREL_RETURN_IF_ERROR(
        replace_chain(g, qn, dead, "QLookup", ir::kKestrelDomain, {in.q, table}, {}, qn->name() + "_lookup").status());
    return true;
  }

  core::Result<bool> lower_conv(ir::Graph& g, ir::Node* qn, ir::Node* conv, const std::vector<ir::Node*>& dead,
                                const ActQ& out, const Clamp& clamp) {
    auto x = dq_act(conv->input(0));
    if (!x || !conv->input(1) || !conv->input(1)->producer()) return false;
    ir::Value* wv = conv->input(1)->producer()->input(0);
    if (!wv || !wv->is_constant()) return false;
    const int64_t rank = wv->constant().rank();
    if (rank != 3 && rank != 4) return false;
    auto w = dq_weight(conv->input(1), 0, rank);
    if (!w) return false;
    const int64_t m = wv->constant().dim(0);
    auto b = bias_values(conv->input(2), m);
    if (!b) return false;
    ir::Value* bias = int32_bias(g, *b, x->s, w->s, conv->name());
    if (!bias) return false;
    ir::Value* wzp = w->zp;
    if (!wzp) {
      core::Tensor z = core::Tensor::allocate(DType::kI8, {m}).value();
      std::fill(z.data<int8_t>(), z.data<int8_t>() + m, int8_t{0});
      wzp = add_tensor(g, conv->name() + "_w_zero_point", std::move(z));
    }
    auto [ys, yz] = out_inputs(g, out);
    std::map<std::string, ir::Attribute> attrs = conv->attributes();
    attrs["out_min"] = ir::Attribute(static_cast<int64_t>(clamp.lo));
    attrs["out_max"] = ir::Attribute(static_cast<int64_t>(clamp.hi));
    KESTREL_RETURN_IF_ERROR(replace_chain(g, qn, dead, "QConv", ir::kKestrelDomain,
                                          {x->q, x->scale, zp_input(g, *x), w->w, w->scale, wzp, ys, yz, bias}, attrs,
                                          conv->name())
                                .status());
    return true;
  }

  // int32 bias = round(b / (x_scale * w_scale[c])), saturated; null if a value is not finite.
  static ir::Value* int32_bias(ir::Graph& g, const std::vector<double>& b, double xs, const std::vector<double>& ws,
                               const std::string& name) {
    const int64_t m = static_cast<int64_t>(b.size());
    core::Tensor t = core::Tensor::allocate(DType::kI32, {m}).value();
    for (int64_t c = 0; c < m; ++c) {
      const double v = std::nearbyint(b[static_cast<size_t>(c)] / (xs * ws[static_cast<size_t>(c)]));
      if (!std::isfinite(v)) return nullptr;
      t.data<int32_t>()[c] = static_cast<int32_t>(std::min(2147483647.0, std::max(-2147483648.0, v)));
    }
    return add_tensor(g, name + "_bias_i32", std::move(t));
  }

  core::Result<bool> lower_matmul(ir::Graph& g, ir::Node* qn, ir::Node* op, const std::vector<ir::Node*>& dead,
                                  const ActQ& out, const Clamp& clamp) {
    auto a = dq_act(op->input(0));
    if (!a || !op->input(1) || !op->input(1)->producer()) return false;
    ir::Value* bv = op->input(1)->producer()->input(0);
    if (!bv || !bv->is_constant() || bv->constant().rank() != 2) return false;
    const bool gemm = op->op_type() == "Gemm";
    bool trans_b = false;
    ir::Value* c = nullptr;
    if (gemm) {
      auto ta = op->attr_int("transA", 0);
      auto tb = op->attr_int("transB", 0);
      auto al = op->attr_float("alpha", 1.f);
      auto be = op->attr_float("beta", 1.f);
      if (!ta.is_ok() || !tb.is_ok() || !al.is_ok() || !be.is_ok() || *ta != 0 || *al != 1.f) return false;
      if (op->input(0)->shape().rank_known() && op->input(0)->shape().rank() != 2) return false;
      trans_b = *tb != 0;
      c = op->input(2);
      if (c && *be != 1.f) return false;
    } else if (!op->input(0)->shape().rank_known() || op->input(0)->shape().rank() < 2) {
      return false;
    }
    auto w = dq_weight(op->input(1), trans_b ? 0 : 1, 2);
    if (!w) return false;
    const core::Tensor& bt = bv->constant();
    const int64_t k = trans_b ? bt.dim(1) : bt.dim(0), n = trans_b ? bt.dim(0) : bt.dim(1);
    auto bias_f = bias_values(c, n);
    if (!bias_f) return false;
    ir::Value* bias = int32_bias(g, *bias_f, a->s, w->s, op->name());
    if (!bias) return false;
    ir::Value* b_i8 = w->w;
    if (trans_b) {
      core::Tensor tt = core::Tensor::allocate(DType::kI8, {k, n}).value();
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < n; ++j) tt.data<int8_t>()[i * n + j] = bt.data<int8_t>()[j * k + i];
      b_i8 = add_tensor(g, op->name() + "_b_kn", std::move(tt));
    }
    core::Tensor zt = core::Tensor::allocate(DType::kI8, {n}).value();
    std::fill(zt.data<int8_t>(), zt.data<int8_t>() + n, int8_t{0});
    ir::Value* bzp = add_tensor(g, op->name() + "_b_zero_point", std::move(zt));
    core::Tensor st = core::Tensor::allocate(DType::kF32, {n}).value();
    for (int64_t j = 0; j < n; ++j) st.data<float>()[j] = static_cast<float>(w->s[static_cast<size_t>(j)]);
    ir::Value* bscale = add_tensor(g, op->name() + "_b_scale", std::move(st));
    auto [ys, yz] = out_inputs(g, out);
    std::map<std::string, ir::Attribute> attrs;
    attrs["out_min"] = ir::Attribute(static_cast<int64_t>(clamp.lo));
    attrs["out_max"] = ir::Attribute(static_cast<int64_t>(clamp.hi));
    KESTREL_RETURN_IF_ERROR(replace_chain(g, qn, dead, "QMatMul", ir::kKestrelDomain,
                                          {a->q, a->scale, zp_input(g, *a), b_i8, bscale, bzp, ys, yz, bias}, attrs,
                                          op->name())
                                .status());
    return true;
  }

  core::Result<bool> lower_binary(ir::Graph& g, ir::Node* qn, ir::Node* op, const std::vector<ir::Node*>& dead,
                                  const ActQ& out, const Clamp& clamp) {
    if (op->num_inputs() != 2) return false;
    auto a = dq_act(op->input(0));
    auto b = dq_act(op->input(1));
    if (!a || !b) return false;
    auto [ys, yz] = out_inputs(g, out);
    std::map<std::string, ir::Attribute> attrs;
    attrs["out_min"] = ir::Attribute(static_cast<int64_t>(clamp.lo));
    attrs["out_max"] = ir::Attribute(static_cast<int64_t>(clamp.hi));
    const char* kop = op->op_type() == "Add" ? "QAdd" : "QMul";
    KESTREL_RETURN_IF_ERROR(replace_chain(g, qn, dead, kop, ir::kKestrelDomain,
                                          {a->q, a->scale, zp_input(g, *a), b->q, b->scale, zp_input(g, *b), ys, yz},
                                          attrs, op->name())
                                .status());
    return true;
  }

  // An int8 op whose only use is (through one DQ) this Concat can requantize straight to the
  // Concat's output parameters: the Concat then copies bytes (ONNX Runtime does the same).
  static bool retarget_producer(ir::Graph& g, ActQ& a, ir::Value* dq_out, const ir::Node* concat, const ActQ& out) {
    ir::Node* p = a.q->producer();
    if (!p || p->domain() != ir::kKestrelDomain || a.q->is_graph_output() || a.q->uses().size() != 1 ||
        !only_consumer(dq_out, concat))
      return false;
    if (p->op_type() != "QConv" && p->op_type() != "QMatMul" && p->op_type() != "QAdd" && p->op_type() != "QMul")
      return false;
    // Single use of dq_out by the concat could still be two concat inputs: only_consumer says one.
    auto lo = p->attr_int("out_min", 0);
    auto hi = p->attr_int("out_max", 255);
    if (!lo.is_ok() || !hi.is_ok()) return false;
    const int64_t new_lo = *lo <= 0 ? 0 : quantize_u8((static_cast<double>(*lo) - a.z) * a.s, out);
    const int64_t new_hi = *hi >= 255 ? 255 : quantize_u8((static_cast<double>(*hi) - a.z) * a.s, out);
    if (new_lo > new_hi) return false;
    p->set_input(6, out.scale);
    p->set_input(7, zp_input(g, out));
    p->set_attr("out_min", new_lo);
    p->set_attr("out_max", new_hi);
    a.s = out.s;
    a.z = out.z;
    a.scale = out.scale;
    a.zp = p->input(7);
    return true;
  }

  core::Result<bool> lower_concat(ir::Graph& g, ir::Node* qn, ir::Node* op, const ActQ& out) {
    std::vector<ActQ> ins;
    for (ir::Value* v : op->inputs()) {
      auto a = dq_act(v);
      if (!a) return false;
      ins.push_back(*a);
    }
    if (ins.empty()) return false;
    bool all_same = true;
    for (size_t i = 0; i < ins.size(); ++i) {
      if (!same_params(ins[i], out)) retarget_producer(g, ins[i], op->input(i), op, out);
      all_same = all_same && same_params(ins[i], out);
    }
    if (all_same) {
      std::vector<ir::Value*> inputs;
      for (const ActQ& a : ins) inputs.push_back(a.q);
      KESTREL_RETURN_IF_ERROR(
          replace_chain(g, qn, {op, qn}, "Concat", "", inputs, op->attributes(), op->name()).status());
      return true;
    }
    auto [ys, yz] = out_inputs(g, out);
    std::vector<ir::Value*> inputs = {ys, yz};
    for (const ActQ& a : ins) {
      inputs.push_back(a.q);
      inputs.push_back(a.scale);
      inputs.push_back(zp_input(g, a));
    }
    KESTREL_RETURN_IF_ERROR(
        replace_chain(g, qn, {op, qn}, "QConcat", ir::kKestrelDomain, inputs, op->attributes(), op->name()).status());
    return true;
  }

  // Ops that commute with a monotone per-tensor quantization: run on u8; a requantizing table
  // follows when the output's parameters differ from the input's.
  core::Result<bool> lower_monotone(ir::Graph& g, ir::Node* qn, ir::Node* op, const ActQ& out) {
    auto in = dq_act(op->input(0));
    if (!in) return false;
    std::string type = op->op_type(), domain;
    std::map<std::string, ir::Attribute> attrs = op->attributes();
    if (type == "MaxPool") {
      const ir::Shape& s = op->input(0)->shape();
      auto k = op->attr_ints("kernel_shape");
      if (!s.rank_known() || s.rank() != 4 || !k.is_ok() || k->size() != 2) return false;
      type = "QMaxPool";
      domain = ir::kKestrelDomain;
      attrs.erase("storage_order");
    }
    std::vector<ir::Value*> inputs = op->inputs();
    inputs[0] = in->q;
    if (same_params(*in, out)) {
      KESTREL_RETURN_IF_ERROR(replace_chain(g, qn, {op, qn}, type, domain, inputs, attrs, op->name()).status());
      return true;
    }
    ir::Value* table = lookup_table(g, *in, out, [](double x) { return x; });
    ir::Node* moved = g.insert_node_before(qn, type, inputs, {g.unique_value_name(op->output(0)->name() + "_u8")},
                                           op->name(), domain);
    for (const auto& [k, a] : attrs) moved->set_attr(k, a);
    ir::ValueType vt = qn->output(0)->type();
    vt.shape = op->output(0)->shape();
    moved->output(0)->set_type(vt);
    KESTREL_RETURN_IF_ERROR(replace_chain(g, qn, {op, qn}, "QLookup", ir::kKestrelDomain, {moved->output(0), table}, {},
                                          qn->name() + "_lookup")
                                .status());
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_lower_qdq() {
  return std::make_unique<LowerQdq>();
}

}  // namespace kestrel::passes

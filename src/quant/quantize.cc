// QDQ insertion, weight quantization, per-layer report and the automatic float fallback.
#include "quant/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/str_util.h"
#include "format/kst_loader.h"
#include "passes/pass.h"
#include "quant/graph_runner.h"
#include "runtime/kernel.h"
#include "runtime/session.h"

namespace kestrel::quant {

using core::str_cat;

core::Status prepare_for_quantization(ir::Graph& g) {
  KESTREL_RETURN_IF_ERROR(runtime::prepare_graph(g));
  ir::NodeEvaluator ev = [](const ir::Node& n, std::span<const core::Tensor* const> ins) {
    return runtime::evaluate_node(n, ins);
  };
  passes::PassContext ctx;
  ctx.evaluator = &ev;
  passes::PassManager pm = passes::make_pipeline(1);
  pm.add(passes::make_fold_batch_norm());
  pm.add(passes::make_fold_conv_add_mul());
  pm.add(passes::make_dead_code_elimination());
  KESTREL_RETURN_IF_ERROR(pm.run(g, ctx));
  return runtime::prepare_graph(g);
}

namespace {

bool is_activation(const ir::Value* v) {
  return v && !v->is_constant() && v->dtype() == core::DType::kF32;
}
bool is_f32_constant(const ir::Value* v) {
  return v && v->is_constant() && v->constant().dtype() == core::DType::kF32;
}
bool absent_or_constant(const ir::Value* v) {
  return !v || v->is_constant();
}

// The weight's channel axis for a quantizable node, or -1 if the node is not quantizable.
int weight_axis(const ir::Node& n) {
  const std::string& op = n.op_type();
  const ir::Value* w = n.input(1);
  if (!is_activation(n.input(0)) || !is_f32_constant(w)) return -1;
  const int64_t rank = w->constant().rank();
  if (op == "Conv") return rank >= 3 && absent_or_constant(n.input(2)) ? 0 : -1;
  if (op == "MatMul") return rank == 2 ? 1 : -1;
  if (op == "Gemm") {
    if (rank != 2 || !absent_or_constant(n.input(2))) return -1;
    auto ta = n.attr_int("transA", 0), tb = n.attr_int("transB", 0);
    if (!ta.is_ok() || !tb.is_ok() || *ta != 0) return -1;
    return *tb ? 0 : 1;
  }
  return -1;
}

// Activation inputs quantized for an op without weights, or empty if the node stays float.
std::vector<ir::Value*> plain_inputs(const ir::Node& n) {
  const std::string& op = n.op_type();
  if (op == "Add" || op == "Mul" || op == "Concat") {
    if (n.num_inputs() == 0 || (op != "Concat" && n.num_inputs() != 2)) return {};
    for (ir::Value* v : n.inputs())
      if (!is_activation(v)) return {};
    return n.inputs();
  }
  if (op == "MaxPool" && n.num_outputs() != 1) return {};  // the indices output stays float
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "Sigmoid" || op == "HardSigmoid" ||
      op == "HardSwish") {
    if (!is_activation(n.input(0))) return {};
    return {n.input(0)};
  }
  return {};
}

// The Relu / Clip that consumes a Conv / Gemm output alone, kept inside the Q/DQ pair.
ir::Node* fusable_activation(const ir::Node& n, const QdqOptions& opts) {
  const ir::Value* out = n.output(0);
  if (out->is_graph_output() || out->uses().size() != 1) return nullptr;
  ir::Node* u = out->uses()[0].node;
  if (!u->domain().empty() || u->num_outputs() != 1 || opts.keep_float.count(u->name())) return nullptr;
  if (u->op_type() == "Relu") return u;
  if (u->op_type() == "Clip" && u->input(0) == out && absent_or_constant(u->input(1)) &&
      absent_or_constant(u->input(2)))
    return u;
  return nullptr;
}

}  // namespace

QdqPlan plan_qdq(const ir::Graph& g, const QdqOptions& opts) {
  QdqPlan plan;
  std::set<std::string> seen;
  auto add_tensor = [&](const ir::Value* v) {
    if (seen.insert(v->name()).second) plan.tensors.push_back(v->name());
  };
  for (const ir::Node* n : g.nodes()) {
    if (!n->domain().empty() || opts.keep_float.count(n->name()) || n->num_outputs() == 0) continue;
    if (n->output(0)->dtype() != core::DType::kF32) continue;
    QuantizedNode qn;
    qn.name = n->name();
    qn.op = n->op_type();
    std::vector<ir::Value*> ins;
    const ir::Value* out = n->output(0);
    if (weight_axis(*n) >= 0) {
      ins = {n->input(0)};
      if (n->op_type() != "MatMul")
        if (const ir::Node* act = fusable_activation(*n, opts)) {
          qn.fused = act->name();
          out = act->output(0);
        }
    } else {
      ins = plain_inputs(*n);
      if (ins.empty()) continue;
    }
    for (const ir::Value* v : ins) {
      qn.inputs.push_back(v->name());
      add_tensor(v);
    }
    qn.output = out->name();
    add_tensor(out);
    plan.nodes.push_back(std::move(qn));
  }
  return plan;
}

void u8_params(TensorRange r, float* scale, int* zero_point) {
  double lo = std::min<double>(r.min, 0.0), hi = std::max<double>(r.max, 0.0);
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 0;
  double s = (hi - lo) / 255.0;
  if (!(s > 0) || !std::isfinite(static_cast<float>(s)) || static_cast<float>(s) < 1e-12f) {
    *scale = 1.0f;
    *zero_point = 0;
    return;
  }
  *scale = static_cast<float>(s);
  *zero_point = static_cast<int>(std::clamp(std::lround(-lo / s), 0L, 255L));
}

namespace {

// Symmetric int8 weights: per channel along `axis` (or one scale), q = round(w / s), s = max|w| / 127.
void quantize_weight(const core::Tensor& w, int axis, bool per_tensor, core::Tensor* q, core::Tensor* scale,
                     core::Tensor* zp) {
  const core::Dims& d = w.dims();
  int64_t inner = 1;
  const int64_t channels = per_tensor ? 1 : d[static_cast<size_t>(axis)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < d.size(); ++i) inner *= d[i];
  const float* src = w.data<float>();
  std::vector<float> amax(static_cast<size_t>(channels), 0.0f);
  const int64_t c_dim = d[static_cast<size_t>(axis)];
  auto channel_of = [&](int64_t idx) { return per_tensor ? 0 : (idx / inner) % c_dim; };
  for (int64_t i = 0; i < w.num_elements(); ++i)
    if (std::isfinite(src[i]))
      amax[static_cast<size_t>(channel_of(i))] = std::max(amax[static_cast<size_t>(channel_of(i))], std::fabs(src[i]));
  std::vector<float> s(static_cast<size_t>(channels));
  for (size_t c = 0; c < s.size(); ++c) s[c] = amax[c] > 0 ? amax[c] / 127.0f : 1.0f;
  *q = core::Tensor::allocate(core::DType::kI8, d).value();
  int8_t* dst = q->data<int8_t>();
  for (int64_t i = 0; i < w.num_elements(); ++i) {
    const float v = std::isfinite(src[i]) ? src[i] / s[static_cast<size_t>(channel_of(i))] : 0.0f;
    dst[i] = static_cast<int8_t>(std::clamp(std::lround(v), -127L, 127L));
  }
  if (per_tensor) {
    *scale = core::Tensor::scalar<float>(s[0]);
    *zp = core::Tensor::scalar<int8_t>(0);
  } else {
    *scale = core::Tensor::from_vector<float>(s, {channels});
    *zp = core::Tensor::from_vector<int8_t>(std::vector<int8_t>(static_cast<size_t>(channels), 0), {channels});
  }
}

}  // namespace

core::Result<QdqResult> insert_qdq(ir::Graph& g, const std::map<std::string, TensorRange>& ranges,
                                   const QdqOptions& opts) {
  QdqPlan plan = plan_qdq(g, opts);
  QdqResult res;
  // Weights first (the plan holds node names; values are found before the graph changes).
  std::map<std::pair<const ir::Value*, int>, ir::Value*> done;
  std::vector<ir::Node*> nodes = g.nodes();
  std::map<std::string, ir::Node*> by_name;
  for (ir::Node* n : nodes) by_name.emplace(n->name(), n);
  for (const QuantizedNode& qn : plan.nodes) {
    ir::Node* n = by_name.count(qn.name) ? by_name[qn.name] : nullptr;
    if (!n) return core::internal_error(str_cat("quantizer: node '", qn.name, "' not found"));
    const int axis = weight_axis(*n);
    if (axis < 0) continue;
    ir::Value* w = n->input(1);
    auto key = std::make_pair(static_cast<const ir::Value*>(w), axis);
    ir::Value*& dq_out = done[key];
    if (!dq_out) {
      core::Tensor q, scale, zp;
      quantize_weight(w->constant(), axis, opts.per_tensor, &q, &scale, &zp);
      ir::Value* qv = g.add_constant(g.unique_value_name(w->name() + "_quantized"), std::move(q));
      ir::Value* sv = g.add_constant(g.unique_value_name(w->name() + "_scale"), std::move(scale));
      ir::Value* zv = g.add_constant(g.unique_value_name(w->name() + "_zero_point"), std::move(zp));
      ir::Node* dq = g.add_node("DequantizeLinear", {qv, sv, zv}, {g.unique_value_name(w->name() + "_dequantized")},
                                w->name() + "_DequantizeLinear");
      if (!opts.per_tensor) dq->set_attr("axis", int64_t{axis});
      dq_out = dq->output(0);
      ++res.quantized_weights;
    }
    n->set_input(1, dq_out);
  }
  std::map<std::string, std::string> fused_op;  // fused Relu / Clip node -> its Conv / Gemm op
  for (const QuantizedNode& qn : plan.nodes)
    if (!qn.fused.empty()) fused_op[qn.fused] = qn.op;
  // Activations: one Q -> DQ pair per tensor, read by every consumer.
  for (const std::string& t : plan.tensors) {
    ir::Value* v = g.find_value(t);
    if (!v) return core::internal_error(str_cat("quantizer: tensor '", t, "' not found"));
    auto it = ranges.find(t);
    if (it == ranges.end()) return core::invalid_argument(str_cat("quantizer: no calibration range for '", t, "'"));
    QuantizedTensor qt;
    qt.name = t;
    qt.node = v->producer() ? v->producer()->name() : "";
    qt.op = v->producer() ? v->producer()->op_type() : "input";
    if (auto f = fused_op.find(qt.node); v->producer() && f != fused_op.end()) qt.op = f->second + "+" + qt.op;
    u8_params(it->second, &qt.scale, &qt.zero_point);
    ir::Value* sv = g.add_constant(g.unique_value_name(t + "_scale"), core::Tensor::scalar<float>(qt.scale));
    ir::Value* zv = g.add_constant(g.unique_value_name(t + "_zero_point"),
                                   core::Tensor::scalar<uint8_t>(static_cast<uint8_t>(qt.zero_point)));
    const std::vector<ir::Use> uses = v->uses();
    const bool is_output = v->is_graph_output();
    // A graph output keeps its name on the dequantized value the caller now reads.
    if (is_output && !g.rename_value(v, g.unique_value_name(t + "_float")))
      return core::internal_error(str_cat("quantizer: cannot rename '", t, "'"));
    qt.dq_name = is_output ? t : g.unique_value_name(t + "_dequantized");
    ir::Node* q =
        g.add_node("QuantizeLinear", {v, sv, zv}, {g.unique_value_name(t + "_quantized")}, t + "_QuantizeLinear");
    ir::Node* dq = g.add_node("DequantizeLinear", {q->output(0), sv, zv}, {qt.dq_name}, t + "_DequantizeLinear");
    for (const ir::Use& u : uses)
      if (u.input_index >= 0) u.node->set_input(static_cast<size_t>(u.input_index), dq->output(0));
    if (is_output)
      for (size_t i = 0; i < g.outputs().size(); ++i)
        if (g.outputs()[i] == v) g.set_output(i, dq->output(0));
    res.tensors.push_back(std::move(qt));
  }
  res.nodes = std::move(plan.nodes);
  KESTREL_RETURN_IF_ERROR(g.topo_sort());
  KESTREL_RETURN_IF_ERROR(runtime::prepare_graph(g));
  return res;
}

namespace {

struct Accum {
  double dot = 0, ff = 0, qq = 0, err = 0;
  void add(const core::Tensor& f, const core::Tensor& q) {
    if (f.dtype() != core::DType::kF32 || q.dtype() != core::DType::kF32 || f.num_elements() != q.num_elements())
      return;
    const float* a = f.data<float>();
    const float* b = q.data<float>();
    for (int64_t i = 0; i < f.num_elements(); ++i) {
      const double x = a[i], y = b[i];
      dot += x * y, ff += x * x, qq += y * y, err += (x - y) * (x - y);
    }
  }
  double cosine() const {
    if (ff == 0 && qq == 0) return 1;
    if (ff == 0 || qq == 0) return 0;
    return dot / std::sqrt(ff * qq);
  }
  double snr_db() const {
    if (err == 0) return 200;
    if (ff == 0) return -200;
    return std::min(200.0, 10 * std::log10(ff / err));
  }
};

}  // namespace

core::Result<std::vector<LayerStat>> layer_report(const ir::Graph& float_graph, const ir::Graph& qdq_graph,
                                                  const std::vector<QuantizedTensor>& tensors,
                                                  const std::vector<Sample>& samples, int num_threads,
                                                  const ProgressFn& progress) {
  std::vector<std::string> ftaps, qtaps;
  for (const QuantizedTensor& t : tensors) {
    ftaps.push_back(t.name);
    qtaps.push_back(t.dq_name);
  }
  KESTREL_ASSIGN_OR_RETURN(auto fr, TapRunner::create(float_graph, ftaps, num_threads));
  KESTREL_ASSIGN_OR_RETURN(auto qr, TapRunner::create(qdq_graph, qtaps, num_threads));
  std::vector<Accum> acc(tensors.size());
  std::vector<core::Tensor> fo, qo, ft, qt;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (progress) progress("per-layer report", i, samples.size());
    KESTREL_RETURN_IF_ERROR(fr->run(samples[i], fo, ft));
    KESTREL_RETURN_IF_ERROR(qr->run(samples[i], qo, qt));
    for (size_t k = 0; k < tensors.size(); ++k) acc[k].add(ft[k], qt[k]);
  }
  if (progress) progress("per-layer report", samples.size(), samples.size());
  std::vector<LayerStat> out;
  for (size_t k = 0; k < tensors.size(); ++k)
    out.push_back({tensors[k].name, tensors[k].node, tensors[k].op, acc[k].cosine(), acc[k].snr_db()});
  return out;
}

core::Result<std::vector<std::vector<core::Tensor>>> run_model(const ir::Graph& g, const std::vector<Sample>& samples,
                                                               int num_threads) {
  KESTREL_ASSIGN_OR_RETURN(auto r, TapRunner::create(g, {}, num_threads));
  std::vector<std::vector<core::Tensor>> outs(samples.size());
  std::vector<core::Tensor> taps;
  for (size_t i = 0; i < samples.size(); ++i) KESTREL_RETURN_IF_ERROR(r->run(samples[i], outs[i], taps));
  return outs;
}

Agreement compare_outputs(const std::vector<std::vector<core::Tensor>>& reference,
                          const std::vector<std::vector<core::Tensor>>& test) {
  Agreement a;
  Accum all;
  for (size_t s = 0; s < reference.size() && s < test.size(); ++s) {
    Accum one;
    for (size_t o = 0; o < reference[s].size() && o < test[s].size(); ++o) {
      const core::Tensor& f = reference[s][o];
      const core::Tensor& q = test[s][o];
      one.add(f, q);
      all.add(f, q);
      if (f.dtype() != core::DType::kF32 || q.dtype() != core::DType::kF32 || f.num_elements() != q.num_elements())
        continue;
      for (int64_t i = 0; i < f.num_elements(); ++i)
        a.max_abs_err =
            std::max(a.max_abs_err, static_cast<double>(std::fabs(f.data<float>()[i] - q.data<float>()[i])));
      // Top-1 over the last axis of the first output when it looks like class scores.
      if (o == 0 && f.rank() >= 2 && f.dim(-1) > 1) {
        const int64_t c = f.dim(-1), rows = f.num_elements() / c;
        for (int64_t r = 0; r < rows; ++r) {
          const float* fa = f.data<float>() + r * c;
          const float* qa = q.data<float>() + r * c;
          a.top1_match += std::max_element(fa, fa + c) - fa == std::max_element(qa, qa + c) - qa;
          ++a.top1_total;
        }
      }
    }
    a.min_cosine = std::min(a.min_cosine, one.cosine());
    ++a.samples;
  }
  a.cosine = all.cosine();
  return a;
}

core::Result<Agreement> compare_models(const ir::Graph& reference, const ir::Graph& test,
                                       const std::vector<Sample>& samples, int num_threads,
                                       const ProgressFn& progress) {
  if (progress) progress("comparing", 0, 2);
  KESTREL_ASSIGN_OR_RETURN(auto ro, run_model(reference, samples, num_threads));
  if (progress) progress("comparing", 1, 2);
  KESTREL_ASSIGN_OR_RETURN(auto to, run_model(test, samples, num_threads));
  if (progress) progress("comparing", 2, 2);
  return compare_outputs(ro, to);
}

namespace {

core::Result<std::unique_ptr<ir::Graph>> build_qdq(const ir::Graph& prepared,
                                                   const std::map<std::string, TensorRange>& ranges,
                                                   const QdqOptions& opts, QdqResult* res) {
  KESTREL_ASSIGN_OR_RETURN(runtime::LoadedModel m, copy_graph(prepared));
  // The copy's constants point into its .kst buffer; keep it alive with the graph by copying
  // the graph once more is not needed: constants hold the buffer themselves.
  KESTREL_RETURN_IF_ERROR(runtime::prepare_graph(*m.graph));
  KESTREL_ASSIGN_OR_RETURN(*res, insert_qdq(*m.graph, ranges, opts));
  return std::move(m.graph);
}

}  // namespace

double float_set_cost(const ir::Graph& prepared, const std::vector<QuantizedNode>& nodes,
                      const std::set<std::string>& float_set) {
  std::map<std::string, const ir::Node*> by_name;
  for (const ir::Node* n : prepared.nodes()) by_name[n->name()] = n;
  std::set<std::string> int8;
  std::map<std::string, std::string> made_by;  // tensor -> the quantized node that writes it (through a fused Relu)
  for (const QuantizedNode& q : nodes) {
    if (!float_set.count(q.name)) int8.insert(q.name);
    made_by[q.output] = q.name;
  }
  auto elements = [](const ir::Value* v) -> double {
    return v && v->shape().fully_known() ? static_cast<double>(v->shape().num_elements()) : 0.0;
  };
  auto side = [&](const ir::Node* m) { return m && int8.count(m->name()) ? 1 : 0; };  // 1: int8
  double cost = 0;
  std::set<std::string> seen;
  for (const QuantizedNode& q : nodes) {
    auto it = by_name.find(q.name);
    if (it == by_name.end()) continue;
    const ir::Node* n = it->second;
    if (float_set.count(q.name)) {
      double reduce = 1;  // multiply-adds per output element
      const ir::Value* w = n->input(1);
      if (n->op_type() == "Conv" && w && w->shape().fully_known() && w->shape().rank() >= 3) {
        const core::Dims d = w->shape().concrete();
        for (size_t i = 1; i < d.size(); ++i) reduce *= static_cast<double>(d[i]);
      } else if ((n->op_type() == "MatMul" || n->op_type() == "Gemm") && n->input(0) &&
                 n->input(0)->shape().fully_known() && n->input(0)->shape().rank() >= 1) {
        reduce = static_cast<double>(n->input(0)->shape().concrete().back());
      }
      cost += elements(n->output(0)) * reduce;
    }
    std::vector<std::string> tensors = q.inputs;
    tensors.push_back(q.output);
    for (const std::string& t : tensors) {
      if (!seen.insert(t).second) continue;
      const ir::Value* v = prepared.find_value(t);
      if (!v) continue;
      const int first = made_by.count(t) ? static_cast<int>(int8.count(made_by[t])) : side(v->producer());
      bool mixed = false;
      for (const ir::Use& u : v->uses()) mixed = mixed || side(u.node) != first;
      if (v->is_graph_output()) mixed = mixed || first != 0;
      if (mixed) cost += kBoundaryMacs * elements(v);
    }
  }
  return cost;
}

format::KstWriteOptions int8_kst_options(const PtqOptions& opts) {
  format::KstWriteOptions wo;
  wo.fp16_weights = wo.fp16_float_ops_only = opts.fp16_float_weights;
  if (opts.bf16_float_layers) wo.metadata[runtime::kFloatMathKey] = "bf16";
  return wo;
}

core::Result<PtqResult> quantize_ptq(const ir::Graph& prepared, const std::vector<Sample>& calib,
                                     const std::vector<Sample>& holdout, const PtqOptions& opts) {
  PtqResult res;
  QdqPlan plan = plan_qdq(prepared, opts.qdq);
  if (plan.nodes.empty()) return core::invalid_argument("quantize: the model has no op the quantizer handles");
  KESTREL_ASSIGN_OR_RETURN(res.ranges,
                           calibrate(prepared, calib, plan.tensors, opts.calib, opts.num_threads, opts.progress));
  KESTREL_ASSIGN_OR_RETURN(res.graph, build_qdq(prepared, res.ranges, opts.qdq, &res.qdq));
  KESTREL_ASSIGN_OR_RETURN(res.layers,
                           layer_report(prepared, *res.graph, res.qdq.tensors, calib, opts.num_threads, opts.progress));
  if (opts.target_cosine <= 0) return res;

  const std::vector<Sample>& eval = holdout.empty() ? calib : holdout;
  KESTREL_ASSIGN_OR_RETURN(auto ref, run_model(prepared, eval, opts.num_threads));
  // The target holds for the model `kestrel quantize` writes: the QDQ graph lowered at -O2 and run
  // with the int8 kernels (their roundings differ from the QDQ graph's float simulation by up to
  // an output step per op, which moved MobileNet-V2's cosine across 0.99).
  auto measure = [&](const ir::Graph& g) -> core::Result<double> {
    KESTREL_ASSIGN_OR_RETURN(std::string kst, optimized_kst(g, int8_kst_options(opts)));
    KESTREL_ASSIGN_OR_RETURN(format::KstModel lowered, format::load_kst_memory(kst.data(), kst.size(), g.name()));
    KESTREL_ASSIGN_OR_RETURN(auto out, run_model(*lowered.graph, eval, opts.num_threads));
    return compare_outputs(ref, out).cosine;
  };
  KESTREL_ASSIGN_OR_RETURN(res.holdout_cosine, measure(*res.graph));
  if (res.holdout_cosine >= opts.target_cosine) return res;

  // Sensitivity of a layer, from the per-layer report of the fully quantized graph: how much the
  // rest of the network amplifies an error at its output, estimated as the final output's error
  // (1 - cosine) over the error there; ties go to the layer that adds more error itself (its
  // output's error minus its worst input's). Errors grow layer by layer in deep CNNs, so an
  // error made early costs the most (mobilenet_v2: keeping the first 10 layers in float reaches
  // 0.99, where ranking by the error each layer adds needed 41).
  std::map<std::string, double> err;
  for (const LayerStat& l : res.layers) err[l.tensor] = std::max(1 - l.cosine, 1e-12);
  const double final_err = std::max(1 - res.holdout_cosine, 1e-12);
  struct Rank {
    double gain, added;
    std::string name;
  };
  std::vector<Rank> ranked;
  const std::vector<QuantizedNode> initial_nodes = res.qdq.nodes;  // every node the quantizer can quantize
  for (const QuantizedNode& n : res.qdq.nodes) {
    double in = 0;
    for (const std::string& t : n.inputs) in = std::max(in, err.count(t) ? err[t] : 0.0);
    const double out = err.count(n.output) ? err[n.output] : 1e-12;
    ranked.push_back({std::max(1.0, final_err / out), out - in, n.name});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Rank& a, const Rank& b) { return a.gain != b.gain ? a.gain > b.gain : a.added > b.added; });
  // Grow the float set (one layer at a time, then by a quarter) until the target is met, then
  // bisect between the last miss and the hit for the smallest float set that meets it.
  // `last`: the set is kept even below the target (every layer in float).
  auto attempt_set = [&](const std::vector<std::string>& names, bool last) -> core::Result<bool> {
    QdqOptions qo = opts.qdq;
    qo.keep_float.insert(names.begin(), names.end());
    if (opts.progress) opts.progress(str_cat("auto: ", names.size(), " layers in float").c_str(), 0, 1);
    QdqResult r;
    KESTREL_ASSIGN_OR_RETURN(auto g, build_qdq(prepared, res.ranges, qo, &r));
    KESTREL_ASSIGN_OR_RETURN(double cos, measure(*g));
    if (cos < opts.target_cosine && !last) return false;
    res.holdout_cosine = cos;
    res.graph = std::move(g);
    res.qdq = std::move(r);
    res.auto_float = names;
    return true;
  };
  auto attempt = [&](size_t k) -> core::Result<bool> {
    std::vector<std::string> names;
    for (size_t i = 0; i < k; ++i) names.push_back(ranked[i].name);
    return attempt_set(names, k >= ranked.size());
  };
  size_t miss = 0, hit = 0;
  for (size_t k = 1;; k = std::min(ranked.size(), k < 8 ? k + 1 : k + k / 4)) {
    KESTREL_ASSIGN_OR_RETURN(bool ok, attempt(k));
    if (ok) {
      hit = k;
      break;
    }
    miss = k;
  }
  while (hit - miss > 1) {
    const size_t mid = miss + (hit - miss) / 2;
    KESTREL_ASSIGN_OR_RETURN(bool ok, attempt(mid));
    (ok ? hit : miss) = mid;
  }
  // The ranking is by single layers, so the set's edge can fall inside a block: MobileNet-V2's greedy set kept
  // features.3's expansion and depthwise in float, its projection in int8 and features.4's expansion in float again,
  // two QuantizeLinear over 144 x 56 x 56 tensors and two broken block fusions; and it ranks by the error at a
  // layer's output, so outputs that squash errors (every Sigmoid) rank high: EfficientNet-B0's greedy set held the
  // Sigmoids and squeeze-excite blocks of features.4.1-7.0 (141 nodes). Errors grow with depth, so the other
  // candidate is the shortest graph-order prefix of the quantizable nodes that meets the target (bisection; one
  // edge, whole blocks): it is kept when it costs less (float_set_cost). MobileNet-V2: the 10-node prefix
  // (features.0-3 whole) reached 0.99124 against the greedy set's 0.99077 and ran 4.09-4.10 ms against 4.27-4.43
  // at 1 thread; EfficientNet-B0 (percentile 99.999): 61-63 nodes (features.0 to 3.1's depthwise) against 125.
  if (res.holdout_cosine >= opts.target_cosine) {
    std::map<std::string, size_t> pos;
    for (const ir::Node* n : prepared.nodes()) pos.emplace(n->name(), pos.size());
    auto position = [&](const std::string& name) {
      auto it = pos.find(name);
      return it == pos.end() ? size_t{0} : it->second;
    };
    std::vector<std::string> order;
    for (const Rank& r : ranked) order.push_back(r.name);
    std::stable_sort(order.begin(), order.end(),
                     [&](const std::string& a, const std::string& b) { return position(a) < position(b); });
    auto cost_of = [&](const std::vector<std::string>& names) {
      return float_set_cost(prepared, initial_nodes, std::set<std::string>(names.begin(), names.end()));
    };
    auto prefix = [&](size_t j) {
      return std::vector<std::string>(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(j));
    };
    // Bisect between a miss (the empty prefix: the fully quantized graph missed) and a hit (every node float, not
    // measured); each hit is shorter than the last, and the last is kept.
    size_t lo = 0, hi = order.size();
    struct Hit {
      std::unique_ptr<ir::Graph> graph;
      QdqResult qdq;
      double cosine = 0;
    } best_prefix;
    while (hi - lo > 1) {
      const size_t mid = lo + (hi - lo) / 2;
      QdqOptions qo = opts.qdq;
      const std::vector<std::string> names = prefix(mid);
      qo.keep_float.insert(names.begin(), names.end());
      if (opts.progress) opts.progress(str_cat("auto: the first ", mid, " layers in float").c_str(), 0, 1);
      QdqResult r;
      KESTREL_ASSIGN_OR_RETURN(auto g, build_qdq(prepared, res.ranges, qo, &r));
      KESTREL_ASSIGN_OR_RETURN(double cos, measure(*g));
      if (cos >= opts.target_cosine) {
        hi = mid;
        best_prefix = {std::move(g), std::move(r), cos};
      } else {
        lo = mid;
      }
    }
    if (best_prefix.graph && cost_of(prefix(hi)) < cost_of(res.auto_float)) {
      res.graph = std::move(best_prefix.graph);
      res.qdq = std::move(best_prefix.qdq);
      res.holdout_cosine = best_prefix.cosine;
      res.auto_float = prefix(hi);
    }
  }
  KESTREL_ASSIGN_OR_RETURN(res.layers,
                           layer_report(prepared, *res.graph, res.qdq.tensors, calib, opts.num_threads, opts.progress));
  return res;
}

}  // namespace kestrel::quant

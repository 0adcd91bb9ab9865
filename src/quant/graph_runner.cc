// TapRunner: a Session over a graph copy with extra outputs.
#include "quant/graph_runner.h"

#include <map>

#include "core/str_util.h"
#include "format/kst_loader.h"
#include "format/kst_writer.h"
#include "passes/pass.h"
#include "runtime/kernel.h"

namespace kestrel::quant {

using core::str_cat;

core::Result<runtime::LoadedModel> copy_graph(const ir::Graph& g) {
  KESTREL_ASSIGN_OR_RETURN(std::string bytes, format::write_kst(g));
  KESTREL_ASSIGN_OR_RETURN(format::KstModel m, format::load_kst_memory(bytes.data(), bytes.size(), g.name()));
  runtime::LoadedModel lm;
  lm.graph = std::move(m.graph);
  lm.keepalive = std::move(m.keepalive);
  return lm;
}

core::Result<std::string> optimized_kst(const ir::Graph& g, const format::KstWriteOptions& opts) {
  KESTREL_ASSIGN_OR_RETURN(runtime::LoadedModel m, copy_graph(g));
  ir::NodeEvaluator ev = [](const ir::Node& n, std::span<const core::Tensor* const> ins) {
    return runtime::evaluate_node(n, ins);
  };
  passes::PassContext ctx;
  ctx.evaluator = &ev;
  KESTREL_RETURN_IF_ERROR(runtime::prepare_graph(*m.graph));
  KESTREL_RETURN_IF_ERROR(passes::optimize(*m.graph, 2, ctx));
  return format::write_kst(*m.graph, opts);
}

core::Result<std::unique_ptr<TapRunner>> TapRunner::create(const ir::Graph& g, const std::vector<std::string>& taps,
                                                           int num_threads) {
  KESTREL_ASSIGN_OR_RETURN(runtime::LoadedModel m, copy_graph(g));
  ir::Graph& c = *m.graph;
  auto r = std::unique_ptr<TapRunner>(new TapRunner());
  r->num_outputs_ = c.outputs().size();
  std::map<const ir::Value*, int64_t> out_index, in_index;
  for (size_t i = 0; i < c.outputs().size(); ++i) out_index.emplace(c.outputs()[i], static_cast<int64_t>(i));
  for (size_t i = 0; i < c.inputs().size(); ++i) in_index[c.inputs()[i]] = static_cast<int64_t>(i);
  for (const std::string& name : taps) {
    ir::Value* v = c.find_value(name);
    if (!v) return core::invalid_argument(str_cat("no tensor named '", name, "' in the graph"));
    if (auto it = in_index.find(v); it != in_index.end()) {
      r->where_.push_back(-1 - it->second);
      continue;
    }
    auto it = out_index.find(v);
    if (it == out_index.end()) {
      if (v->is_constant()) return core::invalid_argument(str_cat("tensor '", name, "' is a constant"));
      c.add_output(v);
      it = out_index.emplace(v, static_cast<int64_t>(c.outputs().size() - 1)).first;
    }
    r->where_.push_back(it->second);
  }
  runtime::SessionOptions so;
  so.num_threads = num_threads;
  KESTREL_ASSIGN_OR_RETURN(r->session_, runtime::Session::from_model(std::move(m), so));
  return r;
}

core::Status TapRunner::run(const std::vector<core::Tensor>& sample, std::vector<core::Tensor>& outputs,
                            std::vector<core::Tensor>& taps) {
  std::vector<const core::Tensor*> ins;
  for (const core::Tensor& t : sample) ins.push_back(&t);
  // Fresh output tensors each run: callers keep the tensors of earlier runs.
  raw_.clear();
  KESTREL_RETURN_IF_ERROR(session_->run(ins, raw_));
  outputs.assign(raw_.begin(), raw_.begin() + static_cast<std::ptrdiff_t>(num_outputs_));
  taps.clear();
  for (int64_t w : where_) taps.push_back(w >= 0 ? raw_[static_cast<size_t>(w)] : sample[static_cast<size_t>(-1 - w)]);
  return core::Status::ok();
}

}  // namespace kestrel::quant

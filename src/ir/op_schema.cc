// Op registry, arity checks, and graph-wide inference with small-value propagation.
#include "ir/op_schema.h"

#include <unordered_map>

#include "core/str_util.h"

namespace kestrel::ir {

using core::Status;
using core::str_cat;

const OpRegistry& OpRegistry::global() {
  static const OpRegistry r = [] {
    OpRegistry reg;
    register_all_ops(reg);
    return reg;
  }();
  return r;
}

void OpRegistry::add(OpSchema s) {
  auto key = std::make_pair(s.domain, s.name);
  schemas_[key] = std::move(s);
}

const OpSchema* OpRegistry::find(std::string_view domain, std::string_view name) const {
  auto it = schemas_.find(std::make_pair(std::string(domain), std::string(name)));
  return it == schemas_.end() ? nullptr : &it->second;
}

std::vector<const OpSchema*> OpRegistry::all() const {
  std::vector<const OpSchema*> out;
  for (const auto& [k, s] : schemas_) out.push_back(&s);
  return out;
}

InferContext::InferContext(const Node& node, std::vector<const ValueType*> input_types,
                           std::vector<const core::Tensor*> input_values)
    : node_(node), types_(std::move(input_types)), values_(std::move(input_values)) {
  outputs_.resize(node.num_outputs());
}

Status run_inference(const OpSchema& schema, InferContext& ctx) {
  const Node& n = ctx.node();
  int present = static_cast<int>(n.num_inputs());
  if (present < schema.min_inputs || (schema.max_inputs >= 0 && present > schema.max_inputs))
    return ctx.fail("has ", present, " inputs, expected ", schema.min_inputs,
                    schema.max_inputs < 0 ? " or more" : str_cat(" to ", schema.max_inputs));
  for (int i = 0; i < schema.min_inputs; ++i)
    if (!ctx.has_input(static_cast<size_t>(i))) return ctx.fail("required input ", i, " is missing");
  int outs = static_cast<int>(n.num_outputs());
  if (outs < schema.min_outputs || (schema.max_outputs >= 0 && outs > schema.max_outputs))
    return ctx.fail("has ", outs, " outputs, expected ", schema.min_outputs,
                    schema.max_outputs < 0 ? " or more" : str_cat(" to ", schema.max_outputs));
  if (!schema.infer) return ctx.fail("op has no inference function");
  return schema.infer(ctx);
}

namespace {

// Keeps what `declared` knows where `inferred` knows less.
ValueType merge_types(const ValueType& inferred, const ValueType& declared) {
  ValueType out = inferred;
  if (out.dtype == DType::kUndefined) out.dtype = declared.dtype;
  if (!out.shape.rank_known()) {
    out.shape = declared.shape;
  } else if (declared.shape.rank_known() && declared.shape.rank() == out.shape.rank()) {
    for (int64_t i = 0; i < out.shape.rank(); ++i)
      if (!out.shape[i].known() && (declared.shape[i].known() || out.shape[i].symbol.empty()))
        out.shape[i] = declared.shape[i];
  }
  return out;
}

constexpr int64_t kMaxPropagatedElements = 1 << 16;

class GraphInferencer {
 public:
  explicit GraphInferencer(const NodeEvaluator* ev) : ev_(ev) {}

  Status infer(Graph& g) {
    for (Node* n : g.nodes()) KESTREL_RETURN_IF_ERROR(infer_node(*n));
    return Status::ok();
  }

 private:
  const core::Tensor* known_value(const Value* v) const {
    if (v->is_constant()) return &v->constant();
    auto it = values_.find(v);
    return it == values_.end() ? nullptr : &it->second;
  }

  const ValueType* type_of(Value* v) {
    if (v->kind() == ValueKind::kOuterScope) {
      // Resolve by name in enclosing graphs.
      for (Graph* g = v->graph()->parent(); g; g = g->parent()) {
        if (Value* outer = g->find_value(v->name())) {
          v->set_type(merge_types(outer->type(), v->type()));
          if (const core::Tensor* t = known_value(outer)) values_[v] = *t;
          break;
        }
      }
    }
    return &v->type();
  }

  Status infer_node(Node& n) {
    const OpSchema* schema = OpRegistry::global().find(n.domain(), n.op_type());
    if (!schema) return core::unsupported(str_cat(n.describe(), ": unknown op"));
    std::vector<const ValueType*> types;
    std::vector<const core::Tensor*> vals;
    for (size_t i = 0; i < n.num_inputs(); ++i) {
      Value* v = n.input(i);
      types.push_back(v ? type_of(v) : nullptr);
      vals.push_back(v ? known_value(v) : nullptr);
    }
    for (Value* v : n.implicit_inputs()) type_of(v);
    InferContext ctx(n, types, vals);
    ctx.infer_subgraph = [this](const Graph& sub, const std::vector<ValueType>& in) {
      return infer_subgraph(const_cast<Graph&>(sub), in);
    };
    KESTREL_RETURN_IF_ERROR(run_inference(*schema, ctx));
    for (size_t i = 0; i < n.num_outputs(); ++i) {
      Value* out = n.output(i);
      out->set_type(merge_types(ctx.outputs()[i], out->type()));
    }
    maybe_evaluate(n, *schema);
    return Status::ok();
  }

  void maybe_evaluate(const Node& n, const OpSchema& schema) {
    if (!ev_ || schema.nondeterministic || !n.subgraphs().empty()) return;
    std::vector<core::Tensor> shape_holders(n.num_inputs());
    std::vector<const core::Tensor*> ins(n.num_inputs(), nullptr);
    for (size_t i = 0; i < n.num_inputs(); ++i) {
      Value* v = n.input(i);
      if (!v) continue;
      if (const core::Tensor* t = known_value(v)) {
        ins[i] = t;
      } else if (schema.reads_only_shape(i) && v->shape().fully_known()) {
        shape_holders[i] = core::Tensor::view(v->dtype(), v->shape().concrete(), nullptr);
        ins[i] = &shape_holders[i];
      } else {
        return;
      }
    }
    for (Value* out : n.outputs()) {
      int64_t ne = out->shape().num_elements();
      if (ne < 0 || ne > kMaxPropagatedElements) return;
    }
    auto r = (*ev_)(n, ins);
    if (!r.is_ok() || r->size() != n.num_outputs()) return;
    for (size_t i = 0; i < n.num_outputs(); ++i) values_[n.output(i)] = std::move((*r)[i]);
  }

  core::Result<std::vector<ValueType>> infer_subgraph(Graph& sub, const std::vector<ValueType>& in) {
    if (in.size() != sub.inputs().size())
      return core::invalid_model(str_cat("subgraph '", sub.name(), "' takes ", sub.inputs().size(),
                                         " inputs, given ", in.size()));
    for (size_t i = 0; i < in.size(); ++i)
      sub.inputs()[i]->set_type(merge_types(in[i], sub.inputs()[i]->type()));
    KESTREL_RETURN_IF_ERROR(infer(sub));
    std::vector<ValueType> out;
    for (Value* v : sub.outputs()) out.push_back(*type_of(v));
    return out;
  }

  const NodeEvaluator* ev_;
  std::unordered_map<const Value*, core::Tensor> values_;
};

}  // namespace

Status infer_graph(Graph& g, const NodeEvaluator* evaluator) {
  GraphInferencer inf(evaluator);
  return inf.infer(g);
}

}  // namespace kestrel::ir

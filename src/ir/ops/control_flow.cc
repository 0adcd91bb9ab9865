// Schemas of the control-flow ops If, Loop and Scan; their bodies are subgraph attributes.
// Output shapes depend on data (branch taken, trip count), so the runtime lets the kernels
// allocate them; inference still gives dtypes and whatever shape information the bodies agree on.
#include "core/str_util.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

const Graph* graph_attr(const InferContext& ctx, const char* name) {
  const Attribute* a = ctx.node().attr(name);
  if (!a || !a->is<Attribute::GraphPtr>()) return nullptr;
  return a->get<Attribute::GraphPtr>().get();
}

// The type both a and b satisfy: dims kept where they agree.
ValueType common_type(const ValueType& a, const ValueType& b) {
  ValueType t{a.dtype, Shape::unknown_rank()};
  if (a.shape.rank_known() && b.shape.rank_known() && a.shape.rank() == b.shape.rank()) {
    std::vector<Dim> dims;
    for (int64_t i = 0; i < a.shape.rank(); ++i) dims.push_back(a.shape[i] == b.shape[i] ? a.shape[i] : Dim::unknown());
    t.shape = Shape(std::move(dims));
  }
  return t;
}

Status infer_if(InferContext& ctx) {
  const Graph* then_g = graph_attr(ctx, "then_branch");
  const Graph* else_g = graph_attr(ctx, "else_branch");
  if (!then_g || !else_g) return ctx.fail("If needs graph attributes then_branch and else_branch");
  if (then_g->outputs().size() != ctx.num_outputs() || else_g->outputs().size() != ctx.num_outputs())
    return ctx.fail("then_branch and else_branch must each produce ", ctx.num_outputs(), " outputs");
  if (!ctx.infer_subgraph) return Status::ok();  // run time: the kernel allocates its outputs
  KESTREL_ASSIGN_OR_RETURN(auto t, ctx.infer_subgraph(*then_g, {}));
  KESTREL_ASSIGN_OR_RETURN(auto e, ctx.infer_subgraph(*else_g, {}));
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    if (t[i].dtype != e[i].dtype && t[i].dtype != DType::kUndefined && e[i].dtype != DType::kUndefined)
      return ctx.fail("output ", i, " is ", core::dtype_name(t[i].dtype), " in then_branch but ",
                      core::dtype_name(e[i].dtype), " in else_branch");
    ctx.set_output(i, common_type(t[i], e[i]));
  }
  return Status::ok();
}

Status infer_loop(InferContext& ctx) {
  const Graph* body = graph_attr(ctx, "body");
  if (!body) return ctx.fail("Loop needs a graph attribute 'body'");
  if (ctx.num_inputs() < 2) return ctx.fail("Loop needs inputs M and cond (either may be empty)");
  size_t n_carried = ctx.num_inputs() >= 2 ? ctx.num_inputs() - 2 : 0;
  if (body->inputs().size() != n_carried + 2)
    return ctx.fail("body takes ", body->inputs().size(), " inputs, Loop provides ", n_carried + 2);
  if (body->outputs().size() < n_carried + 1)
    return ctx.fail("body produces ", body->outputs().size(), " outputs, needs at least ", n_carried + 1);
  size_t n_scan = body->outputs().size() - 1 - n_carried;
  if (ctx.num_outputs() != n_carried + n_scan)
    return ctx.fail("Loop has ", ctx.num_outputs(), " outputs, body implies ", n_carried + n_scan);
  std::vector<ValueType> in = {{DType::kI64, Shape(core::Dims{})}, {DType::kBool, Shape(core::Dims{})}};
  for (size_t i = 0; i < n_carried; ++i)
    in.push_back(ctx.has_input(2 + i) ? ctx.input_type(2 + i) : ValueType{});
  std::vector<ValueType> out;
  if (ctx.infer_subgraph) {
    KESTREL_ASSIGN_OR_RETURN(out, ctx.infer_subgraph(*body, in));
  } else {
    for (const Value* v : body->outputs()) out.push_back(v->type());
  }
  for (size_t i = 0; i < n_carried; ++i) ctx.set_output(i, common_type(in[2 + i], out[1 + i]));
  for (size_t k = 0; k < n_scan; ++k) {
    const ValueType& s = out[1 + n_carried + k];
    ValueType t{s.dtype, Shape::unknown_rank()};
    if (s.shape.rank_known()) {
      std::vector<Dim> dims{Dim::unknown()};
      for (int64_t d = 0; d < s.shape.rank(); ++d) dims.push_back(s.shape[d]);
      t.shape = Shape(std::move(dims));
    }
    ctx.set_output(n_carried + k, t);
  }
  return Status::ok();
}

Status infer_scan(InferContext& ctx) {
  const Graph* body = graph_attr(ctx, "body");
  if (!body) return ctx.fail("Scan needs a graph attribute 'body'");
  KESTREL_ASSIGN_OR_RETURN(int64_t m, ctx.attr_int("num_scan_inputs"));
  if (m < 1 || static_cast<size_t>(m) > ctx.num_inputs()) return ctx.fail("num_scan_inputs ", m, " is out of range");
  size_t n_state = ctx.num_inputs() - static_cast<size_t>(m);
  if (body->inputs().size() != ctx.num_inputs())
    return ctx.fail("body takes ", body->inputs().size(), " inputs, Scan provides ", ctx.num_inputs());
  if (body->outputs().size() != ctx.num_outputs() || ctx.num_outputs() < n_state)
    return ctx.fail("body produces ", body->outputs().size(), " outputs, Scan has ", ctx.num_outputs());
  for (size_t i = 0; i < n_state; ++i) ctx.set_output(i, ctx.input_type(i));
  for (size_t k = n_state; k < ctx.num_outputs(); ++k) ctx.set_output(k, {body->outputs()[k]->dtype(), Shape::unknown_rank()});
  return Status::ok();
}

}  // namespace

void register_control_flow_ops(OpRegistry& r) {
  auto add = [&r](const char* name, int min_in, int max_in, InferFn fn, const char* doc) {
    OpSchema s;
    s.name = name;
    s.min_inputs = min_in;
    s.max_inputs = max_in;
    s.min_outputs = 1;
    s.max_outputs = -1;
    s.infer = std::move(fn);
    s.data_dependent_shape = true;
    s.doc = doc;
    r.add(std::move(s));
  };
  add("If", 1, 1, infer_if, "runs then_branch or else_branch on a bool condition");
  add("Loop", 0, -1, infer_loop, "runs body while the trip count and condition allow; carried values and scan outputs");
  add("Scan", 1, -1, infer_scan, "runs body over slices of the scan inputs; state values and stacked scan outputs");
}

}  // namespace kestrel::ir

// Kernel bindings for RNN, GRU and LSTM: direction, activations (with the alpha/beta lists),
// clip, input_forget, linear_before_reset and layout -> reference recurrent kernel parameters.
#include "kernels/reference/recurrent.h"

#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

namespace {

// activation_alpha / activation_beta are consumed in order by the activations that take them
// (as onnxruntime does); an activation past the end of a list gets its ONNX default.
Result<std::vector<ref::RnnActivation>> parse_activations(const KernelCreateInfo& info, ref::RnnCell cell,
                                                          int64_t num_directions) {
  const ir::Node& n = info.node;
  const size_t per_dir = static_cast<size_t>(ref::rnn_num_activations(cell));
  const size_t want = per_dir * static_cast<size_t>(num_directions);
  std::vector<ref::RnnActivation> acts;
  const ir::Attribute* a = n.attr("activations");
  if (!a) {
    for (int64_t d = 0; d < num_directions; ++d)
      for (const auto& def : ref::rnn_default_activations(cell)) acts.push_back(def);
    return acts;
  }
  if (!a->is<std::vector<std::string>>()) return info.fail("attribute 'activations' must be a list of strings");
  std::vector<std::string> names = a->get<std::vector<std::string>>();
  // A single direction's list for a bidirectional op is applied to both directions.
  if (num_directions == 2 && names.size() == per_dir) {
    const std::vector<std::string> one = names;
    names.insert(names.end(), one.begin(), one.end());
  }
  if (names.size() != want)
    return info.fail("'activations' has ", names.size(), " entries, expected ", want, " (", per_dir, " per direction)");
  KESTREL_ASSIGN_OR_RETURN(std::vector<float> alphas, n.attr_floats("activation_alpha", std::vector<float>{}));
  KESTREL_ASSIGN_OR_RETURN(std::vector<float> betas, n.attr_floats("activation_beta", std::vector<float>{}));
  size_t ai = 0, bi = 0;
  for (const std::string& name : names) {
    auto kind = ref::rnn_activation_from_name(name);
    if (!kind) return info.unsupported("activation '", name, "' is not one of the ONNX recurrent activations");
    ref::RnnActivation act{*kind, ref::rnn_activation_default_alpha(*kind), ref::rnn_activation_default_beta(*kind)};
    if (ref::rnn_activation_takes_alpha(*kind) && ai < alphas.size()) act.alpha = alphas[ai++];
    if (ref::rnn_activation_takes_beta(*kind) && bi < betas.size()) act.beta = betas[bi++];
    acts.push_back(act);
  }
  return acts;
}

Result<ref::RecurrentParams> parse_params(const KernelCreateInfo& info, ref::RnnCell cell) {
  const ir::Node& n = info.node;
  ref::RecurrentParams p;
  p.cell = cell;
  KESTREL_ASSIGN_OR_RETURN(std::string dir, n.attr_string("direction", "forward"));
  if (dir == "forward")
    p.direction = ref::RnnDirection::kForward;
  else if (dir == "reverse")
    p.direction = ref::RnnDirection::kReverse;
  else if (dir == "bidirectional")
    p.direction = ref::RnnDirection::kBidirectional;
  else
    return info.fail("direction must be forward, reverse or bidirectional, got '", dir, "'");
  KESTREL_ASSIGN_OR_RETURN(p.hidden_size, n.attr_int("hidden_size", 0));
  if (p.hidden_size < 0 || (n.has_attr("hidden_size") && p.hidden_size == 0))
    return info.fail("hidden_size must be positive, got ", p.hidden_size);
  KESTREL_ASSIGN_OR_RETURN(int64_t layout, n.attr_int("layout", 0));
  if (layout != 0 && layout != 1) return info.fail("layout must be 0 or 1, got ", layout);
  p.layout = static_cast<int>(layout);
  if (n.has_attr("clip")) {
    KESTREL_ASSIGN_OR_RETURN(float clip, n.attr_float("clip"));
    if (!(clip > 0)) return info.fail("clip must be positive, got ", clip);
    p.clip = clip;
  }
  if (cell == ref::RnnCell::kLstm) {
    KESTREL_ASSIGN_OR_RETURN(int64_t input_forget, n.attr_int("input_forget", 0));
    p.input_forget = input_forget != 0;
  }
  if (cell == ref::RnnCell::kGru) {
    KESTREL_ASSIGN_OR_RETURN(int64_t lbr, n.attr_int("linear_before_reset", 0));
    p.linear_before_reset = lbr != 0;
  }
  KESTREL_ASSIGN_OR_RETURN(p.activations, parse_activations(info, cell, ref::rnn_num_directions(p.direction)));
  return p;
}

Status run_recurrent(const ref::RecurrentParams& p, KernelContext& ctx) {
  const bool lstm = p.cell == ref::RnnCell::kLstm;
  ref::RecurrentInputs in;
  in.x = ctx.input_or_null(0);
  in.w = ctx.input_or_null(1);
  in.r = ctx.input_or_null(2);
  in.b = ctx.input_or_null(3);
  in.sequence_lens = ctx.input_or_null(4);
  in.initial_h = ctx.input_or_null(5);
  in.initial_c = lstm ? ctx.input_or_null(6) : nullptr;
  in.p = lstm ? ctx.input_or_null(7) : nullptr;
  KESTREL_ASSIGN_OR_RETURN(ref::RecurrentShapes s, ref::recurrent_shapes(p, in));
  // Outputs whose shape was not known at planning time are allocated here.
  const core::Dims* dims[] = {&s.y, &s.y_h, &s.y_c};
  Tensor* outs[3] = {nullptr, nullptr, nullptr};
  for (size_t i = 0; i < ctx.num_outputs() && i < 3; ++i) {
    if (!ctx.output(i).defined()) KESTREL_RETURN_IF_ERROR(ctx.allocate_output(i, *dims[i]));
    outs[i] = &ctx.output(i);
  }
  return ref::recurrent(p, in, {outs[0], outs[1], outs[2]});
}

void add_recurrent(KernelRegistry& r, const char* name, ref::RnnCell cell) {
  r.add(name, [cell](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ref::RecurrentParams p, parse_params(info, cell));
    const ir::ValueType* x = info.input_types.empty() ? nullptr : info.input_types[0];
    if (x && x->dtype != core::DType::kUndefined && x->dtype != core::DType::kF32 && x->dtype != core::DType::kF64)
      return info.unsupported("only f32 and f64 are implemented, X is ", core::dtype_name(x->dtype));
    return make_kernel([p](KernelContext& ctx) { return run_recurrent(p, ctx); });
  });
}

}  // namespace

void register_recurrent_kernels(KernelRegistry& r) {
  add_recurrent(r, "RNN", ref::RnnCell::kRnn);
  add_recurrent(r, "GRU", ref::RnnCell::kGru);
  add_recurrent(r, "LSTM", ref::RnnCell::kLstm);
}

}  // namespace kestrel::runtime

// Kernels of If, Loop and Scan: each holds executors for its subgraphs, binds the outer-scope
// values the bodies use, and runs them per branch / iteration.
#include <cstring>
#include <limits>

#include "core/str_util.h"
#include "runtime/executor.h"
#include "runtime/kernel.h"

namespace kestrel::runtime {

using core::str_cat;

namespace {

Result<std::unique_ptr<Executor>> make_body(const KernelCreateInfo& info, const char* attr) {
  const ir::Attribute* a = info.node.attr(attr);
  if (!a || !a->is<ir::Attribute::GraphPtr>()) return info.fail("missing graph attribute '", attr, "'");
  ExecutorOptions eo;
  eo.kernel = info.options;
  return Executor::create(*a->get<ir::Attribute::GraphPtr>(), eo);
}

// Binds the node's outer-scope values (by name) into a body executor before it runs.
void bind_outer(Executor& body, const ir::Node& node, KernelContext& ctx) {
  const auto& names = node.implicit_inputs();
  auto tensors = ctx.implicit_inputs();
  for (size_t i = 0; i < names.size() && i < tensors.size(); ++i) body.bind_outer(names[i]->name(), tensors[i]);
  body.set_pool(ctx.pool());
}

Result<bool> scalar_bool(const Tensor& t, const char* what) {
  if (t.num_elements() != 1) return core::invalid_argument(str_cat(what, " must have one element, has shape ",
                                                                   core::dims_to_string(t.dims())));
  if (t.dtype() == core::DType::kString) return core::invalid_argument(str_cat(what, " must be bool"));
  return t.element_as_double(0) != 0;
}

// Copies slice `index` along `axis` of t (the axis removed).
Result<Tensor> take_slice(const Tensor& t, int64_t axis, int64_t index) {
  core::Dims dims = t.dims();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= dims[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < dims.size(); ++i) inner *= dims[i];
  int64_t len = dims[static_cast<size_t>(axis)];
  dims.erase(dims.begin() + axis);
  KESTREL_ASSIGN_OR_RETURN(Tensor out, Tensor::allocate(t.dtype(), dims));
  size_t es = core::dtype_size(t.dtype());
  const auto* src = static_cast<const uint8_t*>(t.raw_data());
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + static_cast<size_t>(o * inner) * es, src + static_cast<size_t>((o * len + index) * inner) * es,
                static_cast<size_t>(inner) * es);
  return out;
}

// Stacks equally shaped tensors along a new axis (in the given order).
Result<Tensor> stack(const std::vector<Tensor>& parts, int64_t axis, core::DType dtype, const char* what) {
  if (parts.empty()) return Tensor::allocate(dtype, {0});
  const core::Dims& d0 = parts[0].dims();
  for (const Tensor& p : parts)
    if (p.dims() != d0 || p.dtype() != parts[0].dtype())
      return core::invalid_argument(str_cat(what, ": iterations produced different shapes ", core::dims_to_string(d0),
                                            " and ", core::dims_to_string(p.dims())));
  if (axis < 0) axis += static_cast<int64_t>(d0.size()) + 1;
  if (axis < 0 || axis > static_cast<int64_t>(d0.size()))
    return core::invalid_argument(str_cat(what, ": output axis out of range"));
  core::Dims dims = d0;
  dims.insert(dims.begin() + axis, static_cast<int64_t>(parts.size()));
  KESTREL_ASSIGN_OR_RETURN(Tensor out, Tensor::allocate(parts[0].dtype(), dims));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= d0[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis); i < d0.size(); ++i) inner *= d0[i];
  size_t es = core::dtype_size(out.dtype());
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  int64_t n = static_cast<int64_t>(parts.size());
  for (int64_t k = 0; k < n; ++k) {
    const auto* src = static_cast<const uint8_t*>(parts[static_cast<size_t>(k)].raw_data());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + static_cast<size_t>((o * n + k) * inner) * es, src + static_cast<size_t>(o * inner) * es,
                  static_cast<size_t>(inner) * es);
  }
  return out;
}

class IfKernel final : public OpKernel {
 public:
  IfKernel(const ir::Node& n, std::unique_ptr<Executor> then_b, std::unique_ptr<Executor> else_b)
      : node_(n), then_(std::move(then_b)), else_(std::move(else_b)) {}
  const char* impl_name() const override { return "control-flow"; }

  Status run(KernelContext& ctx) override {
    KESTREL_ASSIGN_OR_RETURN(bool cond, scalar_bool(ctx.input(0), "If condition"));
    Executor& branch = cond ? *then_ : *else_;
    bind_outer(branch, node_, ctx);
    std::vector<Tensor> outs;
    KESTREL_RETURN_IF_ERROR(branch.run({}, outs).with_context(cond ? "then_branch" : "else_branch"));
    if (outs.size() != ctx.num_outputs()) return core::invalid_model("If: branch output count mismatch");
    for (size_t i = 0; i < outs.size(); ++i) ctx.output(i) = std::move(outs[i]);
    return Status::ok();
  }

 private:
  const ir::Node& node_;
  std::unique_ptr<Executor> then_, else_;
};

class LoopKernel final : public OpKernel {
 public:
  LoopKernel(const ir::Node& n, std::unique_ptr<Executor> body) : node_(n), body_(std::move(body)) {}
  const char* impl_name() const override { return "control-flow"; }

  Status run(KernelContext& ctx) override {
    int64_t max_trip = std::numeric_limits<int64_t>::max();
    if (ctx.has_input(0)) {
      if (ctx.input(0).num_elements() != 1) return core::invalid_argument("Loop: M must be a scalar");
      max_trip = ctx.input(0).element_as_int64(0);
    }
    bool cond = true;
    if (ctx.has_input(1)) {
      KESTREL_ASSIGN_OR_RETURN(cond, scalar_bool(ctx.input(1), "Loop condition"));
    }
    size_t n_carried = ctx.num_inputs() - 2;
    size_t n_scan = ctx.num_outputs() - n_carried;
    std::vector<Tensor> carried(n_carried);
    for (size_t i = 0; i < n_carried; ++i) {
      if (!ctx.has_input(2 + i)) return core::invalid_model("Loop: a loop-carried initial value is missing");
      carried[i] = ctx.input(2 + i);
    }
    std::vector<std::vector<Tensor>> scans(n_scan);
    bind_outer(*body_, node_, ctx);
    Tensor iter = Tensor::scalar<int64_t>(0);
    Tensor cond_t = Tensor::scalar<bool>(cond);
    std::vector<const Tensor*> ins(2 + n_carried);
    std::vector<Tensor> outs;
    for (int64_t i = 0; i < max_trip && cond; ++i) {
      iter.data<int64_t>()[0] = i;
      cond_t.data<bool>()[0] = cond;
      ins[0] = &iter;
      ins[1] = &cond_t;
      for (size_t k = 0; k < n_carried; ++k) ins[2 + k] = &carried[k];
      outs.clear();
      KESTREL_RETURN_IF_ERROR(body_->run(ins, outs).with_context(str_cat("Loop body, iteration ", i)));
      if (outs.size() != 1 + n_carried + n_scan) return core::invalid_model("Loop: body output count mismatch");
      KESTREL_ASSIGN_OR_RETURN(cond, scalar_bool(outs[0], "Loop body condition output"));
      for (size_t k = 0; k < n_carried; ++k) carried[k] = std::move(outs[1 + k]);
      for (size_t k = 0; k < n_scan; ++k) scans[k].push_back(std::move(outs[1 + n_carried + k]));
    }
    for (size_t k = 0; k < n_carried; ++k) {
      // Carried values may still be the caller's input tensors: hand out copies.
      KESTREL_ASSIGN_OR_RETURN(ctx.output(k), carried[k].clone());
    }
    for (size_t k = 0; k < n_scan; ++k) {
      KESTREL_ASSIGN_OR_RETURN(ctx.output(n_carried + k), stack(scans[k], 0, output_dtype(n_carried + k), "Loop scan output"));
    }
    return Status::ok();
  }

 private:
  core::DType output_dtype(size_t i) const { return node_.output(i)->dtype(); }
  const ir::Node& node_;
  std::unique_ptr<Executor> body_;
};

class ScanKernel final : public OpKernel {
 public:
  ScanKernel(const ir::Node& n, std::unique_ptr<Executor> body, int64_t m, std::vector<int64_t> in_axes,
             std::vector<int64_t> in_dirs, std::vector<int64_t> out_axes, std::vector<int64_t> out_dirs, bool batched)
      : node_(n), body_(std::move(body)), m_(m), in_axes_(std::move(in_axes)), in_dirs_(std::move(in_dirs)),
        out_axes_(std::move(out_axes)), out_dirs_(std::move(out_dirs)), batched_(batched) {}
  const char* impl_name() const override { return "control-flow"; }

  Status run(KernelContext& ctx) override {
    bind_outer(*body_, node_, ctx);
    std::vector<const Tensor*> ins;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) return core::invalid_model("Scan: an input is missing");
      ins.push_back(&ctx.input(i));
    }
    std::vector<Tensor> outs;
    if (!batched_) {
      KESTREL_RETURN_IF_ERROR(scan(ins, outs));
    } else {
      // Opset-8 Scan: every input has a leading batch axis; scan each batch entry on its own.
      int64_t batch = ins.empty() || ins[0]->rank() == 0 ? 0 : ins[0]->dims()[0];
      std::vector<std::vector<Tensor>> per_output(ctx.num_outputs());
      for (int64_t b = 0; b < batch; ++b) {
        std::vector<Tensor> slices(ins.size());
        std::vector<const Tensor*> bins(ins.size());
        for (size_t i = 0; i < ins.size(); ++i) {
          if (ins[i]->rank() == 0 || ins[i]->dims()[0] != batch)
            return core::invalid_argument("Scan (opset 8): inputs must share the leading batch dimension");
          KESTREL_ASSIGN_OR_RETURN(slices[i], take_slice(*ins[i], 0, b));
          bins[i] = &slices[i];
        }
        std::vector<Tensor> bouts;
        KESTREL_RETURN_IF_ERROR(scan(bins, bouts));
        for (size_t k = 0; k < bouts.size(); ++k) per_output[k].push_back(std::move(bouts[k]));
      }
      for (size_t k = 0; k < per_output.size(); ++k) {
        KESTREL_ASSIGN_OR_RETURN(Tensor t, stack(per_output[k], 0, node_.output(k)->dtype(), "Scan output"));
        outs.push_back(std::move(t));
      }
    }
    for (size_t k = 0; k < outs.size(); ++k) ctx.output(k) = std::move(outs[k]);
    return Status::ok();
  }

 private:
  // One scan over `inputs` (states then scan inputs); outputs: final states then stacked scans.
  Status scan(std::span<const Tensor* const> inputs, std::vector<Tensor>& result) {
    size_t n_state = inputs.size() - static_cast<size_t>(m_);
    size_t n_scan_out = node_.num_outputs() - n_state;
    int64_t len = -1;
    std::vector<int64_t> axes(static_cast<size_t>(m_));
    for (int64_t j = 0; j < m_; ++j) {
      const Tensor& x = *inputs[n_state + static_cast<size_t>(j)];
      int64_t axis = in_axes_.empty() ? 0 : in_axes_[static_cast<size_t>(j)];
      KESTREL_ASSIGN_OR_RETURN(axis, core::normalize_axis(axis, x.rank(), "scan_input_axes"));
      axes[static_cast<size_t>(j)] = axis;
      int64_t l = x.dims()[static_cast<size_t>(axis)];
      if (len >= 0 && l != len) return core::invalid_argument("Scan: scan inputs have different sequence lengths");
      len = l;
    }
    std::vector<Tensor> state(n_state);
    for (size_t i = 0; i < n_state; ++i) state[i] = *inputs[i];
    std::vector<std::vector<Tensor>> scans(n_scan_out);
    std::vector<Tensor> slices(static_cast<size_t>(m_));
    std::vector<const Tensor*> ins(inputs.size());
    std::vector<Tensor> outs;
    for (int64_t t = 0; t < len; ++t) {
      for (int64_t j = 0; j < m_; ++j) {
        bool rev = !in_dirs_.empty() && in_dirs_[static_cast<size_t>(j)] != 0;
        KESTREL_ASSIGN_OR_RETURN(slices[static_cast<size_t>(j)],
                                 take_slice(*inputs[n_state + static_cast<size_t>(j)], axes[static_cast<size_t>(j)],
                                            rev ? len - 1 - t : t));
      }
      for (size_t i = 0; i < n_state; ++i) ins[i] = &state[i];
      for (int64_t j = 0; j < m_; ++j) ins[n_state + static_cast<size_t>(j)] = &slices[static_cast<size_t>(j)];
      outs.clear();
      KESTREL_RETURN_IF_ERROR(body_->run(ins, outs).with_context(str_cat("Scan body, step ", t)));
      if (outs.size() != n_state + n_scan_out) return core::invalid_model("Scan: body output count mismatch");
      for (size_t i = 0; i < n_state; ++i) state[i] = std::move(outs[i]);
      for (size_t k = 0; k < n_scan_out; ++k) scans[k].push_back(std::move(outs[n_state + k]));
    }
    result.clear();
    for (size_t i = 0; i < n_state; ++i) {
      KESTREL_ASSIGN_OR_RETURN(Tensor t, state[i].clone());
      result.push_back(std::move(t));
    }
    for (size_t k = 0; k < n_scan_out; ++k) {
      if (!out_dirs_.empty() && out_dirs_[k] != 0) std::reverse(scans[k].begin(), scans[k].end());
      int64_t axis = out_axes_.empty() ? 0 : out_axes_[k];
      KESTREL_ASSIGN_OR_RETURN(Tensor t, stack(scans[k], axis, node_.output(n_state + k)->dtype(), "Scan output"));
      result.push_back(std::move(t));
    }
    return Status::ok();
  }

  const ir::Node& node_;
  std::unique_ptr<Executor> body_;
  int64_t m_;
  std::vector<int64_t> in_axes_, in_dirs_, out_axes_, out_dirs_;
  bool batched_;  // opset-8 form
};

}  // namespace

void register_control_flow_kernels(KernelRegistry& r) {
  r.add("If", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(auto t, make_body(info, "then_branch"));
    KESTREL_ASSIGN_OR_RETURN(auto e, make_body(info, "else_branch"));
    return std::unique_ptr<OpKernel>(new IfKernel(info.node, std::move(t), std::move(e)));
  });
  r.add("Loop", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(auto b, make_body(info, "body"));
    return std::unique_ptr<OpKernel>(new LoopKernel(info.node, std::move(b)));
  });
  r.add("Scan", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(auto b, make_body(info, "body"));
    const ir::Node& n = info.node;
    KESTREL_ASSIGN_OR_RETURN(int64_t m, n.attr_int("num_scan_inputs"));
    KESTREL_ASSIGN_OR_RETURN(auto in_axes, n.attr_ints("scan_input_axes", std::vector<int64_t>{}));
    KESTREL_ASSIGN_OR_RETURN(auto in_dirs, n.attr_ints("scan_input_directions", std::vector<int64_t>{}));
    KESTREL_ASSIGN_OR_RETURN(auto out_axes, n.attr_ints("scan_output_axes", std::vector<int64_t>{}));
    KESTREL_ASSIGN_OR_RETURN(auto out_dirs, n.attr_ints("scan_output_directions", std::vector<int64_t>{}));
    size_t n_state = n.num_inputs() - static_cast<size_t>(m);
    size_t n_scan_out = n.num_outputs() - n_state;
    if ((!in_axes.empty() && in_axes.size() != static_cast<size_t>(m)) ||
        (!in_dirs.empty() && in_dirs.size() != static_cast<size_t>(m)) ||
        (!out_axes.empty() && out_axes.size() != n_scan_out) || (!out_dirs.empty() && out_dirs.size() != n_scan_out))
      return info.fail("scan axes/directions attributes have the wrong length");
    KESTREL_ASSIGN_OR_RETURN(int64_t batched, n.attr_int("kestrel_batched_scan8", 0));
    return std::unique_ptr<OpKernel>(new ScanKernel(n, std::move(b), m, std::move(in_axes), std::move(in_dirs),
                                                    std::move(out_axes), std::move(out_dirs), batched != 0));
  });
}

}  // namespace kestrel::runtime

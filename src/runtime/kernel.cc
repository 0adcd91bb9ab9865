// Kernel registry, kernel creation, and one-off node evaluation with reference kernels.
#include "runtime/kernel.h"

#include "core/str_util.h"
#include "ir/op_schema.h"

namespace kestrel::runtime {

using core::str_cat;

Result<int64_t> KernelContext::int_scalar_input(size_t i, const char* what) const {
  const Tensor& t = input(i);
  if (t.num_elements() != 1 || !core::is_integer(t.dtype()))
    return core::invalid_argument(str_cat(what, " must be one integer, got ", t.type_string()));
  return t.element_as_int64(0);
}

Status KernelContext::allocate_output(size_t i, core::Dims dims) {
  auto t = Tensor::allocate(out_dtypes_[i], std::move(dims));
  if (!t.is_ok()) return t.status();
  *outputs_[i] = std::move(t).value();
  return Status::ok();
}

const KernelRegistry& KernelRegistry::global() {
  static const KernelRegistry r = [] {
    KernelRegistry reg;
    register_all_kernels(reg);
    return reg;
  }();
  return r;
}

void KernelRegistry::add(const std::string& domain, const std::string& op, KernelFactory f) {
  factories_[{domain, op}] = std::move(f);
}

const KernelFactory* KernelRegistry::find(const std::string& domain, const std::string& op) const {
  auto it = factories_.find({domain, op});
  return it == factories_.end() ? nullptr : &it->second;
}

Result<std::unique_ptr<OpKernel>> create_kernel(const KernelCreateInfo& info) {
  const KernelFactory* f = KernelRegistry::global().find(info.node.domain(), info.node.op_type());
  if (!f) return core::unsupported(str_cat(info.node.describe(), ": no kernel for this op"));
  return (*f)(info);
}

Result<std::vector<Tensor>> evaluate_node(const ir::Node& node, std::span<const Tensor* const> inputs) {
  const ir::OpSchema* schema = ir::OpRegistry::global().find(node.domain(), node.op_type());
  if (!schema) return core::unsupported(str_cat(node.describe(), ": unknown op"));
  std::vector<ir::ValueType> types(inputs.size());
  std::vector<const ir::ValueType*> type_ptrs(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    types[i] = ir::ValueType{inputs[i]->dtype(), ir::Shape(inputs[i]->dims())};
    type_ptrs[i] = &types[i];
  }
  // Values with null data are shape-only placeholders (see OpSchema::shape_only_inputs).
  std::vector<const Tensor*> values(inputs.begin(), inputs.end());
  for (auto& v : values)
    if (v && v->raw_data() == nullptr && v->num_elements() > 0) v = nullptr;
  ir::InferContext ictx(node, type_ptrs, values);
  KESTREL_RETURN_IF_ERROR(ir::run_inference(*schema, ictx));

  KernelOptions opts;
  opts.reference_only = true;
  KernelCreateInfo info{node, type_ptrs, values, {}, opts};
  for (const auto& t : ictx.outputs()) info.output_dtypes.push_back(t.dtype);
  KESTREL_ASSIGN_OR_RETURN(auto kernel, create_kernel(info));

  std::vector<Tensor> outs(node.num_outputs());
  for (size_t i = 0; i < outs.size(); ++i) {
    const ir::ValueType& t = ictx.outputs()[i];
    if (t.shape.fully_known()) {
      KESTREL_ASSIGN_OR_RETURN(outs[i], Tensor::allocate(t.dtype, t.shape.concrete()));
    }
  }
  std::vector<Tensor*> out_ptrs;
  for (auto& o : outs) out_ptrs.push_back(&o);
  KernelContext kctx(inputs, out_ptrs, info.output_dtypes, nullptr);
  KESTREL_RETURN_IF_ERROR(kernel->run(kctx).with_context(node.describe()));
  return outs;
}

}  // namespace kestrel::runtime

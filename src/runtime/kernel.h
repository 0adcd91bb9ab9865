// The kernel interface the executor runs: a bound op instance created once per node at session
// creation, run many times. Kernels get tensors, never the graph; the factories in
// src/runtime/ops/<family>.cc turn a node's attributes into kernel parameters.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/cpu_features.h"
#include "core/status.h"
#include "core/str_util.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "ir/graph.h"

namespace kestrel::runtime {

using core::Result;
using core::Status;
using core::Tensor;

// What a kernel sees when it runs.
class KernelContext {
 public:
  KernelContext(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
                std::span<const core::DType> out_dtypes, core::ThreadPool* pool,
                std::span<const Tensor* const> implicit_inputs = {})
      : inputs_(inputs), outputs_(outputs), out_dtypes_(out_dtypes), pool_(pool), implicit_(implicit_inputs) {}

  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  // Requires has_input(i).
  const Tensor& input(size_t i) const { return *inputs_[i]; }
  const Tensor* input_or_null(size_t i) const { return has_input(i) ? inputs_[i] : nullptr; }
  // Input i as one integer (a 0-D or one-element integer tensor: TopK's K, an axis, a length), else an error
  // naming `what`. Requires has_input(i).
  Result<int64_t> int_scalar_input(size_t i, const char* what) const;

  size_t num_outputs() const { return outputs_.size(); }
  // Pre-allocated by the executor with the inferred shape, unless the op's output shape depends on
  // its input data; then the kernel calls allocate_output first.
  Tensor& output(size_t i) { return *outputs_[i]; }
  Status allocate_output(size_t i, core::Dims dims);

  core::ThreadPool* pool() const { return pool_; }

  // Outer-scope values used by the node's subgraphs (If/Loop/Scan), in the order of
  // ir::Node::implicit_inputs().
  std::span<const Tensor* const> implicit_inputs() const { return implicit_; }

 private:
  std::span<const Tensor* const> inputs_;
  std::span<Tensor* const> outputs_;
  std::span<const core::DType> out_dtypes_;
  core::ThreadPool* pool_;
  std::span<const Tensor* const> implicit_;
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual Status run(KernelContext& ctx) = 0;
  // Which implementation this is, for profiles: "reference", "sgemm.avx512", ...
  virtual const char* impl_name() const { return "reference"; }
};

// A kernel from a callable: the common case for ops whose parameters fit in a lambda capture.
template <class F>
class FnKernel final : public OpKernel {
 public:
  FnKernel(F f, const char* name) : f_(std::move(f)), name_(name) {}
  Status run(KernelContext& ctx) override { return f_(ctx); }
  const char* impl_name() const override { return name_; }

 private:
  F f_;
  const char* name_;
};
template <class F>
std::unique_ptr<OpKernel> make_kernel(F f, const char* name = "reference") {
  return std::make_unique<FnKernel<F>>(std::move(f), name);
}

struct KernelOptions {
  core::Isa isa = core::Isa::kScalar;
  bool reference_only = false;  // use reference kernels everywhere (tests, constant folding)
  int threads = 1;              // the session's thread count (a kernel may pick its path by it)
  // Float 1x1 convs may round their operands to bf16 and sum in f32, and convs compute a fused SiLU to bf16's
  // precision (FastConv::enable_bf16): the model's kestrel.float_math metadata or SessionOptions::float_math says
  // "bf16".
  bool bf16 = false;
};

// What a factory sees when it creates a kernel for a node.
struct KernelCreateInfo {
  const ir::Node& node;
  std::vector<const ir::ValueType*> input_types;      // inferred at load, may be symbolic; null if absent
  std::vector<const Tensor*> constant_inputs;         // data of constant inputs (weights), else null
  std::vector<core::DType> output_dtypes;
  KernelOptions options;

  template <class... Args>
  Status fail(const Args&... args) const {
    return core::invalid_model(node.describe() + ": " + core::str_cat(args...));
  }
  template <class... Args>
  Status unsupported(const Args&... args) const {
    return core::unsupported(node.describe() + ": " + core::str_cat(args...));
  }
};

using KernelFactory = std::function<Result<std::unique_ptr<OpKernel>>(const KernelCreateInfo&)>;

class KernelRegistry {
 public:
  static const KernelRegistry& global();
  void add(const std::string& domain, const std::string& op, KernelFactory f);
  void add(const std::string& op, KernelFactory f) { add("", op, std::move(f)); }
  const KernelFactory* find(const std::string& domain, const std::string& op) const;

 private:
  std::map<std::pair<std::string, std::string>, KernelFactory> factories_;
};

// Creates the kernel for a node (error names the node if the op has no kernel).
Result<std::unique_ptr<OpKernel>> create_kernel(const KernelCreateInfo& info);

// Runs one node once on the given inputs with reference kernels (constant folding, shape
// propagation). Outputs are newly allocated.
Result<std::vector<Tensor>> evaluate_node(const ir::Node& node, std::span<const Tensor* const> inputs);

// Registration of kernel families; each lives in src/runtime/ops/<family>.cc.
void register_all_kernels(KernelRegistry& r);

}  // namespace kestrel::runtime

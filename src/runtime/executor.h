// Executor: runs one graph. At plan time (first run, or when input shapes change) it infers every
// shape, computes what depends only on constants and shapes, and places the remaining
// activations in one arena by lifetime; run() then walks a flat list of bound kernels.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "ir/graph.h"
#include "runtime/kernel.h"

namespace kestrel::runtime {

struct ExecutorOptions {
  KernelOptions kernel;
  core::ThreadPool* pool = nullptr;
};

struct PlanStats {
  size_t arena_bytes = 0;            // planned activation memory
  size_t sum_activation_bytes = 0;   // what it would take without reuse
  int folded_steps = 0;              // nodes computed at plan time (constants, shape arithmetic)
  int dynamic_steps = 0;             // nodes whose shapes are only known at run time
  int static_steps = 0;
};

class Executor {
 public:
  // The graph must outlive the executor and must have been through ir::infer_graph.
  static Result<std::unique_ptr<Executor>> create(const ir::Graph& graph, const ExecutorOptions& opts);
  ~Executor();

  // inputs: one per graph input, in order. outputs: resized to the graph outputs, in order.
  // Outer-scope values (for subgraphs) are read through `outer` by name when given.
  Status run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs);

  // Values an enclosing executor provides to a subgraph (by name). Set before run().
  void bind_outer(const std::string& name, const Tensor* t);
  const std::vector<std::string>& outer_names() const { return outer_names_; }

  const PlanStats& plan_stats() const { return stats_; }
  // Subgraph executors run on their parent's pool, which is only known at run time.
  void set_pool(core::ThreadPool* pool) { opts_.pool = pool; }
  const ir::Graph& graph() const { return graph_; }

  // Per-step profile hook (op type, node name, impl, milliseconds); null to disable.
  using ProfileFn = std::function<void(const ir::Node&, const char* impl, double ms)>;
  void set_profiler(ProfileFn fn) { profiler_ = std::move(fn); }

 private:
  struct Slot;
  struct Step;
  Executor(const ir::Graph& g, const ExecutorOptions& opts);
  Status build();
  Status plan(std::span<const Tensor* const> inputs);
  Status run_step(Step& s);
  Status infer_step(const Step& s, std::vector<ir::ValueType>& out_types, bool use_values);

  const ir::Graph& graph_;
  ExecutorOptions opts_;
  std::vector<Slot> slots_;
  std::vector<Step> steps_;
  std::vector<int> input_slots_, output_slots_;
  std::vector<std::string> outer_names_;
  std::vector<int> outer_slots_;
  bool planned_ = false;
  std::vector<core::Dims> planned_dims_;
  core::AlignedPtr arena_;
  size_t arena_capacity_ = 0;
  PlanStats stats_;
  ProfileFn profiler_;
};

}  // namespace kestrel::runtime

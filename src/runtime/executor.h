// Executor: runs one graph. At plan time (first run, or when input shapes change) it infers every
// shape, computes what depends only on constants and shapes, and places the remaining
// activations in one arena by lifetime; run() then walks a flat list of bound kernels.
#pragma once

#include <chrono>
#include <functional>
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
  int view_steps = 0;  // of the static ones: outputs placed on their input's bytes, not run (plan_views)
};

class Executor {
 public:
  // The graph must outlive the executor and must have been through ir::infer_graph.
  static Result<std::unique_ptr<Executor>> create(const ir::Graph& graph, const ExecutorOptions& opts);
  ~Executor();

  // inputs: one per graph input, in order. outputs: resized to the graph outputs, in order.
  // Outer-scope values (for subgraphs) are read through `outer` by name when given.
  // Kernels read the caller's input tensors and write into output tensors that already have the
  // planned dtype and shape, in place: for static shapes, once planned, run() allocates nothing.
  Status run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs);
  // Plans for these input shapes now (run() does it when they change); nothing is run.
  Status prepare(std::span<const Tensor* const> inputs);

  // Values an enclosing executor provides to a subgraph (by name). Set before run().
  void bind_outer(const std::string& name, const Tensor* t);
  const std::vector<std::string>& outer_names() const { return outer_names_; }

  const PlanStats& plan_stats() const { return stats_; }
  // Subgraph executors run on their parent's pool, which is only known at run time.
  void set_pool(core::ThreadPool* pool) { opts_.pool = pool; }
  const ir::Graph& graph() const { return graph_; }

  // One kernel call, as seen by the profiler. Shapes are those of this call (inputs may be null
  // where an optional input is absent).
  struct ProfileEvent {
    const ir::Node& node;
    const char* impl;
    std::chrono::steady_clock::time_point start, end;
    std::span<const Tensor* const> inputs;
    std::span<Tensor* const> outputs;
  };
  // Per-step profile hook, called after every kernel run (not for steps computed at plan time);
  // empty to disable, which costs one test per step. Subgraph steps (If/Loop bodies) are part of
  // their node's time.
  using ProfileFn = std::function<void(const ProfileEvent&)>;
  void set_profiler(ProfileFn fn) { profiler_ = std::move(fn); }

 private:
  struct Slot;
  struct Step;
  Executor(const ir::Graph& g, const ExecutorOptions& opts);
  Status build();
  Status plan(std::span<const Tensor* const> inputs);
  Status run_step(Step& s);
  void plan_concat_in_place();
  void plan_views();
  // Byte offsets into input 0 at which each output of `s` lies if it is a view of it (same bytes, in order), else
  // empty: Reshape, Flatten, Squeeze, Unsqueeze, Identity; Slice and Split of a contiguous range.
  std::vector<size_t> view_offsets(const Step& s) const;
  Status infer_step(const Step& s, std::vector<ir::ValueType>& out_types, bool use_values);
  Status check_and_plan(std::span<const Tensor* const> inputs);
  // Points every kernel argument that refers to slot `id` at a caller's tensor (`write` for the
  // producing step, `read` for the consumers), or back at the slot's own tensor with nulls.
  void bind_slot(int id, const Tensor* read, Tensor* write);
  void unbind_caller_tensors();

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

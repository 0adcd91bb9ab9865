// Session: a loaded, verified, inferred graph with its kernels and thread pool, ready to run.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/cpu_features.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "ir/graph.h"
#include "runtime/executor.h"
#include "runtime/model_loader.h"

namespace kestrel::runtime {

// Graph metadata key naming the float math a model allows (SessionOptions::float_math).
inline constexpr const char* kFloatMathKey = "kestrel.float_math";

struct SessionOptions {
  int num_threads = 1;
  int opt_level = 2;            // for models optimized at load (ONNX)
  bool reference_only = false;  // run every op with its reference kernel
  std::string isa;              // "", "scalar", "avx2", "avx512": cap the instruction set
  // Float math of the convolutions: "" = what the model asks (its kestrel.float_math metadata, which
  // `kestrel quantize` sets for mixed models; absent = "f32"), "f32", or "bf16" (1x1 convs round weights and
  // inputs to bf16 and sum in f32 where the CPU has AVX512_BF16; relative error ~1e-3 instead of ~1e-6).
  std::string float_math;
};

struct IoInfo {
  std::string name;
  ir::ValueType type;
};

class Session {
 public:
  static Result<std::unique_ptr<Session>> open(const std::string& path, const SessionOptions& opts = {});
  static Result<std::unique_ptr<Session>> open_memory(const void* data, size_t size, const SessionOptions& opts = {});
  static Result<std::unique_ptr<Session>> from_model(LoadedModel model, const SessionOptions& opts = {});
  ~Session();

  const std::vector<IoInfo>& inputs() const { return inputs_; }
  const std::vector<IoInfo>& outputs() const { return outputs_; }

  // Inputs in the order of inputs(); outputs in the order of outputs(). An output tensor that
  // already has the right dtype and shape is written in place (no allocation).
  Status run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs);
  // Named inputs (any order, all required); returns outputs in the order of outputs().
  Status run(const std::vector<std::pair<std::string, Tensor>>& inputs, std::vector<Tensor>& outputs);
  // Checks the inputs and plans for their shapes without running (run() plans when shapes change).
  Status prepare(std::span<const Tensor* const> inputs);

  const ir::Graph& graph() const { return *model_.graph; }
  const PlanStats& plan_stats() const { return executor_->plan_stats(); }
  Executor& executor() { return *executor_; }
  const SessionOptions& options() const { return opts_; }
  // The instruction set the kernels were created for (the CPU's, capped by KESTREL_ISA and isa).
  core::Isa isa() const { return isa_; }

 private:
  Session() = default;
  Status init();
  Status init_graph();
  Status check_input(size_t i, const Tensor& t) const;
  Status check_inputs(std::span<const Tensor* const> inputs) const;
  void sync_thread_scratch();

  SessionOptions opts_;
  LoadedModel model_;
  std::unique_ptr<core::ThreadPool> pool_;
  std::unique_ptr<Executor> executor_;
  std::vector<IoInfo> inputs_, outputs_;
  core::Isa isa_ = core::Isa::kScalar;
  uint64_t scratch_epoch_ = 0;  // core::ScratchSlot::epoch() when the pool's scratch was last grown
};

// Verifies and infers a graph the way a Session does (used by tools that do not run it).
Status prepare_graph(ir::Graph& g);

}  // namespace kestrel::runtime

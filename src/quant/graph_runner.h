// Running a graph with some of its intermediate tensors exposed: a Session over a copy of the
// graph in which those tensors are extra graph outputs (the runtime itself is not changed).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "format/kst_writer.h"
#include "ir/graph.h"
#include "runtime/model_loader.h"
#include "runtime/session.h"

namespace kestrel::quant {

// A deep copy of g (through an in-memory .kst, so constants are copied once and stay aligned).
core::Result<runtime::LoadedModel> copy_graph(const ir::Graph& g);

// The .kst bytes of a copy of g after the standard -O2 pipeline (what `kestrel convert` writes).
core::Result<std::string> optimized_kst(const ir::Graph& g, const format::KstWriteOptions& opts = {});

// Runs a copy of g in a Session (which folds the dequantized weights of float layers at load:
// runtime::fold_weight_dequantize).
class TapRunner {
 public:
  // `taps`: names of graph inputs or node outputs of g; unknown names are an error.
  static core::Result<std::unique_ptr<TapRunner>> create(const ir::Graph& g, const std::vector<std::string>& taps,
                                                         int num_threads = 1);
  // Runs one sample (tensors in the graph's input order). `outputs` gets the model's outputs;
  // `taps` the tapped tensors in the order given to create().
  core::Status run(const std::vector<core::Tensor>& sample, std::vector<core::Tensor>& outputs,
                   std::vector<core::Tensor>& taps);
  size_t num_outputs() const { return num_outputs_; }
  const std::vector<runtime::IoInfo>& inputs() const { return session_->inputs(); }

 private:
  std::unique_ptr<runtime::Session> session_;
  size_t num_outputs_ = 0;
  // Per tap: >= 0 index into the session's outputs, or -1 - input index.
  std::vector<int64_t> where_;
  std::vector<core::Tensor> raw_;
};

}  // namespace kestrel::quant

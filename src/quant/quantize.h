// Post-training int8 quantization: rewrites a float graph into a standard ONNX QDQ graph
// (QuantizeLinear -> DequantizeLinear around the ops that have int8 kernels), measures each
// quantized tensor against the float one, and keeps the most sensitive layers in float on request.
//
// The contract with the lower-qdq pass (docs/quantization.md):
// - activations: per-tensor u8 asymmetric, Q(x, scale f32 scalar, zp u8 scalar) -> DQ(same), one
//   pair per tensor shared by all its consumers, on every input and output of a quantized op;
// - weights: DQ(W i8 initializer, scale f32 [Cout], zp i8 zeros [Cout], axis) with axis 0 for Conv
//   and Gemm transB=1, axis 1 for MatMul B [K, N] and Gemm transB=0; symmetric (zp 0) per channel,
//   or one scalar scale and zp with per_tensor;
// - bias: a float initializer, untouched;
// - a Relu or Clip right after a Conv / Gemm stays inside the pair (DQ -> Conv -> Relu -> Q).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/kst_writer.h"
#include "ir/graph.h"
#include "quant/calibrate.h"

namespace kestrel::quant {

// -O1 cleanups and folding plus fold_batch_norm and fold_conv_add_mul, then verify and infer:
// the float graph the quantizer works on (standard ONNX ops only).
core::Status prepare_for_quantization(ir::Graph& g);

struct QdqOptions {
  bool per_tensor = false;           // one weight scale per tensor instead of per output channel
  std::set<std::string> keep_float;  // node names left in float
};

// One quantized activation tensor: `name` in the float graph, `dq_name` the DequantizeLinear
// output that carries it in the QDQ graph; `node` produced it (empty for graph inputs).
struct QuantizedTensor {
  std::string name, dq_name, node, op;
  float scale = 1;
  int zero_point = 0;
};

// A quantized op: its activation inputs and its output (the fused Relu / Clip's, if any), as
// tensor names of the float graph.
struct QuantizedNode {
  std::string name, op, fused;  // fused: the Relu / Clip node kept inside the pair, or empty
  std::vector<std::string> inputs;
  std::string output;
};

struct QdqPlan {
  std::vector<QuantizedNode> nodes;  // graph order
  std::vector<std::string> tensors;  // activation tensors that get a Q -> DQ pair
};

// The nodes the quantizer would quantize in g (a prepared graph) and the tensors it needs ranges for.
QdqPlan plan_qdq(const ir::Graph& g, const QdqOptions& opts);

struct QdqResult {
  std::vector<QuantizedTensor> tensors;
  std::vector<QuantizedNode> nodes;
  int quantized_weights = 0;
};

// Rewrites g (prepared, types inferred) in place. Every planned tensor needs a range.
core::Result<QdqResult> insert_qdq(ir::Graph& g, const std::map<std::string, TensorRange>& ranges,
                                   const QdqOptions& opts);

// u8 asymmetric parameters of a range (the range is widened to contain 0).
void u8_params(TensorRange r, float* scale, int* zero_point);

struct LayerStat {
  std::string tensor, node, op;
  double cosine = 1, snr_db = 0;
};

// Cosine and SNR (dB) of each quantized tensor of the QDQ graph against the float one over the
// samples, in graph order.
core::Result<std::vector<LayerStat>> layer_report(const ir::Graph& float_graph, const ir::Graph& qdq_graph,
                                                  const std::vector<QuantizedTensor>& tensors,
                                                  const std::vector<Sample>& samples, int num_threads = 1,
                                                  const ProgressFn& progress = {});

// Agreement of two models' outputs over the samples (all outputs, all samples).
struct Agreement {
  double cosine = 1;      // over all output values of all samples
  double min_cosine = 1;  // worst sample
  double max_abs_err = 0;
  int64_t top1_match = 0, top1_total = 0;  // classifiers: first output [N, C] with C > 1
  int64_t samples = 0;
};
core::Result<Agreement> compare_models(const ir::Graph& reference, const ir::Graph& test,
                                       const std::vector<Sample>& samples, int num_threads = 1,
                                       const ProgressFn& progress = {});
// The outputs of a model for each sample (for comparisons that reuse the float outputs).
core::Result<std::vector<std::vector<core::Tensor>>> run_model(const ir::Graph& g, const std::vector<Sample>& samples,
                                                               int num_threads = 1);
Agreement compare_outputs(const std::vector<std::vector<core::Tensor>>& reference,
                          const std::vector<std::vector<core::Tensor>>& test);

struct PtqOptions {
  CalibOptions calib;
  QdqOptions qdq;
  double target_cosine = 0;  // > 0: automatic mode, keeps layers in float until the holdout cosine of the
                             // lowered int8 model (what `kestrel quantize` writes) reaches it
  int num_threads = 1;
  ProgressFn progress;
  // The int8 file stores the weights of the layers left in float as f16 (widened back at load);
  // the automatic mode measures the model with them.
  bool fp16_float_weights = true;
  // The int8 file lets its float layers' 1x1 convs compute in bf16 (metadata runtime::kFloatMathKey = "bf16";
  // FastConv::enable_bf16, on CPUs with AVX512_BF16); the automatic mode measures the model that way.
  bool bf16_float_layers = true;
};

// How the int8 .kst is written for these options (optimized_kst): f16 storage of the float layers'
// weights when opts.fp16_float_weights (format::KstWriteOptions::fp16_float_ops_only), their bf16 math
// when opts.bf16_float_layers.
format::KstWriteOptions int8_kst_options(const PtqOptions& opts);

// What keeping `float_set` (node names) in float costs against int8, in multiply-adds: the float nodes' own
// (convolutions and matrix products: output elements x reduction length; other ops: output elements) plus, for every
// tensor a quantized node reads or writes whose producer and readers are not all on the same side (int8: a node of
// `nodes` outside the set; float: everything else), kBoundaryMacs per element (its QuantizeLinear or
// DequantizeLinear, and the block fusion it breaks). The automatic mode compares sets that meet the target by it.
inline constexpr double kBoundaryMacs = 12;
double float_set_cost(const ir::Graph& prepared, const std::vector<QuantizedNode>& nodes,
                      const std::set<std::string>& float_set);

struct PtqResult {
  std::unique_ptr<ir::Graph> graph;  // the QDQ graph (plain ONNX, not yet optimized at -O2)
  QdqResult qdq;
  std::vector<LayerStat> layers;        // per-layer report of the final graph on the calibration samples
  // Nodes the automatic mode kept in float: most sensitive first, or in graph order when a prefix of the graph's
  // quantizable nodes met the target at a lower float_set_cost.
  std::vector<std::string> auto_float;
  std::map<std::string, TensorRange> ranges;
  double holdout_cosine = -2;  // automatic mode: final holdout cosine (-2: not measured)
};

// Calibrates `prepared` (see prepare_for_quantization) on `calib`, inserts QDQ and builds the
// per-layer report; with a target cosine, measures on `holdout` and keeps layers in float.
core::Result<PtqResult> quantize_ptq(const ir::Graph& prepared, const std::vector<Sample>& calib,
                                     const std::vector<Sample>& holdout, const PtqOptions& opts);

}  // namespace kestrel::quant

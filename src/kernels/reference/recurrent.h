// Reference kernels of the ONNX recurrent ops RNN, GRU and LSTM (one layer, any direction,
// sequence lengths, initial states, peepholes, clip, per-gate activations, both layouts).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

enum class RnnCell { kRnn, kGru, kLstm };
enum class RnnDirection { kForward, kReverse, kBidirectional };

// The activation functions the ONNX recurrent ops accept (names are case-insensitive there).
enum class RnnActivationKind {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,           // alpha * x + beta
  kLeakyRelu,        // x >= 0 ? x : alpha * x
  kThresholdedRelu,  // x >= alpha ? x : 0
  kScaledTanh,       // alpha * tanh(beta * x)
  kHardSigmoid,      // min(max(alpha * x + beta, 0), 1)
  kElu,              // x >= 0 ? x : alpha * (exp(x) - 1)
  kSoftsign,         // x / (1 + |x|)
  kSoftplus,         // log(1 + exp(x))
};

struct RnnActivation {
  RnnActivationKind kind = RnnActivationKind::kTanh;
  float alpha = 0.f;
  float beta = 0.f;
};

// Name lookup ("LeakyRelu", "leakyrelu", ...); nullopt if the name is not an RNN activation.
std::optional<RnnActivationKind> rnn_activation_from_name(std::string_view name);
bool rnn_activation_takes_alpha(RnnActivationKind k);
bool rnn_activation_takes_beta(RnnActivationKind k);
// The value used when activation_alpha / activation_beta run out.
float rnn_activation_default_alpha(RnnActivationKind k);
float rnn_activation_default_beta(RnnActivationKind k);
double rnn_activation_apply(const RnnActivation& a, double x);

// Gates per direction (RNN 1, GRU 3, LSTM 4) and activations per direction (1, 2, 3).
int64_t rnn_num_gates(RnnCell cell);
int64_t rnn_num_activations(RnnCell cell);
inline int64_t rnn_num_directions(RnnDirection d) {
  return d == RnnDirection::kBidirectional ? 2 : 1;
}

struct RecurrentParams {
  RnnCell cell = RnnCell::kLstm;
  RnnDirection direction = RnnDirection::kForward;
  int64_t hidden_size = 0;  // 0: taken from R's last dim
  // rnn_num_activations(cell) per direction, forward's first: RNN (f), GRU (f, g), LSTM (f, g, h).
  std::vector<RnnActivation> activations;
  std::optional<float> clip;         // gate pre-activations are clamped to [-clip, clip]
  bool input_forget = false;         // LSTM: forget gate = 1 - input gate
  bool linear_before_reset = false;  // GRU: r * (H Rh^T + Rbh) instead of (r * H) Rh^T + Rbh
  int layout = 0;                    // 0: [seq, batch, ...]; 1: [batch, seq, ...]
};

// Default activations per direction, as in the ONNX spec.
std::vector<RnnActivation> rnn_default_activations(RnnCell cell);

// Inputs in ONNX order; absent optional inputs are null (P only exists for LSTM, initial_c too).
struct RecurrentInputs {
  const Tensor* x = nullptr;
  const Tensor* w = nullptr;
  const Tensor* r = nullptr;
  const Tensor* b = nullptr;
  const Tensor* sequence_lens = nullptr;
  const Tensor* initial_h = nullptr;
  const Tensor* initial_c = nullptr;
  const Tensor* p = nullptr;
};

// Output dims for the given inputs (after validating them): Y, Y_h, Y_c (Y_c only for LSTM).
struct RecurrentShapes {
  int64_t seq_length = 0, batch = 0, input_size = 0, hidden = 0, num_directions = 1;
  core::Dims y, y_h, y_c;
};
core::Result<RecurrentShapes> recurrent_shapes(const RecurrentParams& p, const RecurrentInputs& in);

// Outputs wanted by the caller; null ones are not written. Present outputs must have the dims of
// recurrent_shapes() and the dtype of X. Steps past a sequence's length are zero in Y; Y_h and
// Y_c hold the state after the last valid step (the initial state for a length-0 sequence).
struct RecurrentOutputs {
  Tensor* y = nullptr;
  Tensor* y_h = nullptr;
  Tensor* y_c = nullptr;
};

// Runs the op. f32 and f64 (math in double); sequence_lens int32 or int64 in [0, seq_length].
Status recurrent(const RecurrentParams& p, const RecurrentInputs& in, const RecurrentOutputs& out);

}  // namespace kestrel::kernels::ref

// Reference RNN / GRU / LSTM: one batch row and one direction at a time, gates accumulated in
// double. Plain loops; the oracle for any fast recurrent kernel.
#include "kernels/reference/recurrent.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

#include "core/str_util.h"

namespace kestrel::kernels::ref {

using core::Dims;
using core::DType;
using core::str_cat;

namespace {

struct NamedActivation {
  const char* name;  // lower case
  RnnActivationKind kind;
  bool alpha, beta;
  float default_alpha, default_beta;
};

// Defaults follow the standalone ONNX ops of the same name (Affine and ScaledTanh, which have none,
// default to the identity scale: alpha 1, beta 0 / 1).
constexpr NamedActivation kActivations[] = {
    {"relu", RnnActivationKind::kRelu, false, false, 0.f, 0.f},
    {"tanh", RnnActivationKind::kTanh, false, false, 0.f, 0.f},
    {"sigmoid", RnnActivationKind::kSigmoid, false, false, 0.f, 0.f},
    {"affine", RnnActivationKind::kAffine, true, true, 1.f, 0.f},
    {"leakyrelu", RnnActivationKind::kLeakyRelu, true, false, 0.01f, 0.f},
    {"thresholdedrelu", RnnActivationKind::kThresholdedRelu, true, false, 1.f, 0.f},
    {"scaledtanh", RnnActivationKind::kScaledTanh, true, true, 1.f, 1.f},
    {"hardsigmoid", RnnActivationKind::kHardSigmoid, true, true, 0.2f, 0.5f},
    {"elu", RnnActivationKind::kElu, true, false, 1.f, 0.f},
    {"softsign", RnnActivationKind::kSoftsign, false, false, 0.f, 0.f},
    {"softplus", RnnActivationKind::kSoftplus, false, false, 0.f, 0.f},
};

const NamedActivation& info(RnnActivationKind k) {
  for (const auto& a : kActivations)
    if (a.kind == k) return a;
  return kActivations[1];
}

double sigmoid(double x) {
  return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
}

// Element offsets for both layouts. Layout 0: X [S,B,I], Y [S,D,B,H], states [D,B,H].
// Layout 1: X [B,S,I], Y [B,S,D,H], states [B,D,H].
struct Indexer {
  int64_t S, B, I, H, D;
  bool batch_major;
  int64_t x(int64_t t, int64_t b) const { return (batch_major ? b * S + t : t * B + b) * I; }
  int64_t y(int64_t t, int64_t d, int64_t b) const {
    return (batch_major ? (b * S + t) * D + d : (t * D + d) * B + b) * H;
  }
  int64_t state(int64_t d, int64_t b) const { return (batch_major ? b * D + d : d * B + b) * H; }
};

Status check_dims(const Tensor* t, const Dims& want, const char* what) {
  if (t && t->dims() != want)
    return core::invalid_argument(
        str_cat(what, " has shape ", core::dims_to_string(t->dims()), ", expected ", core::dims_to_string(want)));
  return Status::ok();
}

template <class T>
Status run_typed(const RecurrentParams& p, const RecurrentInputs& in, const RecurrentOutputs& out,
                 const RecurrentShapes& s) {
  const int64_t S = s.seq_length, B = s.batch, I = s.input_size, H = s.hidden, D = s.num_directions;
  const int64_t G = rnn_num_gates(p.cell), A = rnn_num_activations(p.cell);
  const Indexer ix{S, B, I, H, D, p.layout == 1};
  const T* X = in.x->data<T>();
  const T* W = in.w->data<T>();
  const T* R = in.r->data<T>();
  const T* Bias = in.b ? in.b->data<T>() : nullptr;
  const T* H0 = in.initial_h ? in.initial_h->data<T>() : nullptr;
  const T* C0 = in.initial_c ? in.initial_c->data<T>() : nullptr;
  const T* P = in.p ? in.p->data<T>() : nullptr;
  T* Y = out.y ? out.y->data<T>() : nullptr;
  T* Yh = out.y_h ? out.y_h->data<T>() : nullptr;
  T* Yc = out.y_c ? out.y_c->data<T>() : nullptr;

  // Steps past a sequence's end are never written below: they stay zero.
  if (Y) std::fill(Y, Y + out.y->num_elements(), T(0));

  auto clip = [&](double v) {
    if (p.clip) v = std::clamp(v, -static_cast<double>(*p.clip), static_cast<double>(*p.clip));
    return v;
  };
  std::vector<double> h(static_cast<size_t>(H)), c(static_cast<size_t>(H)), h_new(static_cast<size_t>(H)),
      gates(static_cast<size_t>(G * H)), rh(static_cast<size_t>(H));

  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = p.direction == RnnDirection::kReverse || d == 1;
    const T* Wd = W + d * G * H * I;
    const T* Rd = R + d * G * H * H;
    const T* Wb = Bias ? Bias + d * 2 * G * H : nullptr;
    const T* Rb = Bias ? Wb + G * H : nullptr;
    const T* Pd = P ? P + d * 3 * H : nullptr;
    const RnnActivation* act = &p.activations[static_cast<size_t>(d * A)];
    for (int64_t b = 0; b < B; ++b) {
      int64_t len = in.sequence_lens ? in.sequence_lens->element_as_int64(b) : S;
      for (int64_t j = 0; j < H; ++j) {
        h[static_cast<size_t>(j)] = H0 ? static_cast<double>(H0[ix.state(d, b) + j]) : 0.0;
        c[static_cast<size_t>(j)] = C0 ? static_cast<double>(C0[ix.state(d, b) + j]) : 0.0;
      }
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = reverse ? len - 1 - step : step;
        const T* xt = X + ix.x(t, b);
        // gates[g*H + j] = X_t . W[g*H+j] + Wb (+ H_{t-1} . R[g*H+j] + Rb, except GRU's h gate
        // without linear_before_reset, whose recurrent term needs the reset gate first).
        for (int64_t g = 0; g < G; ++g) {
          const bool defer_r = p.cell == RnnCell::kGru && g == 2 && !p.linear_before_reset;
          for (int64_t j = 0; j < H; ++j) {
            const int64_t row = g * H + j;
            double acc = Wb ? static_cast<double>(Wb[row]) : 0.0;
            for (int64_t k = 0; k < I; ++k) acc += static_cast<double>(xt[k]) * static_cast<double>(Wd[row * I + k]);
            if (!defer_r) {
              double rec = Rb ? static_cast<double>(Rb[row]) : 0.0;
              for (int64_t k = 0; k < H; ++k) rec += h[static_cast<size_t>(k)] * static_cast<double>(Rd[row * H + k]);
              acc += rec;
            }
            gates[static_cast<size_t>(row)] = acc;
          }
        }
        auto gate = [&](int64_t g, int64_t j) -> double& { return gates[static_cast<size_t>(g * H + j)]; };
        switch (p.cell) {
          case RnnCell::kRnn:
            for (int64_t j = 0; j < H; ++j)
              h_new[static_cast<size_t>(j)] = rnn_activation_apply(act[0], clip(gate(0, j)));
            break;
          case RnnCell::kGru: {  // gates z, r, h
            for (int64_t j = 0; j < H; ++j) {
              gate(0, j) = rnn_activation_apply(act[0], clip(gate(0, j)));
              gate(1, j) = rnn_activation_apply(act[0], clip(gate(1, j)));
            }
            if (p.linear_before_reset) {
              // The h gate already holds X Wh + Wbh + (H Rh + Rbh); only the recurrent part is reset.
              for (int64_t j = 0; j < H; ++j) {
                const int64_t row = 2 * H + j;
                double rec = Rb ? static_cast<double>(Rb[row]) : 0.0;
                for (int64_t k = 0; k < H; ++k) rec += h[static_cast<size_t>(k)] * static_cast<double>(Rd[row * H + k]);
                double lin = gate(2, j) - rec;
                gate(2, j) = lin + gate(1, j) * rec;
              }
            } else {
              for (int64_t k = 0; k < H; ++k) rh[static_cast<size_t>(k)] = gate(1, k) * h[static_cast<size_t>(k)];
              for (int64_t j = 0; j < H; ++j) {
                const int64_t row = 2 * H + j;
                double rec = Rb ? static_cast<double>(Rb[row]) : 0.0;
                for (int64_t k = 0; k < H; ++k)
                  rec += rh[static_cast<size_t>(k)] * static_cast<double>(Rd[row * H + k]);
                gate(2, j) += rec;
              }
            }
            for (int64_t j = 0; j < H; ++j) {
              double hh = rnn_activation_apply(act[1], clip(gate(2, j)));
              double z = gate(0, j);
              h_new[static_cast<size_t>(j)] = (1.0 - z) * hh + z * h[static_cast<size_t>(j)];
            }
            break;
          }
          case RnnCell::kLstm: {  // gates i, o, f, c; peepholes i, o, f
            for (int64_t j = 0; j < H; ++j) {
              const double c_prev = c[static_cast<size_t>(j)];
              double gi = gate(0, j) + (Pd ? static_cast<double>(Pd[j]) * c_prev : 0.0);
              double i_t = rnn_activation_apply(act[0], clip(gi));
              double f_t;
              if (p.input_forget) {
                f_t = 1.0 - i_t;
              } else {
                double gf = gate(2, j) + (Pd ? static_cast<double>(Pd[2 * H + j]) * c_prev : 0.0);
                f_t = rnn_activation_apply(act[0], clip(gf));
              }
              double c_t = rnn_activation_apply(act[1], clip(gate(3, j)));
              double c_new = f_t * c_prev + i_t * c_t;
              double go = gate(1, j) + (Pd ? static_cast<double>(Pd[H + j]) * c_new : 0.0);
              double o_t = rnn_activation_apply(act[0], clip(go));
              c[static_cast<size_t>(j)] = c_new;
              h_new[static_cast<size_t>(j)] = o_t * rnn_activation_apply(act[2], c_new);
            }
            break;
          }
        }
        h.swap(h_new);
        if (Y)
          for (int64_t j = 0; j < H; ++j) Y[ix.y(t, d, b) + j] = static_cast<T>(h[static_cast<size_t>(j)]);
      }
      for (int64_t j = 0; j < H; ++j) {
        if (Yh) Yh[ix.state(d, b) + j] = static_cast<T>(h[static_cast<size_t>(j)]);
        if (Yc) Yc[ix.state(d, b) + j] = static_cast<T>(c[static_cast<size_t>(j)]);
      }
    }
  }
  return Status::ok();
}

}  // namespace

std::optional<RnnActivationKind> rnn_activation_from_name(std::string_view name) {
  std::string lower(name);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const auto& a : kActivations)
    if (lower == a.name) return a.kind;
  return std::nullopt;
}

bool rnn_activation_takes_alpha(RnnActivationKind k) {
  return info(k).alpha;
}
bool rnn_activation_takes_beta(RnnActivationKind k) {
  return info(k).beta;
}
float rnn_activation_default_alpha(RnnActivationKind k) {
  return info(k).default_alpha;
}
float rnn_activation_default_beta(RnnActivationKind k) {
  return info(k).default_beta;
}

double rnn_activation_apply(const RnnActivation& a, double x) {
  const double alpha = a.alpha, beta = a.beta;
  switch (a.kind) {
    case RnnActivationKind::kRelu:
      return x > 0 ? x : 0.0;
    case RnnActivationKind::kTanh:
      return std::tanh(x);
    case RnnActivationKind::kSigmoid:
      return sigmoid(x);
    case RnnActivationKind::kAffine:
      return alpha * x + beta;
    case RnnActivationKind::kLeakyRelu:
      return x >= 0 ? x : alpha * x;
    case RnnActivationKind::kThresholdedRelu:
      return x >= alpha ? x : 0.0;
    case RnnActivationKind::kScaledTanh:
      return alpha * std::tanh(beta * x);
    case RnnActivationKind::kHardSigmoid:
      return std::min(std::max(alpha * x + beta, 0.0), 1.0);
    case RnnActivationKind::kElu:
      return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
    case RnnActivationKind::kSoftsign:
      return x / (1.0 + std::fabs(x));
    case RnnActivationKind::kSoftplus:
      return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
  return x;
}

int64_t rnn_num_gates(RnnCell cell) {
  switch (cell) {
    case RnnCell::kRnn:
      return 1;
    case RnnCell::kGru:
      return 3;
    case RnnCell::kLstm:
      return 4;
  }
  return 1;
}

int64_t rnn_num_activations(RnnCell cell) {
  switch (cell) {
    case RnnCell::kRnn:
      return 1;
    case RnnCell::kGru:
      return 2;
    case RnnCell::kLstm:
      return 3;
  }
  return 1;
}

std::vector<RnnActivation> rnn_default_activations(RnnCell cell) {
  using K = RnnActivationKind;
  switch (cell) {
    case RnnCell::kRnn:
      return {{K::kTanh}};
    case RnnCell::kGru:
      return {{K::kSigmoid}, {K::kTanh}};
    case RnnCell::kLstm:
      return {{K::kSigmoid}, {K::kTanh}, {K::kTanh}};
  }
  return {};
}

core::Result<RecurrentShapes> recurrent_shapes(const RecurrentParams& p, const RecurrentInputs& in) {
  if (!in.x || !in.w || !in.r) return core::invalid_argument("X, W and R are required");
  if (p.layout != 0 && p.layout != 1) return core::invalid_argument(str_cat("layout must be 0 or 1, got ", p.layout));
  if (in.x->rank() != 3 || in.w->rank() != 3 || in.r->rank() != 3)
    return core::invalid_argument(str_cat("X, W and R must have rank 3, have shapes ",
                                          core::dims_to_string(in.x->dims()), ", ", core::dims_to_string(in.w->dims()),
                                          ", ", core::dims_to_string(in.r->dims())));
  DType dt = in.x->dtype();
  if (dt != DType::kF32 && dt != DType::kF64)
    return core::unsupported(str_cat("X must be f32 or f64, is ", core::dtype_name(dt)));
  for (const Tensor* t : {in.w, in.r, in.b, in.initial_h, in.initial_c, in.p})
    if (t && t->dtype() != dt)
      return core::invalid_argument(str_cat("W, R, B, initial states and P must have X's dtype ", core::dtype_name(dt),
                                            ", got ", core::dtype_name(t->dtype())));
  if (p.cell != RnnCell::kLstm && (in.initial_c || in.p))
    return core::invalid_argument("initial_c and P exist only for LSTM");

  RecurrentShapes s;
  s.num_directions = rnn_num_directions(p.direction);
  const int64_t D = s.num_directions, G = rnn_num_gates(p.cell);
  s.seq_length = in.x->dim(p.layout == 1 ? 1 : 0);
  s.batch = in.x->dim(p.layout == 1 ? 0 : 1);
  s.input_size = in.x->dim(2);
  s.hidden = p.hidden_size > 0 ? p.hidden_size : in.r->dim(2);
  const int64_t S = s.seq_length, B = s.batch, I = s.input_size, H = s.hidden;
  if (H <= 0 || H > core::kMaxElements)
    return core::invalid_argument(str_cat("hidden_size must be positive (and sane), got ", H));
  if (static_cast<int64_t>(p.activations.size()) != D * rnn_num_activations(p.cell))
    return core::invalid_argument(
        str_cat("expected ", D * rnn_num_activations(p.cell), " activations, got ", p.activations.size()));
  KESTREL_RETURN_IF_ERROR(check_dims(in.w, {D, G * H, I}, "W"));
  KESTREL_RETURN_IF_ERROR(check_dims(in.r, {D, G * H, H}, "R"));
  KESTREL_RETURN_IF_ERROR(check_dims(in.b, {D, 2 * G * H}, "B"));
  const Dims state = p.layout == 1 ? Dims{B, D, H} : Dims{D, B, H};
  KESTREL_RETURN_IF_ERROR(check_dims(in.initial_h, state, "initial_h"));
  KESTREL_RETURN_IF_ERROR(check_dims(in.initial_c, state, "initial_c"));
  KESTREL_RETURN_IF_ERROR(check_dims(in.p, {D, 3 * H}, "P"));
  if (in.sequence_lens) {
    const Tensor& sl = *in.sequence_lens;
    if (sl.dtype() != DType::kI32 && sl.dtype() != DType::kI64)
      return core::invalid_argument(str_cat("sequence_lens must be int32, is ", core::dtype_name(sl.dtype())));
    KESTREL_RETURN_IF_ERROR(check_dims(&sl, {B}, "sequence_lens"));
    if (sl.raw_data()) {  // null data: a shape-only placeholder during planning
      for (int64_t b = 0; b < B; ++b) {
        int64_t len = sl.element_as_int64(b);
        if (len < 0 || len > S)
          return core::out_of_range(str_cat("sequence_lens[", b, "] = ", len, " is outside [0, seq_length = ", S, "]"));
      }
    }
  }
  s.y = p.layout == 1 ? Dims{B, S, D, H} : Dims{S, D, B, H};
  s.y_h = state;
  s.y_c = state;
  KESTREL_RETURN_IF_ERROR(core::checked_num_elements(s.y).status());
  return s;
}

Status recurrent(const RecurrentParams& p, const RecurrentInputs& in, const RecurrentOutputs& out) {
  KESTREL_ASSIGN_OR_RETURN(RecurrentShapes s, recurrent_shapes(p, in));
  if (out.y_c && p.cell != RnnCell::kLstm) return core::invalid_argument("Y_c exists only for LSTM");
  KESTREL_RETURN_IF_ERROR(check_dims(out.y, s.y, "Y"));
  KESTREL_RETURN_IF_ERROR(check_dims(out.y_h, s.y_h, "Y_h"));
  KESTREL_RETURN_IF_ERROR(check_dims(out.y_c, s.y_c, "Y_c"));
  for (const Tensor* t : {out.y, out.y_h, out.y_c})
    if (t && t->dtype() != in.x->dtype())
      return core::invalid_argument(
          str_cat("outputs must be ", core::dtype_name(in.x->dtype()), ", got ", core::dtype_name(t->dtype())));
  if (in.x->dtype() == DType::kF64) return run_typed<double>(p, in, out, s);
  return run_typed<float>(p, in, out, s);
}

}  // namespace kestrel::kernels::ref

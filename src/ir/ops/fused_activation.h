// The activations Kestrel's fused ops (FusedConv, FusedGemm, FusedMatMul, FusedPointwiseDepthwise) apply in
// their epilogues:
// attribute names, parameter counts and defaults, shared by schemas, passes and kernel bindings.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/status.h"
#include "ir/graph.h"

namespace kestrel::ir {

// The same list as the fast GEMM's epilogue (kernels/cpu/gemm), plus GELU's tanh form.
enum class FusedActivation : uint8_t {
  kNone,
  kRelu,         // max(x, 0)
  kClip,         // min(max(x, alpha), beta); activation_params = [min, max] (Relu6 = [0, 6])
  kLeakyRelu,    // x >= 0 ? x : alpha * x; activation_params = [alpha] (default 0.01)
  kSigmoid,      // 1 / (1 + exp(-x))
  kHardSigmoid,  // max(0, min(1, alpha * x + beta)); activation_params = [alpha, beta] (default 0.2, 0.5)
  kHardSwish,    // x * max(0, min(1, x / 6 + 0.5))
  kSilu,         // x * sigmoid(x)
  kGelu,         // 0.5 x (1 + erf(x / sqrt 2))
  kGeluTanh,     // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
  kTanh,
};

struct FusedActivationSpec {
  FusedActivation kind = FusedActivation::kNone;
  float alpha = 0.f;  // Clip min, LeakyRelu / HardSigmoid alpha
  float beta = 0.f;   // Clip max, HardSigmoid beta
};

// Attribute value of `activation` ("Relu", "Clip", ..., "Silu", "Gelu", "GeluTanh"); "" for kNone.
const char* fused_activation_name(FusedActivation a);
std::optional<FusedActivation> parse_fused_activation(std::string_view name);

// Reads the `activation` (string, absent = none) and `activation_params` (floats) attributes;
// errors name the node (unknown activation, wrong number of parameters, Clip min > max). `attr`
// replaces the name `activation` (then `<attr>_params` holds the parameters): the ops with several
// epilogues, kestrel.FusedPointwiseDepthwise's `activation1` / `activation1_params`, ...
core::Result<FusedActivationSpec> read_fused_activation(const Node& n, std::string_view attr = "activation");
// Writes them (removes both for kNone). Parameters are written only for the kinds that take them.
void set_fused_activation(Node& n, const FusedActivationSpec& spec, std::string_view attr = "activation");

}  // namespace kestrel::ir

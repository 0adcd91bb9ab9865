// Fused-activation attributes: names, parameters and their checks.
#include "ir/ops/fused_activation.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/str_util.h"

namespace kestrel::ir {

namespace {

struct ActivationInfo {
  FusedActivation kind;
  const char* name;
  int num_params;  // exact count when given; 0 = takes none
  float default_alpha, default_beta;
};

constexpr ActivationInfo kActivations[] = {
    {FusedActivation::kRelu, "Relu", 0, 0, 0},
    {FusedActivation::kClip, "Clip", 2, 0, 0},
    {FusedActivation::kLeakyRelu, "LeakyRelu", 1, 0.01f, 0},
    {FusedActivation::kSigmoid, "Sigmoid", 0, 0, 0},
    {FusedActivation::kHardSigmoid, "HardSigmoid", 2, 0.2f, 0.5f},
    {FusedActivation::kHardSwish, "HardSwish", 0, 0, 0},
    {FusedActivation::kSilu, "Silu", 0, 0, 0},
    {FusedActivation::kGelu, "Gelu", 0, 0, 0},
    {FusedActivation::kGeluTanh, "GeluTanh", 0, 0, 0},
    {FusedActivation::kTanh, "Tanh", 0, 0, 0},
};

const ActivationInfo* info_of(FusedActivation a) {
  for (const auto& i : kActivations)
    if (i.kind == a) return &i;
  return nullptr;
}

}  // namespace

const char* fused_activation_name(FusedActivation a) {
  const ActivationInfo* i = info_of(a);
  return i ? i->name : "";
}

std::optional<FusedActivation> parse_fused_activation(std::string_view name) {
  if (name.empty()) return FusedActivation::kNone;
  for (const auto& i : kActivations)
    if (name == i.name) return i.kind;
  return std::nullopt;
}

core::Result<FusedActivationSpec> read_fused_activation(const Node& n) {
  FusedActivationSpec s;
  KESTREL_ASSIGN_OR_RETURN(std::string name, n.attr_string("activation", std::string()));
  KESTREL_ASSIGN_OR_RETURN(std::vector<float> params, n.attr_floats("activation_params", std::vector<float>{}));
  std::optional<FusedActivation> kind = parse_fused_activation(name);
  if (!kind) {
    std::string known;
    for (const auto& i : kActivations) known += std::string(known.empty() ? "" : ", ") + i.name;
    return core::invalid_model(
        core::str_cat(n.describe(), ": unknown activation '", name, "' (expected one of ", known, ")"));
  }
  s.kind = *kind;
  const ActivationInfo* info = info_of(s.kind);
  const size_t want = info ? static_cast<size_t>(info->num_params) : 0;
  // LeakyRelu and HardSigmoid may omit their parameters (ONNX defaults); Clip needs both bounds.
  const bool may_omit = info && info->num_params > 0 && s.kind != FusedActivation::kClip;
  if (params.size() != want && !(may_omit && params.empty()))
    return core::invalid_model(core::str_cat(n.describe(), ": activation '", name, "' takes ", want,
                                             " activation_params, got ", params.size()));
  if (info) {
    s.alpha = params.size() > 0 ? params[0] : info->default_alpha;
    s.beta = params.size() > 1 ? params[1] : info->default_beta;
  }
  if (s.kind == FusedActivation::kClip && (std::isnan(s.alpha) || std::isnan(s.beta) || s.alpha > s.beta))
    return core::invalid_model(
        core::str_cat(n.describe(), ": Clip activation needs min <= max, got [", s.alpha, ", ", s.beta, "]"));
  return s;
}

void set_fused_activation(Node& n, const FusedActivationSpec& spec) {
  n.remove_attr("activation");
  n.remove_attr("activation_params");
  const ActivationInfo* info = info_of(spec.kind);
  if (!info) return;
  n.set_attr("activation", std::string(info->name));
  if (info->num_params == 1) n.set_attr("activation_params", std::vector<float>{spec.alpha});
  if (info->num_params == 2) n.set_attr("activation_params", std::vector<float>{spec.alpha, spec.beta});
}

}  // namespace kestrel::ir

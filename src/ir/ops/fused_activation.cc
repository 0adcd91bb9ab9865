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

core::Result<FusedActivationSpec> read_fused_activation(const Node& n, std::string_view attr) {
  FusedActivationSpec s;
  const std::string name_attr(attr), params_attr = name_attr + "_params";
  KESTREL_ASSIGN_OR_RETURN(std::string name, n.attr_string(name_attr, std::string()));
  KESTREL_ASSIGN_OR_RETURN(std::vector<float> params, n.attr_floats(params_attr, std::vector<float>{}));
  std::optional<FusedActivation> kind = parse_fused_activation(name);
  if (!kind) {
    std::string known;
    for (const auto& i : kActivations) known += std::string(known.empty() ? "" : ", ") + i.name;
    return core::invalid_model(
        core::str_cat(n.describe(), ": unknown ", name_attr, " '", name, "' (expected one of ", known, ")"));
  }
  s.kind = *kind;
  const ActivationInfo* info = info_of(s.kind);
  const size_t want = info ? static_cast<size_t>(info->num_params) : 0;
  // LeakyRelu and HardSigmoid may omit their parameters (ONNX defaults); Clip needs both bounds.
  const bool may_omit = info && info->num_params > 0 && s.kind != FusedActivation::kClip;
  if (params.size() != want && !(may_omit && params.empty()))
    return core::invalid_model(core::str_cat(n.describe(), ": ", name_attr, " '", name, "' takes ", want, " ",
                                             params_attr, ", got ", params.size()));
  if (info) {
    s.alpha = params.size() > 0 ? params[0] : info->default_alpha;
    s.beta = params.size() > 1 ? params[1] : info->default_beta;
  }
  if (s.kind == FusedActivation::kClip && (std::isnan(s.alpha) || std::isnan(s.beta) || s.alpha > s.beta))
    return core::invalid_model(
        core::str_cat(n.describe(), ": Clip ", name_attr, " needs min <= max, got [", s.alpha, ", ", s.beta, "]"));
  return s;
}

void set_fused_activation(Node& n, const FusedActivationSpec& spec, std::string_view attr) {
  const std::string name_attr(attr), params_attr = name_attr + "_params";
  n.remove_attr(name_attr);
  n.remove_attr(params_attr);
  const ActivationInfo* info = info_of(spec.kind);
  if (!info) return;
  n.set_attr(name_attr, std::string(info->name));
  if (info->num_params == 1) n.set_attr(params_attr, std::vector<float>{spec.alpha});
  if (info->num_params == 2) n.set_attr(params_attr, std::vector<float>{spec.alpha, spec.beta});
}

}  // namespace kestrel::ir

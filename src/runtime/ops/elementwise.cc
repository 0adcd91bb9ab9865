// Kernel bindings for elementwise ops: node attributes -> reference kernel parameters.
#include <limits>
#include <map>
#include <string>

#include "kernels/cpu/eltwise/eltwise.h"
#include "kernels/reference/elementwise.h"
#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;
namespace cpu = kernels::cpu;

namespace {

// The fast elementwise kernels for this session's instruction set, or null for reference only.
const cpu::EltwiseTable* fast_table(const KernelCreateInfo& info) {
  return info.options.reference_only ? nullptr : cpu::eltwise_table(info.options.isa);
}

bool is_f32(const Tensor& t) { return t.dtype() == core::DType::kF32; }

// Pow by 1, 2 or 3 of a float32 base (LayerNorm's x^2, tanh-GELU's x^3) as a unary op; false when
// the exponent is anything else or broadcasting changes the shape.
bool pow_as_unary(const Tensor& a, const Tensor& b, const Tensor& y, cpu::EwUnaryParams* p) {
  if (!is_f32(a) || !is_f32(y) || b.num_elements() != 1 || a.dims() != y.dims()) return false;
  if (!core::is_float(b.dtype()) && !core::is_integer(b.dtype())) return false;
  double e = b.element_as_double(0);
  if (e == 1) p->op = cpu::EwUnary::kIdentity;
  else if (e == 2) p->op = cpu::EwUnary::kSquare;
  else if (e == 3) p->op = cpu::EwUnary::kCube;
  else return false;
  return true;
}

const std::map<std::string, ref::UnaryOp>& unary_ops() {
  static const std::map<std::string, ref::UnaryOp> m = {
      {"Abs", ref::UnaryOp::kAbs},           {"Neg", ref::UnaryOp::kNeg},
      {"Sqrt", ref::UnaryOp::kSqrt},         {"Exp", ref::UnaryOp::kExp},
      {"Log", ref::UnaryOp::kLog},           {"Erf", ref::UnaryOp::kErf},
      {"Tanh", ref::UnaryOp::kTanh},         {"Sigmoid", ref::UnaryOp::kSigmoid},
      {"Relu", ref::UnaryOp::kRelu},         {"Floor", ref::UnaryOp::kFloor},
      {"Ceil", ref::UnaryOp::kCeil},         {"Reciprocal", ref::UnaryOp::kReciprocal},
      {"Sin", ref::UnaryOp::kSin},           {"Cos", ref::UnaryOp::kCos},
      {"Tan", ref::UnaryOp::kTan},           {"Asin", ref::UnaryOp::kAsin},
      {"Acos", ref::UnaryOp::kAcos},         {"Atan", ref::UnaryOp::kAtan},
      {"Sinh", ref::UnaryOp::kSinh},         {"Cosh", ref::UnaryOp::kCosh},
      {"Asinh", ref::UnaryOp::kAsinh},       {"Acosh", ref::UnaryOp::kAcosh},
      {"Atanh", ref::UnaryOp::kAtanh},       {"Sign", ref::UnaryOp::kSign},
      {"Round", ref::UnaryOp::kRound},       {"Not", ref::UnaryOp::kNot},
      {"Softplus", ref::UnaryOp::kSoftplus}, {"Softsign", ref::UnaryOp::kSoftsign},
      {"Identity", ref::UnaryOp::kIdentity}, {"LeakyRelu", ref::UnaryOp::kLeakyRelu},
      {"Elu", ref::UnaryOp::kElu},           {"Selu", ref::UnaryOp::kSelu},
      {"Celu", ref::UnaryOp::kCelu},         {"HardSigmoid", ref::UnaryOp::kHardSigmoid},
      {"HardSwish", ref::UnaryOp::kHardSwish}, {"ThresholdedRelu", ref::UnaryOp::kThresholdedRelu},
      {"Mish", ref::UnaryOp::kMish},         {"IsNaN", ref::UnaryOp::kIsNaN},
      {"BitwiseNot", ref::UnaryOp::kBitwiseNot},
  };
  return m;
}

// ONNX defaults for the parametrized activations.
Result<ref::UnaryParams> unary_params(const KernelCreateInfo& info, ref::UnaryOp op) {
  const ir::Node& n = info.node;
  ref::UnaryParams p;
  p.op = op;
  struct Defaults {
    ref::UnaryOp op;
    float alpha, beta, gamma;
  };
  static constexpr Defaults kDefaults[] = {
      {ref::UnaryOp::kLeakyRelu, 0.01f, 0, 0},
      {ref::UnaryOp::kElu, 1.0f, 0, 0},
      {ref::UnaryOp::kCelu, 1.0f, 0, 0},
      {ref::UnaryOp::kSelu, 1.67326319217681884765625f, 0, 1.05070102214813232421875f},
      {ref::UnaryOp::kHardSigmoid, 0.2f, 0.5f, 0},
      {ref::UnaryOp::kThresholdedRelu, 1.0f, 0, 0},
  };
  for (const auto& d : kDefaults) {
    if (d.op != op) continue;
    KESTREL_ASSIGN_OR_RETURN(p.alpha, n.attr_float("alpha", d.alpha));
    KESTREL_ASSIGN_OR_RETURN(p.beta, n.attr_float("beta", d.beta));
    KESTREL_ASSIGN_OR_RETURN(p.gamma, n.attr_float("gamma", d.gamma));
  }
  return p;
}

const std::map<std::string, ref::BinaryOp>& binary_ops() {
  static const std::map<std::string, ref::BinaryOp> m = {
      {"Add", ref::BinaryOp::kAdd},       {"Sub", ref::BinaryOp::kSub},
      {"Mul", ref::BinaryOp::kMul},       {"Div", ref::BinaryOp::kDiv},
      {"Pow", ref::BinaryOp::kPow},       {"Equal", ref::BinaryOp::kEqual},
      {"Less", ref::BinaryOp::kLess},     {"LessOrEqual", ref::BinaryOp::kLessOrEqual},
      {"Greater", ref::BinaryOp::kGreater}, {"GreaterOrEqual", ref::BinaryOp::kGreaterOrEqual},
      {"And", ref::BinaryOp::kAnd},       {"Or", ref::BinaryOp::kOr},
      {"Xor", ref::BinaryOp::kXor},       {"PRelu", ref::BinaryOp::kPRelu},
      {"BitwiseAnd", ref::BinaryOp::kBitwiseAnd}, {"BitwiseOr", ref::BinaryOp::kBitwiseOr},
      {"BitwiseXor", ref::BinaryOp::kBitwiseXor},
  };
  return m;
}

}  // namespace

void register_elementwise_kernels(KernelRegistry& r) {
  for (const auto& [name, op] : unary_ops()) {
    r.add(name, [op = op](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
      KESTREL_ASSIGN_OR_RETURN(ref::UnaryParams p, unary_params(info, op));
      const cpu::EltwiseTable* t = fast_table(info);
      cpu::EwUnaryParams fp;
      if (t && cpu::fast_unary_op(p, &fp)) {
        return make_kernel(
            [p, fp, t](KernelContext& ctx) -> Status {
              if (is_f32(ctx.input(0)) && is_f32(ctx.output(0)))
                return cpu::unary_f32(*t, fp, ctx.input(0), ctx.output(0), ctx.pool());
              return ref::unary(p, ctx.input(0), ctx.output(0));
            },
            t->name);
      }
      return make_kernel([p](KernelContext& ctx) { return ref::unary(p, ctx.input(0), ctx.output(0)); });
    });
  }
  r.add("Gelu", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    core::Result<std::string> approx = info.node.attr_string("approximate", std::string("none"));
    if (!approx.is_ok()) return approx.status();
    if (*approx != "none" && *approx != "tanh")
      return info.fail("approximate must be none or tanh, is '", *approx, "'");
    ref::UnaryParams p;
    p.op = *approx == "tanh" ? ref::UnaryOp::kGeluTanh : ref::UnaryOp::kGeluErf;
    return make_kernel([p](KernelContext& ctx) { return ref::unary(p, ctx.input(0), ctx.output(0)); });
  });
  r.add("IsInf", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t pos, info.node.attr_int("detect_positive", 1));
    KESTREL_ASSIGN_OR_RETURN(int64_t neg, info.node.attr_int("detect_negative", 1));
    ref::UnaryParams p;
    p.op = pos && neg ? ref::UnaryOp::kIsInf : pos ? ref::UnaryOp::kIsInfPos : ref::UnaryOp::kIsInfNeg;
    bool none = !pos && !neg;
    return make_kernel([p, none](KernelContext& ctx) -> Status {
      if (none) {
        for (int64_t i = 0; i < ctx.output(0).num_elements(); ++i) ctx.output(0).data<bool>()[i] = false;
        return Status::ok();
      }
      return ref::unary(p, ctx.input(0), ctx.output(0));
    });
  });
  for (const auto& [name, op] : binary_ops()) {
    r.add(name, [op = op](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
      const cpu::EltwiseTable* t = fast_table(info);
      cpu::EwBinary fop;
      if (t && cpu::fast_binary_op(op, &fop)) {
        return make_kernel(
            [op, fop, t](KernelContext& ctx) -> Status {
              const Tensor &a = ctx.input(0), &b = ctx.input(1);
              if (is_f32(a) && is_f32(b) && is_f32(ctx.output(0)))
                return cpu::binary_f32(*t, fop, a, b, ctx.output(0), ctx.pool());
              return ref::binary(op, a, b, ctx.output(0));
            },
            t->name);
      }
      if (t && op == ref::BinaryOp::kPow) {
        return make_kernel(
            [op, t](KernelContext& ctx) -> Status {
              cpu::EwUnaryParams up;
              if (pow_as_unary(ctx.input(0), ctx.input(1), ctx.output(0), &up))
                return cpu::unary_f32(*t, up, ctx.input(0), ctx.output(0), ctx.pool());
              return ref::binary(op, ctx.input(0), ctx.input(1), ctx.output(0));
            },
            t->name);
      }
      return make_kernel([op](KernelContext& ctx) { return ref::binary(op, ctx.input(0), ctx.input(1), ctx.output(0)); });
    });
  }
  r.add("Mod", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(int64_t fmod, info.node.attr_int("fmod", 0));
    bool is_float = info.input_types[0] && core::is_float(info.input_types[0]->dtype);
    if (is_float && !fmod) return info.fail("Mod on floats requires fmod=1");
    auto op = fmod ? ref::BinaryOp::kFMod : ref::BinaryOp::kMod;
    return make_kernel([op](KernelContext& ctx) { return ref::binary(op, ctx.input(0), ctx.input(1), ctx.output(0)); });
  });
  r.add("BitShift", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(std::string dir, info.node.attr_string("direction"));
    if (dir != "LEFT" && dir != "RIGHT") return info.fail("direction must be LEFT or RIGHT, got '", dir, "'");
    auto op = dir == "LEFT" ? ref::BinaryOp::kBitShiftLeft : ref::BinaryOp::kBitShiftRight;
    return make_kernel([op](KernelContext& ctx) { return ref::binary(op, ctx.input(0), ctx.input(1), ctx.output(0)); });
  });
  const std::pair<const char*, ref::VariadicOp> variadics[] = {
      {"Sum", ref::VariadicOp::kSum}, {"Mean", ref::VariadicOp::kMean},
      {"Max", ref::VariadicOp::kMax}, {"Min", ref::VariadicOp::kMin}};
  for (const auto& [name, op] : variadics) {
    r.add(name, [op = op](const KernelCreateInfo&) -> Result<std::unique_ptr<OpKernel>> {
      return make_kernel([op](KernelContext& ctx) -> Status {
        std::vector<const Tensor*> ins;
        for (size_t i = 0; i < ctx.num_inputs(); ++i)
          if (ctx.has_input(i)) ins.push_back(&ctx.input(i));
        return ref::variadic(op, ins, ctx.output(0));
      });
    });
  }
  r.add("Where", [](const KernelCreateInfo&) -> Result<std::unique_ptr<OpKernel>> {
    return make_kernel([](KernelContext& ctx) { return ref::where(ctx.input(0), ctx.input(1), ctx.input(2), ctx.output(0)); });
  });
  r.add("Clip", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    if (const cpu::EltwiseTable* t = fast_table(info)) {
      return make_kernel(
          [t](KernelContext& ctx) -> Status {
            const Tensor* lo = ctx.input_or_null(1);
            const Tensor* hi = ctx.input_or_null(2);
            bool fast = is_f32(ctx.input(0)) && is_f32(ctx.output(0)) &&
                        ctx.input(0).num_elements() == ctx.output(0).num_elements();
            for (const Tensor* bound : {lo, hi}) fast = fast && (!bound || (is_f32(*bound) && bound->num_elements() == 1));
            if (!fast) return ref::clip(ctx.input(0), lo, hi, ctx.output(0));
            cpu::EwUnaryParams p;
            p.op = cpu::EwUnary::kClip;
            p.alpha = lo ? lo->data<float>()[0] : -std::numeric_limits<float>::infinity();
            p.beta = hi ? hi->data<float>()[0] : std::numeric_limits<float>::infinity();
            return cpu::unary_f32(*t, p, ctx.input(0), ctx.output(0), ctx.pool());
          },
          t->name);
    }
    return make_kernel([](KernelContext& ctx) {
      return ref::clip(ctx.input(0), ctx.input_or_null(1), ctx.input_or_null(2), ctx.output(0));
    });
  });
  for (const char* name : {"Cast", "CastLike"}) {
    r.add(name, [](const KernelCreateInfo&) -> Result<std::unique_ptr<OpKernel>> {
      return make_kernel([](KernelContext& ctx) { return ref::cast(ctx.input(0), ctx.output(0)); });
    });
  }
}

}  // namespace kestrel::runtime

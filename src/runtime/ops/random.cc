// Kernel bindings for the random ops. Each kernel owns its generator: seeded from the `seed`
// attribute when present (the same seed gives the same stream of runs), otherwise from entropy
// once per session, so two sessions of one model draw different numbers.
#include "kernels/reference/random.h"

#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

namespace {

Result<ref::RandomGenerator> generator(const KernelCreateInfo& info) {
  if (!info.node.has_attr("seed")) return ref::RandomGenerator::from_entropy();
  KESTREL_ASSIGN_OR_RETURN(float seed, info.node.attr_float("seed"));
  return ref::RandomGenerator::from_onnx_seed(seed);
}

// Kernels for the ops whose output only depends on the generator and two float attributes.
template <class Fill>
KernelFactory distribution_factory(const char* a_name, float a_def, const char* b_name, float b_def, Fill fill) {
  return [=](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(float a, info.node.attr_float(a_name, a_def));
    KESTREL_ASSIGN_OR_RETURN(float b, info.node.attr_float(b_name, b_def));
    KESTREL_ASSIGN_OR_RETURN(ref::RandomGenerator g, generator(info));
    return make_kernel([g, a, b, fill](KernelContext& ctx) mutable { return fill(g, a, b, ctx.output(0)); });
  };
}

}  // namespace

void register_random_kernels(KernelRegistry& r) {
  auto normal = [](ref::RandomGenerator& g, float mean, float scale, Tensor& y) {
    return ref::random_normal(g, mean, scale, y);
  };
  auto uniform = [](ref::RandomGenerator& g, float low, float high, Tensor& y) {
    return ref::random_uniform(g, low, high, y);
  };
  for (const char* op : {"RandomNormal", "RandomNormalLike"})
    r.add(op, distribution_factory("mean", 0.f, "scale", 1.f, normal));
  for (const char* op : {"RandomUniform", "RandomUniformLike"})
    r.add(op, distribution_factory("low", 0.f, "high", 1.f, uniform));
  r.add("Bernoulli", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ref::RandomGenerator g, generator(info));
    return make_kernel([g](KernelContext& ctx) mutable { return ref::bernoulli(g, ctx.input(0), ctx.output(0)); });
  });
  r.add("Multinomial", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    KESTREL_ASSIGN_OR_RETURN(ref::RandomGenerator g, generator(info));
    return make_kernel([g](KernelContext& ctx) mutable { return ref::multinomial(g, ctx.input(0), ctx.output(0)); });
  });
}

}  // namespace kestrel::runtime

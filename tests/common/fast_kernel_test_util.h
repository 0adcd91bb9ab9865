// Test helper for fast kernels: binds one node twice, once with the reference kernels and once
// for an instruction set, runs both on the same inputs (with a 2-thread pool) and compares.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/op_test_util.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "runtime/kernel.h"

namespace kestrel::testing {

// Every instruction set this CPU (and build) can run.
inline std::vector<core::Isa> isas_to_test() {
  std::vector<core::Isa> r;
  for (core::Isa i : {core::Isa::kScalar, core::Isa::kAvx2, core::Isa::kAvx512})
    if (i <= core::detected_isa()) r.push_back(i);
  return r;
}

inline core::Tensor random_f32(const core::Dims& dims, std::mt19937& rng, float lo = -3.f, float hi = 3.f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(core::num_elements(dims)));
  for (float& x : v) x = u(rng);
  return make<float>(dims, v);
}

struct FastRun {
  std::vector<core::Tensor> outputs;
  std::string impl;
};

// Runs the node's kernel (bound with `opts`) on `inputs`; all inputs are graph inputs unless
// `constant[i]` (then the factory sees the data, as for weights).
inline core::Result<FastRun> run_kernel(const std::string& op, const std::vector<core::Tensor>& inputs,
                                        const Attrs& attrs, const runtime::KernelOptions& opts, int num_outputs,
                                        core::ThreadPool* pool, const std::vector<bool>& constant = {}) {
  std::vector<bool> as_input;
  for (size_t i = 0; i < inputs.size(); ++i) as_input.push_back(!(i < constant.size() && constant[i]));
  OneNode g = one_node(op, inputs, attrs, num_outputs, as_input);
  KESTREL_RETURN_IF_ERROR(ir::infer_graph(*g.graph));
  std::vector<const ir::ValueType*> types;
  std::vector<const core::Tensor*> consts, ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ir::Value* v = g.node->inputs()[i];
    types.push_back(v ? &v->type() : nullptr);
    consts.push_back(v && i < constant.size() && constant[i] ? &inputs[i] : nullptr);
    ins.push_back(inputs[i].defined() ? &inputs[i] : nullptr);
  }
  std::vector<core::DType> out_dtypes;
  FastRun r;
  for (ir::Value* v : g.node->outputs()) {
    out_dtypes.push_back(v->dtype());
    if (!v->shape().fully_known()) return core::internal_error("test: output shape not inferred");
    KESTREL_ASSIGN_OR_RETURN(core::Tensor t, core::Tensor::allocate(v->dtype(), v->shape().concrete()));
    // Garbage in the output: a kernel must write every element.
    if (t.dtype() == core::DType::kF32)
      for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = 12345.f;
    r.outputs.push_back(std::move(t));
  }
  runtime::KernelCreateInfo info{*g.node, types, consts, out_dtypes, opts};
  KESTREL_ASSIGN_OR_RETURN(auto kernel, runtime::create_kernel(info));
  r.impl = kernel->impl_name();
  std::vector<core::Tensor*> outs;
  for (auto& t : r.outputs) outs.push_back(&t);
  runtime::KernelContext ctx(ins, outs, out_dtypes, pool);
  KESTREL_RETURN_IF_ERROR(kernel->run(ctx));
  return r;
}

// |got - want| <= atol + rtol * |want|; NaNs must match; f32 only (other dtypes exact).
inline ::testing::AssertionResult tensors_close(const core::Tensor& got, const core::Tensor& want, double rtol,
                                                double atol) {
  if (got.dtype() != want.dtype() || got.dims() != want.dims())
    return ::testing::AssertionFailure() << "got " << got.type_string() << ", want " << want.type_string();
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    double g = got.element_as_double(i), w = want.element_as_double(i);
    if (std::isnan(w) || std::isnan(g)) {
      if (std::isnan(w) != std::isnan(g))
        return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w;
      continue;
    }
    if (std::isinf(w) || std::isinf(g)) {
      if (g != w) return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w;
      continue;
    }
    if (std::fabs(g - w) > atol + rtol * std::fabs(w))
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w << " (diff "
                                           << std::fabs(g - w) << ")";
  }
  return ::testing::AssertionSuccess();
}

// Runs the op with reference kernels and with every ISA's fast kernels (1 and 2 threads) and
// compares. `want_fast`: the fast binding must not fall back to "reference" for this case.
inline void expect_fast_matches_reference(const std::string& op, const std::vector<core::Tensor>& inputs,
                                          const Attrs& attrs = {}, double rtol = 1e-5, double atol = 1e-6,
                                          int num_outputs = 1, bool want_fast = true,
                                          const std::vector<bool>& constant = {}) {
  std::string what = op;
  for (const auto& t : inputs) what += " " + (t.defined() ? t.type_string() : std::string("-"));
  runtime::KernelOptions ref_opts;
  ref_opts.reference_only = true;
  auto want = run_kernel(op, inputs, attrs, ref_opts, num_outputs, nullptr, constant);
  ASSERT_TRUE(want.is_ok()) << what << ": " << want.status().to_string();
  EXPECT_EQ(want->impl, "reference") << what;
  core::ThreadPool pool(2);
  for (core::Isa isa : isas_to_test()) {
    for (core::ThreadPool* p : {static_cast<core::ThreadPool*>(nullptr), &pool}) {
      runtime::KernelOptions o;
      o.isa = isa;
      auto got = run_kernel(op, inputs, attrs, o, num_outputs, p, constant);
      ASSERT_TRUE(got.is_ok()) << what << " on " << core::isa_name(isa) << ": " << got.status().to_string();
      if (want_fast) {
        EXPECT_NE(got->impl, "reference") << what;
      }
      for (size_t i = 0; i < want->outputs.size(); ++i) {
        EXPECT_TRUE(tensors_close(got->outputs[i], want->outputs[i], rtol, atol))
            << what << " output " << i << " on " << core::isa_name(isa) << " (" << got->impl << ")"
            << (p ? " 2 threads" : "");
      }
    }
  }
}

}  // namespace kestrel::testing

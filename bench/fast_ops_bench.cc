// Google Benchmark: fast non-GEMM kernels vs their reference kernels on shapes from the shared
// models (single thread, the best ISA of this CPU unless KESTREL_ISA lowers it).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/cpu/eltwise/eltwise.h"
#include "kernels/cpu/norm/norm.h"
#include "kernels/cpu/pool/pool.h"
#include "kernels/cpu/transform/transpose.h"
#include "kernels/reference/elementwise.h"
#include "kernels/reference/normalization.h"
#include "kernels/reference/pool.h"
#include "kernels/reference/softmax.h"
#include "kernels/reference/transform.h"

namespace {

using namespace kestrel;
namespace cpu = kernels::cpu;
namespace ref = kernels::ref;

core::Tensor rnd(core::Dims d) {
  core::Tensor t = *core::Tensor::allocate(core::DType::kF32, d);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

template <class F>
void loop(benchmark::State& st, int64_t elements, F f) {
  for (auto _ : st) {
    f();
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(st.iterations() * elements);
}

// Unary over [1, 96, 56, 56] (MobileNet activations) and [1, 197, 768] (ViT MLP).
void BM_Unary(benchmark::State& st) {
  const bool fast = st.range(0) != 0;
  const auto op = static_cast<ref::UnaryOp>(st.range(1));
  core::Tensor x = rnd({1, 96, 56, 56}), y = rnd({1, 96, 56, 56});
  ref::UnaryParams rp;
  rp.op = op;
  rp.alpha = 0.2f;
  rp.beta = 0.5f;
  cpu::EwUnaryParams fp;
  cpu::fast_unary_op(rp, &fp);
  const cpu::EltwiseTable* t = cpu::eltwise_table(core::active_isa());
  loop(st, x.num_elements(), [&] {
    if (fast) (void)cpu::unary_f32(*t, fp, x, y, nullptr);
    else (void)ref::unary(rp, x, y);
  });
}
BENCHMARK(BM_Unary)
    ->ArgsProduct({{0, 1},
                   {static_cast<int64_t>(ref::UnaryOp::kRelu), static_cast<int64_t>(ref::UnaryOp::kSigmoid),
                    static_cast<int64_t>(ref::UnaryOp::kHardSigmoid), static_cast<int64_t>(ref::UnaryOp::kErf)}})
    ->ArgNames({"fast", "op"});

// Binary: 0 same shape, 1 per-channel [1,C,1,1], 2 row [K], 3 scalar.
void BM_Binary(benchmark::State& st) {
  const bool fast = st.range(0) != 0;
  const int pattern = static_cast<int>(st.range(1));
  core::Tensor a = rnd({1, 96, 56, 56}), y = rnd({1, 96, 56, 56});
  core::Tensor b = pattern == 0   ? rnd({1, 96, 56, 56})
                   : pattern == 1 ? rnd({1, 96, 1, 1})
                   : pattern == 2 ? rnd({56})
                                  : rnd({});
  const cpu::EltwiseTable* t = cpu::eltwise_table(core::active_isa());
  loop(st, a.num_elements(), [&] {
    if (fast) (void)cpu::binary_f32(*t, cpu::EwBinary::kMul, a, b, y, nullptr);
    else (void)ref::binary(ref::BinaryOp::kMul, a, b, y);
  });
}
BENCHMARK(BM_Binary)->ArgsProduct({{0, 1}, {0, 1, 2, 3}})->ArgNames({"fast", "pattern"});

void BM_BatchNorm(benchmark::State& st) {
  const bool fast = st.range(0) != 0;
  core::Tensor x = rnd({1, 32, 112, 112}), y = rnd({1, 32, 112, 112});
  core::Tensor s = rnd({32}), b = rnd({32}), m = rnd({32}), v = rnd({32});
  for (int i = 0; i < 32; ++i) v.data<float>()[i] = 1.f + static_cast<float>(i);
  const cpu::EltwiseTable* t = cpu::eltwise_table(core::active_isa());
  loop(st, x.num_elements(), [&] {
    if (fast) (void)cpu::batch_norm_f32(*t, x, s, b, m, v, 1e-5f, y, nullptr);
    else (void)ref::batch_norm(x, s, b, m, v, 1e-5f, y);
  });
}
BENCHMARK(BM_BatchNorm)->Arg(0)->Arg(1)->ArgName("fast");

// Softmax over ViT attention scores [3, 197, 197].
void BM_Softmax(benchmark::State& st) {
  const bool fast = st.range(0) != 0;
  core::Tensor x = rnd({3, 197, 197}), y = rnd({3, 197, 197});
  const cpu::NormTable* t = cpu::norm_table(core::active_isa());
  loop(st, x.num_elements(), [&] {
    if (fast) (void)cpu::softmax_last_axis_f32(*t, false, x, y, nullptr);
    else (void)ref::softmax(ref::SoftmaxKind::kSoftmax, 2, x, y);
  });
}
BENCHMARK(BM_Softmax)->Arg(0)->Arg(1)->ArgName("fast");

void BM_LayerNorm(benchmark::State& st) {
  const bool fast = st.range(0) != 0;
  core::Tensor x = rnd({197, 192}), y = rnd({197, 192}), s = rnd({192}), b = rnd({192});
  const cpu::NormTable* t = cpu::norm_table(core::active_isa());
  loop(st, x.num_elements(), [&] {
    if (fast) (void)cpu::layer_norm_f32(*t, x, s, &b, 1, 1e-5f, y, nullptr, nullptr, nullptr);
    else (void)ref::layer_norm(x, s, &b, 1, 1e-5f, y, nullptr, nullptr);
  });
}
BENCHMARK(BM_LayerNorm)->Arg(0)->Arg(1)->ArgName("fast");

// SqueezeNet's MaxPools, 3x3 stride 2, ceil_mode: [1, 64, 111, 111] -> [1, 64, 55, 55] (shape 0),
// [1, 128, 55, 55] -> 27 x 27 (1) and [1, 256, 27, 27] -> 13 x 13 (2).
// threads: 1, or 2 (a pool of two: the worker plus the caller; wall time).
void BM_MaxPool(benchmark::State& st) {
  const bool fast = st.range(0) != 0;
  static core::ThreadPool two(2);
  core::ThreadPool* pool = st.range(2) == 2 ? &two : nullptr;
  const int64_t c[] = {64, 128, 256}, h[] = {111, 55, 27};
  const int64_t i = st.range(1), oh = (h[i] - 3 + 1) / 2 + 1;
  core::Tensor x = rnd({1, c[i], h[i], h[i]}), y = rnd({1, c[i], oh, oh});
  ref::PoolParams p{{3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}};
  cpu::Pool2dParams q;
  q.kh = q.kw = 3;
  q.sh = q.sw = 2;
  const cpu::PoolTable* t = cpu::pool_table(core::active_isa());
  loop(st, x.num_elements(), [&] {
    if (fast) (void)cpu::pool2d_f32(*t, q, x, y, pool);
    else (void)ref::max_pool(p, x, y, nullptr, false);
  });
}
BENCHMARK(BM_MaxPool)->ArgsProduct({{0, 1}, {0, 1, 2}, {1, 2}})->ArgNames({"fast", "shape", "threads"})->UseRealTime();

// ViT's key transpose [1, 3, 197, 64] -> [1, 3, 64, 197].
void BM_Transpose(benchmark::State& st) {
  const bool fast = st.range(0) != 0;
  core::Tensor x = rnd({1, 3, 197, 64}), y = rnd({1, 3, 64, 197});
  const std::vector<int64_t> perm = {0, 1, 3, 2};
  loop(st, x.num_elements(), [&] {
    if (fast) cpu::transpose_fast(x, perm, y, nullptr);
    else (void)ref::transpose(x, perm, y);
  });
}
BENCHMARK(BM_Transpose)->Arg(0)->Arg(1)->ArgName("fast");

// Thread-pool dispatch: one job of two tasks per iteration, each range(0) steps of dependent
// arithmetic (no memory; 10000 steps are about 17 us here). The time above one task's is the cost
// of waking the worker, handing out the tasks and waiting for them (docs/architecture.md, thread pool).
void BM_PoolDispatch(benchmark::State& st) {
  static core::ThreadPool two(2);
  const int64_t steps = st.range(0);
  for (auto _ : st) {
    two.run(2, [&](int64_t t) {
      double x = 1.0 + static_cast<double>(t);
      for (int64_t i = 0; i < steps; ++i) x = x * 1.0000001 + 1e-9;
      benchmark::DoNotOptimize(x);
    });
  }
}
BENCHMARK(BM_PoolDispatch)->Arg(0)->Arg(1000)->Arg(10000)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

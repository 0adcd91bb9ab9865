// SGEMM benchmarks: square sizes and the conv-shaped GEMMs of MobileNetV2 (1x1) and ResNet-50
// (3x3 im2col, 1x1), for Kestrel (plain and with pre-packed A, the conv-weight case) and, in the
// same binary when oneDNN is available, dnnl_sgemm; 1 and 2 threads; counter GFLOP/s. On CPUs with
// AVX512_BF16 also bf16_gemm (bf16 products, f32 sums; pre-packed A) beside kestrel_packedA. Also the
// single-core FMA peaks (AVX-512 and AVX2) the efficiency targets refer to.
//
//   kestrel_kernel_bench --benchmark_filter=sgemm --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/cpu/gemm/bf16_gemm.h"
#include "kernels/cpu/gemm/sgemm.h"

#ifdef KESTREL_BENCH_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#endif

namespace kestrel::bench {

float fma_peak_avx512(int64_t iters);
float fma_peak_avx2(int64_t iters);

namespace {

using kernels::cpu::SgemmA;
using kernels::cpu::SgemmB;
using kernels::cpu::SgemmContext;

struct Shape {
  const char* name;
  int64_t m, n, k;
};

// C[M,N] = A[M,K] B[K,N]; for convolutions M = Cout, K = Cin * kh * kw, N = H * W.
const Shape kShapes[] = {
    {"square256", 256, 256, 256},
    {"square512", 512, 512, 512},
    {"square1024", 1024, 1024, 1024},
    {"square1536", 1536, 1536, 1536},
    {"square2048", 2048, 2048, 2048},
    // MobileNetV2 pointwise convs (e = expand, p = project), 224x224 input.
    {"mbv2_112x112_p_32to16", 16, 12544, 32},
    {"mbv2_112x112_e_16to96", 96, 12544, 16},
    {"mbv2_56x56_p_96to24", 24, 3136, 96},
    {"mbv2_56x56_e_24to144", 144, 3136, 24},
    {"mbv2_28x28_p_144to32", 32, 784, 144},
    {"mbv2_28x28_e_32to192", 192, 784, 32},
    {"mbv2_14x14_p_192to64", 64, 196, 192},
    {"mbv2_14x14_e_64to384", 384, 196, 64},
    {"mbv2_14x14_e_96to576", 576, 196, 96},
    {"mbv2_7x7_p_576to160", 160, 49, 576},
    {"mbv2_7x7_e_160to960", 960, 49, 160},
    {"mbv2_7x7_last_320to1280", 1280, 49, 320},
    // MnasNet's 112x112 / 56x56 pointwise convs whose M leaves the 14-row tiles an edge, and RegNet-X's 32 -> 32.
    {"mnas_112x112_e_16to48", 48, 12544, 16},
    {"mnas_56x56_e_24to72", 72, 3136, 24},
    {"mnas_56x56_p_72to24", 24, 3136, 72},
    {"mnas_56x56_p_48to24", 24, 3136, 48},
    {"regnet_112x112_32to32", 32, 12544, 32},
    // ResNet-50 3x3 convs as im2col GEMMs and a few of its 1x1 convs.
    {"r50_56x56_3x3_64", 64, 3136, 576},
    {"r50_28x28_3x3_128", 128, 784, 1152},
    {"r50_14x14_3x3_256", 256, 196, 2304},
    {"r50_7x7_3x3_512", 512, 49, 4608},
    {"r50_56x56_1x1_64to256", 256, 3136, 64},
    {"r50_14x14_1x1_1024to256", 256, 196, 1024},
    {"r50_7x7_1x1_2048to512", 512, 49, 2048},
    // RegNetX-400MF's last-stage 1x1 convs (12 blocks x 2 of them: half of that model's time).
    {"regnet_7x7_1x1_400to400", 400, 49, 400},
    // SqueezeNet 1.1's classifier conv (1x1, 512 -> 1000 on 13x13).
    {"sq_13x13_1x1_512to1000", 1000, 169, 512},
    // Squeeze-excite 1x1 convs on a 1x1 plane (EfficientNet-B0's last stage): one column.
    {"effnet_se_1x1_48to1152", 1152, 1, 48},
    {"effnet_se_1x1_1152to48", 48, 1, 1152},
};

struct Data {
  std::vector<float> a, b, c;
  explicit Data(const Shape& s)
      : a(static_cast<size_t>(s.m * s.k)), b(static_cast<size_t>(s.k * s.n)), c(static_cast<size_t>(s.m * s.n)) {
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    for (auto& x : a) x = d(rng);
    for (auto& x : b) x = d(rng);
  }
};

core::ThreadPool* pool_for(int threads) {
  static core::ThreadPool pool2(2);
  static core::ThreadPool pool4(4);
  if (threads <= 1) return nullptr;
  return threads == 2 ? &pool2 : &pool4;
}

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// GFLOPS: by wall time (the number that counts). GFLOPS_cpu: by the calling thread's CPU time,
// which discounts time the thread was descheduled on a shared machine (meaningful for t1 only).
void set_counters(benchmark::State& st, const Shape& s, double cpu_seconds) {
  const double flops = 2.0 * static_cast<double>(s.m * s.n * s.k);
  st.counters["GFLOPS"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (cpu_seconds > 0) st.counters["GFLOPS_cpu"] = flops * 1e-9 * static_cast<double>(st.iterations()) / cpu_seconds;
}

void bm_kestrel(benchmark::State& st, Shape s, int threads, bool prepack_a) {
  Data d(s);
  SgemmContext ctx;
  ctx.pool = pool_for(threads);
  kernels::cpu::PackedA pa;
  if (prepack_a) {
    auto r = kernels::cpu::pack_a(s.m, s.k, d.a.data(), s.k, false);
    if (!r) {
      st.SkipWithError(r.status().to_string().c_str());
      return;
    }
    pa = std::move(r).value();
  }
  SgemmA a = prepack_a ? SgemmA(pa) : SgemmA(d.a.data(), s.k);
  const double t0 = thread_cpu_seconds();
  for (auto _ : st) {
    auto status = kernels::cpu::sgemm(s.m, s.n, s.k, 1.f, a, SgemmB(d.b.data(), s.n), 0.f, d.c.data(), s.n, {}, ctx);
    if (!status.is_ok()) {
      st.SkipWithError(status.to_string().c_str());
      return;
    }
    benchmark::ClobberMemory();
  }
  set_counters(st, s, thread_cpu_seconds() - t0);
}

// bf16_gemm with A packed once (the weights of a conv allowed to run in bf16).
void bm_bf16(benchmark::State& st, Shape s, int threads) {
  if (!kernels::cpu::bf16_gemm_available()) {
    st.SkipWithError("no AVX512_BF16");
    return;
  }
  Data d(s);
  auto pa = kernels::cpu::PackedBf16A::pack(s.m, s.k, d.a.data(), s.k);
  if (!pa) {
    st.SkipWithError(pa.status().to_string().c_str());
    return;
  }
  const double t0 = thread_cpu_seconds();
  for (auto _ : st) {
    auto status = kernels::cpu::bf16_gemm(*pa, s.n, d.b.data(), s.n, d.c.data(), s.n, {}, pool_for(threads));
    if (!status.is_ok()) {
      st.SkipWithError(status.to_string().c_str());
      return;
    }
    benchmark::ClobberMemory();
  }
  set_counters(st, s, thread_cpu_seconds() - t0);
}

#ifdef KESTREL_BENCH_DNNL
void bm_dnnl(benchmark::State& st, Shape s, int threads) {
  Data d(s);
  omp_set_num_threads(threads);
  const double t0 = thread_cpu_seconds();
  for (auto _ : st) {
    if (dnnl_sgemm('N', 'N', s.m, s.n, s.k, 1.f, d.a.data(), s.k, d.b.data(), s.n, 0.f, d.c.data(), s.n) !=
        dnnl_success) {
      st.SkipWithError("dnnl_sgemm failed");
      return;
    }
    benchmark::ClobberMemory();
  }
  set_counters(st, s, thread_cpu_seconds() - t0);
}
#endif

// Weight-only int8 B (sgemm_b_int8, B int8 [K, N] + per-column scale) against f32 B pre-packed
// (what FastMatMul does with a constant f32 weight), on transformer projection shapes.
const Shape kInt8Shapes[] = {
    {"vit_qkv_197x192to576", 197, 576, 192},
    {"vit_mlp_197x192to768", 197, 768, 192},
    {"vit_mlp_197x768to192", 197, 192, 768},
    {"bert_64x128to512", 64, 512, 128},
    {"head_1x192to1000", 1, 1000, 192},
    {"head_1x1280to1000", 1, 1000, 1280},
    {"square1024", 1024, 1024, 1024},
};

void bm_int8w(benchmark::State& st, Shape s, bool int8) {
  Data d(s);
  std::vector<int8_t> q(d.b.size());
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<int8_t>(static_cast<int>(d.b[i] * 127.f));
  std::vector<float> scale(static_cast<size_t>(s.n), 1.f / 127.f);
  auto pb = kernels::cpu::pack_b(s.k, s.n, d.b.data(), s.n, false);
  if (!pb) {
    st.SkipWithError(pb.status().to_string().c_str());
    return;
  }
  const double t0 = thread_cpu_seconds();
  for (auto _ : st) {
    auto status = int8 ? kernels::cpu::sgemm_b_int8(s.m, s.n, s.k, 1.f, SgemmA(d.a.data(), s.k),
                                                    kernels::cpu::SgemmBInt8{q.data(), s.n, scale.data()}, 0.f,
                                                    d.c.data(), s.n)
                       : kernels::cpu::sgemm(s.m, s.n, s.k, 1.f, SgemmA(d.a.data(), s.k), SgemmB(*pb), 0.f,
                                             d.c.data(), s.n);
    if (!status.is_ok()) {
      st.SkipWithError(status.to_string().c_str());
      return;
    }
    benchmark::ClobberMemory();
  }
  set_counters(st, s, thread_cpu_seconds() - t0);
}

// lanes: 16 for the AVX-512 probe (24 FMAs per iteration), 8 for the AVX2 one (12 FMAs).
void bm_fma_peak(benchmark::State& st, int lanes) {
  const bool avx512 = lanes == 16;
  if (core::detected_isa() < (avx512 ? core::Isa::kAvx512 : core::Isa::kAvx2)) {
    st.SkipWithError(avx512 ? "no AVX-512" : "no AVX2");
    return;
  }
  const int64_t iters = 1 << 20;
  float sink = 0;
  const double t0 = thread_cpu_seconds();
  for (auto _ : st) sink += avx512 ? fma_peak_avx512(iters) : fma_peak_avx2(iters);
  const double cpu = thread_cpu_seconds() - t0;
  benchmark::DoNotOptimize(sink);
  const double fmas = avx512 ? 24 : 12;
  const double flops = static_cast<double>(iters) * fmas * lanes * 2;
  st.counters["GFLOPS"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (cpu > 0) st.counters["GFLOPS_cpu"] = flops * 1e-9 * static_cast<double>(st.iterations()) / cpu;
}

int register_all() {
  benchmark::RegisterBenchmark("fma_peak/avx512/t1", bm_fma_peak, 16)->UseRealTime()->MinTime(0.3);
  benchmark::RegisterBenchmark("fma_peak/avx2/t1", bm_fma_peak, 8)->UseRealTime()->MinTime(0.3);
  for (const Shape& s : kInt8Shapes) {
    benchmark::RegisterBenchmark(("sgemm_int8w/int8/" + std::string(s.name) + "/t1").c_str(), bm_int8w, s, true)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("sgemm_int8w/f32_packed/" + std::string(s.name) + "/t1").c_str(), bm_int8w, s,
                                 false)
        ->UseRealTime();
  }
  for (const Shape& s : kShapes) {
    for (int threads : {1, 2}) {
      const std::string suffix = std::string(s.name) + "/t" + std::to_string(threads);
      benchmark::RegisterBenchmark(("sgemm/kestrel/" + suffix).c_str(), bm_kestrel, s, threads, false)->UseRealTime();
#ifdef KESTREL_BENCH_DNNL
      benchmark::RegisterBenchmark(("sgemm/dnnl/" + suffix).c_str(), bm_dnnl, s, threads)->UseRealTime();
#endif
      benchmark::RegisterBenchmark(("sgemm/kestrel_packedA/" + suffix).c_str(), bm_kestrel, s, threads, true)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("sgemm/bf16_packedA/" + suffix).c_str(), bm_bf16, s, threads)->UseRealTime();
    }
  }
  return 0;
}

const int kRegistered = register_all();

}  // namespace
}  // namespace kestrel::bench

int main(int argc, char** argv) {
  (void)kestrel::bench::kRegistered;
  const auto& f = kestrel::core::cpu_features();
  std::printf("CPU: %s; isa %s (active %s); L1d %d KiB, L2 %d KiB, L3 %d KiB\n", f.brand.c_str(),
              kestrel::core::isa_name(kestrel::core::detected_isa()),
              kestrel::core::isa_name(kestrel::core::active_isa()), f.l1d_bytes >> 10, f.l2_bytes >> 10,
              f.l3_bytes >> 10);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// Int8 GEMM (qgemm_u8s8) against float SGEMM on convolution-shaped GEMMs, counter GOPS (2 ops per
// multiply-add, for both). qgemm runs the int8 conv layout C[pixels, Cout] = im2col(X)[pixels, K] *
// W^T[K, Cout] with pre-packed weights; sgemm runs the same work in its own conv layout
// C[Cout, pixels] = W[Cout, K] * im2col(X)[K, pixels] with pre-packed weights, and in the qgemm
// layout too. Linked into kestrel_kernel_bench (main is in sgemm_bench.cc).
//
//   kestrel_kernel_bench --benchmark_filter='qgemm|qconv' --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cpu/gemm/sgemm.h"
#include "kernels/cpu/qgemm/qgemm.h"

namespace kestrel::bench {
namespace {

using kernels::cpu::QgemmIsa;

struct ConvShape {
  const char* name;
  int64_t pixels, cout, k;  // GEMM M (qgemm) / N (sgemm), Cout, Cin * kh * kw
};

const ConvShape kConvShapes[] = {
    {"56x56_k288_c64", 3136, 64, 288},  // 3x3 conv, 32 -> 64 channels
    {"56x56_k288_c128", 3136, 128, 288},
    {"56x56_k288_c256", 3136, 256, 288},
    {"56x56_3x3_64", 3136, 64, 576},             // ResNet-50 conv2_x 3x3
    {"28x28_3x3_128", 784, 128, 1152},           // ResNet-50 conv3_x 3x3
    {"14x14_3x3_256", 196, 256, 2304},           // ResNet-50 conv4_x 3x3
    {"56x56_1x1_64to256", 3136, 256, 64},        // ResNet-50 1x1 expand
    {"mbv2_112x112_1x1_32to16", 12544, 16, 32},  // MobileNetV2 project: narrow N
    {"mbv2_56x56_1x1_96to24", 3136, 24, 96},
    {"mbv2_28x28_1x1_32to192", 784, 192, 32},
    {"square512", 512, 512, 512},
};

core::ThreadPool* qpool_for(int threads) {
  static core::ThreadPool pool2(2);
  return threads <= 1 ? nullptr : &pool2;
}

void set_gops(benchmark::State& st, const ConvShape& s) {
  const double ops = 2.0 * static_cast<double>(s.pixels) * static_cast<double>(s.cout) * static_cast<double>(s.k);
  st.counters["GOPS"] = benchmark::Counter(ops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void bm_qgemm(benchmark::State& st, ConvShape s, QgemmIsa isa, kernels::cpu::QgemmOutput out, int threads,
              bool transpose_c) {
  if (!kernels::cpu::qgemm_isa_available(isa)) {
    st.SkipWithError("ISA not available on this CPU");
    return;
  }
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> du(0, 255), ds(-128, 127);
  std::vector<uint8_t> a(static_cast<size_t>(s.pixels * s.k));
  std::vector<int8_t> w(static_cast<size_t>(s.cout * s.k));  // [Cout, K]
  for (auto& x : a) x = static_cast<uint8_t>(du(rng));
  for (auto& x : w) x = static_cast<int8_t>(ds(rng));
  auto pb = kernels::cpu::pack_b_s8(s.k, s.cout, w.data(), s.k, /*trans_b=*/true, isa);
  if (!pb.is_ok()) {
    st.SkipWithError(pb.status().to_string().c_str());
    return;
  }
  std::vector<float> scale(static_cast<size_t>(s.cout), 1e-4f);
  std::vector<int32_t> bias(static_cast<size_t>(s.cout), 100);
  std::vector<int32_t> c(static_cast<size_t>(s.pixels * s.cout));
  kernels::cpu::QgemmEpilogue ep;
  ep.output = out;
  ep.bias = bias.data();
  ep.scale = scale.data();
  ep.out_zero_point = 128;
  ep.transpose_c = transpose_c;
  kernels::cpu::QgemmContext ctx;
  ctx.pool = qpool_for(threads);
  for (auto _ : st) {
    auto status = kernels::cpu::qgemm_u8s8(s.pixels, s.cout, s.k, a.data(), s.k, 128, pb.value(), c.data(),
                                           transpose_c ? s.pixels : s.cout, ep, ctx);
    if (!status.is_ok()) {
      st.SkipWithError(status.to_string().c_str());
      return;
    }
    benchmark::ClobberMemory();
  }
  set_gops(st, s);
}

// Float reference: conv layout (weights pre-packed as A) or the qgemm layout (weights as B).
void bm_sgemm(benchmark::State& st, ConvShape s, bool conv_layout, int threads) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> x(static_cast<size_t>(s.pixels * s.k)), w(static_cast<size_t>(s.cout * s.k));
  std::vector<float> c(static_cast<size_t>(s.pixels * s.cout));
  for (auto& v : x) v = d(rng);
  for (auto& v : w) v = d(rng);
  kernels::cpu::SgemmContext ctx;
  ctx.pool = qpool_for(threads);
  core::Status status = core::Status::ok();
  if (conv_layout) {
    auto pa = kernels::cpu::pack_a(s.cout, s.k, w.data(), s.k, false);
    if (!pa.is_ok()) {
      st.SkipWithError(pa.status().to_string().c_str());
      return;
    }
    for (auto _ : st) {
      status = kernels::cpu::sgemm(s.cout, s.pixels, s.k, 1.f, kernels::cpu::SgemmA(pa.value()),
                                   kernels::cpu::SgemmB(x.data(), s.pixels), 0.f, c.data(), s.pixels, {}, ctx);
      benchmark::ClobberMemory();
    }
  } else {
    auto pb = kernels::cpu::pack_b(s.k, s.cout, w.data(), s.k, /*trans_b=*/true);
    if (!pb.is_ok()) {
      st.SkipWithError(pb.status().to_string().c_str());
      return;
    }
    for (auto _ : st) {
      status = kernels::cpu::sgemm(s.pixels, s.cout, s.k, 1.f, kernels::cpu::SgemmA(x.data(), s.k),
                                   kernels::cpu::SgemmB(pb.value()), 0.f, c.data(), s.cout, {}, ctx);
      benchmark::ClobberMemory();
    }
  }
  if (!status.is_ok()) st.SkipWithError(status.to_string().c_str());
  set_gops(st, s);
}

int register_qgemm() {
  using kernels::cpu::QgemmOutput;
  for (const ConvShape& s : kConvShapes) {
    for (int threads : {1, 2}) {
      const std::string suffix = std::string(s.name) + "/t" + std::to_string(threads);
      for (QgemmIsa isa : {QgemmIsa::kAvx512Vnni, QgemmIsa::kAvxVnni, QgemmIsa::kAvx2, QgemmIsa::kScalar}) {
        if (isa == QgemmIsa::kScalar && threads > 1) continue;
        const std::string isa_name = kernels::cpu::qgemm_isa_name(isa);
        benchmark::RegisterBenchmark(("qconv/qgemm_" + isa_name + "_u8/" + suffix).c_str(), bm_qgemm, s, isa,
                                     QgemmOutput::kU8, threads, false)
            ->UseRealTime();
      }
      benchmark::RegisterBenchmark(("qconv/qgemm_avx512vnni_i32/" + suffix).c_str(), bm_qgemm, s, QgemmIsa::kAvx512Vnni,
                                   QgemmOutput::kInt32, threads, false)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("qconv/qgemm_avx512vnni_u8_nchw/" + suffix).c_str(), bm_qgemm, s,
                                   QgemmIsa::kAvx512Vnni, QgemmOutput::kU8, threads, true)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("qconv/sgemm_conv_layout/" + suffix).c_str(), bm_sgemm, s, true, threads)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("qconv/sgemm_qgemm_layout/" + suffix).c_str(), bm_sgemm, s, false, threads)
          ->UseRealTime();
    }
  }
  return 0;
}

const int kQgemmRegistered = register_qgemm();

}  // namespace
}  // namespace kestrel::bench

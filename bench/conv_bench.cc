// Google Benchmark: FastConv on convolution shapes from the shared CNNs (depthwise small planes,
// grouped, 3x3 im2col vs Winograd), single thread, printing GFLOP/s.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/cpu/conv/conv.h"

namespace {

using namespace kestrel;
namespace cpu = kernels::cpu;
namespace ref = kernels::ref;

core::Tensor rnd(core::Dims d) {
  core::Tensor t = *core::Tensor::allocate(core::DType::kF32, d);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// Args: C (input channels), M (output channels), H (= W, input), K, stride, group, act (GemmActivation).
void run_conv(benchmark::State& st, bool allow_winograd, core::ThreadPool* pool = nullptr) {
  const int64_t c = st.range(0), m = st.range(1), h = st.range(2), k = st.range(3), s = st.range(4),
                g = st.range(5);
  cpu::FusedActivation act;
  act.kind = static_cast<cpu::GemmActivation>(st.range(6));
  const int64_t pad = k / 2, oh = (h + 2 * pad - k) / s + 1;
  core::Tensor x = rnd({1, c, h, h}), w = rnd({m, c / g, k, k}), b = rnd({m}), y = rnd({1, m, oh, oh});
  auto fc = cpu::FastConv::create(w, g, act, core::active_isa(), allow_winograd);
  if (!fc.is_ok()) {
    st.SkipWithError(fc.status().to_string().c_str());
    return;
  }
  ref::ConvParams p{{s, s}, {1, 1}, {pad, pad}, g};
  for (auto _ : st) {
    benchmark::DoNotOptimize(fc->run(p, x, &b, nullptr, y, pool));
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * m * oh * oh * (c / g) * k * k;
  st.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9 * static_cast<double>(st.iterations()),
                                              benchmark::Counter::kIsRate);
  st.SetLabel(fc->path_name(p));
}

void BM_Conv(benchmark::State& st) { run_conv(st, true); }
void BM_ConvNoWinograd(benchmark::State& st) { run_conv(st, false); }
// Two threads (the pool's worker plus the caller); wall time is what matters here.
void BM_Conv2T(benchmark::State& st) {
  static core::ThreadPool pool(2);
  run_conv(st, true, &pool);
}

// Depthwise (EfficientNet / MobileNet): {C, M, H, K, stride, group, act}; act 7 = SiLU, 2 = Clip.
#define DW(C, H, K, S) ->Args({C, C, H, K, S, C, 7})
BENCHMARK(BM_Conv) DW(144, 56, 3, 2) DW(96, 112, 3, 2) DW(144, 56, 3, 1) DW(144, 56, 5, 2) DW(240, 28, 5, 1) DW(240, 28, 3, 2)
    DW(480, 14, 3, 1) DW(672, 14, 5, 1) DW(672, 14, 5, 2) DW(1152, 7, 5, 1) DW(1152, 7, 3, 1);
// Stems: 3 -> 32 / 64 channels, 3x3 stride 2.
BENCHMARK(BM_Conv)->Args({3, 32, 224, 3, 2, 1, 1})->Args({3, 64, 224, 3, 2, 1, 1});
// Pointwise 1x1 (MobileNetV2, SqueezeNet; their int8 twins are qconv_nchw/* in qconv_bench.cc).
#define PW(C, M, H) ->Args({C, M, H, 1, 1, 1, 1})
BENCHMARK(BM_Conv) PW(16, 96, 112) PW(24, 144, 56) PW(144, 24, 56) PW(32, 192, 28) PW(64, 384, 14) PW(160, 960, 7)
    PW(320, 1280, 7) PW(64, 16, 55);
// Grouped 3x3 (RegNet-X 400MF, group width 16).
BENCHMARK(BM_Conv)->Args({64, 64, 56, 3, 1, 4, 1})->Args({160, 160, 28, 3, 1, 10, 1})->Args({400, 400, 14, 3, 1, 25, 1})
    ->Args({400, 400, 7, 3, 1, 25, 1});
// Dense 3x3 stride 1 (SqueezeNet expand3x3, ResNet-ish): Winograd vs im2col.
#define D3(C, M, H) ->Args({C, M, H, 3, 1, 1, 1})
BENCHMARK(BM_Conv) D3(16, 64, 55) D3(32, 128, 27) D3(48, 192, 13) D3(64, 256, 13) D3(64, 64, 56) D3(128, 128, 28)
    D3(256, 256, 14);
BENCHMARK(BM_ConvNoWinograd) D3(16, 64, 55) D3(32, 128, 27) D3(48, 192, 13) D3(64, 256, 13) D3(64, 64, 56)
    D3(128, 128, 28) D3(256, 256, 14);

BENCHMARK(BM_Conv2T) DW(144, 56, 3, 2) DW(672, 14, 5, 1) DW(1152, 7, 3, 1) D3(32, 128, 27) D3(256, 256, 14)
    ->Args({400, 400, 7, 3, 1, 25, 1})
    ->Args({160, 160, 28, 3, 1, 10, 1})
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

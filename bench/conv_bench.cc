// Google Benchmark: FastConv on convolution shapes from the shared CNNs (depthwise small planes,
// grouped, 3x3 im2col vs Winograd), single thread, printing GFLOP/s; and the int8 depthwise QConv
// on the same depthwise shapes, per ISA path.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/cpu/conv/conv.h"
#include "kernels/cpu/conv/conv_chain.h"
#include "kernels/cpu/qconv/qconv.h"

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
// plane_hint: tell the kernel the plane size at creation, as a session does for static shapes. cold: evict the
// caches before each run (untimed).
void run_conv(benchmark::State& st, bool allow_winograd, core::ThreadPool* pool = nullptr, bool plane_hint = true,
              bool cold = false) {
  const int64_t c = st.range(0), m = st.range(1), h = st.range(2), k = st.range(3), s = st.range(4),
                g = st.range(5);
  cpu::FusedActivation act;
  act.kind = static_cast<cpu::GemmActivation>(st.range(6));
  const int64_t pad = k / 2, oh = (h + 2 * pad - k) / s + 1;
  core::Tensor x = rnd({1, c, h, h}), w = rnd({m, c / g, k, k}), b = rnd({m}), y = rnd({1, m, oh, oh});
  auto fc = cpu::FastConv::create(w, g, act, core::active_isa(), allow_winograd, plane_hint ? h * h : 0);
  if (!fc.is_ok()) {
    st.SkipWithError(fc.status().to_string().c_str());
    return;
  }
  ref::ConvParams p{{s, s}, {1, 1}, {pad, pad}, g};
  std::vector<float> junk(cold ? size_t{8} << 20 : 0);  // 32 MiB: twice the Zen 2 host's L3
  for (auto _ : st) {
    if (cold) {
      st.PauseTiming();
      for (size_t i = 0; i < junk.size(); i += 16) junk[i] += 1.f;
      st.ResumeTiming();
    }
    benchmark::DoNotOptimize(fc->run(p, x, &b, nullptr, y, pool));
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * m * oh * oh * (c / g) * k * k;
  st.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9 * static_cast<double>(st.iterations()),
                                              benchmark::Counter::kIsRate);
  st.SetLabel(fc->path_name(p));
}

void BM_Conv(benchmark::State& st) { run_conv(st, true); }
void BM_ConvCold(benchmark::State& st) {
  run_conv(st, true, nullptr, true, true);
}
void BM_ConvNoWinograd(benchmark::State& st) { run_conv(st, false); }
// Without the plane size at creation: pointwise convs on small planes keep the plain GEMM.
void BM_ConvNoHint(benchmark::State& st) {
  run_conv(st, true, nullptr, false);
}
// Two threads (the pool's worker plus the caller); wall time is what matters here.
void BM_Conv2T(benchmark::State& st) {
  static core::ThreadPool pool(2);
  run_conv(st, true, &pool);
}

// An inverted residual block: expand 1x1 (C -> M, ReLU6), depthwise K x K (stride, ReLU6), project 1x1 (M -> P,
// residual when the shapes allow), as three FastConv runs through full-size tensors (fused 0) or as one
// FastConvChain over strips of rows (fused 1) or on its small-plane path (fused 2, 7x7 stages). Args: {C, M, P, H, K,
// stride, project, threads, fused, cold, groups} (groups 0: depthwise, else RegNet's grouped middle conv; C 0: no
// expansion, the depthwise reads X's M channels, the first block of MobileNet-V2 / V3 and MnasNet).
void BM_Chain(benchmark::State& st) {
  const int64_t c = st.range(0), m = st.range(1), pc = st.range(2), h = st.range(3), k = st.range(4), s = st.range(5);
  const bool project = st.range(6) != 0, fused = st.range(8) != 0, cold = st.range(9) != 0;
  const int64_t groups = st.range(10) ? st.range(10) : m;
  static core::ThreadPool pool2(2);
  core::ThreadPool* pool = st.range(7) > 1 ? &pool2 : nullptr;
  const int64_t pad = k / 2, oh = (h + 2 * pad - k) / s + 1;
  const cpu::FusedActivation relu6{cpu::GemmActivation::kClip, 0.f, 6.f};
  const core::Isa isa = core::active_isa();
  const int64_t xc = c ? c : m;
  core::Tensor x = rnd({1, xc, h, h}), w1 = rnd({m, std::max<int64_t>(c, 1), 1, 1}), w2 = rnd({m, m / groups, k, k}),
               w3 = rnd({pc, m, 1, 1});
  core::Tensor b1 = rnd({m}), b2 = rnd({m}), b3 = rnd({pc}), e = rnd({1, m, h, h}), d = rnd({1, m, oh, oh});
  core::Tensor y = rnd({1, project ? pc : m, oh, oh});
  const bool residual = project && s == 1 && xc == pc;
  auto f1 = cpu::FastConv::create(w1, 1, relu6, isa, false, h * h);
  auto f2 = cpu::FastConv::create(w2, groups, relu6, isa, false, h * h);
  auto f3 = cpu::FastConv::create(w3, 1, {}, isa, false, oh * oh);
  auto g1 = cpu::FastConv::create(w1, 1, relu6, isa, false), g2 = cpu::FastConv::create(w2, groups, relu6, isa, false),
       g3 = cpu::FastConv::create(w3, 1, {}, isa, false);
  if (!f1.is_ok() || !f2.is_ok() || !f3.is_ok() || !g1.is_ok() || !g2.is_ok() || !g3.is_ok()) {
    st.SkipWithError("create failed");
    return;
  }
  if (st.range(8) == 2) {  // the small-plane path: both pointwise convs transposed
    g1 = cpu::FastConv::create_transposed_pointwise(w1, relu6, isa);
    g3 = cpu::FastConv::create_transposed_pointwise(w3, {}, isa);
  }
  auto chain =
      cpu::FastConvChain::create(c ? std::optional<cpu::FastConv>(std::move(*g1)) : std::nullopt, std::move(*g2),
                                 project ? std::optional<cpu::FastConv>(std::move(*g3)) : std::nullopt);
  if (!chain.is_ok()) {
    st.SkipWithError(chain.status().to_string().c_str());
    return;
  }
  const ref::ConvParams p1{{1, 1}, {1, 1}, {0, 0}, 1}, p2{{s, s}, {1, 1}, {pad, pad}, groups};
  std::vector<float> junk(cold ? size_t{8} << 20 : 0);
  for (auto _ : st) {
    if (cold) {
      st.PauseTiming();
      for (size_t i = 0; i < junk.size(); i += 16) junk[i] += 1.f;
      st.ResumeTiming();
    }
    if (fused) {
      benchmark::DoNotOptimize(chain->run({s, pad, pad}, x, c ? &b1 : nullptr, &b2, project ? &b3 : nullptr,
                                          residual ? &x : nullptr, y, pool));
    } else {
      if (c) benchmark::DoNotOptimize(f1->run(p1, x, &b1, nullptr, e, pool));
      benchmark::DoNotOptimize(f2->run(p2, c ? e : x, &b2, nullptr, project ? d : y, pool));
      if (project) benchmark::DoNotOptimize(f3->run(p1, d, &b3, residual ? &x : nullptr, y, pool));
    }
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * m * (h * h * c + oh * oh * k * k * (m / groups) + (project ? oh * oh * pc : 0));
  st.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9 * static_cast<double>(st.iterations()), benchmark::Counter::kIsRate);
}
// MobileNetV2 / MnasNet / RegNet blocks at 112, 56 and 28, fused and not, warm and cold, 1 and 2 threads.
// clang-format off
#define CHAIN_G(C, M, P, H, K, S, PROJ, G)                                                   \
  ->Args({C, M, P, H, K, S, PROJ, 1, 0, 0, G})->Args({C, M, P, H, K, S, PROJ, 1, 1, 0, G})    \
  ->Args({C, M, P, H, K, S, PROJ, 1, 0, 1, G})->Args({C, M, P, H, K, S, PROJ, 1, 1, 1, G})    \
  ->Args({C, M, P, H, K, S, PROJ, 2, 0, 0, G})->Args({C, M, P, H, K, S, PROJ, 2, 1, 0, G})
#define CHAIN(C, M, P, H, K, S, PROJ) CHAIN_G(C, M, P, H, K, S, PROJ, 0)
#define CHAIN7(C, M, P, H, K, S)                                                             \
  ->Args({C, M, P, H, K, S, 1, 1, 0, 0, 0})->Args({C, M, P, H, K, S, 1, 1, 1, 0, 0})          \
  ->Args({C, M, P, H, K, S, 1, 1, 2, 0, 0})->Args({C, M, P, H, K, S, 1, 2, 0, 0, 0})          \
  ->Args({C, M, P, H, K, S, 1, 2, 1, 0, 0})->Args({C, M, P, H, K, S, 1, 2, 2, 0, 0})
BENCHMARK(BM_Chain)
    CHAIN(16, 96, 24, 112, 3, 2, 1) CHAIN(16, 48, 24, 112, 3, 2, 1) CHAIN(24, 144, 24, 56, 3, 1, 1)
    // No expansion: MobileNet-V2 / MnasNet (32 -> 16), MobileNet-V3-Large (16 -> 16 + residual)
    CHAIN(0, 32, 16, 112, 3, 1, 1) CHAIN(0, 16, 16, 112, 3, 1, 1)
    CHAIN(24, 72, 24, 56, 3, 1, 1) CHAIN(24, 144, 32, 56, 3, 2, 1) CHAIN(32, 192, 32, 28, 3, 1, 1)
    CHAIN(16, 96, 24, 112, 3, 2, 0) CHAIN(24, 144, 24, 56, 5, 1, 1)
    // RegNet-X 400MF, groups of 16 channels
    CHAIN_G(32, 32, 32, 112, 3, 2, 1, 2) CHAIN_G(32, 64, 64, 56, 3, 2, 1, 4) CHAIN_G(64, 64, 64, 28, 3, 1, 1, 4)
    CHAIN_G(64, 160, 160, 28, 3, 2, 1, 10)
    // 7x7 stages (MnasNet 192 -> 1152 -> 192 5x5 and 96 -> 576 -> 192 from 14x14, MobileNet-V2 160 -> 960 -> 160)
    // and 14x14 ones (MnasNet 96 -> 576 -> 96 and 80 -> 480 -> 80 5x5, MobileNet-V2 64 -> 384 -> 64):
    // unfused, strips, small-plane path; 1 and 2 threads
    CHAIN7(192, 1152, 192, 7, 5, 1) CHAIN7(96, 576, 192, 14, 5, 2) CHAIN7(160, 960, 160, 7, 3, 1)
    CHAIN7(96, 576, 96, 14, 3, 1) CHAIN7(80, 480, 80, 14, 5, 1) CHAIN7(64, 384, 64, 14, 3, 1)->UseRealTime();
// clang-format on

    // RegNet's downsampling block, relu(proj(x) + f(x)), f = 1x1 -> grouped 3x3 (stride, groups of 16) -> 1x1 and proj
    // a 1x1 conv of x at the stride: the chain and then proj with f's output as its residual (fused 0), or the chain
    // with proj as its shortcut, [W3 | W4] in one projection (fused 1). Args: {C, M, P, H, stride, threads, fused}.
    void BM_ChainShortcut(benchmark::State& st) {
      const int64_t c = st.range(0), m = st.range(1), pc = st.range(2), h = st.range(3), s = st.range(4);
      const bool fused = st.range(6) != 0;
      static core::ThreadPool pool2(2);
      core::ThreadPool* pool = st.range(5) > 1 ? &pool2 : nullptr;
      const int64_t oh = (h - 1) / s + 1, groups = m / 16;
      const cpu::FusedActivation relu{cpu::GemmActivation::kRelu, 0.f, 0.f};
      const core::Isa isa = core::active_isa();
      core::Tensor x = rnd({1, c, h, h}), w1 = rnd({m, c, 1, 1}), w2 = rnd({m, 16, 3, 3}), w3 = rnd({pc, m, 1, 1});
      core::Tensor w4 = rnd({pc, c, 1, 1}), w34 = rnd({pc, m + c, 1, 1});
      core::Tensor b1 = rnd({m}), b2 = rnd({m}), b3 = rnd({pc}), f = rnd({1, pc, oh, oh}), y = rnd({1, pc, oh, oh});
      auto chain = cpu::FastConvChain::create(
          *cpu::FastConv::create(w1, 1, relu, isa, false), *cpu::FastConv::create(w2, groups, relu, isa, false),
          *cpu::FastConv::create(fused ? w34 : w3, 1, fused ? relu : cpu::FusedActivation{}, isa, false),
          fused ? c : 0);
      auto proj = cpu::FastConv::create(w4, 1, relu, isa, false, h * h);
      if (!chain.is_ok() || !proj.is_ok()) {
        st.SkipWithError("create failed");
        return;
      }
      const ref::ConvParams pp{{s, s}, {1, 1}, {0, 0}, 1};
      for (auto _ : st) {
        if (fused) {
          benchmark::DoNotOptimize(chain->run({s, 1, 1}, x, &b1, &b2, &b3, nullptr, y, pool));
        } else {
          benchmark::DoNotOptimize(chain->run({s, 1, 1}, x, &b1, &b2, &b3, nullptr, f, pool));
          benchmark::DoNotOptimize(proj->run(pp, x, &b3, &f, y, pool));
        }
        benchmark::ClobberMemory();
      }
      const double flops = 2.0 * (h * h * m * c + oh * oh * (9 * 16 * m + pc * (m + c)));
      st.counters["GFLOP/s"] =
          benchmark::Counter(flops * 1e-9 * static_cast<double>(st.iterations()), benchmark::Counter::kIsRate);
    }
    // RegNet-X 400MF's block1-0, block2-0 and block3-0, 1 and 2 threads, unfused and fused.
#define SHORTCUT(C, M, P, H) \
  ->Args({C, M, P, H, 2, 1, 0})->Args({C, M, P, H, 2, 1, 1})->Args({C, M, P, H, 2, 2, 0})->Args({C, M, P, H, 2, 2, 1})
    BENCHMARK(BM_ChainShortcut)
    SHORTCUT(32, 32, 32, 112) SHORTCUT(32, 64, 64, 56) SHORTCUT(64, 160, 160, 28)->UseRealTime();

    // Depthwise (EfficientNet / MobileNet): {C, M, H, K, stride, group, act}; act 7 = SiLU, 2 = Clip.
#define DW(C, H, K, S) ->Args({C, C, H, K, S, C, 7})
    BENCHMARK(BM_Conv)
        ->Args({672, 672, 14, 3, 1, 672, 6})
        ->Args({672, 672, 14, 3, 1, 672, 1})
        ->Args({480, 480, 14, 5, 1, 480, 7})
        ->Args({576, 576, 14, 3, 1, 576, 2}) DW(144, 56, 3, 2) DW(96, 112, 3, 2) DW(144, 56, 3, 1) DW(144, 56, 5, 2)
            DW(240, 28, 5, 1) DW(240, 28, 3, 2) DW(480, 14, 3, 1) DW(672, 14, 5, 1) DW(672, 14, 5, 2) DW(1152, 7, 5, 1)
                DW(1152, 7, 3, 1);
    // The same with ReLU6 (Clip; MobileNet-V2) to separate the convolution from the SiLU epilogue.
#define DWC(C, H, K, S) ->Args({C, C, H, K, S, C, 2})
BENCHMARK(BM_Conv) DWC(144, 56, 3, 2) DWC(96, 112, 3, 2) DWC(144, 56, 3, 1) DWC(32, 112, 3, 1) DWC(192, 28, 3, 1)
    DWC(240, 28, 5, 1) DWC(480, 14, 3, 1);
// MnasNet's depthwise layers (ReLU): the large planes, and the 14x14 / 7x7 ones where the blocked path's transposes
// cost as much as the taps.
#define DWR(C, H, K, S) ->Args({C, C, H, K, S, C, 1})
BENCHMARK(BM_Conv) DWR(32, 112, 3, 1) DWR(48, 112, 3, 2) DWR(72, 56, 3, 1) DWR(72, 56, 5, 2);
// The same three large planes at 2 threads.
BENCHMARK(BM_Conv2T) DWR(32, 112, 3, 1) DWR(48, 112, 3, 2) DWR(72, 56, 3, 1)->UseRealTime();
BENCHMARK(BM_Conv) DWR(480, 14, 3, 1) DWR(576, 14, 3, 1) DWR(480, 14, 5, 1) DWR(1152, 7, 5, 1) DWR(1152, 7, 3, 1);
// Stems: 3 -> 32 / 64 channels, 3x3 stride 2.
BENCHMARK(BM_Conv)->Args({3, 32, 224, 3, 2, 1, 1})->Args({3, 64, 224, 3, 2, 1, 1});
// Pointwise 1x1 (MobileNetV2, SqueezeNet; their int8 twins are qconv_nchw/* in qconv_bench.cc).
#define PW(C, M, H) ->Args({C, M, H, 1, 1, 1, 1})
// clang-format off
BENCHMARK(BM_Conv) PW(16, 96, 112) PW(24, 144, 56) PW(144, 24, 56) PW(32, 192, 28) PW(64, 384, 14) PW(160, 960, 7)
    PW(320, 1280, 7) PW(64, 16, 55) PW(32, 16, 112);
// MobileNetV2's layers on 112x112, 56x56, 28x28, 14x14 and 7x7 planes with their data out of cache, as in a model
// whose weights and activations do not fit the last-level cache (BM_ConvCold: 32 MiB written between runs, untimed).
BENCHMARK(BM_ConvCold)->Args({3, 32, 224, 3, 2, 1, 2}) DWC(32, 112, 3, 1) PW(32, 16, 112) PW(16, 96, 112)
    DWC(96, 112, 3, 2) DWC(144, 56, 3, 2) DWC(192, 28, 3, 1) DWC(576, 14, 3, 1) PW(160, 960, 7) PW(960, 160, 7)
    PW(320, 1280, 7);
// clang-format on
// Pointwise on 7x7 (MnasNet, RegNet, MobileNetV2): the transposed GEMM (output channels in the lanes) against the
// plain one; and at 2 threads.
#define PW7 PW(1152, 192, 7) PW(192, 1152, 7) PW(1152, 320, 7) PW(400, 400, 7) PW(160, 960, 7) PW(960, 160, 7)
BENCHMARK(BM_Conv) PW7;
BENCHMARK(BM_ConvNoHint) PW7;
// Pointwise on 1x1 .. 8x8 planes: where the transposed GEMM stops paying (FastConv::pointwise_transposed_max_plane).
#define PWS(H) PW(400, 400, H) PW(960, 160, H) PW(160, 960, H)
BENCHMARK(BM_Conv) PWS(1) PWS(2) PWS(3) PWS(4) PWS(5) PWS(6) PWS(8);
BENCHMARK(BM_ConvNoHint) PWS(1) PWS(2) PWS(3) PWS(4) PWS(5) PWS(6) PWS(8);
BENCHMARK(BM_Conv2T) PW7;
// RegNet-X's 14x14 1x1 into its last stage (160 -> 400, the first block's expansion), at 1 and 2 threads.
BENCHMARK(BM_Conv) PW(160, 400, 14);
BENCHMARK(BM_Conv2T) PW(160, 400, 14);
// Grouped 3x3 (RegNet-X 400MF, group width 16; stride 2 in the first block of each stage).
BENCHMARK(BM_Conv)
    ->Args({64, 64, 56, 3, 1, 4, 1})
    ->Args({160, 160, 28, 3, 1, 10, 1})
    ->Args({400, 400, 14, 3, 1, 25, 1})
    ->Args({32, 32, 112, 3, 2, 2, 1})
    ->Args({64, 64, 56, 3, 2, 4, 1})
    ->Args({400, 400, 7, 3, 1, 25, 1});
// 1x1 stride 1 around RegNet's first grouped conv (32 -> 32 on 112x112 before it, on 56x56 after).
BENCHMARK(BM_Conv)->Args({32, 32, 112, 1, 1, 1, 1})->Args({32, 32, 56, 1, 1, 1, 0});
// 1x1 stride 2 (RegNet's projection shortcuts, the first block of each stage).
BENCHMARK(BM_Conv)
    ->Args({32, 32, 112, 1, 2, 1, 0})
    ->Args({32, 64, 56, 1, 2, 1, 0})
    ->Args({64, 160, 28, 1, 2, 1, 0})
    ->Args({160, 400, 14, 1, 2, 1, 0});
BENCHMARK(BM_ConvCold)->Args({32, 32, 112, 1, 2, 1, 0});
// Dense 3x3 stride 1 (SqueezeNet expand3x3, ResNet-ish): Winograd vs im2col.
#define D3(C, M, H) ->Args({C, M, H, 3, 1, 1, 1})
BENCHMARK(BM_Conv) D3(16, 64, 55) D3(32, 128, 27) D3(48, 192, 13) D3(64, 256, 13) D3(64, 64, 56) D3(128, 128, 28)
    D3(256, 256, 14);
BENCHMARK(BM_ConvNoWinograd) D3(16, 64, 55) D3(32, 128, 27) D3(48, 192, 13) D3(64, 256, 13) D3(64, 64, 56)
    D3(128, 128, 28) D3(256, 256, 14);

// One int8 QConv (u8 output, clamped) on random data: C -> M channels, H x H input, K x K window,
// stride s, g groups, on isa (depthwise: with its VNNI if dw_vnni); reports GOP/s.
void run_qconv(benchmark::State& st, int64_t c, int64_t m, int64_t h, int64_t k, int64_t s, int64_t g, core::Isa isa,
               bool dw_vnni, bool dw_blocked = true) {
  const int64_t pad = k / 2, oh = (h + 2 * pad - k) / s + 1;
  std::mt19937 rng(1);
  std::vector<uint8_t> x(static_cast<size_t>(c * h * h)), y(static_cast<size_t>(m * oh * oh));
  std::vector<int8_t> w(static_cast<size_t>(m * (c / g) * k * k));
  for (auto& v : x) v = static_cast<uint8_t>(rng());
  for (auto& v : w) v = static_cast<int8_t>(rng());
  cpu::QConvSpec sp;
  sp.m = m;
  sp.group = g;
  sp.c_per_group = c / g;
  sp.kh = sp.kw = k;
  sp.w = w.data();
  sp.scale.assign(static_cast<size_t>(m), 1e-4f);
  sp.bias.assign(static_cast<size_t>(m), 100);
  sp.x_zp = 3;
  sp.y_zp = 0;
  sp.out_max = 200;
  sp.isa = isa;
  sp.dw_vnni = dw_vnni;
  sp.dw_blocked = dw_blocked;
  auto conv = cpu::QConv::create(sp);
  if (!conv.is_ok()) {
    st.SkipWithError(conv.status().to_string().c_str());
    return;
  }
  cpu::QConvShape shape{1, c, h, h, oh, oh, s, s, 1, 1, pad, pad};
  for (auto _ : st) {
    benchmark::DoNotOptimize((*conv)->run(shape, x.data(), y.data(), nullptr));
    benchmark::ClobberMemory();
  }
  const double ops = 2.0 * m * oh * oh * (c / g) * k * k;
  st.counters["GOP/s"] =
      benchmark::Counter(ops * 1e-9 * static_cast<double>(st.iterations()), benchmark::Counter::kIsRate);
  st.SetLabel((*conv)->impl_name());
}

// Int8 depthwise QConv: {C, H, K, stride, path}; path 0 = the active ISA with its VNNI, 1 = the
// active ISA without VNNI, 2 = avx2, 3 = avx2 + avx_vnni, 4 = scalar, 5 / 6 = path 0 / 2 without the
// blocked small-plane kernel (qconv_dw_blocked.h).
void BM_QConvDw(benchmark::State& st) {
  const int64_t c = st.range(0), path = st.range(4);
  run_qconv(st, c, c, st.range(1), st.range(2), st.range(3), c,
            path <= 1 || path == 5   ? core::active_isa()
            : path <= 3 || path == 6 ? core::Isa::kAvx2
                                     : core::Isa::kScalar,
            path == 0 || path == 3 || path == 5, path != 5 && path != 6);
}
#define QDW(C, H, K, S) ->Args({C, H, K, S, 0})->Args({C, H, K, S, 1})->Args({C, H, K, S, 2})->Args({C, H, K, S, 3})
// clang-format off
BENCHMARK(BM_QConvDw) QDW(96, 112, 3, 2) QDW(144, 56, 3, 1) QDW(144, 56, 3, 2) QDW(32, 112, 3, 1) QDW(192, 28, 3, 1)
    QDW(384, 14, 3, 1) QDW(960, 7, 3, 1) QDW(144, 56, 5, 2) QDW(240, 28, 5, 1) QDW(672, 14, 5, 1) QDW(1152, 7, 5, 1);
// clang-format on
// 7x7 outputs (MobileNet-V2 / -V3, MnasNet, EfficientNet-B0): the blocked kernel against the per-plane one.
#define QDWB(C, H, K, S) ->Args({C, H, K, S, 0})->Args({C, H, K, S, 5})->Args({C, H, K, S, 2})->Args({C, H, K, S, 6})
BENCHMARK(BM_QConvDw)
QDWB(960, 7, 3, 1)
QDWB(1152, 7, 5, 1) QDWB(1152, 7, 3, 1) QDWB(576, 14, 3, 2) QDWB(576, 14, 5, 2) QDWB(672, 14, 5, 2) QDWB(576, 7, 5, 1);
// Int8 QConv through the GEMM path or the direct grouped kernel: {C, M, H, K, stride, group}.
void BM_QConv(benchmark::State& st) {
  run_qconv(st, st.range(0), st.range(1), st.range(2), st.range(3), st.range(4), st.range(5), core::active_isa(), true);
}
// RegNet-X 400MF's grouped 3x3 (16 channels per group), and 1x1 / stem shapes for scale.
BENCHMARK(BM_QConv)
    ->Args({64, 64, 56, 3, 2, 4})
    ->Args({64, 64, 28, 3, 1, 4})
    ->Args({160, 160, 14, 3, 1, 10})
    ->Args({400, 400, 7, 3, 1, 25})
    ->Args({32, 32, 112, 3, 2, 2})
    ->Args({96, 576, 14, 1, 1, 1})
    ->Args({3, 32, 224, 3, 2, 1});
// The float depthwise kernel on the same shapes with Clip (as in MobileNet-V2), for the ratio.
#define DWC(C, H, K, S) ->Args({C, C, H, K, S, C, 2})
BENCHMARK(BM_Conv) DWC(96, 112, 3, 2) DWC(144, 56, 3, 1) DWC(144, 56, 3, 2) DWC(32, 112, 3, 1) DWC(192, 28, 3, 1)
    DWC(384, 14, 3, 1) DWC(960, 7, 3, 1) DWC(144, 56, 5, 2) DWC(240, 28, 5, 1) DWC(672, 14, 5, 1) DWC(1152, 7, 5, 1);

BENCHMARK(BM_Conv2T) DW(144, 56, 3, 2) DW(672, 14, 5, 1) DW(1152, 7, 3, 1) D3(32, 128, 27) D3(48, 192, 13) D3(64, 256, 13) D3(256, 256, 14)
    ->Args({400, 400, 7, 3, 1, 25, 1})
    ->Args({3, 32, 224, 3, 2, 1, 1})
    ->Args({3, 64, 224, 3, 2, 1, 1})
    ->Args({160, 160, 28, 3, 1, 10, 1})
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

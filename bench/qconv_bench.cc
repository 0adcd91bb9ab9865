// kestrel.QConv (int8 NCHW convolution, requantized u8 output) on the CNNs' gemm-path shapes,
// counter GOPS (2 ops per multiply-add); compare with qconv/sgemm_conv_layout (float) in
// qgemm_bench.cc or FastConv in kestrel_conv_bench. Linked into kestrel_kernel_bench.
//
//   kestrel_kernel_bench --benchmark_filter='qconv_nchw' --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cpu/qconv/qconv.h"
#include "kernels/cpu/qops/qops.h"

namespace kestrel::bench {
namespace {

using kernels::cpu::QgemmIsa;

struct QConvCase {
  const char* name;
  int64_t c, h, w, m, k, stride, pad;
};

const QConvCase kQConvCases[] = {
    {"mv2_stem_3x3s2_3to32_224", 3, 224, 224, 32, 3, 2, 1}, {"mv2_1x1_16to96_112", 16, 112, 112, 96, 1, 1, 0},
    {"mv2_1x1_24to144_56", 24, 56, 56, 144, 1, 1, 0},       {"mv2_1x1_144to24_56", 144, 56, 56, 24, 1, 1, 0},
    {"mv2_1x1_32to192_28", 32, 28, 28, 192, 1, 1, 0},       {"mv2_1x1_64to384_14", 64, 14, 14, 384, 1, 1, 0},
    {"mv2_1x1_160to960_7", 160, 7, 7, 960, 1, 1, 0},        {"mv2_1x1_320to1280_7", 320, 7, 7, 1280, 1, 1, 0},
    {"sq_conv1_3x3s2_3to64_224", 3, 224, 224, 64, 3, 2, 0}, {"sq_1x1_64to16_55", 64, 55, 55, 16, 1, 1, 0},
    {"sq_3x3_16to64_55", 16, 55, 55, 64, 3, 1, 1},          {"sq_3x3_64to256_13", 64, 13, 13, 256, 3, 1, 1},
    {"r50_3x3_64to64_56", 64, 56, 56, 64, 3, 1, 1},
};

void bm_qconv(benchmark::State& st, QConvCase cs, QgemmIsa isa, int threads) {
  if (!kernels::cpu::qgemm_isa_available(isa)) {
    st.SkipWithError("ISA not available on this CPU");
    return;
  }
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> du(0, 255), ds(-128, 127);
  const int64_t oh = (cs.h + 2 * cs.pad - cs.k) / cs.stride + 1, ow = (cs.w + 2 * cs.pad - cs.k) / cs.stride + 1;
  std::vector<uint8_t> x(static_cast<size_t>(cs.c * cs.h * cs.w));
  std::vector<int8_t> w(static_cast<size_t>(cs.m * cs.c * cs.k * cs.k));
  for (auto& v : x) v = static_cast<uint8_t>(du(rng));
  for (auto& v : w) v = static_cast<int8_t>(ds(rng));
  kernels::cpu::QConvSpec sp;
  sp.m = cs.m;
  sp.c_per_group = cs.c;
  sp.kh = sp.kw = cs.k;
  sp.w = w.data();
  sp.scale.assign(static_cast<size_t>(cs.m), 1e-4f);
  sp.bias.assign(static_cast<size_t>(cs.m), 100);
  sp.x_zp = 128;
  sp.y_zp = 7;
  sp.out_max = 200;
  sp.qgemm_isa = isa;
  auto conv = kernels::cpu::QConv::create(sp);
  if (!conv.is_ok()) {
    st.SkipWithError(conv.status().to_string().c_str());
    return;
  }
  kernels::cpu::QConvShape s{1, cs.c, cs.h, cs.w, oh, ow, cs.stride, cs.stride, 1, 1, cs.pad, cs.pad};
  std::vector<uint8_t> y(static_cast<size_t>(cs.m * oh * ow));
  static core::ThreadPool pool2(2);
  core::ThreadPool* pool = threads > 1 ? &pool2 : nullptr;
  for (auto _ : st) {
    auto status = (*conv)->run(s, x.data(), y.data(), pool);
    if (!status.is_ok()) {
      st.SkipWithError(status.to_string().c_str());
      return;
    }
    benchmark::ClobberMemory();
  }
  const double ops = 2.0 * static_cast<double>(oh * ow * cs.m * cs.c * cs.k * cs.k);
  st.counters["GOPS"] = benchmark::Counter(ops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

int register_qconv() {
  for (const QConvCase& c : kQConvCases)
    for (int threads : {1, 2})
      for (QgemmIsa isa : {QgemmIsa::kAvx512Vnni, QgemmIsa::kAvxVnni, QgemmIsa::kAvx2}) {
        if (threads > 1 && isa != QgemmIsa::kAvx512Vnni) continue;
        benchmark::RegisterBenchmark((std::string("qconv_nchw/") + kernels::cpu::qgemm_isa_name(isa) + "/" + c.name +
                                      "/t" + std::to_string(threads))
                                         .c_str(),
                                     bm_qconv, c, isa, threads)
            ->UseRealTime();
      }
  return 0;
}

const int kQConvRegistered = register_qconv();

// kestrel.QMul / QAdd on u8: the squeeze-excite gate (x [1, C, H, W] times a per-channel [1, C, 1, 1])
// and a same-shape residual add; counter Gelem/s (output elements).
struct QBinaryCase {
  const char* name;
  int64_t c, hw;
  bool broadcast;
};

void bm_qbinary(benchmark::State& st, QBinaryCase cs, kernels::cpu::QBinaryOp op) {
  std::mt19937 rng(5);
  std::vector<uint8_t> a(static_cast<size_t>(cs.c * cs.hw)), b(static_cast<size_t>(cs.broadcast ? cs.c : cs.c * cs.hw)),
      y(a.size());
  for (auto& v : a) v = static_cast<uint8_t>(rng());
  for (auto& v : b) v = static_cast<uint8_t>(rng());
  kernels::cpu::QBinaryParams p;
  p.op = op;
  p.a_scale = 0.02f;
  p.b_scale = 0.004f;
  p.y_scale = 0.03f;
  p.a_zp = 100;
  p.b_zp = 0;
  p.y_zp = 90;
  const core::Dims ad{1, cs.c, cs.hw}, bd = cs.broadcast ? core::Dims{1, cs.c, 1} : core::Dims{1, cs.c, cs.hw};
  for (auto _ : st) {
    auto status = kernels::cpu::qbinary_u8(p, a.data(), ad, b.data(), bd, y.data(), ad, nullptr);
    if (!status.is_ok()) {
      st.SkipWithError(status.to_string().c_str());
      return;
    }
    benchmark::ClobberMemory();
  }
  st.counters["Gelem"] =
      benchmark::Counter(static_cast<double>(cs.c * cs.hw) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

int register_qbinary() {
  const QBinaryCase cases[] = {{"se_576x7x7", 576, 49, true},
                               {"se_240x14x14", 240, 196, true},
                               {"se_96x28x28", 96, 784, true},
                               {"same_96x28x28", 96, 784, false}};
  for (const QBinaryCase& c : cases)
    for (auto op : {kernels::cpu::QBinaryOp::kMul, kernels::cpu::QBinaryOp::kAdd})
      benchmark::RegisterBenchmark((std::string("qbinary/") + (op == kernels::cpu::QBinaryOp::kMul ? "mul/" : "add/") +
                                    c.name)
                                       .c_str(),
                                   bm_qbinary, c, op)
          ->UseRealTime();
  return 0;
}

const int kQBinaryRegistered = register_qbinary();

// The u8 MaxPool of int8 SqueezeNet (3x3 stride 2, ceil_mode: 111 -> 55, 55 -> 27, 27 -> 13), one thread, on the
// active ISA.
void bm_qmaxpool(benchmark::State& st, int64_t c, int64_t in, int64_t out) {
  std::mt19937 rng(5);
  kernels::cpu::QMaxPoolShape s;
  s.planes = c;
  s.ih = s.iw = in;
  s.oh = s.ow = out;
  s.kh = s.kw = 3;
  s.sh = s.sw = 2;
  std::vector<uint8_t> x(static_cast<size_t>(c * in * in)), y(static_cast<size_t>(c * out * out));
  for (auto& v : x) v = static_cast<uint8_t>(rng());
  for (auto _ : st) {
    auto status = kernels::cpu::qmax_pool_u8(s, x.data(), y.data(), nullptr);
    if (!status.is_ok()) {
      st.SkipWithError(status.to_string().c_str());
      return;
    }
    benchmark::ClobberMemory();
  }
  st.counters["Gelem"] =
      benchmark::Counter(static_cast<double>(c * in * in) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_CAPTURE(bm_qmaxpool, squeezenet_64x111, 64, 111, 55);
BENCHMARK_CAPTURE(bm_qmaxpool, squeezenet_128x55, 128, 55, 27);
BENCHMARK_CAPTURE(bm_qmaxpool, squeezenet_256x27, 256, 27, 13);

}  // namespace
}  // namespace kestrel::bench

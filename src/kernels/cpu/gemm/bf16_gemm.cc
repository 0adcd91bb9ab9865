// bf16 GEMM: weight packing, dispatch, column blocks over threads (the tiles: bf16_gemm_avx512bf16.cc).
#include "kernels/cpu/gemm/bf16_gemm.h"

#include <algorithm>
#include <atomic>
#include <new>

#include "core/cpu_features.h"
#include "core/str_util.h"
#include "core/thread_scratch.h"

namespace kestrel::kernels::cpu {

int64_t bf16_packed_a_words(int64_t m, int64_t k) {
  return (m + kBf16Mr - 1) / kBf16Mr * kBf16Mr * ((k + 1) / 2);
}

void bf16_pack_a(int64_t m, int64_t k, const float* a, int64_t lda, const float* col_scale, uint32_t* dst) {
  const int64_t kp = (k + 1) / 2;
  std::fill(dst, dst + bf16_packed_a_words(m, k), 0u);
  for (int64_t i = 0; i < m; ++i) {
    uint32_t* sliver = dst + (i / kBf16Mr) * kp * kBf16Mr + i % kBf16Mr;
    const float* row = a + i * lda;
    for (int64_t p = 0; p < kp; ++p) {
      const int64_t j = 2 * p;
      const float lo = col_scale ? row[j] * col_scale[j] : row[j];
      const float hi = j + 1 >= k ? 0.f : col_scale ? row[j + 1] * col_scale[j + 1] : row[j + 1];
      sliver[p * kBf16Mr] = bf16_bits(lo) | (static_cast<uint32_t>(bf16_bits(hi)) << 16);
    }
  }
}

Result<PackedBf16A> PackedBf16A::pack(int64_t m, int64_t k, const float* a, int64_t lda) {
  if (m < 1 || k < 1 || lda < k || !a || m > (int64_t{1} << 24) || k > (int64_t{1} << 24))
    return core::invalid_argument(core::str_cat("bf16 gemm: bad weights [", m, ", ", k, "] (lda ", lda, ")"));
  auto data = std::make_shared<std::vector<uint32_t>>();
  try {
    data->resize(static_cast<size_t>(bf16_packed_a_words(m, k)));
  } catch (const std::bad_alloc&) {
    return Status(core::StatusCode::kOutOfMemory, "bf16 gemm: cannot allocate packed weights");
  }
  bf16_pack_a(m, k, a, lda, nullptr, data->data());
  PackedBf16A r;
  r.data_ = std::move(data);
  r.m_ = m;
  r.k_ = k;
  return r;
}

namespace {
bf16_detail::BlockFn block_fn() {
#if defined(__x86_64__) || defined(_M_X64)
  const core::CpuFeatures& f = core::cpu_features();
  if (f.avx512_bf16 && core::detected_isa() >= core::Isa::kAvx512) return bf16_detail::block_fn_avx512bf16();
#endif
  return nullptr;
}
}  // namespace

bool bf16_gemm_available() {
  return block_fn() != nullptr;
}

namespace {
core::ScratchSlot g_bpack;  // per-thread packed B block
}  // namespace

Status bf16_gemm(const uint32_t* a, int64_t m, int64_t k, int64_t n, const float* b, int64_t ldb, float* c, int64_t ldc,
                 const GemmEpilogue& ep, core::ThreadPool* pool) {
  const bf16_detail::BlockFn fn = block_fn();
  if (!fn) return core::unsupported("bf16 gemm: this CPU has no AVX512_BF16");
  if (!a || m < 1 || k < 1) return core::invalid_argument("bf16 gemm: no packed weights");
  if (ep.bias_kind == GemmBias::kPerColumn) return core::unsupported("bf16 gemm: per-column bias");
  if (n < 0 || ldb < n || ldc < n || (ep.residual && ep.ldr < n))
    return core::invalid_argument(core::str_cat("bf16 gemm: bad N ", n, " or leading dimensions"));
  if (n == 0) return Status::ok();
  constexpr int64_t kCols = bf16_detail::kBf16BlockCols;
  const int64_t blocks = (n + kCols - 1) / kCols;
  const int64_t kp = (k + 1) / 2;
  const size_t words = static_cast<size_t>(kp * kCols);
  std::atomic<bool> oom{false};
  core::parallel_for(pool, blocks, 1, [&](int64_t b0, int64_t b1) {
    uint32_t* bpack = g_bpack.get_as<uint32_t>(words);
    if (!bpack) {
      oom.store(true);
      return;
    }
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t j0 = blk * kCols;
      bf16_detail::Block t;
      t.a = a;
      t.m = m;
      t.b = b + j0;
      t.ldb = ldb;
      t.k = k;
      t.n = std::min(kCols, n - j0);
      t.bpack = bpack;
      t.c = c + j0;
      t.ldc = ldc;
      t.bias = ep.bias_kind == GemmBias::kPerRow ? ep.bias : nullptr;
      t.residual = ep.residual ? ep.residual + j0 : nullptr;
      t.ldr = ep.ldr;
      t.activation = ep.activation;
      t.act_alpha = ep.act_alpha;
      t.act_beta = ep.act_beta;
      fn(t);
    }
  });
  if (oom.load()) return Status(core::StatusCode::kOutOfMemory, "bf16 gemm: cannot allocate packing scratch");
  return Status::ok();
}

}  // namespace kestrel::kernels::cpu

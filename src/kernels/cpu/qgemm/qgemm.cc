// Int8 GEMM driver: ISA choice, B packing with column sums, argument checks, A blocking (packed
// into per-thread scratch), and the split of C into tasks for the thread pool.
#include "kernels/cpu/qgemm/qgemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "core/buffer.h"
#include "core/str_util.h"
#include "core/thread_scratch.h"
#include "kernels/cpu/qgemm/qgemm_ukernel.h"

namespace kestrel::kernels::cpu {

using qgemm_detail::MacroTile;
using qgemm_detail::UkernelTable;

namespace {

constexpr int64_t kMaxK = 65536;  // K * 255 * 128 < 2^31: every exact A * B fits in int32

const UkernelTable* table_for(QgemmIsa isa) {
  switch (isa) {
    case QgemmIsa::kScalar:
      return qgemm_detail::qgemm_table_scalar();
#if defined(__x86_64__) || defined(_M_X64)
    case QgemmIsa::kAvx2:
      return qgemm_detail::qgemm_table_avx2();
    case QgemmIsa::kAvxVnni:
      return qgemm_detail::qgemm_table_avxvnni();
    case QgemmIsa::kAvx512Vnni:
      return qgemm_detail::qgemm_table_avx512vnni();
#else
    default:
      return nullptr;
#endif
  }
  return nullptr;
}

bool cpu_has(QgemmIsa isa) {
  const auto& f = core::cpu_features();
  switch (isa) {
    case QgemmIsa::kScalar:
      return true;
    case QgemmIsa::kAvx2:
      return core::detected_isa() >= core::Isa::kAvx2;
    case QgemmIsa::kAvxVnni:
      return core::detected_isa() >= core::Isa::kAvx2 && f.avx_vnni;
    case QgemmIsa::kAvx512Vnni:
      return core::detected_isa() >= core::Isa::kAvx512 && f.avx512_vnni;
  }
  return false;
}

Result<const UkernelTable*> resolve(QgemmIsa isa) {
  if (!cpu_has(isa))
    return core::unsupported(core::str_cat("qgemm: this CPU cannot run ", qgemm_isa_name(isa), " kernels"));
  const UkernelTable* t = table_for(isa);
  if (!t) return core::unsupported(core::str_cat("qgemm: no ", qgemm_isa_name(isa), " kernels in this build"));
  return t;
}

// Per-thread scratch for packed A blocks (core/thread_scratch.h): grows to the largest request, then is reused.
core::ScratchSlot g_pack_scratch;

uint8_t* scratch_bytes(size_t bytes) { return g_pack_scratch.get_as<uint8_t>(bytes); }

bool fits(int64_t rows, int64_t cols, int64_t ld) {
  if (rows == 0 || cols == 0) return true;
  int64_t t;
  return !__builtin_mul_overflow(rows - 1, ld, &t) && !__builtin_add_overflow(t, cols, &t);
}

Status check_matrix(const char* fn, const char* name, const void* data, int64_t rows, int64_t cols, int64_t ld) {
  if (ld < cols || ld < 0)
    return core::invalid_argument(core::str_cat(fn, ": ld", name, " = ", ld, " is smaller than the row length ", cols));
  if (rows > 0 && cols > 0 && !data) return core::invalid_argument(core::str_cat(fn, ": ", name, " is null"));
  if (!fits(rows, cols, ld)) return core::out_of_range(core::str_cat(fn, ": ", name, " extent overflows"));
  return Status::ok();
}

struct Problem {
  const UkernelTable* uk = nullptr;
  int64_t m = 0, n = 0, k = 0;
  const uint8_t* a = nullptr;
  int64_t lda = 0;
  const PackedBS8* b = nullptr;
  int64_t b_sliver_stride = 0;
  uint8_t* c = nullptr;
  int64_t ldc = 0;
  int esize = 4;
  int64_t mc = 0;  // rows per A block
  int32_t a_zero_point = 0;
  const QgemmEpilogue* ep = nullptr;
  const qgemm_detail::Epilogue* uep = nullptr;
};

// C[m0:m1, n0:n1] (m0 a multiple of MR, n0 of NR): A blocks of mc rows (packed once, or read in
// place), each swept against the task's B slivers.
bool run_block(const Problem& p, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  const UkernelTable& uk = *p.uk;
  const int64_t groups = (p.k + uk.kg - 1) / uk.kg;
  uint8_t* a_buf =
      scratch_bytes(static_cast<size_t>((p.mc + uk.mr - 1) / uk.mr * uk.mr * std::max<int64_t>(groups, 1) * 4));
  if (!a_buf) return false;
  const QgemmEpilogue& ep = *p.ep;
  MacroTile t;
  t.k = p.k;
  t.b = p.b->data() + (n0 / uk.nr) * p.b_sliver_stride;
  t.b_sliver_stride = p.b_sliver_stride;
  t.col_sums = p.b->col_sums() + n0;
  t.bias = ep.bias ? ep.bias + n0 : nullptr;
  t.a_zero_point = p.a_zero_point;
  const int64_t pc = ep.per_column ? n0 : 0;
  t.scale = ep.scale ? ep.scale + pc : nullptr;
  t.multiplier = ep.multiplier ? ep.multiplier + pc : nullptr;
  t.shift = ep.shift ? ep.shift + pc : nullptr;
  t.per_column = ep.per_column;
  t.ep = p.uep;
  t.ldc = p.ldc;
  t.transpose_c = ep.transpose_c;
  t.nc = n1 - n0;
  for (int64_t i = m0; i < m1; i += p.mc) {
    t.mc = std::min(p.mc, m1 - i);
    if (p.k > 0) uk.pack_a(p.a + i * p.lda, p.lda, t.mc, p.k, a_buf);
    t.a = a_buf;
    t.c = p.c + (ep.transpose_c ? n0 * p.ldc + i : i * p.ldc + n0) * p.esize;
    uk.macro(t);
  }
  return true;
}

}  // namespace

const char* qgemm_isa_name(QgemmIsa isa) {
  switch (isa) {
    case QgemmIsa::kScalar:
      return "scalar";
    case QgemmIsa::kAvx2:
      return "avx2";
    case QgemmIsa::kAvxVnni:
      return "avxvnni";
    case QgemmIsa::kAvx512Vnni:
      return "avx512vnni";
  }
  return "?";
}

bool qgemm_isa_available(QgemmIsa isa) {
  return cpu_has(isa) && table_for(isa) != nullptr;
}

QgemmIsa qgemm_active_isa() {
  const core::Isa active = core::active_isa();
  if (active >= core::Isa::kAvx512 && qgemm_isa_available(QgemmIsa::kAvx512Vnni)) return QgemmIsa::kAvx512Vnni;
  if (active >= core::Isa::kAvx2 && qgemm_isa_available(QgemmIsa::kAvxVnni)) return QgemmIsa::kAvxVnni;
  if (active >= core::Isa::kAvx2 && qgemm_isa_available(QgemmIsa::kAvx2)) return QgemmIsa::kAvx2;
  return QgemmIsa::kScalar;
}

Result<QgemmTileShape> qgemm_tile_shape(QgemmIsa isa) {
  KESTREL_ASSIGN_OR_RETURN(const UkernelTable* t, resolve(isa));
  return QgemmTileShape{t->mr, t->nr};
}

Result<PackedBS8> pack_b_s8(int64_t k, int64_t n, const int8_t* b, int64_t ldb, bool trans_b,
                            std::optional<QgemmIsa> isa) {
  KESTREL_ASSIGN_OR_RETURN(const UkernelTable* t, resolve(isa ? *isa : qgemm_active_isa()));
  if (n < 0 || k < 0) return core::invalid_argument(core::str_cat("pack_b_s8: negative size k=", k, " n=", n));
  if (k > kMaxK) return core::out_of_range(core::str_cat("pack_b_s8: k = ", k, " exceeds ", kMaxK));
  KESTREL_RETURN_IF_ERROR(check_matrix("pack_b_s8", "b", b, trans_b ? n : k, trans_b ? k : n, ldb));
  const int64_t slivers = (n + t->nr - 1) / t->nr;
  const int64_t groups = (k + t->kg - 1) / t->kg;
  int64_t data_bytes;
  if (__builtin_mul_overflow(slivers * t->nr * 4, groups, &data_bytes) || data_bytes > (int64_t{1} << 40))
    return core::out_of_range("pack_b_s8: too large");
  data_bytes = (data_bytes + 63) / 64 * 64;
  const int64_t sums_bytes = slivers * t->nr * 4;
  PackedBS8 p;
  KESTREL_ASSIGN_OR_RETURN(p.storage_,
                           core::allocate_aligned(static_cast<size_t>(std::max<int64_t>(data_bytes + sums_bytes, 64))));
  uint8_t* dst = static_cast<uint8_t*>(p.storage_.get());
  int32_t* sums = reinterpret_cast<int32_t*>(dst + data_bytes);
  std::memset(sums, 0, static_cast<size_t>(sums_bytes));
  if (n > 0 && k > 0) {
    t->pack_b(b, ldb, trans_b, k, n, dst);
    for (int64_t j = 0; j < n; ++j) {
      int32_t s = 0;
      for (int64_t i = 0; i < k; ++i) s += trans_b ? b[j * ldb + i] : b[i * ldb + j];
      sums[j] = s;
    }
  }
  p.data_ = dst;
  p.col_sums_ = sums;
  p.k_ = k;
  p.n_ = n;
  p.bytes_ = static_cast<size_t>(data_bytes + sums_bytes);
  p.isa_ = t->isa;
  return p;
}

Status quantize_multiplier(double real, int32_t* multiplier, int32_t* shift) {
  if (!std::isfinite(real) || real <= 0)
    return core::invalid_argument(core::str_cat("quantize_multiplier: ", real, " is not a finite positive number"));
  int e = 0;
  const double frac = std::frexp(real, &e);  // real = frac * 2^e, frac in [0.5, 1)
  int64_t q = std::llround(frac * static_cast<double>(int64_t{1} << 31));
  if (q == (int64_t{1} << 31)) {
    q /= 2;
    ++e;
  }
  const int s = 31 - e;
  if (s < 1 || s > 62)
    return core::out_of_range(core::str_cat("quantize_multiplier: ", real, " needs shift ", s, " outside [1, 62]"));
  *multiplier = static_cast<int32_t>(q);
  *shift = s;
  return Status::ok();
}

Status qgemm_u8s8(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, uint8_t a_zero_point,
                  const PackedBS8& b, void* c, int64_t ldc, const QgemmEpilogue& ep, const QgemmContext& ctx) {
  if (m < 0 || n < 0 || k < 0)
    return core::invalid_argument(core::str_cat("qgemm: negative size m=", m, " n=", n, " k=", k));
  if (b.empty() || b.k() != k || b.n() != n)
    return core::invalid_argument(
        core::str_cat("qgemm: packed B is ", b.k(), "x", b.n(), ", the call needs ", k, "x", n));
  KESTREL_ASSIGN_OR_RETURN(const UkernelTable* uk, resolve(b.isa()));
  KESTREL_RETURN_IF_ERROR(check_matrix("qgemm", "a", a, m, k, lda));
  KESTREL_RETURN_IF_ERROR(ep.transpose_c ? check_matrix("qgemm", "c", c, n, m, ldc)
                                         : check_matrix("qgemm", "c", c, m, n, ldc));

  qgemm_detail::Epilogue uep;
  uep.output = ep.output;
  uep.requant = ep.requant;
  const int64_t params = ep.per_column ? n : 1;
  const bool quantized = ep.output == QgemmOutput::kU8 || ep.output == QgemmOutput::kS8;
  if (ep.output == QgemmOutput::kF32 || (quantized && ep.requant == QgemmRequant::kFloat)) {
    if (!ep.scale) return core::invalid_argument("qgemm: the epilogue needs scale");
  }
  if (quantized) {
    const int32_t tmin = ep.output == QgemmOutput::kU8 ? 0 : -128, tmax = ep.output == QgemmOutput::kU8 ? 255 : 127;
    if (ep.out_zero_point < tmin || ep.out_zero_point > tmax)
      return core::invalid_argument(core::str_cat("qgemm: output zero point ", ep.out_zero_point,
                                                  " outside the output type's range [", tmin, ", ", tmax, "]"));
    uep.lo = std::max(tmin, ep.out_min);
    uep.hi = std::min(tmax, ep.out_max);
    if (uep.lo > uep.hi)
      return core::invalid_argument(core::str_cat("qgemm: empty output range [", uep.lo, ", ", uep.hi, "]"));
    uep.zero_point = ep.out_zero_point;
    uep.lo_f = static_cast<float>(uep.lo - uep.zero_point);
    uep.hi_f = static_cast<float>(uep.hi - uep.zero_point);
    if (ep.requant == QgemmRequant::kFixedPoint) {
      if (!ep.multiplier || !ep.shift)
        return core::invalid_argument("qgemm: fixed-point requantization needs multiplier and shift");
      for (int64_t j = 0; j < params; ++j) {
        if (ep.multiplier[j] <= 0 || ep.shift[j] < 1 || ep.shift[j] > 62)
          return core::invalid_argument(core::str_cat("qgemm: column ", j, ": multiplier ", ep.multiplier[j],
                                                      " must be > 0 and shift ", ep.shift[j], " in [1, 62]"));
      }
    }
  }
  if (m == 0 || n == 0) return Status::ok();

  Problem p;
  p.uk = uk;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = a;
  p.lda = lda;
  p.b = &b;
  p.b_sliver_stride = (k + uk->kg - 1) / uk->kg * uk->nr * 4;
  p.c = static_cast<uint8_t*>(c);
  p.ldc = ldc;
  p.esize = quantized ? 1 : 4;
  p.a_zero_point = a_zero_point;
  p.ep = &ep;
  p.uep = &uep;
  // An A block is swept once per B sliver: keep it within half of L2.
  const int64_t l2 = std::clamp<int64_t>(core::cpu_features().l2_bytes, 128 << 10, 4 << 20);
  const int64_t row_bytes = std::max<int64_t>((k + 3) / 4 * 4, 4) * (uk->kg == 2 ? 2 : 1);
  p.mc = std::max<int64_t>(uk->mr, l2 / 2 / row_bytes / uk->mr * uk->mr);

  // Tasks: C is cut into tm x tn tiles (multiples of MR x NR), rows first (B is shared by all and
  // stays in cache), a few more tasks than threads so that a descheduled thread's share is taken
  // by the others. Below ~1 M multiply-adds a second thread costs more than it saves.
  const int threads = ctx.pool ? ctx.pool->num_threads() : 1;
  const int64_t sm = (m + uk->mr - 1) / uk->mr, sn = (n + uk->nr - 1) / uk->nr;
  int64_t tm = 1, tn = 1;
  if (threads > 1 && static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) >= 1e6) {
    const int64_t want = 3 * threads;
    tm = std::min(sm, want);
    tn = std::min(sn, (want + tm - 1) / tm);
  }
  std::atomic<bool> failed{false};
  auto run_task = [&](int64_t task) {
    const int64_t ti = task / tn, tj = task % tn;
    const int64_t m0 = std::min(m, sm * ti / tm * uk->mr), m1 = std::min(m, sm * (ti + 1) / tm * uk->mr);
    const int64_t n0 = std::min(n, sn * tj / tn * uk->nr), n1 = std::min(n, sn * (tj + 1) / tn * uk->nr);
    if (m0 >= m1 || n0 >= n1) return;
    if (!run_block(p, m0, m1, n0, n1)) failed.store(true);
  };
  const int64_t tasks = tm * tn;
  core::run_tasks(ctx.pool, tasks, run_task);
  if (failed.load()) return Status(core::StatusCode::kOutOfMemory, "qgemm: cannot allocate packing scratch");
  return Status::ok();
}

}  // namespace kestrel::kernels::cpu

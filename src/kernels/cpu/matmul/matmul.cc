// Fast f32 Gemm and MatMul over sgemm.
#include "kernels/cpu/matmul/matmul.h"

#include <algorithm>
#include <span>
#include <vector>

#include "core/str_util.h"

namespace kestrel::kernels::cpu {

using core::str_cat;

const char* sgemm_impl_name(core::Isa isa) {
  switch (isa) {
    case core::Isa::kScalar:
      return "sgemm.scalar";
    case core::Isa::kAvx2:
      return "sgemm.avx2";
    case core::Isa::kAvx512:
      return "sgemm.avx512";
  }
  return "sgemm";
}

namespace {

Status check_f32(const char* op, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t && t->dtype() != core::DType::kF32)
      return core::invalid_argument(str_cat(op, ": fast kernel needs f32, got ", t->type_string()));
  return Status::ok();
}

GemmEpilogue epilogue_for(const FusedActivation& a) {
  GemmEpilogue e;
  e.activation = a.kind;
  e.act_alpha = a.alpha;
  e.act_beta = a.beta;
  return e;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Gemm

Result<FastGemm> FastGemm::create(const GemmOpParams& p, const Tensor* b, core::Isa isa) {
  FastGemm g;
  g.p_ = p;
  g.isa_ = isa;
  if (b && b->dtype() == core::DType::kF32 && b->rank() == 2) {
    const int64_t k = p.trans_b ? b->dim(1) : b->dim(0), n = p.trans_b ? b->dim(0) : b->dim(1);
    KESTREL_ASSIGN_OR_RETURN(PackedB packed, pack_b(k, n, b->data<float>(), b->dim(1), p.trans_b, isa));
    g.packed_b_ = std::move(packed);
    g.packed_k_ = k;
    g.packed_n_ = n;
  }
  return g;
}

const char* FastGemm::name() const {
  return sgemm_impl_name(isa_);
}

Status FastGemm::run(const Tensor& a, const Tensor& b, const Tensor* c, const Tensor* z, Tensor& y,
                     core::ThreadPool* pool) const {
  KESTREL_RETURN_IF_ERROR(check_f32("Gemm", {&a, &b, c, z, &y}));
  if (a.rank() != 2 || b.rank() != 2 || y.rank() != 2)
    return core::invalid_argument(str_cat("Gemm: A ", a.type_string(), " and B ", b.type_string(), " must be 2-D"));
  const int64_t m = p_.trans_a ? a.dim(1) : a.dim(0), k = p_.trans_a ? a.dim(0) : a.dim(1);
  const int64_t kb = p_.trans_b ? b.dim(1) : b.dim(0), n = p_.trans_b ? b.dim(0) : b.dim(1);
  if (k != kb)
    return core::invalid_argument(str_cat("Gemm: inner dims differ: A ", a.type_string(), ", B ", b.type_string()));
  if (y.dim(0) != m || y.dim(1) != n)
    return core::invalid_argument(str_cat("Gemm: output ", y.type_string(), " must be [", m, ",", n, "]"));
  GemmEpilogue ep = epilogue_for(p_.activation);
  if (z) {
    if (z->dims() != y.dims())
      return core::invalid_argument(str_cat("Gemm: residual ", z->type_string(), " must be ", y.type_string()));
    ep.residual = z->data<float>();
    ep.ldr = n;
  }
  float* yd = y.data<float>();
  float beta = 0.f;
  if (c && p_.beta != 0.f && m > 0 && n > 0) {
    const int64_t cr = c->rank() == 2 ? c->dim(0) : 1, cc = c->rank() >= 1 ? c->dim(-1) : 1;
    if (c->rank() > 2 || (cr != 1 && cr != m) || (cc != 1 && cc != n))
      return core::invalid_argument(str_cat("Gemm: C ", c->type_string(), " does not broadcast to [", m, ",", n, "]"));
    const float* cd = c->data<float>();
    if (p_.beta == 1.f && cr == 1 && cc == n && n > 1) {
      ep.bias_kind = GemmBias::kPerColumn;
      ep.bias = cd;
    } else if (p_.beta == 1.f && cr == m && cc == 1 && m > 1) {
      ep.bias_kind = GemmBias::kPerRow;
      ep.bias = cd;
    } else if (p_.beta == 1.f && cr == m && cc == n && !z) {
      ep.residual = cd;
      ep.ldr = n;
    } else {
      // Any other broadcast or beta: Y = beta * C first, then accumulate into it.
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) yd[i * n + j] = p_.beta * cd[(cr == 1 ? 0 : i) * cc + (cc == 1 ? 0 : j)];
      beta = 1.f;
    }
  }
  SgemmContext ctx{pool, isa_};
  const SgemmA sa(a.data<float>(), a.dim(1), p_.trans_a);
  if (packed_b_ && packed_k_ == k && packed_n_ == n)
    return sgemm(m, n, k, p_.alpha, sa, SgemmB(*packed_b_), beta, yd, n, ep, ctx);
  return sgemm(m, n, k, p_.alpha, sa, SgemmB(b.data<float>(), b.dim(1), p_.trans_b), beta, yd, n, ep, ctx);
}

// ---------------------------------------------------------------------------------------------
// MatMul

Result<FastMatMul> FastMatMul::create(const Tensor* b, FusedActivation act, core::Isa isa) {
  FastMatMul mm;
  mm.act_ = act;
  mm.isa_ = isa;
  if (b && b->dtype() == core::DType::kF32 && (b->rank() == 1 || b->rank() == 2)) {
    const int64_t k = b->dim(0), n = b->rank() == 2 ? b->dim(1) : 1;
    KESTREL_ASSIGN_OR_RETURN(PackedB packed, pack_b(k, n, b->data<float>(), n, false, isa));
    mm.packed_b_ = std::move(packed);
    mm.packed_k_ = k;
    mm.packed_n_ = n;
  }
  return mm;
}

const char* FastMatMul::name() const {
  return sgemm_impl_name(isa_);
}

Status FastMatMul::run(const Tensor& a, const Tensor& b, const Tensor* bias, const Tensor* z, Tensor& y,
                       core::ThreadPool* pool) const {
  KESTREL_RETURN_IF_ERROR(check_f32("MatMul", {&a, &b, bias, z, &y}));
  const int64_t ra = a.rank(), rb = b.rank();
  if (ra < 1 || rb < 1)
    return core::invalid_argument(
        str_cat("MatMul: inputs must have rank >= 1: ", a.type_string(), ", ", b.type_string()));
  const int64_t m = ra >= 2 ? a.dim(-2) : 1, k = a.dim(-1);
  const int64_t kb = rb >= 2 ? b.dim(-2) : b.dim(0), n = rb >= 2 ? b.dim(-1) : 1;
  if (k != kb)
    return core::invalid_argument(str_cat("MatMul: inner dims differ: ", a.type_string(), ", ", b.type_string()));
  // Batch dims, right-aligned and broadcast.
  const size_t ba = static_cast<size_t>(std::max<int64_t>(ra - 2, 0)),
               bb = static_cast<size_t>(std::max<int64_t>(rb - 2, 0));
  const size_t bo = std::max(ba, bb);
  // Batch dims in fixed arrays up to rank 18 (a call allocates nothing), on the heap beyond.
  constexpr size_t kMaxBatch = 16;
  int64_t fixed[3 * kMaxBatch];
  std::vector<int64_t> heap;
  int64_t* dims3 = fixed;
  if (bo > kMaxBatch) {
    heap.resize(3 * bo);
    dims3 = heap.data();
  }
  std::span<int64_t> out_batch(dims3, bo), a_batch(dims3 + bo, bo), b_batch(dims3 + 2 * bo, bo);
  std::fill_n(dims3, 3 * bo, int64_t{1});
  for (size_t i = 0; i < ba; ++i) a_batch[bo - ba + i] = a.dim(static_cast<int64_t>(i));
  for (size_t i = 0; i < bb; ++i) b_batch[bo - bb + i] = b.dim(static_cast<int64_t>(i));
  for (size_t i = 0; i < bo; ++i) {
    if (a_batch[i] != b_batch[i] && a_batch[i] != 1 && b_batch[i] != 1)
      return core::invalid_argument(
          str_cat("MatMul: batch dims do not broadcast: ", a.type_string(), ", ", b.type_string()));
    out_batch[i] = a_batch[i] == 1 ? b_batch[i] : a_batch[i];
  }
  int64_t count = 1, a_count = 1, b_count = 1;
  for (size_t i = 0; i < bo; ++i) {
    count *= out_batch[i];
    a_count *= a_batch[i];
    b_count *= b_batch[i];
  }
  if (y.num_elements() != count * m * n)
    return core::invalid_argument(str_cat("MatMul: output ", y.type_string(), " has the wrong size"));
  GemmEpilogue ep = epilogue_for(act_);
  if (bias) {
    if (bias->num_elements() != n)
      return core::invalid_argument(str_cat("MatMul: bias ", bias->type_string(), " must have ", n, " elements"));
    ep.bias_kind = GemmBias::kPerColumn;
    ep.bias = bias->data<float>();
  }
  if (z) {
    if (z->num_elements() != y.num_elements())
      return core::invalid_argument(str_cat("MatMul: residual ", z->type_string(), " must be ", y.type_string()));
    ep.residual = z->data<float>();
    ep.ldr = n;
  }
  SgemmContext ctx{pool, isa_};
  float* yd = y.data<float>();
  const bool use_packed = packed_b_ && rb <= 2 && packed_k_ == k && packed_n_ == n;
  const SgemmB sb = use_packed ? SgemmB(*packed_b_) : SgemmB(b.data<float>(), n, false);
  if (rb <= 2) {
    // B has no batch: every row of every A matrix is one row of a single tall GEMM.
    const int64_t rows = count * m;
    return sgemm(rows, n, k, 1.f, SgemmA(a.data<float>(), k), sb, 0.f, yd, n, ep, ctx);
  }
  SgemmBatch batch;
  batch.count = count;
  batch.stride_c = m * n;
  batch.stride_residual = z ? m * n : 0;
  // Strides cover "same batch shape as the output" and "a single matrix"; anything else (partial
  // broadcasting) gets per-entry pointers.
  const bool a_simple = a_count == count || a_count == 1, b_simple = b_count == count || b_count == 1;
  thread_local std::vector<const float*> a_ptrs, b_ptrs;
  if (a_simple && b_simple) {
    batch.stride_a = a_count == 1 ? 0 : m * k;
    batch.stride_b = b_count == 1 ? 0 : k * n;
  } else {
    a_ptrs.resize(static_cast<size_t>(count));
    b_ptrs.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      int64_t rem = i, ia = 0, ib = 0, sa = 1, sbb = 1;
      for (size_t d = bo; d-- > 0;) {
        const int64_t idx = rem % out_batch[d];
        rem /= out_batch[d];
        ia += (a_batch[d] == 1 ? 0 : idx) * sa;
        ib += (b_batch[d] == 1 ? 0 : idx) * sbb;
        sa *= a_batch[d];
        sbb *= b_batch[d];
      }
      a_ptrs[static_cast<size_t>(i)] = a.data<float>() + ia * m * k;
      b_ptrs[static_cast<size_t>(i)] = b.data<float>() + ib * k * n;
    }
    batch.a_ptrs = a_ptrs.data();
    batch.b_ptrs = b_ptrs.data();
  }
  return sgemm_batched(m, n, k, 1.f, SgemmA(a.data<float>(), k), SgemmB(b.data<float>(), n, false), 0.f, yd, n, batch,
                       ep, ctx);
}

}  // namespace kestrel::kernels::cpu

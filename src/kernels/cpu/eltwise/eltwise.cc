// Elementwise drivers: ISA table choice, broadcasting as contiguous rows, rows over threads.
#include "kernels/cpu/eltwise/eltwise.h"

#include <cmath>
#include <algorithm>
#include <utility>

#include "core/str_util.h"

namespace kestrel::kernels::cpu {

namespace {

// Below this many elements a task is not worth a thread hand-off: these passes are memory-bound,
// and on a loaded machine a preempted worker holding a small task stalls the whole op (measured:
// BatchNormalization 10x slower at 2 threads with 32K-element tasks under load 9 on 2 cores).
constexpr int64_t kGrain = 256 * 1024;
// Binary ops whose rows are channels (the squeeze-excite scale x * s[c]): these follow a conv
// that split its output channels into one range per thread, so halves by channel read data in
// their own core's cache, where one thread would pull the other half across (5x slower on
// [576, 7, 7] at 2 threads). Worth a hand-off from much smaller sizes.
constexpr int64_t kRowsGrain = 16 * 1024;

bool all_f32(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t->dtype() != core::DType::kF32) return false;
  return true;
}

}  // namespace

const EltwiseTable* eltwise_table(core::Isa isa) {
  if (isa > core::detected_isa()) return nullptr;
  switch (isa) {
    case core::Isa::kScalar:
      return eltwise_detail::table_scalar();
#if defined(__x86_64__) || defined(_M_X64)
    case core::Isa::kAvx2:
      return eltwise_detail::table_avx2();
    case core::Isa::kAvx512:
      return eltwise_detail::table_avx512();
#else
    default:
      return nullptr;
#endif
  }
  return nullptr;
}

bool fast_unary_op(const ref::UnaryParams& p, EwUnaryParams* out) {
  using U = ref::UnaryOp;
  EwUnaryParams q;
  q.alpha = p.alpha;
  q.beta = p.beta;
  switch (p.op) {
    case U::kIdentity: q.op = EwUnary::kIdentity; break;
    case U::kRelu: q.op = EwUnary::kRelu; break;
    case U::kLeakyRelu: q.op = EwUnary::kLeakyRelu; break;
    case U::kSigmoid: q.op = EwUnary::kSigmoid; break;
    case U::kHardSigmoid: q.op = EwUnary::kHardSigmoid; break;
    case U::kHardSwish: q.op = EwUnary::kHardSwish; break;
    case U::kTanh: q.op = EwUnary::kTanh; break;
    case U::kErf: q.op = EwUnary::kErf; break;
    case U::kGeluErf: q.op = EwUnary::kGeluErf; break;
    case U::kExp: q.op = EwUnary::kExp; break;
    case U::kSilu: q.op = EwUnary::kSilu; break;
    case U::kNeg: q.op = EwUnary::kNeg; break;
    case U::kAbs: q.op = EwUnary::kAbs; break;
    case U::kSqrt: q.op = EwUnary::kSqrt; break;
    default: return false;
  }
  *out = q;
  return true;
}

bool fast_binary_op(ref::BinaryOp op, EwBinary* out) {
  switch (op) {
    case ref::BinaryOp::kAdd: *out = EwBinary::kAdd; return true;
    case ref::BinaryOp::kSub: *out = EwBinary::kSub; return true;
    case ref::BinaryOp::kMul: *out = EwBinary::kMul; return true;
    case ref::BinaryOp::kDiv: *out = EwBinary::kDiv; return true;
    default: return false;
  }
}

Status unary_f32(const EltwiseTable& t, const EwUnaryParams& p, const Tensor& x, Tensor& y, core::ThreadPool* pool) {
  if (!all_f32({&x, &y}) || x.num_elements() != y.num_elements())
    return core::invalid_argument("unary_f32: needs f32 tensors of the same size");
  const float* in = x.data<float>();
  float* out = y.data<float>();
  core::parallel_for(pool, x.num_elements(), kGrain,
                     [&](int64_t b, int64_t e) { t.unary(p, in + b, out + b, e - b); });
  return Status::ok();
}

Status binary_f32(const EltwiseTable& t, EwBinary op, const Tensor& a, const Tensor& b, Tensor& y,
                  core::ThreadPool* pool) {
  if (!all_f32({&a, &b, &y})) return core::invalid_argument("binary_f32: needs f32 tensors");
  const core::Dims& od = y.dims();
  const size_t rank = od.size();
  if (rank < a.dims().size() || rank < b.dims().size())
    return core::invalid_argument("binary_f32: output rank below an input's");
  // Fixed-size state below: run() allocates nothing. Higher ranks take the reference kernel.
  constexpr size_t kMaxRank = 16;
  if (rank > kMaxRank) return ref::binary(op == EwBinary::kAdd   ? ref::BinaryOp::kAdd
                                          : op == EwBinary::kSub ? ref::BinaryOp::kSub
                                          : op == EwBinary::kMul ? ref::BinaryOp::kMul
                                                                 : ref::BinaryOp::kDiv,
                                          a, b, y);
  // Per output dim, each input's stride (0 where it broadcasts); every input dim must be 1 or
  // the output's (no reads past the end).
  int64_t sa[kMaxRank], sb[kMaxRank];
  for (auto [in, st] : {std::pair<const Tensor*, int64_t*>{&a, sa}, {&b, sb}}) {
    const core::Dims& d = in->dims();
    const size_t off = rank - d.size();
    int64_t stride = 1;
    for (size_t i = rank; i-- > 0;) {
      if (i < off || d[i - off] == 1) {
        st[i] = 0;
        continue;
      }
      if (d[i - off] != od[i]) return core::invalid_argument("binary_f32: shapes do not broadcast");
      st[i] = stride;
      stride *= d[i - off];
    }
  }
  const int64_t total = y.num_elements();
  if (total == 0) return Status::ok();
  // Coalesce: drop size-1 dims, merge a dim into the one inside it when both inputs continue
  // contiguously (or stay broadcast) across the boundary. dims[0] is the innermost.
  struct Dim {
    int64_t size, sa, sb;
  };
  Dim dims[kMaxRank];
  size_t nd = 0;
  for (size_t i = rank; i-- > 0;) {
    if (od[i] == 1) continue;
    if (nd > 0) {
      Dim& in = dims[nd - 1];
      if (sa[i] == in.sa * in.size && sb[i] == in.sb * in.size) {
        in.size *= od[i];
        continue;
      }
    }
    dims[nd++] = {od[i], sa[i], sb[i]};
  }
  if (nd == 0) dims[nd++] = {1, 1, 1};
  const Dim inner = dims[0];
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* py = y.data<float>();
  // The innermost output dim > 1 comes from at least one input, so not both strides are 0 there.
  EwRow kind = inner.sa != 0 && inner.sb != 0 ? EwRow::kVV : inner.sa != 0 ? EwRow::kVS : EwRow::kSV;
  const int64_t n = inner.size, rows = total / n;
  if (rows == 1) {
    core::parallel_for(pool, n, kGrain, [&](int64_t s, int64_t e) {
      t.binary(op, kind, pa + s * inner.sa, pb + s * inner.sb, py + s, e - s);
    });
    return Status::ok();
  }
  const int64_t grain_rows = std::max<int64_t>(1, kRowsGrain / n);
  core::parallel_for(pool, rows, grain_rows, [&](int64_t r0, int64_t r1) {
    // Offsets of row r0 from its multi-index over the outer dims, then incremental.
    int64_t idx[kMaxRank] = {};
    int64_t oa = 0, ob = 0, rem = r0;
    for (size_t d = 1; d < nd; ++d) {
      idx[d] = rem % dims[d].size;
      rem /= dims[d].size;
      oa += idx[d] * dims[d].sa;
      ob += idx[d] * dims[d].sb;
    }
    for (int64_t r = r0; r < r1; ++r) {
      t.binary(op, kind, pa + oa, pb + ob, py + r * n, n);
      for (size_t d = 1; d < nd; ++d) {
        ++idx[d];
        oa += dims[d].sa;
        ob += dims[d].sb;
        if (idx[d] < dims[d].size) break;
        oa -= dims[d].sa * dims[d].size;
        ob -= dims[d].sb * dims[d].size;
        idx[d] = 0;
      }
    }
  });
  return Status::ok();
}

Status batch_norm_f32(const EltwiseTable& t, const Tensor& x, const Tensor& scale, const Tensor& bias,
                      const Tensor& mean, const Tensor& var, float epsilon, Tensor& y, core::ThreadPool* pool) {
  if (!all_f32({&x, &scale, &bias, &mean, &var, &y}) || x.rank() < 2 || x.num_elements() != y.num_elements())
    return core::invalid_argument("batch_norm_f32: needs f32 tensors, x of rank >= 2");
  const int64_t n = x.dim(0), c = x.dim(1);
  for (const Tensor* p : {&scale, &bias, &mean, &var})
    if (p->num_elements() != c)
      return core::invalid_argument(core::str_cat("BatchNormalization: parameter has ", p->num_elements(),
                                                  " elements, expected C = ", c));
  const int64_t inner = c == 0 || n == 0 ? 0 : x.num_elements() / (n * c);
  if (inner == 0) return Status::ok();
  // Per-channel scale and shift computed per row (one sqrt per row): nothing to allocate.
  const float *ps = scale.data<float>(), *pb = bias.data<float>(), *pm = mean.data<float>(), *pv = var.data<float>();
  const float* in = x.data<float>();
  float* out = y.data<float>();
  core::parallel_for(pool, n * c, std::max<int64_t>(1, kGrain / inner), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t ch = r % c;
      const float k = ps[ch] * (1.f / std::sqrt(pv[ch] + epsilon));
      t.affine(in + r * inner, out + r * inner, inner, k, pb[ch] - pm[ch] * k);
    }
  });
  return Status::ok();
}

}  // namespace kestrel::kernels::cpu

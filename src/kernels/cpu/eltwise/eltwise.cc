// Elementwise drivers: ISA table choice, broadcasting as contiguous rows, rows over threads.
#include "kernels/cpu/eltwise/eltwise.h"

#include <cmath>
#include <vector>

#include "core/str_util.h"
#include "kernels/reference/broadcast.h"

namespace kestrel::kernels::cpu {

namespace {

// Below this many elements a task is not worth a thread hand-off: these passes are memory-bound,
// and on a loaded machine a preempted worker holding a small task stalls the whole op (measured:
// BatchNormalization 10x slower at 2 threads with 32K-element tasks under load 9 on 2 cores).
constexpr int64_t kGrain = 256 * 1024;

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
  if (od.size() < a.dims().size() || od.size() < b.dims().size())
    return core::invalid_argument("binary_f32: output rank below an input's");
  core::Dims sa = ref::broadcast_strides(a.dims(), od), sb = ref::broadcast_strides(b.dims(), od);
  // Each input element count must match what the output shape implies (no reads past the end).
  for (const auto* in : {&a, &b}) {
    const core::Dims& d = in->dims();
    size_t off = od.size() - d.size();
    for (size_t i = 0; i < d.size(); ++i)
      if (d[i] != 1 && d[i] != od[off + i]) return core::invalid_argument("binary_f32: shapes do not broadcast");
  }
  const int64_t total = y.num_elements();
  if (total == 0) return Status::ok();
  // Coalesce: drop size-1 dims, merge a dim into the one inside it when both inputs continue
  // contiguously (or stay broadcast) across the boundary. Innermost last.
  struct Dim {
    int64_t size, sa, sb;
  };
  std::vector<Dim> dims;
  for (size_t i = od.size(); i-- > 0;) {
    if (od[i] == 1) continue;
    if (!dims.empty()) {
      Dim& in = dims.back();
      if (sa[i] == in.sa * in.size && sb[i] == in.sb * in.size) {
        in.size *= od[i];
        continue;
      }
    }
    dims.push_back({od[i], sa[i], sb[i]});
  }
  if (dims.empty()) dims.push_back({1, 1, 1});
  const Dim inner = dims.front();  // dims[0] is the innermost
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* py = y.data<float>();
  // The innermost output dim > 1 comes from at least one input, so not both strides are 0 there.
  EwRow kind = inner.sa != 0 && inner.sb != 0 ? EwRow::kVV : inner.sa != 0 ? EwRow::kVS : EwRow::kSV;
  const int64_t n = inner.size, rows = total / n;
  auto run_row = [&](const float* ra, const float* rb, float* ry, int64_t len) { t.binary(op, kind, ra, rb, ry, len); };
  if (rows == 1) {
    core::parallel_for(pool, n, kGrain, [&](int64_t s, int64_t e) {
      run_row(pa + s * inner.sa, pb + s * inner.sb, py + s, e - s);
    });
    return Status::ok();
  }
  const int64_t grain_rows = std::max<int64_t>(1, kGrain / n);
  core::parallel_for(pool, rows, grain_rows, [&](int64_t r0, int64_t r1) {
    // Offsets of row r0 from its multi-index over the outer dims, then incremental.
    std::vector<int64_t> idx(dims.size(), 0);
    int64_t oa = 0, ob = 0, rem = r0;
    for (size_t d = 1; d < dims.size(); ++d) {
      idx[d] = rem % dims[d].size;
      rem /= dims[d].size;
      oa += idx[d] * dims[d].sa;
      ob += idx[d] * dims[d].sb;
    }
    for (int64_t r = r0; r < r1; ++r) {
      run_row(pa + oa, pb + ob, py + r * n, n);
      for (size_t d = 1; d < dims.size(); ++d) {
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
  std::vector<float> k(static_cast<size_t>(c)), s(static_cast<size_t>(c));
  for (int64_t i = 0; i < c; ++i) {
    float inv = 1.f / std::sqrt(var.data<float>()[i] + epsilon);
    k[i] = scale.data<float>()[i] * inv;
    s[i] = bias.data<float>()[i] - mean.data<float>()[i] * k[i];
  }
  const float* in = x.data<float>();
  float* out = y.data<float>();
  core::parallel_for(pool, n * c, std::max<int64_t>(1, kGrain / inner), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) t.affine(in + r * inner, out + r * inner, inner, k[r % c], s[r % c]);
  });
  return Status::ok();
}

}  // namespace kestrel::kernels::cpu

// Softmax / LayerNorm / row-reduce drivers: ISA table choice, shape checks, rows over threads.
#include "kernels/cpu/norm/norm.h"

#include <algorithm>
#include <span>
#include <vector>

namespace kestrel::kernels::cpu {

namespace {

constexpr int64_t kGrain = 64 * 1024;  // elements per thread task, at least
constexpr int64_t kReduceGrain = 16 * 1024;

bool f32(const Tensor& t) { return t.dtype() == core::DType::kF32; }

int64_t grain_rows(int64_t row_len) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(row_len, 1)); }

}  // namespace

const NormTable* norm_table(core::Isa isa) {
  if (isa > core::detected_isa()) return nullptr;
  switch (isa) {
    case core::Isa::kScalar:
      return norm_detail::table_scalar();
#if defined(__x86_64__) || defined(_M_X64)
    case core::Isa::kAvx2:
      return norm_detail::table_avx2();
    case core::Isa::kAvx512:
      return norm_detail::table_avx512();
#else
    default:
      return nullptr;
#endif
  }
  return nullptr;
}

Status softmax_last_axis_f32(const NormTable& t, bool log, const Tensor& x, Tensor& y, core::ThreadPool* pool) {
  if (!f32(x) || !f32(y) || x.dims() != y.dims() || x.rank() < 1)
    return core::invalid_argument("softmax_last_axis_f32: needs f32 x and y of the same shape, rank >= 1");
  const int64_t n = x.dim(-1);
  if (n == 0 || x.num_elements() == 0) return Status::ok();
  const int64_t rows = x.num_elements() / n;
  const float* in = x.data<float>();
  float* out = y.data<float>();
  core::parallel_for(pool, rows, grain_rows(n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) t.softmax(in + r * n, out + r * n, n, log);
  });
  return Status::ok();
}

namespace {

// True when p's dims, leading 1s dropped, are exactly the normalized dims.
bool matches_trailing(const Tensor& p, std::span<const int64_t> norm_dims) {
  const core::Dims& d = p.dims();
  size_t lead = 0;
  while (lead < d.size() && d[lead] == 1 && d.size() - lead > norm_dims.size()) ++lead;
  if (d.size() - lead != norm_dims.size()) return false;
  return std::equal(d.begin() + static_cast<std::ptrdiff_t>(lead), d.end(), norm_dims.begin());
}

}  // namespace

bool layer_norm_f32(const NormTable& t, const Tensor& x, const Tensor& scale, const Tensor* bias, int64_t axis,
                    float epsilon, Tensor& y, Tensor* mean, Tensor* inv_std, core::ThreadPool* pool) {
  if (axis < 0 || axis >= x.rank() || !f32(x) || !f32(y) || !f32(scale) || x.dims() != y.dims()) return false;
  const std::span<const int64_t> norm_dims(x.dims().data() + axis, static_cast<size_t>(x.rank() - axis));
  int64_t n = 1;
  for (int64_t d : norm_dims) n *= d;
  if (n == 0) return false;
  const int64_t rows = x.num_elements() / n;
  if (!matches_trailing(scale, norm_dims)) return false;
  if (bias && (!f32(*bias) || !matches_trailing(*bias, norm_dims))) return false;
  for (Tensor* s : {mean, inv_std})
    if (s && (!f32(*s) || s->num_elements() != rows)) return false;
  const float* in = x.data<float>();
  float* out = y.data<float>();
  const float* sp = scale.data<float>();
  const float* bp = bias ? bias->data<float>() : nullptr;
  core::parallel_for(pool, rows, grain_rows(n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float m, inv;
      t.layer_norm(in + r * n, out + r * n, n, sp, bp, epsilon, &m, &inv);
      if (mean) mean->data<float>()[r] = m;
      if (inv_std) inv_std->data<float>()[r] = inv;
    }
  });
  return true;
}

Status reduce_rows_f32(const NormTable& t, RowReduce op, const Tensor& x, int64_t inner, Tensor& y,
                       core::ThreadPool* pool) {
  if (!f32(x) || !f32(y) || inner <= 0 || x.num_elements() % inner != 0 || y.num_elements() != x.num_elements() / inner)
    return core::invalid_argument("reduce_rows_f32: shapes do not match");
  const int64_t rows = y.num_elements();
  const float* in = x.data<float>();
  float* out = y.data<float>();
  // Rows are usually channels of a conv output split into one channel range per thread
  // (GlobalAveragePool): smaller ranges than kGrain still pay, each thread reading its own cache.
  const int64_t grain = std::max<int64_t>(1, kReduceGrain / inner);
  core::parallel_for(pool, rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) out[r] = t.reduce(op, in + r * inner, inner);
  });
  return Status::ok();
}

Status reduce_middle_f32(RowReduce op, const Tensor& x, int64_t outer, int64_t red, int64_t inner, Tensor& y,
                         core::ThreadPool* pool) {
  if (!f32(x) || !f32(y) || outer < 0 || red <= 0 || inner <= 0 || x.num_elements() != outer * red * inner ||
      y.num_elements() != outer * inner)
    return core::invalid_argument("reduce_middle_f32: shapes do not match");
  const float* in = x.data<float>();
  float* out = y.data<float>();
  const float scale = op == RowReduce::kMean ? 1.f / static_cast<float>(red) : 1.f;
  core::parallel_for(pool, outer, grain_rows(red * inner), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const float* src = in + o * red * inner;
      float* dst = out + o * inner;
      std::copy_n(src, inner, dst);
      for (int64_t r = 1; r < red; ++r) {
        const float* row = src + r * inner;
        if (op == RowReduce::kMax) {
          for (int64_t i = 0; i < inner; ++i) dst[i] = row[i] > dst[i] || row[i] != row[i] ? row[i] : dst[i];
        } else {
          for (int64_t i = 0; i < inner; ++i) dst[i] += row[i];
        }
      }
      if (op == RowReduce::kMean)
        for (int64_t i = 0; i < inner; ++i) dst[i] *= scale;
    }
  });
  return Status::ok();
}

bool reduce_block(const core::Dims& dims, const std::vector<bool>& mask, int64_t* outer, int64_t* red, int64_t* inner) {
  if (mask.size() != dims.size()) return false;
  // Reduced non-1 dims must be one run: first and last reduced position with no kept non-1 dim between.
  size_t first = dims.size(), last = 0;
  for (size_t i = 0; i < dims.size(); ++i)
    if (mask[i] && dims[i] != 1) {
      first = std::min(first, i);
      last = i;
    }
  *outer = *red = *inner = 1;
  if (first == dims.size()) {
    for (int64_t d : dims) *outer *= d;
    return true;
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i < first) {
      *outer *= dims[i];
    } else if (i > last) {
      *inner *= dims[i];
    } else {
      if (!mask[i] && dims[i] != 1) return false;
      *red *= dims[i];
    }
  }
  return true;
}

int64_t trailing_reduce_inner(const core::Dims& dims, const std::vector<bool>& mask) {
  if (mask.size() != dims.size()) return -1;
  int64_t inner = 1;
  bool in_block = true;  // walking from the last dim while every dim is reduced (or size 1)
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] == 1) continue;
    if (mask[i]) {
      if (!in_block) return -1;
      inner *= dims[i];
    } else {
      in_block = false;
    }
  }
  return inner;
}

}  // namespace kestrel::kernels::cpu

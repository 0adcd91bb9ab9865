// Fast Transpose / Slice: coalesced dims, memcpy rows or blocked 2-D transposes, outer indices over threads.
#include "kernels/cpu/transform/transpose.h"

#include <algorithm>
#include <cstring>

namespace kestrel::kernels::cpu {

namespace {

struct Axis {
  int64_t size, in_stride, out_stride;  // elements
};

constexpr int64_t kBlock = 16;

// y[p * ldy + q] = x[q * ldx + p] for p < np, q < nq.
template <class T>
void transpose_2d(const T* x, int64_t ldx, T* y, int64_t ldy, int64_t np, int64_t nq) {
  for (int64_t p0 = 0; p0 < np; p0 += kBlock) {
    const int64_t p1 = std::min(np, p0 + kBlock);
    for (int64_t q0 = 0; q0 < nq; q0 += kBlock) {
      const int64_t q1 = std::min(nq, q0 + kBlock);
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t q = q0; q < q1; ++q) y[p * ldy + q] = x[q * ldx + p];
    }
  }
}

// Fixed-size state (run() allocates nothing); higher ranks take the reference kernel.
constexpr size_t kMaxRank = 16;

struct Axes {
  Axis a[kMaxRank];
  size_t n = 0;
  size_t size() const { return n; }
  bool empty() const { return n == 0; }
  Axis& operator[](size_t i) { return a[i]; }
  const Axis& operator[](size_t i) const { return a[i]; }
  Axis& back() { return a[n - 1]; }
  void push_back(const Axis& x) { a[n++] = x; }
  void pop_back() { --n; }
  void erase(size_t i) {
    for (size_t k = i; k + 1 < n; ++k) a[k] = a[k + 1];
    --n;
  }
  const Axis* begin() const { return a; }
  const Axis* end() const { return a + n; }
};

// Calls f(in_offset, out_offset) for every index of `outer` in [begin, end) (row-major order).
template <class F>
void for_outer(const Axes& outer, int64_t begin, int64_t end, F&& f) {
  int64_t idx[kMaxRank] = {};
  int64_t in = 0, out = 0, rem = begin;
  for (size_t d = outer.size(); d-- > 0;) {
    idx[d] = rem % outer[d].size;
    rem /= outer[d].size;
    in += idx[d] * outer[d].in_stride;
    out += idx[d] * outer[d].out_stride;
  }
  for (int64_t i = begin; i < end; ++i) {
    f(in, out);
    for (size_t d = outer.size(); d-- > 0;) {
      ++idx[d];
      in += outer[d].in_stride;
      out += outer[d].out_stride;
      if (idx[d] < outer[d].size) break;
      in -= outer[d].in_stride * outer[d].size;
      out -= outer[d].out_stride * outer[d].size;
      idx[d] = 0;
    }
  }
}

template <class T>
void run_strided(const T* x, T* y, Axes axes, core::ThreadPool* pool) {
  const Axis last = axes.back();
  axes.pop_back();
  int64_t rows = 1;
  for (const Axis& a : axes) rows *= a.size;
  const int64_t grain = std::max<int64_t>(1, 262144 / last.size);
  if (last.in_stride == 1) {
    // Rows stay contiguous: one memcpy per outer index.
    const size_t bytes = static_cast<size_t>(last.size) * sizeof(T);
    core::parallel_for(pool, rows, grain, [&](int64_t b, int64_t e) {
      for_outer(axes, b, e, [&](int64_t in, int64_t out) { std::memcpy(y + out, x + in, bytes); });
    });
    return;
  }
  // The input's innermost dim is output axis j: transpose [last x j] blocks.
  size_t j = 0;
  while (j < axes.size() && axes[j].in_stride != 1) ++j;
  if (j == axes.size()) {
    // No unit input stride (a stepped slice): plain strided rows.
    core::parallel_for(pool, rows, grain, [&](int64_t b, int64_t e) {
      for_outer(axes, b, e, [&](int64_t in, int64_t out) {
        for (int64_t i = 0; i < last.size; ++i) y[out + i] = x[in + i * last.in_stride];
      });
    });
    return;
  }
  const Axis inner = axes[j];
  axes.erase(j);
  int64_t n = 1;
  for (const Axis& a : axes) n *= a.size;
  const int64_t per = inner.size * last.size;
  core::parallel_for(pool, n, std::max<int64_t>(1, 262144 / per), [&](int64_t b, int64_t e) {
    for_outer(axes, b, e, [&](int64_t in, int64_t out) {
      transpose_2d(x + in, last.in_stride, y + out, inner.out_stride, inner.size, last.size);
    });
  });
}

// Output-ordered axes without size-1 dims; an axis merges into the previous one when both are
// contiguous continuations in the input and the output. Then the copy, by element size.
bool strided_copy_impl(const core::Tensor& x, int64_t base, const core::Dims& dims, std::span<const int64_t> in_strides,
                       core::Tensor& y, core::ThreadPool* pool) {
  if (dims.size() > kMaxRank || in_strides.size() != dims.size()) return false;
  int64_t out_strides[kMaxRank];
  int64_t acc = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    out_strides[i] = acc;
    acc *= dims[i];
  }
  Axes axes;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0) return true;
    if (dims[i] == 1) continue;
    Axis a{dims[i], in_strides[i], out_strides[i]};
    if (!axes.empty() && axes.back().in_stride == a.in_stride * a.size &&
        axes.back().out_stride == a.out_stride * a.size) {
      axes.back().size *= a.size;
      axes.back().in_stride = a.in_stride;
      axes.back().out_stride = a.out_stride;
      continue;
    }
    axes.push_back(a);
  }
  if (axes.empty()) axes.push_back({1, 1, 1});
  switch (core::dtype_size(x.dtype())) {
    case 1: run_strided(x.data<uint8_t>() + base, y.data<uint8_t>(), axes, pool); return true;
    case 2: run_strided(x.data<uint16_t>() + base, y.data<uint16_t>(), axes, pool); return true;
    case 4: run_strided(x.data<uint32_t>() + base, y.data<uint32_t>(), axes, pool); return true;
    case 8: run_strided(x.data<uint64_t>() + base, y.data<uint64_t>(), axes, pool); return true;
    default: return false;
  }
}

}  // namespace

bool transpose_fast(const core::Tensor& x, std::span<const int64_t> perm_in, core::Tensor& y, core::ThreadPool* pool) {
  if (x.dtype() == core::DType::kString || x.dtype() != y.dtype() || x.dtype() == core::DType::kUndefined) return false;
  const int64_t rank = x.rank();
  if (rank > static_cast<int64_t>(kMaxRank) || y.rank() != rank) return false;
  if (!perm_in.empty() && static_cast<int64_t>(perm_in.size()) != rank) return false;
  int64_t in_strides[kMaxRank], strides[kMaxRank];
  int64_t acc = 1;
  for (int64_t i = rank; i-- > 0;) {
    in_strides[i] = acc;
    acc *= x.dim(i);
  }
  bool seen[kMaxRank] = {};
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t p = perm_in.empty() ? rank - 1 - i : perm_in[static_cast<size_t>(i)];
    if (p < 0 || p >= rank || seen[p] || y.dim(i) != x.dim(p)) return false;
    seen[p] = true;
    strides[i] = in_strides[p];
  }
  if (x.num_elements() == 0) return true;
  return strided_copy_impl(x, 0, y.dims(), std::span<const int64_t>(strides, static_cast<size_t>(rank)), y, pool);
}

bool strided_copy_fast(const core::Tensor& x, int64_t base, std::span<const int64_t> in_strides, core::Tensor& y,
                       core::ThreadPool* pool) {
  if (x.dtype() == core::DType::kString || x.dtype() != y.dtype() || x.dtype() == core::DType::kUndefined ||
      static_cast<int64_t>(in_strides.size()) != y.rank())
    return false;
  if (y.num_elements() == 0) return true;
  return strided_copy_impl(x, base, y.dims(), in_strides, y, pool);
}

}  // namespace kestrel::kernels::cpu

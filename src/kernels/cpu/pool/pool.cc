// Fast f32 MaxPool (2-D) and GlobalAveragePool: plain loops the compiler vectorizes, bounds of
// each window clipped once per row / column instead of per tap.
#include "kernels/cpu/pool/pool.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/str_util.h"

namespace kestrel::kernels::cpu {

using core::str_cat;

core::Status max_pool_2d(const ref::PoolParams& p, const core::Tensor& x, core::Tensor& y, core::ThreadPool* pool) {
  if (x.dtype() != core::DType::kF32 || y.dtype() != core::DType::kF32 || x.rank() != 4 || y.rank() != 4)
    return core::invalid_argument(str_cat("MaxPool: fast kernel needs f32 4-D, got ", x.type_string()));
  if (p.kernel.size() != 2 || p.strides.size() != 2 || p.dilations.size() != 2 || p.pads_begin.size() != 2)
    return core::invalid_argument("MaxPool: needs 2 spatial axes");
  if (y.dim(0) != x.dim(0) || y.dim(1) != x.dim(1))
    return core::invalid_argument(str_cat("MaxPool: output ", y.type_string(), " does not match ", x.type_string()));
  const int64_t ih = x.dim(2), iw = x.dim(3), oh = y.dim(2), ow = y.dim(3);
  const int64_t kh = p.kernel[0], kw = p.kernel[1], sh = p.strides[0], sw = p.strides[1];
  const int64_t dh = p.dilations[0], dw = p.dilations[1], pt = p.pads_begin[0], pl = p.pads_begin[1];
  for (int64_t v : {kh, kw, sh, sw, dh, dw})
    if (v < 1 || v > core::kMaxElements) return core::invalid_argument("MaxPool: bad kernel, stride or dilation");
  if (pt < 0 || pl < 0 || pt > core::kMaxElements || pl > core::kMaxElements)
    return core::invalid_argument("MaxPool: bad pads");
  if (oh > core::kMaxElements / sh || ow > core::kMaxElements / sw || kh > core::kMaxElements / dh ||
      kw > core::kMaxElements / dw)
    return core::invalid_argument("MaxPool: window out of range");
  const float* xd = x.data<float>();
  float* yd = y.data<float>();
  const int64_t planes = x.dim(0) * x.dim(1);
  // Taps of a window inside [0, in): k in [first, last) with pos = o * s - pad + k * d.
  auto tap_range = [](int64_t o, int64_t s, int64_t pad, int64_t d, int64_t k, int64_t in, int64_t* first,
                      int64_t* last) {
    const int64_t base = o * s - pad;
    *first = base >= 0 ? 0 : std::min(k, (-base + d - 1) / d);
    *last = base >= in ? *first : std::clamp<int64_t>((in - base + d - 1) / d, *first, k);
  };
  // Column tap ranges are the same for every row and plane: computed once (the divisions in
  // tap_range cost more than the max itself when done per output).
  thread_local std::vector<int64_t> col_taps;
  col_taps.resize(static_cast<size_t>(2 * ow));
  for (int64_t ox = 0; ox < ow; ++ox)
    tap_range(ox, sw, pl, dw, kw, iw, &col_taps[static_cast<size_t>(2 * ox)],
              &col_taps[static_cast<size_t>(2 * ox + 1)]);
  const int64_t* ct = col_taps.data();
  // Two passes per output row: the max over the window's rows for every input column (contiguous,
  // vectorizes), then the max over each window's columns of that row.
  core::parallel_for(pool, planes, 1, [&](int64_t p0, int64_t p1) {
    thread_local std::vector<float> row_max;
    row_max.resize(static_cast<size_t>(std::max<int64_t>(iw, 1)));
    float* rm = row_max.data();
    for (int64_t pi = p0; pi < p1; ++pi) {
      const float* xp = xd + pi * ih * iw;
      float* yp = yd + pi * oh * ow;
      for (int64_t oy = 0; oy < oh; ++oy) {
        int64_t ky0, ky1;
        tap_range(oy, sh, pt, dh, kh, ih, &ky0, &ky1);
        const int64_t iy0 = oy * sh - pt;
        std::fill(rm, rm + iw, -INFINITY);
        for (int64_t ky = ky0; ky < ky1; ++ky) {
          const float* xr = xp + (iy0 + ky * dh) * iw;
          // NaN wins (as in the reference): v > m is false for NaN, so test it too.
          // Bitwise | (no short-circuit) keeps the loop branch-free so it vectorizes.
          for (int64_t j = 0; j < iw; ++j) {
            const float v = xr[j], m = rm[j];
            rm[j] = ((v > m) | (v != v)) ? v : m;
          }
        }
        float* yr = yp + oy * ow;
        for (int64_t ox = 0; ox < ow; ++ox) {
          const int64_t kx0 = ct[2 * ox], kx1 = ct[2 * ox + 1];
          const int64_t c0 = ox * sw - pl;  // may be negative; taps from kx0 on are inside
          float m = -INFINITY;
          for (int64_t kx = kx0; kx < kx1; ++kx) {
            const float v = rm[c0 + kx * dw];
            m = (v > m || v != v) ? v : m;
          }
          yr[ox] = m;
        }
      }
    }
  });
  return core::Status::ok();
}

core::Status global_average_pool(const core::Tensor& x, core::Tensor& y, core::ThreadPool* pool) {
  if (x.dtype() != core::DType::kF32 || y.dtype() != core::DType::kF32 || x.rank() < 2)
    return core::invalid_argument(str_cat("GlobalAveragePool: fast kernel needs f32, got ", x.type_string()));
  const int64_t planes = x.dim(0) * x.dim(1);
  if (y.num_elements() != planes)
    return core::invalid_argument(str_cat("GlobalAveragePool: output ", y.type_string(), " has the wrong size"));
  if (planes == 0) return core::Status::ok();
  const int64_t n = x.num_elements() / planes;
  const float* xd = x.data<float>();
  float* yd = y.data<float>();
  core::parallel_for(pool, planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)), [&](int64_t p0, int64_t p1) {
    for (int64_t pi = p0; pi < p1; ++pi) {
      const float* xp = xd + pi * n;
      // Eight partial sums: independent chains the compiler keeps in vector registers.
      float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t i = 0;
      for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; ++l) s[l] += xp[i + l];
      float t = 0;
      for (; i < n; ++i) t += xp[i];
      yd[pi] = (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + t) / static_cast<float>(n);
    }
  });
  return core::Status::ok();
}

}  // namespace kestrel::kernels::cpu

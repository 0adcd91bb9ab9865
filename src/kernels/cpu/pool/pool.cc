// 2-D pooling driver: ISA table choice, shape and window checks, planes over threads.
#include "kernels/cpu/pool/pool.h"

#include <algorithm>
#include <atomic>

#include "core/str_util.h"
#include "core/thread_scratch.h"
#include "kernels/cpu/gemm/sgemm.h"  // kSplitColumnsMinN

namespace kestrel::kernels::cpu {

const PoolTable* pool_table(core::Isa isa) {
  if (isa > core::detected_isa()) return nullptr;
  switch (isa) {
    case core::Isa::kScalar:
      return pool_detail::table_scalar();
#if defined(__x86_64__) || defined(_M_X64)
    case core::Isa::kAvx2:
      return pool_detail::table_avx2();
    case core::Isa::kAvx512:
      return pool_detail::table_avx512();
#else
    default:
      return nullptr;
#endif
  }
  return nullptr;
}

int64_t pool2d_buffer_len(const Pool2dParams& p, int64_t w, int64_t ow) {
  // + 32: the stride-1 / 2 paths load whole vectors (two of up to 16 floats) past the last window.
  return std::max(p.pad_left + w, (ow - 1) * p.sw + (p.kw - 1) * p.dw + 1) + 32;
}

Pool2dParams pool2d_params(const ref::PoolParams& p, bool is_max, bool count_include_pad) {
  Pool2dParams q;
  q.kh = p.kernel[0];
  q.kw = p.kernel[1];
  q.sh = p.strides[0];
  q.sw = p.strides[1];
  q.dh = p.dilations[0];
  q.dw = p.dilations[1];
  q.pad_top = p.pads_begin[0];
  q.pad_left = p.pads_begin[1];
  q.pad_bottom = p.pads_end[0];
  q.pad_right = p.pads_end[1];
  q.is_max = is_max;
  q.count_include_pad = count_include_pad;
  return q;
}

Status pool2d_f32(const PoolTable& t, const Pool2dParams& p, const Tensor& x, Tensor& y, core::ThreadPool* pool) {
  if (x.dtype() != core::DType::kF32 || y.dtype() != core::DType::kF32 || x.rank() != 4 || y.rank() != 4 ||
      x.dim(0) != y.dim(0) || x.dim(1) != y.dim(1))
    return core::invalid_argument(core::str_cat("pool2d_f32: ", x.type_string(), " -> ", y.type_string()));
  const int64_t h = x.dim(2), w = x.dim(3), oh = y.dim(2), ow = y.dim(3);
  const int64_t limit = int64_t{1} << 40;  // keeps every position product far from overflow
  for (int64_t v : {p.kh, p.kw, p.sh, p.sw, p.dh, p.dw})
    if (v < 1 || v > limit) return core::invalid_argument("pool2d_f32: bad window parameters");
  for (int64_t v : {p.pad_top, p.pad_left, p.pad_bottom, p.pad_right})
    if (v < 0 || v > limit) return core::invalid_argument("pool2d_f32: bad pads");
  if (oh > limit || ow > limit) return core::invalid_argument("pool2d_f32: bad output size");
  const int64_t planes = x.dim(0) * x.dim(1);
  if (planes == 0 || oh == 0 || ow == 0) return Status::ok();
  // Every window must start inside the buffer (windows are never left of -pad).
  const int64_t buf_len = pool2d_buffer_len(p, w, ow);
  const float* in = x.data<float>();
  float* out = y.data<float>();
  const int64_t work = std::max<int64_t>(1, h * w + oh * ow * p.kw);
  if (buf_len > (int64_t{1} << 22)) return core::invalid_argument("pool2d_f32: padded row too long");
  // Up to ~64 KiB of buffer rows per chunk (at least one row).
  const int64_t chunk_rows = std::clamp<int64_t>((int64_t{1} << 14) / buf_len, 1, oh);
  // Per-thread padded-row scratch (core/thread_scratch.h): no allocation per run once warmed up.
  static core::ScratchSlot s_row;
  std::atomic<bool> no_memory{false};
  // Output rows [r0, r0 + rows) of planes [pl0, pl1) with window parameters q, from the input rows starting at i0
  // (ih of them, as a plane of their own), on the calling thread.
  auto run_planes = [&](const Pool2dParams& q, int64_t i0, int64_t ih, int64_t r0, int64_t rows, int64_t pl0,
                        int64_t pl1) {
    float* buf = s_row.get_as<float>(static_cast<size_t>(buf_len * chunk_rows));
    if (!buf) {
      no_memory.store(true);
      return;
    }
    for (int64_t pl = pl0; pl < pl1; ++pl)
      t.plane(q, in + pl * h * w + i0 * w, ih, w, out + pl * oh * ow + r0 * ow, rows, ow, buf, buf_len, chunk_rows);
  };
  const int threads = pool ? pool->num_threads() : 1;
  if (threads > 1 && oh >= 2 * threads && h * w >= kSplitColumnsMinN && (oh - 1) * p.sh - p.pad_top < h) {
    // With threads, on planes where the convs before split their GEMMs by ranges of pixels (SgemmContext::
    // split_columns from kSplitColumnsMinN pixels; strips of rows elsewhere), each thread takes a range of output
    // rows of every plane, so it reads mostly rows it wrote. Ranges of planes read half their input from the other
    // core: SqueezeNet's 128-channel 55x55 MaxPool at 2 threads took 88 us (median of 7 rounds; 53 at one thread),
    // by rows 67. On smaller planes the GEMMs split by channels, and so do the pools (its 27x27 pool by rows: 54-77
    // against 31-42 us).
    core::parallel_for(pool, threads, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t ti = t0; ti < t1; ++ti) {
        const int64_t r0 = oh * ti / threads, r1 = oh * (ti + 1) / threads;
        // The input rows those windows read, [i0, i1): the top pad shrinks by the rows cut above, the rows cut below
        // count as bottom pad (no window of the range reaches them).
        const int64_t i0 = std::clamp<int64_t>(r0 * p.sh - p.pad_top, 0, h);
        const int64_t i1 = std::clamp<int64_t>((r1 - 1) * p.sh - p.pad_top + (p.kh - 1) * p.dh + 1, i0, h);
        Pool2dParams sq = p;
        sq.pad_top = p.pad_top - r0 * p.sh + i0;
        sq.pad_bottom = p.pad_bottom + (h - i1);
        run_planes(sq, i0, i1 - i0, r0, r1 - r0, 0, planes);
      }
    });
  } else {
    core::parallel_for(pool, planes, std::max<int64_t>(1, 65536 / work),
                       [&](int64_t p0, int64_t p1) { run_planes(p, 0, h, 0, oh, p0, p1); });
  }
  if (no_memory.load()) return Status(core::StatusCode::kOutOfMemory, "pool2d_f32: cannot allocate the row buffer");
  return Status::ok();
}

}  // namespace kestrel::kernels::cpu

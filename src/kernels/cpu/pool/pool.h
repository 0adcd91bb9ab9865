// Fast float32 2-D MaxPool / AveragePool (NCHW): per output row, the window's input rows are
// reduced vertically into a padded row buffer (vectorized over the width), then each output takes
// its horizontal window from that buffer; a chunk of rows is reduced vertically before any is read
// horizontally. Per-ISA plane functions (pool_<isa>.cc) behind a table.
#pragma once

#include <cstdint>

#include "core/cpu_features.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/reference/pool.h"

namespace kestrel::kernels::cpu {

using core::Status;
using core::Tensor;

struct Pool2dParams {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool is_max = true;
  bool count_include_pad = false;  // AveragePool: divide by the taps inside the padded input
};

struct PoolTable {
  core::Isa isa = core::Isa::kScalar;
  const char* name = "";
  // One [h, w] plane -> one [oh, ow] plane; buf holds chunk_rows buffer rows of row_len floats
  // (see pool2d_buffer_len), output rows are done chunk_rows at a time.
  void (*plane)(const Pool2dParams& p, const float* x, int64_t h, int64_t w, float* y, int64_t oh, int64_t ow,
                float* buf, int64_t row_len, int64_t chunk_rows) = nullptr;
};

const PoolTable* pool_table(core::Isa isa);
namespace pool_detail {
const PoolTable* table_scalar();
const PoolTable* table_avx2();
const PoolTable* table_avx512();
}  // namespace pool_detail

// Floats of one buffer row: the padded input row, or the last window's end if further, plus slack.
int64_t pool2d_buffer_len(const Pool2dParams& p, int64_t w, int64_t ow);

// The 2-D window of resolved pooling parameters (kernel, strides, dilations, begin / end pads).
Pool2dParams pool2d_params(const ref::PoolParams& p, bool is_max, bool count_include_pad);

// x [N, C, H, W] f32 -> y [N, C, OH, OW] (y's dims give the output size). Padding taps never
// win a max and add nothing to a sum (as the reference). NaN inputs: the max of a window holding
// NaN may be NaN or another tap (the reference returns NaN).
Status pool2d_f32(const PoolTable& t, const Pool2dParams& p, const Tensor& x, Tensor& y, core::ThreadPool* pool);

}  // namespace kestrel::kernels::cpu

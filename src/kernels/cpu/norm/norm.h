// Fast float32 row kernels: Softmax / LogSoftmax along the last axis, LayerNormalization over
// trailing dims, mean / sum / max over trailing dims (ReduceMean/ReduceSum/ReduceMax over the last
// axes, GlobalAveragePool, GlobalMaxPool). Per-ISA row functions (norm_<isa>.cc) behind one table;
// the drivers here check shapes and split rows over threads.
#pragma once

#include <cstdint>

#include "core/cpu_features.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

namespace kestrel::kernels::cpu {

using core::Status;
using core::Tensor;

enum class RowReduce { kSum, kMean, kMax };

struct NormTable {
  core::Isa isa = core::Isa::kScalar;
  const char* name = "";
  // y = softmax(x) (log_softmax when `log`) over n > 0 values.
  void (*softmax)(const float* x, float* y, int64_t n, bool log) = nullptr;
  // y = (x - mean) * inv_std * scale + bias (bias may be null); returns mean and inv_std.
  void (*layer_norm)(const float* x, float* y, int64_t n, const float* scale, const float* bias, float epsilon,
                     float* mean, float* inv_std) = nullptr;
  float (*reduce)(RowReduce op, const float* x, int64_t n) = nullptr;
};

const NormTable* norm_table(core::Isa isa);
namespace norm_detail {
const NormTable* table_scalar();
const NormTable* table_avx2();
const NormTable* table_avx512();
}  // namespace norm_detail

// Softmax / LogSoftmax of f32 x along its last axis (y same shape).
Status softmax_last_axis_f32(const NormTable& t, bool log, const Tensor& x, Tensor& y, core::ThreadPool* pool);

// LayerNormalization over dims [axis, rank) when scale (and bias) have exactly those trailing dims
// (leading 1s allowed) and everything is f32; returns false (nothing written) otherwise.
bool layer_norm_f32(const NormTable& t, const Tensor& x, const Tensor& scale, const Tensor* bias, int64_t axis,
                    float epsilon, Tensor& y, Tensor* mean, Tensor* inv_std, core::ThreadPool* pool);

// y[r] = op over row r of x viewed as [numel / inner, inner]; y must have numel / inner elements.
Status reduce_rows_f32(const NormTable& t, RowReduce op, const Tensor& x, int64_t inner, Tensor& y,
                       core::ThreadPool* pool);

// x viewed as [outer, red, inner] -> y [outer, inner]: op over the middle axis (ReduceMean over
// the token axis of [B, N, C], ...). Vectorized over inner by the compiler.
Status reduce_middle_f32(RowReduce op, const Tensor& x, int64_t outer, int64_t red, int64_t inner, Tensor& y,
                         core::ThreadPool* pool);

// When the reduced axes (mask), size-1 dims ignored, are one contiguous block: true, with the
// sizes before (outer), of (red) and after (inner) the block.
bool reduce_block(const core::Dims& dims, const std::vector<bool>& mask, int64_t* outer, int64_t* red, int64_t* inner);

// When the reduced axes (mask) are one trailing block (ignoring size-1 dims), the row length of
// that block; else -1.
int64_t trailing_reduce_inner(const core::Dims& dims, const std::vector<bool>& mask);

}  // namespace kestrel::kernels::cpu

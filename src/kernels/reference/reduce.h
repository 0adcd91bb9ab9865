// Reference reduction kernels: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare,
// ArgMax/ArgMin, TopK and CumSum. Plain loops; the oracle for fast kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

enum class ReduceOp { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// Resolves the ONNX `axes` of a reduction over a tensor of rank `rank` into one flag per dim
// (true = reduced). Empty axes reduce every dim. Errors on out-of-range or repeated axes.
core::Result<std::vector<bool>> reduce_mask(const std::vector<int64_t>& axes, int64_t rank);

// y = op of x over the dims flagged in `reduced` (one flag per dim of x). y holds the kept dims in
// order (with or without the reduced dims as 1s: only its element count matters) and x's dtype.
// Floats accumulate in double. Integers are exact and wrap on overflow, except L2, LogSum and
// LogSumExp, computed in double and converted back (truncating, saturating). Bool: Max/Min only.
// An empty reduction gives 0 (Sum, L1, L2, SumSquare), 1 (Prod), NaN (Mean of floats; 0 for
// integers), -inf (LogSum, LogSumExp) and the lowest / highest value (Max / Min; -inf / +inf).
// Max and Min propagate NaN.
Status reduce(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced, Tensor& y);

// y (int64) = index of the largest (is_max) or smallest value along `axis` (normalized). Ties go to
// the first index, or the last with select_last_index; NaN counts as the extreme value, as in numpy.
// Errors if the axis is empty.
Status arg_reduce(bool is_max, const Tensor& x, int64_t axis, bool select_last_index, Tensor& y);

struct TopKParams {
  int64_t axis = -1;  // normalized by the caller
  int64_t k = 0;
  bool largest = true;
  bool sorted = true;  // unsorted output is allowed to be in any order; we always sort
};
// values / indices (int64) hold the k largest (or smallest) elements along the axis, best first;
// equal values keep the lower index first. NaN counts as larger than every number.
Status top_k(const TopKParams& p, const Tensor& x, Tensor& values, Tensor& indices);

struct CumSumParams {
  int64_t axis = 0;  // normalized by the caller
  bool exclusive = false;
  bool reverse = false;
};
// y = running sum of x along the axis (exclusive: without the element itself; reverse: from the end).
Status cum_sum(const CumSumParams& p, const Tensor& x, Tensor& y);

}  // namespace kestrel::kernels::ref

// Reference linear-algebra kernels: Einsum (numpy semantics: implicit or explicit output, ellipsis
// broadcasting, repeated labels as diagonals) and Det (batched, LU with partial pivoting).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

// An einsum equation resolved against input shapes. Labels are the letters' character codes;
// the axes covered by "..." get labels kEllipsisLabel + k (k counted from the left of the
// broadcast ellipsis shape).
struct EinsumPlan {
  static constexpr int kEllipsisLabel = 128;
  std::vector<std::vector<int>> inputs;  // label of each axis of each input
  std::vector<int> output;               // label of each output axis
  core::Dims out_dims;
};

// Parses `equation` (spaces ignored) for inputs of the given dims. Errors: malformed equation,
// wrong number of terms, label / rank mismatch, sizes that do not match or broadcast (size 1),
// explicit output labels missing from the inputs or repeated.
core::Result<EinsumPlan> einsum_plan(const std::string& equation, const std::vector<core::Dims>& input_dims);

// y (allocated with plan.out_dims, the inputs' dtype) = the einsum. Operands are contracted left to
// right, each step summing out the labels no later operand and not the output needs, so the cost
// is that of the pairwise products (never the product of every label's size at once). Floats
// accumulate in double; integers wrap modulo 2^64.
Status einsum(const EinsumPlan& plan, std::span<const Tensor* const> inputs, Tensor& y);

// y (dims x.dims() without the last two) = determinant of each trailing square matrix, computed in
// double by LU decomposition with partial pivoting; 1 for 0x0 matrices.
Status det(const Tensor& x, Tensor& y);

}  // namespace kestrel::kernels::ref

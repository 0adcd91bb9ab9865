// Concrete tensor shapes (Dims) and checked arithmetic on them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace kestrel::core {

using Dims = std::vector<int64_t>;

// Refuse anything above this many elements in one tensor: a hostile file cannot make us
// multiply our way past int64 or ask the allocator for exabytes.
constexpr int64_t kMaxElements = int64_t{1} << 40;

// Product of dims, or an error if any dim is negative or the product exceeds kMaxElements.
Result<int64_t> checked_num_elements(const Dims& dims);
// Product of dims without checks (dims must already be validated).
int64_t num_elements(const Dims& dims);
// "[1,3,224,224]"
std::string dims_to_string(const Dims& dims);
// Row-major strides in elements.
Dims row_major_strides(const Dims& dims);
// Normalizes an axis in [-rank, rank) to [0, rank); error names `what`.
Result<int64_t> normalize_axis(int64_t axis, int64_t rank, const char* what = "axis");

// One axis of an ONNX Slice: `start` and `end` (negative ones count from the end; both clamped to the axis) and a
// non-zero `step` over an axis of `dim` elements select `count` elements from index `start` (0 when count is 0).
struct SliceRange {
  int64_t start = 0, count = 0;
};
SliceRange slice_range(int64_t start, int64_t end, int64_t step, int64_t dim);

}  // namespace kestrel::core

// Checked shape arithmetic.
#include "core/shape.h"

#include <algorithm>

#include "core/str_util.h"

namespace kestrel::core {

Result<int64_t> checked_num_elements(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return out_of_range(str_cat("negative dimension in shape ", dims_to_string(dims)));
    if (d == 0) n = 0;
    else if (n != 0) {
      if (n > kMaxElements / d)
        return out_of_range(str_cat("shape ", dims_to_string(dims), " has more than 2^40 elements"));
      n *= d;
    }
  }
  // A later dimension may be huge after a zero; that is still an empty tensor.
  return n;
}

int64_t num_elements(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string dims_to_string(const Dims& dims) { return "[" + join(dims, ",") + "]"; }

Dims row_major_strides(const Dims& dims) {
  Dims s(dims.size());
  int64_t acc = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    s[i] = acc;
    acc *= dims[i];
  }
  return s;
}

Result<int64_t> normalize_axis(int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank)
    return out_of_range(str_cat(what, " ", axis, " is out of range for rank ", rank));
  return axis < 0 ? axis + rank : axis;
}

SliceRange slice_range(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  int64_t count;
  if (dim == 0) {
    count = 0;  // (and [0, dim - 1] below would be an empty range)
  } else if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    count = end > start ? (end - start - 1) / step + 1 : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    // -step overflows for INT64_MIN: count in unsigned arithmetic instead.
    const uint64_t mag = static_cast<uint64_t>(0) - static_cast<uint64_t>(step);
    count = start > end ? static_cast<int64_t>(static_cast<uint64_t>(start - end - 1) / mag + 1) : 0;
  }
  return {count > 0 ? start : 0, count};
}

}  // namespace kestrel::core

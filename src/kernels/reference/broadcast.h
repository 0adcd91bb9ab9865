// Broadcast indexing for reference kernels: walks an output shape and yields, for each output
// element, the matching element offset in each (numpy-broadcast) input.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/shape.h"

namespace kestrel::kernels::ref {

// Output shape of numpy broadcasting; false if the shapes are incompatible.
bool broadcast_dims(const std::vector<const core::Dims*>& inputs, core::Dims* out);

// Strides (in elements) of `in` seen through output shape `out`: 0 where the input broadcasts.
core::Dims broadcast_strides(const core::Dims& in, const core::Dims& out);

// Calls f(out_index, offsets...) for every output element, with one offset per input.
template <size_t N, class F>
void for_each_broadcast(const core::Dims& out, const std::array<core::Dims, N>& strides, F&& f) {
  const size_t rank = out.size();
  int64_t total = core::num_elements(out);
  std::vector<int64_t> idx(rank, 0);
  std::array<int64_t, N> off{};
  for (int64_t i = 0; i < total; ++i) {
    f(i, off);
    // Increment the multi-index, updating offsets incrementally.
    for (size_t d = rank; d-- > 0;) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (idx[d] < out[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * out[d];
      idx[d] = 0;
    }
  }
}

}  // namespace kestrel::kernels::ref

// Fast Concat: the output as `outer` rows of the inputs' blocks, copied with memcpy by byte range.
#include "kernels/cpu/transform/concat.h"

#include <algorithm>
#include <cstring>

namespace kestrel::kernels::cpu {

namespace {

// Below this many bytes one thread copies everything: a hand-off costs more than it saves.
constexpr int64_t kSplitBytes = 256 * 1024;

}  // namespace

bool concat_fast(std::span<const core::Tensor* const> xs, int64_t axis, core::Tensor& y, core::ThreadPool* pool) {
  if (xs.empty()) return false;
  const core::Tensor& first = *xs[0];
  const int64_t rank = first.rank();
  if (first.dtype() == core::DType::kString || rank == 0) return false;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  int64_t axis_total = 0;
  for (const core::Tensor* t : xs) {
    if (t->dtype() != first.dtype() || t->rank() != rank) return false;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && t->dim(d) != first.dim(d)) return false;
    if (t->num_elements() > 0 && !t->raw_data()) return false;
    axis_total += t->dim(axis);
  }
  if (y.dtype() != first.dtype() || y.rank() != rank) return false;
  for (int64_t d = 0; d < rank; ++d)
    if (y.dim(d) != (d == axis ? axis_total : first.dim(d))) return false;
  if (y.num_elements() == 0) return true;
  if (!y.raw_data()) return false;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= first.dim(d);
  for (int64_t d = axis + 1; d < rank; ++d) inner *= first.dim(d);
  const int64_t esize = static_cast<int64_t>(core::dtype_size(first.dtype()));
  const int64_t row_bytes = axis_total * inner * esize, total = outer * row_bytes;
  char* out = static_cast<char*>(y.raw_data());
  // Copies output bytes [b, e): the part of every input block that falls inside.
  auto copy_range = [&](int64_t b, int64_t e) {
    for (int64_t o = b / row_bytes; o < outer && o * row_bytes < e; ++o) {
      int64_t pos = o * row_bytes;
      for (const core::Tensor* t : xs) {
        const int64_t block = t->dim(axis) * inner * esize;
        const int64_t lo = std::max(pos, b), hi = std::min(pos + block, e);
        const char* src = static_cast<const char*>(t->raw_data()) + o * block + (lo - pos);
        // An input the planner placed at its slice of the output is already there.
        if (lo < hi && src != out + lo) std::memcpy(out + lo, src, static_cast<size_t>(hi - lo));
        pos += block;
      }
    }
  };
  const int threads = pool ? pool->num_threads() : 1;
  if (threads <= 1 || total < kSplitBytes) {
    copy_range(0, total);
    return true;
  }
  if (outer == 1) {
    // One block per input: thread t copies range t of every input (line-aligned within the input),
    // where the conv that wrote the input with one range of output channels per thread left it.
    // Halves of the output would have each thread copy all of one input, half of it remote.
    pool->run(threads, [&](int64_t t) {
      int64_t pos = 0;
      for (const core::Tensor* x : xs) {
        const int64_t block = x->dim(axis) * inner * esize, lines = block / 64;
        const int64_t lo = lines * t / threads * 64, hi = t + 1 == threads ? block : lines * (t + 1) / threads * 64;
        if (lo < hi)
          std::memcpy(out + pos + lo, static_cast<const char*>(x->raw_data()) + lo, static_cast<size_t>(hi - lo));
        pos += block;
      }
    });
    return true;
  }
  // Ranges of whole 64-byte lines: no line of y is written by two threads.
  const int64_t lines = (total + 63) / 64;
  pool->parallel_for(lines, 1, [&](int64_t l0, int64_t l1) { copy_range(l0 * 64, std::min(total, l1 * 64)); });
  return true;
}

}  // namespace kestrel::kernels::cpu

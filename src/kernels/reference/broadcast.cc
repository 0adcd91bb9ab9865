// Broadcast shape and stride computation.
#include "kernels/reference/broadcast.h"

#include <algorithm>

namespace kestrel::kernels::ref {

bool broadcast_dims(const std::vector<const core::Dims*>& inputs, core::Dims* out) {
  size_t rank = 0;
  for (const auto* d : inputs) rank = std::max(rank, d->size());
  out->assign(rank, 1);
  for (const auto* d : inputs) {
    size_t off = rank - d->size();
    for (size_t i = 0; i < d->size(); ++i) {
      int64_t v = (*d)[i];
      int64_t& o = (*out)[off + i];
      if (v == 1) continue;
      if (o == 1) o = v;
      else if (o != v) return false;
    }
  }
  return true;
}

core::Dims broadcast_strides(const core::Dims& in, const core::Dims& out) {
  core::Dims s(out.size(), 0);
  core::Dims own = core::row_major_strides(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 ? 0 : own[i];
  return s;
}

}  // namespace kestrel::kernels::ref

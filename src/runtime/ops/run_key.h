// RunKey: what a kernel's per-call derived data (resolved pads, slice ranges, reduce rows...)
// depends on, so bindings recompute it only when input shapes or shape-like input values change.
// Both buffers only grow, so for static shapes a steady stream of runs allocates nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"

namespace kestrel::runtime {

class RunKey {
 public:
  // Starts building the key of this call.
  RunKey& begin() {
    next_.clear();
    return *this;
  }
  RunKey& add(int64_t v) {
    next_.push_back(v);
    return *this;
  }
  RunKey& add_dims(const core::Dims& d) {
    next_.push_back(static_cast<int64_t>(d.size()));
    next_.insert(next_.end(), d.begin(), d.end());
    return *this;
  }
  // An optional shape-like input: absent, or its dtype, dims and values.
  RunKey& add_values(const core::Tensor* t) {
    if (!t) return add(-1);
    add(static_cast<int64_t>(t->dtype())).add_dims(t->dims());
    if (t->dtype() == core::DType::kI64) {
      const int64_t* p = t->data<int64_t>();
      next_.insert(next_.end(), p, p + t->num_elements());
    } else if (t->dtype() == core::DType::kI32) {
      const int32_t* p = t->data<int32_t>();
      for (int64_t i = 0; i < t->num_elements(); ++i) next_.push_back(p[i]);
    } else if (t->dtype() != core::DType::kString) {
      for (int64_t i = 0; i < t->num_elements(); ++i) next_.push_back(t->element_as_int64(i));
    }
    return *this;
  }
  // An optional input of any fixed-size dtype (float scales, roi...): absent, or its dtype, dims
  // and raw bytes (8 a key entry).
  RunKey& add_raw(const core::Tensor* t) {
    if (!t) return add(-1);
    add(static_cast<int64_t>(t->dtype())).add_dims(t->dims());
    if (t->dtype() == core::DType::kString) return *this;
    const auto* p = static_cast<const unsigned char*>(t->raw_data());
    for (size_t i = 0, n = t->nbytes(); i < n; i += 8) {
      int64_t v = 0;
      std::memcpy(&v, p + i, std::min<size_t>(8, n - i));
      next_.push_back(v);
    }
    return *this;
  }
  // True when the key built since begin() is the one last committed.
  bool same() const { return valid_ && next_ == cur_; }
  // The data derived from this call's key is now stored (not called when deriving failed).
  void commit() {
    std::swap(cur_, next_);
    valid_ = true;
  }

 private:
  std::vector<int64_t> cur_, next_;
  bool valid_ = false;
};

}  // namespace kestrel::runtime

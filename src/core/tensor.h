// Tensor: dtype + dims + a data pointer, either owning (shared storage) or a view of memory
// owned elsewhere (an arena, an mmapped file, a caller's buffer).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/dtype.h"
#include "core/shape.h"
#include "core/status.h"

namespace kestrel::core {

class Tensor {
 public:
  Tensor() = default;

  // New zero-filled (or empty-string) tensor, 64-byte aligned. Fails on hostile sizes.
  static Result<Tensor> allocate(DType dtype, Dims dims);
  // Non-owning view; the memory must outlive the tensor and every copy of it.
  static Tensor view(DType dtype, Dims dims, void* data);
  // View that keeps `owner` alive (e.g., the mmapped file or the protobuf holding the bytes).
  static Tensor wrap(DType dtype, Dims dims, void* data, std::shared_ptr<void> owner);
  // Scalar or 1-D helpers (for tests and small constants).
  template <class T>
  static Tensor scalar(T v);
  template <class T>
  static Tensor from_vector(const std::vector<T>& v, Dims dims = {});

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Dims& dims() const { return dims_; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t dim(int64_t i) const { return dims_[static_cast<size_t>(i < 0 ? i + rank() : i)]; }
  int64_t num_elements() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  bool owns_data() const { return owner_ != nullptr; }

  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  template <class T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }
  template <class T>
  std::span<T> span() {
    return {data<T>(), static_cast<size_t>(numel_)};
  }
  template <class T>
  std::span<const T> span() const {
    return {data<T>(), static_cast<size_t>(numel_)};
  }

  // Same data, new dims with the same element count (no copy).
  Result<Tensor> reshaped(Dims dims) const;
  // Deep copy into new aligned storage.
  Result<Tensor> clone() const;
  // Reads element i as double / int64 (for shape-like tensors and tests); any numeric dtype.
  double element_as_double(int64_t i) const;
  int64_t element_as_int64(int64_t i) const;
  // "f32[1,3,224,224]"
  std::string type_string() const;
  const std::shared_ptr<void>& owner() const { return owner_; }

 private:
  DType dtype_ = DType::kUndefined;
  Dims dims_;
  int64_t numel_ = 0;
  void* data_ = nullptr;
  std::shared_ptr<void> owner_;
};

// Copies the elements of src into dst (same dtype and element count); handles strings.
Status copy_tensor_data(const Tensor& src, Tensor& dst);
// Converts a tensor of any numeric dtype to a vector<int64_t> (for axes, shapes, pads...).
std::vector<int64_t> tensor_to_int64s(const Tensor& t);
// double -> int64 without undefined behaviour: NaN gives 0, out of range saturates.
int64_t saturating_int64(double v);
// Converts numeric to double values.
std::vector<double> tensor_to_doubles(const Tensor& t);

template <class T>
Tensor Tensor::scalar(T v) {
  return from_vector<T>(std::vector<T>{v}, Dims{});
}

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& v, Dims dims) {
  if (dims.empty() && v.size() != 1) dims = {static_cast<int64_t>(v.size())};
  Tensor t = allocate(dtype_of<T>, dims).value();
  T* p = t.data<T>();
  for (size_t i = 0; i < v.size() && i < static_cast<size_t>(t.num_elements()); ++i) p[i] = v[i];
  return t;
}

}  // namespace kestrel::core

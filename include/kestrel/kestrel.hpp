// Kestrel public C++ API: load a model, inspect its inputs and outputs, run it.
//
//   kestrel::Session s = kestrel::Session::open("model.onnx");
//   kestrel::Tensor x = kestrel::Tensor::empty(kestrel::DType::kF32, {1, 3, 224, 224});
//   auto outputs = s.run({{"input", x}});
//
// Errors are thrown as kestrel::Error. Opening .onnx files needs the converter library
// (kestrel_convert) linked in; .kst files need only the runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kestrel {

enum class DType : uint8_t {
  kUndefined = 0, kF32, kF16, kBF16, kF64, kI8, kU8, kI16, kU16, kI32, kU32, kI64, kU64, kBool, kString,
};
const char* dtype_name(DType t);
size_t dtype_size(DType t);

enum class ErrorCode : int {
  kOk = 0, kInvalidArgument, kInvalidModel, kUnsupported, kOutOfRange, kIoError, kOutOfMemory, kInternal,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

// A dense, row-major tensor. Copies share the data (like a shared_ptr); use clone() to copy.
class Tensor {
 public:
  Tensor() = default;
  // Zero-filled, 64-byte aligned.
  static Tensor empty(DType dtype, std::vector<int64_t> shape);
  // Copies `data` (num_elements * dtype_size bytes).
  static Tensor from_data(DType dtype, std::vector<int64_t> shape, const void* data);
  // Uses caller memory without copying; it must outlive every copy of the returned tensor.
  static Tensor view(DType dtype, std::vector<int64_t> shape, void* data);
  template <class T>
  static Tensor from_vector(DType dtype, std::vector<int64_t> shape, const std::vector<T>& v) {
    if (v.size() * sizeof(T) < num_elements_of(shape) * dtype_size(dtype))
      throw Error(ErrorCode::kInvalidArgument, "from_vector: not enough data for shape");
    return from_data(dtype, std::move(shape), v.data());
  }

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t num_elements() const { return num_elements_of(shape_); }
  size_t nbytes() const { return num_elements() * dtype_size(dtype_); }
  void* data() { return data_; }
  const void* data() const { return data_; }
  template <class T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }
  Tensor clone() const;
  // "f32[1,3,224,224]"
  std::string type_string() const;

  static size_t num_elements_of(const std::vector<int64_t>& shape);

  // Internal plumbing (used by the implementation; keeps the data alive).
  Tensor(DType dtype, std::vector<int64_t> shape, void* data, std::shared_ptr<void> owner)
      : dtype_(dtype), shape_(std::move(shape)), data_(data), owner_(std::move(owner)) {}
  const std::shared_ptr<void>& owner() const { return owner_; }

 private:
  DType dtype_ = DType::kUndefined;
  std::vector<int64_t> shape_;
  void* data_ = nullptr;
  std::shared_ptr<void> owner_;
};

// Name, dtype and shape of a model input or output; unknown dims are -1 with their symbol in
// dim_names (e.g. "batch"), rank -1 (empty shape, rank_known false) when even that is unknown.
struct TensorInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> shape;
  std::vector<std::string> dim_names;
  bool rank_known = true;
  std::string shape_string() const;  // "[batch,3,224,224]"
};

struct SessionOptions {
  int num_threads = 1;
  int optimization_level = 2;   // 0: import only, 1: cleanups and folding, 2: all fusions
  bool reference_kernels = false;  // run every op with its plain reference kernel
  std::string isa;              // "" (best available), "scalar", "avx2", "avx512"
  // Float math of the 1x1 convolutions: "" (what the model asks: "bf16" in the mixed int8 files `kestrel quantize`
  // writes, else "f32"), "f32", or "bf16" (weights and inputs rounded to bf16, sums in f32, on CPUs with
  // AVX512_BF16; elsewhere f32). Any other value fails Session::open.
  std::string float_math;
};

struct RunStats {
  size_t arena_bytes = 0;
  size_t sum_activation_bytes = 0;
};

class Session {
 public:
  static Session open(const std::string& path, const SessionOptions& options = {});
  static Session from_memory(const void* data, size_t size, const SessionOptions& options = {});
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;

  // Named inputs (all required); returns outputs by name.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);
  // Inputs in the order of inputs(); outputs in the order of outputs(). An output tensor that
  // already has the right dtype and shape is filled in place (no allocation).
  void run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

  RunStats stats() const;

  struct Impl;
  Impl* impl() { return impl_.get(); }

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Library version "0.1.0".
const char* version();

}  // namespace kestrel

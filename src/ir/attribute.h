// Node attributes: the ONNX attribute kinds (scalars, lists, tensors and subgraphs).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/tensor.h"

namespace kestrel::ir {

class Graph;

enum class AttrKind : uint8_t { kFloat, kInt, kString, kTensor, kGraph, kFloats, kInts, kStrings, kTensors, kGraphs };
const char* attr_kind_name(AttrKind k);

class Attribute {
 public:
  using GraphPtr = std::shared_ptr<Graph>;
  using Storage = std::variant<float, int64_t, std::string, core::Tensor, GraphPtr, std::vector<float>,
                               std::vector<int64_t>, std::vector<std::string>, std::vector<core::Tensor>,
                               std::vector<GraphPtr>>;

  Attribute() : v_(int64_t{0}) {}
  Attribute(float v) : v_(v) {}                          // NOLINT
  Attribute(int64_t v) : v_(v) {}                        // NOLINT
  Attribute(int v) : v_(int64_t{v}) {}                   // NOLINT
  Attribute(std::string v) : v_(std::move(v)) {}         // NOLINT
  Attribute(const char* v) : v_(std::string(v)) {}       // NOLINT
  Attribute(core::Tensor v) : v_(std::move(v)) {}        // NOLINT
  Attribute(GraphPtr v) : v_(std::move(v)) {}            // NOLINT
  Attribute(std::vector<float> v) : v_(std::move(v)) {}  // NOLINT
  Attribute(std::vector<int64_t> v) : v_(std::move(v)) {}      // NOLINT
  Attribute(std::vector<std::string> v) : v_(std::move(v)) {}  // NOLINT
  Attribute(std::vector<core::Tensor> v) : v_(std::move(v)) {}  // NOLINT
  Attribute(std::vector<GraphPtr> v) : v_(std::move(v)) {}      // NOLINT

  AttrKind kind() const { return static_cast<AttrKind>(v_.index()); }
  template <class T>
  bool is() const {
    return std::holds_alternative<T>(v_);
  }
  template <class T>
  const T& get() const {
    return std::get<T>(v_);
  }
  template <class T>
  T& get() {
    return std::get<T>(v_);
  }
  const Storage& storage() const { return v_; }
  // Short readable form for the printer: "3", "[1,1]", "tensor f32[64]", "graph(body)".
  std::string to_string() const;

 private:
  Storage v_;
};

}  // namespace kestrel::ir

// Symbolic shapes and value types of the IR: a Dim is a known size, a named symbol, or unknown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"

namespace kestrel::ir {

using core::DType;

struct Dim {
  int64_t value = -1;  // >= 0 when known
  std::string symbol;  // e.g. "batch"; empty when known or anonymous

  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT: a number is a known dim
  static Dim sym(std::string s) {
    Dim d;
    d.symbol = std::move(s);
    return d;
  }
  static Dim unknown() { return Dim(); }
  bool known() const { return value >= 0; }
  bool operator==(const Dim& o) const {
    return known() ? value == o.value : (!o.known() && !symbol.empty() && symbol == o.symbol);
  }
  bool operator!=(const Dim& o) const { return !(*this == o); }
  std::string to_string() const;
};

// A shape whose rank may be unknown (nullopt dims) and whose dims may be symbolic.
struct Shape {
  std::optional<std::vector<Dim>> dims;

  Shape() = default;
  Shape(std::vector<Dim> d) : dims(std::move(d)) {}  // NOLINT
  Shape(const core::Dims& d);                          // NOLINT: all known
  static Shape unknown_rank() { return Shape(); }

  bool rank_known() const { return dims.has_value(); }
  int64_t rank() const { return dims ? static_cast<int64_t>(dims->size()) : -1; }
  const Dim& operator[](int64_t i) const { return (*dims)[static_cast<size_t>(i)]; }
  Dim& operator[](int64_t i) { return (*dims)[static_cast<size_t>(i)]; }
  bool fully_known() const;
  // Requires fully_known().
  core::Dims concrete() const;
  // Product of dims if fully known, else -1.
  int64_t num_elements() const;
  // The plane (H, W) of a rank-4 NCHW shape whose H and W are known, else nullopt.
  std::optional<std::pair<int64_t, int64_t>> known_plane() const;
  std::string to_string() const;
  bool operator==(const Shape& o) const;
};

struct ValueType {
  DType dtype = DType::kUndefined;
  Shape shape;
  std::string to_string() const;
};

}  // namespace kestrel::ir

// Printing and helpers for symbolic shapes.
#include "ir/types.h"

#include "core/str_util.h"

namespace kestrel::ir {

std::string Dim::to_string() const {
  if (known()) return std::to_string(value);
  return symbol.empty() ? "?" : symbol;
}

Shape::Shape(const core::Dims& d) : dims(std::vector<Dim>(d.begin(), d.end())) {}

std::optional<std::pair<int64_t, int64_t>> Shape::known_plane() const {
  if (rank() != 4 || !(*this)[2].known() || !(*this)[3].known()) return std::nullopt;
  return std::make_pair((*this)[2].value, (*this)[3].value);
}

bool Shape::fully_known() const {
  if (!dims) return false;
  for (const auto& d : *dims)
    if (!d.known()) return false;
  return true;
}

core::Dims Shape::concrete() const {
  core::Dims out;
  out.reserve(dims->size());
  for (const auto& d : *dims) out.push_back(d.value);
  return out;
}

int64_t Shape::num_elements() const {
  if (!fully_known()) return -1;
  int64_t n = 1;
  for (const auto& d : *dims) n *= d.value;
  return n;
}

std::string Shape::to_string() const {
  if (!dims) return "[*]";
  std::string s = "[";
  for (size_t i = 0; i < dims->size(); ++i) {
    if (i) s += ",";
    s += (*dims)[i].to_string();
  }
  return s + "]";
}

bool Shape::operator==(const Shape& o) const {
  if (rank_known() != o.rank_known()) return false;
  if (!rank_known()) return true;
  if (dims->size() != o.dims->size()) return false;
  for (size_t i = 0; i < dims->size(); ++i)
    if ((*dims)[i] != (*o.dims)[i]) return false;
  return true;
}

std::string ValueType::to_string() const { return std::string(core::dtype_name(dtype)) + shape.to_string(); }

}  // namespace kestrel::ir

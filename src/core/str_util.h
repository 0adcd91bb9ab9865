// Tiny string helpers (concatenation of mixed values, joining) used to build error messages.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace kestrel::core {

template <class... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <class Seq>
std::string join(const Seq& seq, const char* sep = ",") {
  std::ostringstream os;
  bool first = true;
  for (const auto& x : seq) {
    if (!first) os << sep;
    os << x;
    first = false;
  }
  return os.str();
}

}  // namespace kestrel::core

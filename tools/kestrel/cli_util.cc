// Helpers shared by the kestrel subcommands.
#include "cli_util.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "api/convert.h"
#include "core/npy.h"
#include "core/str_util.h"

namespace kestrel::cli {

void fail(ErrorCode code, const std::string& message) {
  throw Error(code, message);
}

Tensor read_npy(const std::string& path) {
  auto t = core::read_npy(path);
  api::throw_if_error(t.status());
  return api::to_public(*t);
}

void write_npy(const std::string& path, const Tensor& t) {
  api::throw_if_error(core::write_npy(path, api::to_core(t)));
}

TensorSummary summarize(const Tensor& t) {
  TensorSummary s;
  if (t.dtype() == DType::kString || !t.defined()) return s;
  s.numeric = true;
  core::Tensor c = api::to_core(t);
  double sum = 0;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -s.min;
  for (int64_t i = 0; i < c.num_elements(); ++i) {
    double v = c.element_as_double(i);
    if (!std::isfinite(v)) {
      ++s.nonfinite;
      continue;
    }
    ++s.finite;
    sum += v;
    if (v < s.min) s.min = v;
    if (v > s.max) s.max = v;
  }
  if (s.finite == 0) {
    s.min = s.max = s.mean = 0;
  } else {
    s.mean = sum / static_cast<double>(s.finite);
  }
  return s;
}

std::string summary_string(const TensorSummary& s) {
  if (!s.numeric) return "(not numeric)";
  if (s.finite == 0 && s.nonfinite == 0) return "(empty)";
  char buf[160];
  if (s.finite == 0) {
    std::snprintf(buf, sizeof buf, "no finite values (nonfinite=%lld)", static_cast<long long>(s.nonfinite));
    return buf;
  }
  std::snprintf(buf, sizeof buf, "min=%.6g max=%.6g mean=%.6g", s.min, s.max, s.mean);
  std::string r = buf;
  if (s.nonfinite) r += core::str_cat(" nonfinite=", s.nonfinite);
  return r;
}

Tensor random_tensor(DType dtype, const std::vector<int64_t>& shape, uint64_t seed) {
  if (dtype == DType::kString || dtype == DType::kUndefined)
    fail(ErrorCode::kUnsupported, core::str_cat("cannot make random ", dtype_name(dtype), " tensors"));
  Tensor t = Tensor::empty(dtype, shape);
  core::Tensor c = api::to_core(t);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small_int(0, 9);
  std::uniform_int_distribution<int> bit(0, 1);
  core::visit_numeric_dtype(c.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = c.data<T>();
    for (int64_t i = 0; i < c.num_elements(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = bit(rng) != 0;
      } else if constexpr (std::is_integral_v<T>) {
        p[i] = static_cast<T>(small_int(rng));
      } else {
        p[i] = T(real(rng));
      }
    }
  });
  return t;
}

std::string safe_file_name(std::string_view name) {
  std::string r;
  r.reserve(name.size());
  for (char ch : name) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
              ch == '_' || ch == '-';
    r += ok ? ch : '_';
  }
  if (r.find_first_not_of('.') == std::string::npos) r = "_";  // "", ".", ".."
  return r;
}

std::vector<int64_t> parse_dims(const std::string& text, const std::string& what) {
  std::vector<int64_t> dims;
  if (text.empty() || text == "scalar") return dims;
  size_t i = 0;
  while (true) {
    size_t start = i;
    int64_t d = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (d > (int64_t{1} << 40))
        fail(ErrorCode::kInvalidArgument, core::str_cat(what, ": dimension too large in '", text, "'"));
      d = d * 10 + (text[i] - '0');
      ++i;
    }
    if (i == start)
      fail(ErrorCode::kInvalidArgument,
           core::str_cat(what, ": bad shape '", text, "' (expected dims like 1x3x224x224)"));
    dims.push_back(d);
    if (i == text.size()) break;
    if (text[i] != 'x' && text[i] != 'X' && text[i] != ',')
      fail(ErrorCode::kInvalidArgument,
           core::str_cat(what, ": bad shape '", text, "' (expected dims like 1x3x224x224)"));
    ++i;
  }
  return dims;
}

std::pair<std::string, std::string> split_assignment(const std::string& text, const std::string& option,
                                                     const std::string& form) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    fail(ErrorCode::kInvalidArgument, core::str_cat(option, " expects ", form, ", got '", text, "'"));
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[64];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string format_count(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string r;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) r += ',';
    r += digits[i];
  }
  return r;
}

}  // namespace kestrel::cli

// Helpers of `kestrel bench`: statistics, FLOP counts, JSON text, memory readings.
#include "bench_util.h"

#include <sys/resource.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "ir/ops/window_geometry.h"

namespace kestrel::cli {

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  if (p <= 0) return sorted.front();
  if (p >= 1) return sorted.back();
  double pos = p * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<size_t>(pos);
  size_t hi = lo + 1 < sorted.size() ? lo + 1 : lo;
  double f = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * f;
}

namespace {

double numel(const std::vector<int64_t>& d) {
  double n = 1;
  for (int64_t x : d) n *= static_cast<double>(x);
  return n;
}

// Product of the dims after the first: the multiply-adds per output (Conv) or input
// (ConvTranspose) element for a weight [M, C/group, k...] or [C, M/group, k...].
double per_element_macs(const std::vector<int64_t>& w) {
  if (w.size() < 2) return 0;
  double n = 1;
  for (size_t i = 1; i < w.size(); ++i) n *= static_cast<double>(w[i]);
  return n;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

double op_flops(std::string_view op, const std::vector<std::vector<int64_t>>& in,
                const std::vector<std::vector<int64_t>>& out) {
  auto input = [&](size_t i) -> const std::vector<int64_t>* {
    return i < in.size() && !in[i].empty() ? &in[i] : nullptr;
  };
  if (out.empty() || out[0].empty()) return 0;
  const std::vector<int64_t>& y = out[0];
  if (op == "ConvTranspose" || ends_with(op, "ConvTranspose")) {
    const auto *x = input(0), *w = input(1);
    return x && w ? 2 * numel(*x) * per_element_macs(*w) : 0;
  }
  if (op == "FusedPointwiseDepthwise") {  // [expand 1x1 (M x C per pixel)], depthwise / grouped k x k, [project 1x1]
    const auto *x = input(0), *w1 = input(1), *w2 = input(3), *w3 = input(5);
    if (!x || !w2 || (w1 && w1->size() != 4) || w2->size() != 4 || y.size() != 4 || y[1] <= 0) return 0;
    const double m = static_cast<double>((*w2)[0]);
    const double dw_out = numel(y) / static_cast<double>(y[1]) * m;  // N * M * OH * OW
    double f = 2 * dw_out * static_cast<double>((*w2)[1] * (*w2)[2] * (*w2)[3]);
    if (w1) f += 2 * numel(*x) * m;
    if (w3) f += 2 * numel(y) * m;
    return f;
  }
  if (ends_with(op, "Conv") || op == "ConvInteger") {
    const auto* w = input(op == "QLinearConv" ? 3 : 1);
    return w ? 2 * numel(y) * per_element_macs(*w) : 0;
  }
  if (ends_with(op, "Gemm")) {
    const auto* a = input(0);
    if (!a || y.size() != 2 || y[0] <= 0) return 0;
    return 2 * numel(y) * (numel(*a) / static_cast<double>(y[0]));
  }
  if (ends_with(op, "MatMul") || op == "MatMulInteger" || op == "MatMulWeightInt8") {
    const auto* a = input(0);
    return a ? 2 * numel(y) * static_cast<double>(a->back()) : 0;
  }
  return 0;
}

double node_flops(const ir::Node& n, const std::vector<std::vector<int64_t>>& in,
                  std::vector<std::vector<int64_t>> out) {
  if (n.op_type() == "FusedConv" && n.has_attr("pool_kernel_shape") && in.size() > 1 && in[0].size() == 4 &&
      in[1].size() == 4 && !out.empty() && out[0].size() == 4) {
    auto window = ir::read_window_attrs(n, {in[1][2], in[1][3]}, false);
    if (!window.is_ok()) return 0;
    for (size_t i = 0; i < 2; ++i) {
      auto aw = ir::forward_window(*window, i, in[0][i + 2]);
      if (!aw.is_ok()) return 0;
      out[0][i + 2] = aw->out;
    }
  }
  return op_flops(n.op_type(), in, out);
}

std::string json_string(std::string_view s) {
  std::string r = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"':
        r += "\\\"";
        break;
      case '\\':
        r += "\\\\";
        break;
      case '\n':
        r += "\\n";
        break;
      case '\r':
        r += "\\r";
        break;
      case '\t':
        r += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          r += buf;
        } else {
          r += ch;
        }
    }
  }
  r += '"';
  return r;
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

uint64_t peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      unsigned long long kb = 0;
      if (std::sscanf(line.c_str() + 6, "%llu", &kb) == 1) return static_cast<uint64_t>(kb) * 1024;
    }
  }
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0) return static_cast<uint64_t>(ru.ru_maxrss) * 1024;  // KiB on Linux
  return 0;
}

}  // namespace kestrel::cli

// Calibration methods and the calibration run.
#include "quant/calibrate.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/str_util.h"
#include "quant/graph_runner.h"

namespace kestrel::quant {

using core::str_cat;

bool parse_calib_method(std::string_view text, CalibMethod* out) {
  if (text == "minmax")
    *out = CalibMethod::kMinMax;
  else if (text == "kl" || text == "entropy")
    *out = CalibMethod::kKl;
  else if (text == "percentile")
    *out = CalibMethod::kPercentile;
  else if (text == "ema")
    *out = CalibMethod::kEma;
  else
    return false;
  return true;
}

const char* calib_method_name(CalibMethod m) {
  switch (m) {
    case CalibMethod::kMinMax:
      return "minmax";
    case CalibMethod::kKl:
      return "kl";
    case CalibMethod::kPercentile:
      return "percentile";
    case CalibMethod::kEma:
      return "ema";
  }
  return "?";
}

void Histogram::add(float v) {
  const size_t n = counts.size();
  if (n == 0) return;
  double pos = hi > lo ? (static_cast<double>(v) - lo) / (hi - lo) * static_cast<double>(n) : 0.0;
  size_t i = pos <= 0 ? 0 : pos >= static_cast<double>(n) ? n - 1 : static_cast<size_t>(pos);
  counts[i] += 1;
}

double Histogram::total() const {
  double t = 0;
  for (double c : counts) t += c;
  return t;
}

TensorRange percentile_range(const Histogram& h, double percentile) {
  const size_t n = h.counts.size();
  const double total = h.total();
  if (n == 0 || total <= 0) return {static_cast<float>(h.lo), static_cast<float>(h.hi)};
  const double width = (h.hi - h.lo) / static_cast<double>(n);
  const double keep = std::clamp(percentile, 0.0, 100.0) / 100.0;
  // Upper bound: the first bin edge below which `keep` of the values lie; lower: same from below.
  double cum = 0;
  size_t upper = n - 1;
  for (size_t i = 0; i < n; ++i) {
    cum += h.counts[i];
    if (cum >= keep * total) {
      upper = i;
      break;
    }
  }
  cum = 0;
  size_t lower = 0;
  for (size_t i = n; i-- > 0;) {
    cum += h.counts[i];
    if (cum >= keep * total) {
      lower = i;
      break;
    }
  }
  return {static_cast<float>(h.lo + width * static_cast<double>(lower)),
          static_cast<float>(h.lo + width * static_cast<double>(upper + 1))};
}

double kl_threshold(const std::vector<double>& abs_counts, double hi, int levels) {
  const int n = static_cast<int>(abs_counts.size());
  if (n == 0 || levels <= 0 || hi <= 0) return hi;
  if (n <= levels) return hi;
  const double width = hi / n;
  double best_kl = std::numeric_limits<double>::infinity();
  int best_i = n;
  std::vector<double> p, q;
  double tail = 0;
  for (int i = n - 1; i >= levels; --i) tail += abs_counts[static_cast<size_t>(i)];
  // Candidate thresholds: the first i bins, with the clipped values (bins >= i) added to the
  // last kept bin, against the first i bins merged into `levels` chunks and spread back over the
  // bins of each chunk that were non-empty.
  for (int i = levels; i <= n; ++i) {
    if (i > levels) tail -= abs_counts[static_cast<size_t>(i - 1)];
    p.assign(abs_counts.begin(), abs_counts.begin() + i);
    p[static_cast<size_t>(i - 1)] += tail;
    q.assign(static_cast<size_t>(i), 0.0);
    for (int j = 0; j < levels; ++j) {
      const int b0 = static_cast<int>(static_cast<int64_t>(j) * i / levels);
      const int b1 = static_cast<int>(static_cast<int64_t>(j + 1) * i / levels);
      double sum = 0;
      int nonzero = 0;
      for (int b = b0; b < b1; ++b) {
        sum += abs_counts[static_cast<size_t>(b)];
        nonzero += abs_counts[static_cast<size_t>(b)] > 0;
      }
      if (nonzero == 0) continue;
      for (int b = b0; b < b1; ++b)
        if (abs_counts[static_cast<size_t>(b)] > 0) q[static_cast<size_t>(b)] = sum / nonzero;
    }
    double psum = 0, qsum = 0;
    for (int b = 0; b < i; ++b) {
      psum += p[static_cast<size_t>(b)];
      qsum += q[static_cast<size_t>(b)];
    }
    if (psum <= 0 || qsum <= 0) continue;
    double kl = 0;
    for (int b = 0; b < i; ++b) {
      const double pb = p[static_cast<size_t>(b)] / psum;
      if (pb <= 0) continue;
      const double qb = std::max(q[static_cast<size_t>(b)] / qsum, 1e-12);
      kl += pb * std::log(pb / qb);
    }
    if (kl < best_kl) {
      best_kl = kl;
      best_i = i;
    }
  }
  return std::min(hi, (best_i + 0.5) * width);
}

void RangeCollector::observe(int pass, const std::string& name, const core::Tensor& t) {
  if (t.dtype() != core::DType::kF32 || t.num_elements() == 0) return;
  Stats& s = stats_[name];
  std::span<const float> v = t.span<float>();
  if (pass == 0) {
    float mn = std::numeric_limits<float>::infinity(), mx = -mn;
    for (float x : v)
      if (std::isfinite(x)) {
        mn = std::min(mn, x);
        mx = std::max(mx, x);
      }
    if (mn > mx) return;  // nothing finite
    if (!s.seen) {
      s.min = mn, s.max = mx;
      s.ema_min = mn, s.ema_max = mx;
      s.seen = true;
    } else {
      s.min = std::min(s.min, mn);
      s.max = std::max(s.max, mx);
      const double d = opts_.ema_decay;
      s.ema_min = d * s.ema_min + (1 - d) * mn;
      s.ema_max = d * s.ema_max + (1 - d) * mx;
    }
    return;
  }
  if (!s.seen) return;
  const size_t bins = static_cast<size_t>(std::max(opts_.num_bins, 16));
  if (opts_.method == CalibMethod::kPercentile) {
    if (s.signed_hist.counts.empty()) {
      s.signed_hist.lo = s.min;
      s.signed_hist.hi = s.max;
      s.signed_hist.counts.assign(bins * 4, 0.0);  // finer: the tails are what matters
    }
    for (float x : v)
      if (std::isfinite(x)) s.signed_hist.add(x);
  } else {
    if (s.abs_hist.counts.empty()) {
      s.abs_hist.lo = 0;
      s.abs_hist.hi = std::max(std::fabs(s.min), std::fabs(s.max));
      s.abs_hist.counts.assign(bins, 0.0);
    }
    // Exact zeros (half of a Relu output) are represented exactly whatever the range; in the
    // first bin they would dominate the divergence and pull the threshold far down.
    for (float x : v)
      if (std::isfinite(x) && x != 0.0f) s.abs_hist.add(std::fabs(x));
  }
}

std::map<std::string, TensorRange> RangeCollector::ranges() const {
  std::map<std::string, TensorRange> out;
  for (const auto& [name, s] : stats_) {
    if (!s.seen) continue;
    TensorRange r{s.min, s.max};
    switch (opts_.method) {
      case CalibMethod::kMinMax:
        break;
      case CalibMethod::kEma:
        r = {static_cast<float>(s.ema_min), static_cast<float>(s.ema_max)};
        break;
      case CalibMethod::kPercentile:
        if (!s.signed_hist.counts.empty()) r = percentile_range(s.signed_hist, opts_.percentile);
        break;
      case CalibMethod::kKl:
        // KL over a sparse histogram (a small tensor: a few values per bin or less) picks
        // thresholds from noise; such tensors keep their min-max range.
        if (!s.abs_hist.counts.empty() && s.abs_hist.total() >= 16.0 * static_cast<double>(s.abs_hist.counts.size())) {
          // A one-sided tensor (e.g. after Relu) gets all 255 u8 steps; a two-sided one half of
          // them on each side of zero.
          const bool one_sided = s.min >= 0 || s.max <= 0;
          float t = static_cast<float>(kl_threshold(s.abs_hist.counts, s.abs_hist.hi, one_sided ? 255 : 128));
          // A point mass at the maximum (Relu6 / Clip saturation) is signal, not an outlier:
          // clipping it moves many values at once, which KL over the merged last bin misses.
          if (s.abs_hist.counts.back() >= 1e-3 * s.abs_hist.total()) t = static_cast<float>(s.abs_hist.hi);
          r = {std::max(s.min, -t), std::min(s.max, t)};
        }
        break;
    }
    r.min = std::min(r.min, 0.0f);
    r.max = std::max(r.max, 0.0f);
    out[name] = r;
  }
  return out;
}

core::Result<std::map<std::string, TensorRange>> calibrate(const ir::Graph& g, const std::vector<Sample>& samples,
                                                           const std::vector<std::string>& tensors,
                                                           const CalibOptions& opts, int num_threads,
                                                           const ProgressFn& progress) {
  if (samples.empty()) return core::invalid_argument("calibration: no samples");
  KESTREL_ASSIGN_OR_RETURN(auto runner, TapRunner::create(g, tensors, num_threads));
  RangeCollector rc(opts);
  const int passes = rc.passes();
  std::vector<core::Tensor> outs, taps;
  const size_t total = samples.size() * static_cast<size_t>(passes);
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t i = 0; i < samples.size(); ++i) {
      if (progress) progress("calibrating", static_cast<size_t>(pass) * samples.size() + i, total);
      KESTREL_RETURN_IF_ERROR(runner->run(samples[i], outs, taps).with_context(str_cat("calibration sample ", i)));
      for (size_t k = 0; k < tensors.size(); ++k) rc.observe(pass, tensors[k], taps[k]);
    }
  }
  if (progress) progress("calibrating", total, total);
  return rc.ranges();
}

}  // namespace kestrel::quant

// Calibration: activation ranges of a float model over a calibration set (min-max, KL / entropy,
// percentile, moving-average min-max), from the float values of each observed tensor.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "ir/graph.h"

namespace kestrel::quant {

enum class CalibMethod { kMinMax, kKl, kPercentile, kEma };

// "minmax", "kl", "percentile", "ema" (also "entropy" for kl); false if unknown.
bool parse_calib_method(std::string_view text, CalibMethod* out);
const char* calib_method_name(CalibMethod m);

struct CalibOptions {
  CalibMethod method = CalibMethod::kPercentile;
  double percentile = 99.999;  // kPercentile: keep this share of the values inside the range (each side)
  double ema_decay = 0.9;     // kEma: range = decay * range + (1 - decay) * this sample's min/max
  int num_bins = 2048;        // histogram bins for kl and percentile
};

struct TensorRange {
  float min = 0, max = 0;
};

// A histogram of values in [lo, hi] with equal-width bins (values outside are clamped into the
// end bins).
struct Histogram {
  double lo = 0, hi = 0;
  std::vector<double> counts;
  void add(float v);
  double total() const;
};

// The range that keeps `percentile` percent of the values on each side: the lower bound is the
// (100 - percentile) percentile and the upper bound the percentile one (bin edges).
TensorRange percentile_range(const Histogram& h, double percentile);

// The clipping threshold that minimizes KL(P || Q) between the histogram of |x| (over [0, hi],
// first bin at 0) clipped at a candidate threshold and its quantization to `levels` levels
// (TensorRT's entropy calibration). Returns the threshold value.
double kl_threshold(const std::vector<double>& abs_counts, double hi, int levels);

// Per-tensor statistics over a sequence of samples. Min-max and ema need one pass; kl and
// percentile need a second one (histograms over the ranges seen in the first).
class RangeCollector {
 public:
  explicit RangeCollector(CalibOptions opts) : opts_(opts) {}
  int passes() const { return opts_.method == CalibMethod::kKl || opts_.method == CalibMethod::kPercentile ? 2 : 1; }
  // Call once per sample and pass, for each tensor (float32 only; other dtypes are ignored).
  void observe(int pass, const std::string& name, const core::Tensor& t);
  // The final ranges (always containing 0, so that zero is exactly representable).
  std::map<std::string, TensorRange> ranges() const;

 private:
  struct Stats {
    float min = 0, max = 0;  // over all samples
    bool seen = false;
    double ema_min = 0, ema_max = 0;
    Histogram signed_hist, abs_hist;
  };
  CalibOptions opts_;
  std::map<std::string, Stats> stats_;
};

// One calibration sample: one tensor per model input, in the graph's input order.
using Sample = std::vector<core::Tensor>;

// (phase, done, total) while work goes on.
using ProgressFn = std::function<void(std::string_view phase, size_t done, size_t total)>;

// Runs the float graph over the samples and returns the ranges of the named tensors (graph
// inputs or node outputs). The graph is copied: a Session of the copy exposes the tensors as
// extra outputs.
core::Result<std::map<std::string, TensorRange>> calibrate(const ir::Graph& g, const std::vector<Sample>& samples,
                                                           const std::vector<std::string>& tensors,
                                                           const CalibOptions& opts, int num_threads = 1,
                                                           const ProgressFn& progress = {});

}  // namespace kestrel::quant

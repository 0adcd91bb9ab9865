// Reference random-number kernels.
#include "kernels/reference/random.h"

#include <bit>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "core/str_util.h"
#include "kernels/reference/scalar_io.h"

namespace kestrel::kernels::ref {

using core::DType;
using core::str_cat;

namespace {

// splitmix64 finalizer: spreads nearby seeds (0.0, 1.0, 2.0 ...) over the whole state space.
uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Fills a float tensor with draw(), keeping values below `high` after rounding to T.
template <class Draw>
Status fill_float(Tensor& y, Draw&& draw, double high = std::numeric_limits<double>::infinity(),
                  double low = -std::numeric_limits<double>::infinity()) {
  bool ok = visit_float(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* py = y.data<T>();
    for (int64_t i = 0; i < y.num_elements(); ++i) {
      T v = store_double<T>(draw());
      // Rounding to a narrow float can land on `high`: draw again (a few times at most).
      for (int tries = 0; tries < 64 && high > low && load_double(v) >= high; ++tries) v = store_double<T>(draw());
      if (high > low && load_double(v) >= high) v = store_double<T>(low);
      py[i] = v;
    }
  });
  if (!ok) return core::invalid_argument(str_cat("random output must be a float tensor, is ", y.type_string()));
  return Status::ok();
}

}  // namespace

RandomGenerator RandomGenerator::from_onnx_seed(float seed) {
  return RandomGenerator(mix(std::bit_cast<uint32_t>(seed)));
}

RandomGenerator RandomGenerator::from_entropy() {
  std::random_device rd;
  uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return RandomGenerator(mix(s));
}

double RandomGenerator::uniform() {
  return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
}

double RandomGenerator::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]: log() stays finite
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

Status random_normal(RandomGenerator& g, double mean, double scale, Tensor& y) {
  return fill_float(y, [&] { return mean + scale * g.normal(); });
}

Status random_uniform(RandomGenerator& g, double low, double high, Tensor& y) {
  if (!(high > low)) return fill_float(y, [&] { return low; });
  return fill_float(
      y, [&] { return low + (high - low) * g.uniform(); }, high, low);
}

Status bernoulli(RandomGenerator& g, const Tensor& p, Tensor& y) {
  if (!core::is_float(p.dtype()))
    return core::invalid_argument(str_cat("probabilities must be float, are ", p.type_string()));
  if (y.num_elements() != p.num_elements())
    return core::invalid_argument(str_cat("output ", y.type_string(), " must have the shape of ", p.type_string()));
  const std::vector<double> pv = core::tensor_to_doubles(p);
  for (size_t i = 0; i < pv.size(); ++i)
    if (!(pv[i] >= 0.0 && pv[i] <= 1.0))
      return core::invalid_argument(str_cat("probability ", pv[i], " at index ", i, " is outside [0, 1]"));
  bool ok = core::visit_numeric_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* py = y.data<T>();
    for (size_t i = 0; i < pv.size(); ++i) py[i] = store_double<T>(g.uniform() < pv[i] ? 1.0 : 0.0);
  });
  if (!ok) return core::invalid_argument(str_cat("Bernoulli output must be numeric or bool, is ", y.type_string()));
  return Status::ok();
}

Status multinomial(RandomGenerator& g, const Tensor& logits, Tensor& y) {
  if (!core::is_float(logits.dtype()) || logits.rank() != 2)
    return core::invalid_argument(
        str_cat("Multinomial input must be a float [batch, classes], is ", logits.type_string()));
  if ((y.dtype() != DType::kI32 && y.dtype() != DType::kI64) || y.rank() != 2 || y.dim(0) != logits.dim(0))
    return core::invalid_argument(
        str_cat("Multinomial output must be int32/int64 [", logits.dim(0), ", samples], is ", y.type_string()));
  const int64_t batch = logits.dim(0), classes = logits.dim(1), samples = y.dim(1);
  const std::vector<double> x = core::tensor_to_doubles(logits);
  std::vector<double> cdf(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    const double* row = x.data() + b * classes;
    double peak = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < classes; ++c) peak = std::max(peak, row[c]);
    double total = 0;
    for (int64_t c = 0; c < classes; ++c) {
      if (std::isfinite(peak)) total += std::exp(row[c] - peak);  // exp(-inf) = 0
      cdf[static_cast<size_t>(c)] = total;
    }
    if (!(total > 0) || !std::isfinite(total))
      return core::invalid_argument(str_cat("Multinomial row ", b, " has no class with a positive finite probability"));
    for (int64_t s = 0; s < samples; ++s) {
      const double u = g.uniform() * total;
      int64_t c = 0;
      while (c < classes - 1 && !(u < cdf[static_cast<size_t>(c)])) ++c;
      if (y.dtype() == DType::kI32)
        y.data<int32_t>()[b * samples + s] = static_cast<int32_t>(c);
      else
        y.data<int64_t>()[b * samples + s] = c;
    }
  }
  return Status::ok();
}

}  // namespace kestrel::kernels::ref

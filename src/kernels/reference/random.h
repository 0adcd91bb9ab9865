// Reference random-number kernels: RandomNormal(Like), RandomUniform(Like), Bernoulli and
// Multinomial over a seeded, platform-independent generator (64-bit Mersenne Twister with our own
// distributions, so a seed gives the same numbers with every standard library).
#pragma once

#include <cstdint>
#include <random>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

class RandomGenerator {
 public:
  explicit RandomGenerator(uint64_t seed) : engine_(seed) {}
  // The generator an ONNX `seed` attribute (a float) stands for: equal seeds, equal streams.
  static RandomGenerator from_onnx_seed(float seed);
  // A generator seeded from std::random_device (ops without a seed attribute).
  static RandomGenerator from_entropy();

  // Uniform in [0, 1) with 53 random bits.
  double uniform();
  // Standard normal (Box-Muller).
  double normal();

 private:
  std::mt19937_64 engine_;
};

// y = mean + scale * N(0, 1), y: f16/bf16/f32/f64.
Status random_normal(RandomGenerator& g, double mean, double scale, Tensor& y);

// y uniform in [low, high) (low when high <= low), y: f16/bf16/f32/f64.
Status random_uniform(RandomGenerator& g, double low, double high, Tensor& y);

// y[i] = 1 with probability p[i], else 0. p: f16/f32/f64 in [0, 1] (anything else is an error);
// y: any numeric dtype or bool, p's shape.
Status bernoulli(RandomGenerator& g, const Tensor& p, Tensor& y);

// y[b, s] = a class index drawn with probability softmax(logits[b, :]); logits: [batch, classes]
// float (unnormalized log-probabilities; -inf is probability 0); y: int32/int64 [batch, samples].
// A row whose classes all have probability 0 (or NaN) is an error.
Status multinomial(RandomGenerator& g, const Tensor& logits, Tensor& y);

}  // namespace kestrel::kernels::ref

// Reference signal-processing kernels: DFT (complex, real-to-complex one-sided, inverse and
// complex-to-real inverse), STFT, the Hann / Hamming / Blackman windows and MelWeightMatrix.
// Plain O(n^2) transforms accumulated in double with exact twiddle indices.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

struct DftParams {
  int64_t axis = 0;    // signal axis, normalized to [0, rank - 2]
  int64_t length = 0;  // dft_length (> 0)
  bool inverse = false;
  bool onesided = false;
};

// x: [..., n, ..., 1 (real) or 2 (complex)] along `axis`; the signal is cut to or zero-padded to
// `length`. Forward: y[k] = sum_t x[t] e^{-2 pi i k t / L}; inverse: (1/L) sum_k x[k] e^{+2 pi i k t / L}.
// onesided forward (real x only): y keeps bins 0 .. L/2. onesided inverse (complex x only): x
// holds bins 0 .. L/2 of a Hermitian spectrum, y is the real signal [..., L, ..., 1].
// Otherwise y is complex [..., L, ..., 2]. f32/f16/bf16/f64, y has x's dtype.
Status dft(const DftParams& p, const Tensor& x, Tensor& y);

struct StftParams {
  int64_t frame_step = 1;
  int64_t frame_length = 0;
  bool onesided = true;
};

// signal: [batch, n, 1 or 2]; window: [frame_length] or null (all ones). y: [batch, frames,
// bins, 2] with frames = (n - frame_length) / frame_step + 1 and bins = frame_length / 2 + 1
// (onesided, real signal only) or frame_length. Frame f is the forward DFT of
// signal[f * frame_step + t] * window[t].
Status stft(const StftParams& p, const Tensor& signal, const Tensor* window, Tensor& y);

enum class WindowKind { kHann, kHamming, kBlackman };

// y[n] for n < size: generalized cosine windows over N = size (periodic) or size - 1 (symmetric;
// a symmetric window of size 1 is [1]). Hann 0.5 - 0.5 cos(2 pi n / N); Hamming with a0 = 25/46;
// Blackman 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N). Any numeric y dtype; integers
// truncate as ONNX Cast does.
Status window(WindowKind kind, bool periodic, Tensor& y);

// The ONNX MelWeightMatrix: y[dft_length / 2 + 1, num_mel_bins] of triangular filters between
// mel-spaced bin edges (mel(f) = 2595 log10(1 + f / 700)), edges floored to spectrogram bins as
// the ONNX reference does. Rows outside the spectrogram are dropped. Any numeric y dtype.
Status mel_weight_matrix(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate, double lower_edge_hertz,
                         double upper_edge_hertz, Tensor& y);

}  // namespace kestrel::kernels::ref

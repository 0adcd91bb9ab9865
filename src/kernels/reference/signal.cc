// Reference signal-processing kernels.
#include "kernels/reference/signal.h"

#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "core/str_util.h"
#include "kernels/reference/scalar_io.h"

namespace kestrel::kernels::ref {

using core::DType;
using core::str_cat;
using Complex = std::complex<double>;

namespace {

// e^{2 pi i m / L} for m in [0, L): indexing by (k * t) mod L keeps every angle exact.
std::vector<Complex> twiddles(int64_t length) {
  std::vector<Complex> tw(static_cast<size_t>(length));
  for (int64_t m = 0; m < length; ++m) {
    const double a = 2 * std::numbers::pi * static_cast<double>(m) / static_cast<double>(length);
    tw[static_cast<size_t>(m)] = {std::cos(a), std::sin(a)};
  }
  return tw;
}

// out[k] = scale * sum_t in[t] e^{sign 2 pi i k t / L} for k < out.size(); in has L entries.
void dft_row(const std::vector<Complex>& in, std::vector<Complex>& out, bool inverse, const std::vector<Complex>& tw) {
  const auto length = static_cast<int64_t>(in.size());
  const double scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  for (size_t k = 0; k < out.size(); ++k) {
    Complex acc = 0;
    int64_t m = 0;  // (k * t) mod L, advanced by k each step
    for (int64_t t = 0; t < length; ++t) {
      const Complex w = inverse ? tw[static_cast<size_t>(m)] : std::conj(tw[static_cast<size_t>(m)]);
      acc += in[static_cast<size_t>(t)] * w;
      m += static_cast<int64_t>(k);
      if (m >= length) m %= length;
    }
    out[k] = acc * scale;
  }
}

bool float_dtype(DType t) {
  return core::is_float(t);
}

}  // namespace

Status dft(const DftParams& p, const Tensor& x, Tensor& y) {
  if (!float_dtype(x.dtype()) || y.dtype() != x.dtype())
    return core::invalid_argument(
        str_cat("DFT needs float input and output of the same dtype, got ", x.type_string(), " and ", y.type_string()));
  const int64_t rank = x.rank();
  if (rank < 2 || (x.dim(-1) != 1 && x.dim(-1) != 2))
    return core::invalid_argument(
        str_cat("DFT input must be [..., 1] (real) or [..., 2] (complex), is ", x.type_string()));
  if (p.axis < 0 || p.axis > rank - 2)
    return core::invalid_argument(str_cat("DFT axis ", p.axis, " is out of range for ", x.type_string()));
  if (p.length < 1) return core::invalid_argument(str_cat("dft_length must be >= 1, is ", p.length));
  const bool complex_in = x.dim(-1) == 2;
  const bool irfft = p.onesided && p.inverse;
  if (p.onesided && !p.inverse && complex_in)
    return core::invalid_argument("a one-sided forward DFT needs a real input");
  if (irfft && !complex_in) return core::invalid_argument("a one-sided inverse DFT needs a complex input");
  const int64_t n = x.dim(p.axis);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < p.axis; ++d) outer *= x.dim(d);
  for (int64_t d = p.axis + 1; d < rank - 1; ++d) inner *= x.dim(d);
  const int64_t bins = irfft ? p.length : (p.onesided ? p.length / 2 + 1 : p.length);
  const int64_t cin = x.dim(-1), cout = irfft ? 1 : 2;
  core::Dims want = x.dims();
  want[static_cast<size_t>(p.axis)] = bins;
  want.back() = cout;
  if (y.dims() != want)
    return core::invalid_argument(
        str_cat("DFT output must have shape ", core::dims_to_string(want), ", has ", core::dims_to_string(y.dims())));
  const std::vector<Complex> tw = twiddles(p.length);
  std::vector<Complex> in(static_cast<size_t>(p.length)), out(static_cast<size_t>(bins));
  visit_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        auto load = [&](int64_t t) {
          const int64_t base = ((o * n + t) * inner + i) * cin;
          return Complex(load_double(px[base]), complex_in ? load_double(px[base + 1]) : 0.0);
        };
        if (irfft) {
          // Rebuild the Hermitian spectrum from bins 0 .. L/2 (cut or zero-padded).
          const int64_t half = p.length / 2;
          for (int64_t k = 0; k <= half; ++k) in[static_cast<size_t>(k)] = k < n ? load(k) : Complex(0);
          for (int64_t k = half + 1; k < p.length; ++k)
            in[static_cast<size_t>(k)] = std::conj(in[static_cast<size_t>(p.length - k)]);
        } else {
          for (int64_t t = 0; t < p.length; ++t) in[static_cast<size_t>(t)] = t < n ? load(t) : Complex(0);
        }
        dft_row(in, out, p.inverse, tw);
        for (int64_t k = 0; k < bins; ++k) {
          const int64_t base = ((o * bins + k) * inner + i) * cout;
          py[base] = store_double<T>(out[static_cast<size_t>(k)].real());
          if (cout == 2) py[base + 1] = store_double<T>(out[static_cast<size_t>(k)].imag());
        }
      }
    }
  });
  return Status::ok();
}

Status stft(const StftParams& p, const Tensor& signal, const Tensor* window, Tensor& y) {
  if (!float_dtype(signal.dtype()) || y.dtype() != signal.dtype() || (window && window->dtype() != signal.dtype()))
    return core::invalid_argument("STFT signal, window and output must share one float dtype");
  if (signal.rank() != 3 || (signal.dim(2) != 1 && signal.dim(2) != 2))
    return core::invalid_argument(str_cat("STFT signal must be [batch, length, 1 or 2], is ", signal.type_string()));
  const bool complex_in = signal.dim(2) == 2;
  if (p.onesided && complex_in) return core::invalid_argument("a one-sided STFT needs a real signal");
  if (p.frame_step < 1) return core::invalid_argument(str_cat("frame_step must be >= 1, is ", p.frame_step));
  const int64_t batch = signal.dim(0), n = signal.dim(1), len = p.frame_length;
  if (len < 1 || len > n)
    return core::invalid_argument(str_cat("frame_length ", len, " must be in [1, signal length ", n, "]"));
  if (window && (window->rank() != 1 || window->dim(0) != len))
    return core::invalid_argument(str_cat("window must be [", len, "], is ", window->type_string()));
  const int64_t frames = (n - len) / p.frame_step + 1;
  const int64_t bins = p.onesided ? len / 2 + 1 : len;
  const core::Dims want{batch, frames, bins, 2};
  if (y.dims() != want)
    return core::invalid_argument(
        str_cat("STFT output must have shape ", core::dims_to_string(want), ", has ", core::dims_to_string(y.dims())));
  const std::vector<Complex> tw = twiddles(len);
  std::vector<double> win(static_cast<size_t>(len), 1.0);
  if (window) win = core::tensor_to_doubles(*window);
  std::vector<Complex> in(static_cast<size_t>(len)), out(static_cast<size_t>(bins));
  visit_float(signal.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* ps = signal.data<T>();
    T* py = y.data<T>();
    const int64_t c = signal.dim(2);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t f = 0; f < frames; ++f) {
        for (int64_t t = 0; t < len; ++t) {
          const int64_t base = (b * n + f * p.frame_step + t) * c;
          in[static_cast<size_t>(t)] = Complex(load_double(ps[base]), complex_in ? load_double(ps[base + 1]) : 0.0) *
                                       win[static_cast<size_t>(t)];
        }
        dft_row(in, out, false, tw);
        for (int64_t k = 0; k < bins; ++k) {
          const int64_t base = ((b * frames + f) * bins + k) * 2;
          py[base] = store_double<T>(out[static_cast<size_t>(k)].real());
          py[base + 1] = store_double<T>(out[static_cast<size_t>(k)].imag());
        }
      }
    }
  });
  return Status::ok();
}

Status window(WindowKind kind, bool periodic, Tensor& y) {
  if (y.rank() != 1) return core::invalid_argument(str_cat("window output must be 1-D, is ", y.type_string()));
  const int64_t size = y.dim(0);
  const double denom = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    if (denom == 0) {
      w[static_cast<size_t>(i)] = 1.0;
      continue;
    }
    const double a = 2 * std::numbers::pi * static_cast<double>(i) / denom;
    switch (kind) {
      case WindowKind::kHann:
        w[static_cast<size_t>(i)] = 0.5 - 0.5 * std::cos(a);
        break;
      case WindowKind::kHamming:
        w[static_cast<size_t>(i)] = 25.0 / 46 - 21.0 / 46 * std::cos(a);
        break;
      case WindowKind::kBlackman:
        w[static_cast<size_t>(i)] = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
        break;
    }
  }
  bool ok = core::visit_numeric_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < size; ++i) y.data<T>()[i] = store_double<T>(w[static_cast<size_t>(i)]);
  });
  if (!ok) return core::invalid_argument(str_cat("window output must be numeric, is ", y.type_string()));
  return Status::ok();
}

Status mel_weight_matrix(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate, double lower_edge_hertz,
                         double upper_edge_hertz, Tensor& y) {
  if (num_mel_bins < 1 || dft_length < 1 || sample_rate < 1)
    return core::invalid_argument(str_cat("num_mel_bins, dft_length and sample_rate must be >= 1, are ", num_mel_bins,
                                          ", ", dft_length, ", ", sample_rate));
  if (!(lower_edge_hertz >= 0) || !(upper_edge_hertz >= lower_edge_hertz))
    return core::invalid_argument(
        str_cat("need 0 <= lower_edge_hertz <= upper_edge_hertz, got ", lower_edge_hertz, " and ", upper_edge_hertz));
  const int64_t rows = dft_length / 2 + 1;
  if (y.dims() != core::Dims{rows, num_mel_bins})
    return core::invalid_argument(
        str_cat("MelWeightMatrix output must be [", rows, ", ", num_mel_bins, "], is ", y.type_string()));
  auto mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double low = mel(lower_edge_hertz), high = mel(upper_edge_hertz);
  // num_mel_bins + 2 edges, spaced by (high - low) / (num_mel_bins + 2) as in the ONNX reference.
  const int64_t edges = num_mel_bins + 2;
  const double step = (high - low) / static_cast<double>(edges);
  std::vector<int64_t> bin(static_cast<size_t>(edges));
  for (int64_t i = 0; i < edges; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + low) / 2595.0) - 1.0);
    bin[static_cast<size_t>(i)] =
        core::saturating_int64(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
  }
  std::vector<double> out(static_cast<size_t>(rows * num_mel_bins), 0.0);
  auto set = [&](int64_t r, int64_t col, double v) {
    if (r >= 0 && r < rows) out[static_cast<size_t>(r * num_mel_bins + col)] = v;
  };
  for (int64_t i = 0; i < num_mel_bins; ++i) {
    const int64_t lo = bin[static_cast<size_t>(i)], c = bin[static_cast<size_t>(i + 1)],
                  hi = bin[static_cast<size_t>(i + 2)];
    if (c == lo) {
      set(c, i, 1.0);
    } else {
      for (int64_t j = std::max<int64_t>(lo, 0); j <= c && j < rows; ++j)
        set(j, i, static_cast<double>(j - lo) / static_cast<double>(c - lo));
    }
    if (hi > c)
      for (int64_t j = std::max<int64_t>(c, 0); j < hi && j < rows; ++j)
        set(j, i, static_cast<double>(hi - j) / static_cast<double>(hi - c));
  }
  bool ok = core::visit_numeric_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < out.size(); ++i) y.data<T>()[i] = store_double<T>(out[i]);
  });
  if (!ok) return core::invalid_argument(str_cat("MelWeightMatrix output must be numeric, is ", y.type_string()));
  return Status::ok();
}

}  // namespace kestrel::kernels::ref

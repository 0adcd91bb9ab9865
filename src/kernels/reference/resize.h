// Reference resampling kernels: Resize (nearest / n-linear / cubic, every coordinate transformation,
// antialias, tf_crop_and_resize) and GridSample (linear / nearest / cubic, zeros / border /
// reflection padding, N-D). Plain loops over precomputed per-axis index and weight tables.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class ResizeCoordMode {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,  // Resize-11/12 only
  kTfCropAndResize,
};
enum class NearestRounding { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

struct ResizeParams {
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoordMode coord = ResizeCoordMode::kHalfPixel;
  NearestRounding nearest = NearestRounding::kRoundPreferFloor;
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0;
  bool antialias = false;      // linear / cubic only: widen the filter by 1/scale when downscaling
  std::vector<double> scales;  // one per axis of x (1 where not resized)
  std::vector<double> roi;     // tf_crop_and_resize: rank starts, then rank ends (empty: [0, 1])
};

// Output dims and per-axis scales from Resize's inputs. `axes` are normalized and distinct (all
// axes when the op has no `axes`); exactly one of scales / sizes is given, one value per axis in
// `axes`. Scales give floor(in * scale) (computed in float, as ONNX shape inference does); sizes
// give the sizes (stretch) or one common scale with round(scale * in) (keep-aspect policies).
struct ResizeGeometry {
  core::Dims out_dims;
  std::vector<double> scales;
};
core::Result<ResizeGeometry> resize_geometry(const core::Dims& in, const std::vector<int64_t>& axes,
                                             const std::vector<float>* scales, const std::vector<int64_t>* sizes,
                                             AspectPolicy policy);

// y (allocated with the output dims, x's dtype) = x resized. Nearest works on every dtype; linear
// and cubic on numeric dtypes (integers are rounded and saturated). Every output coordinate maps
// back to the input as the ONNX spec says; neighbours past the edge repeat the edge (or drop out
// with exclude_outside), and tf_crop_and_resize points outside the input get extrapolation_value.
Status resize(const ResizeParams& p, const Tensor& x, Tensor& y);

// One axis of a separable resampling: for each output index, `taps` (input offset, weight) pairs.
struct ResizeAxisTable {
  int64_t taps = 1;
  std::vector<int64_t> offset;   // out_len * taps, input index * stride of the axis
  std::vector<double> weight;    // out_len * taps
  std::vector<uint8_t> outside;  // out_len: tf_crop_and_resize point outside the input
  bool any_outside = false;
};

// resize() in two steps, for bindings that run one shape many times: the tap tables depend on
// the parameters and the input / output dims only, so they are built once (resize_prepare) and
// reused (resize_run); the run's scratch lives here too and only grows, so a run allocates nothing.
struct ResizeTables {
  std::vector<ResizeAxisTable> axes;
  bool single_tap = true;
  std::vector<float> last_weights_f;  // the last axis' weights as float (f32 / f16 / bf16 sums)
  std::vector<int64_t> idx;
  std::vector<std::pair<int64_t, float>> outer_f, next_f;
  std::vector<std::pair<int64_t, double>> outer_d, next_d;
};
Status resize_prepare(const ResizeParams& p, const Tensor& x, const Tensor& y, ResizeTables* t);
// x and y must have the dims and dtype resize_prepare saw.
Status resize_run(ResizeTables& t, const ResizeParams& p, const Tensor& x, Tensor& y);

enum class GridSampleMode { kLinear, kNearest, kCubic };
enum class GridSamplePadding { kZeros, kBorder, kReflection };
struct GridSampleParams {
  GridSampleMode mode = GridSampleMode::kLinear;
  GridSamplePadding padding = GridSamplePadding::kZeros;
  bool align_corners = false;
};
// x: (N, C, D1..Dr); grid: (N, H1..Hr, r) float, coordinates in [-1, 1] with the last spatial axis
// first (x, y, z); y: (N, C, H1..Hr).
Status grid_sample(const GridSampleParams& p, const Tensor& x, const Tensor& grid, Tensor& y);

}  // namespace kestrel::kernels::ref

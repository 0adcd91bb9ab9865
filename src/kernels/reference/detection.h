// Reference kernels of the detection / segmentation head ops: RoiAlign, MaxRoiPool, MaxUnpool and
// NonMaxSuppression. Plain loops; the oracle for fast kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::kernels::ref {

using core::Status;
using core::Tensor;

struct RoiAlignParams {
  bool max_mode = false;   // "max": per sample the largest weighted corner, then the largest sample
  bool half_pixel = true;  // coordinate_transformation_mode half_pixel (else output_half_pixel)
  int64_t output_height = 1;
  int64_t output_width = 1;
  int64_t sampling_ratio = 0;  // 0: ceil(roi size / output size) samples per bin and axis
  float spatial_scale = 1.f;
};
// x: (N, C, H, W) float; rois: (R, 4) [x1, y1, x2, y2] in x's dtype; batch_indices: (R) int;
// y: (R, C, output_height, output_width). Bilinear samples as ONNX Runtime and the ONNX reference
// compute them (samples more than one pixel outside the map count as 0).
Status roi_align(const RoiAlignParams& p, const Tensor& x, const Tensor& rois, const Tensor& batch_indices, Tensor& y);

// x: (N, C, H, W) float; rois: (R, 5) [batch, x1, y1, x2, y2]; y: (R, C, pooled_h, pooled_w): the
// maximum over each bin of the rounded, scaled roi (0 for empty bins).
Status max_roi_pool(int64_t pooled_h, int64_t pooled_w, float spatial_scale, const Tensor& x, const Tensor& rois,
                    Tensor& y);

// Scatters x[i] to flat position indices[i] of a zero tensor of `unpooled` dims (the shape the
// attributes give: (in - 1) * stride + kernel - pads), then places it at the origin of y, whose dims
// may be larger on every axis (MaxUnpool's output_shape input), as the ONNX reference does.
// Out-of-range indices are an error.
Status max_unpool(const Tensor& x, const Tensor& indices, const core::Dims& unpooled, Tensor& y);

struct NmsParams {
  bool center_point_box = false;  // boxes are [x_center, y_center, width, height], else two corners
  int64_t max_output_boxes_per_class = 0;
  float iou_threshold = 0;
  bool has_score_threshold = false;
  float score_threshold = 0;
};
// boxes: (B, N, 4), scores: (B, C, N) float. Returns the selected (batch, class, box) triples in
// output order: batch-major, then class, then decreasing score (ties: lower box index first).
core::Result<std::vector<int64_t>> non_max_suppression(const NmsParams& p, const Tensor& boxes, const Tensor& scores);

}  // namespace kestrel::kernels::ref

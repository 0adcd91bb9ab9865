// Calibration data (library kestrel_quant_data: links libpng and libjpeg, so it stays out of the
// installed libraries): a folder of .npy files (one sample each) for a one-input model, one subfolder
// per input name with matching file names, a folder of PNG / JPEG images with preprocessing, or
// one .npy file whose first axis enumerates the samples. Errors name the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "quant/calibrate.h"

namespace kestrel::quant {

struct ImageOptions {
  int64_t height = 0, width = 0;  // 0: the model input's spatial size
  // Per channel, applied after scaling pixels to [0, 1]: x = (pixel / 255 - mean) / std.
  std::vector<float> mean, std;  // empty: 0 and 1; one value: every channel
  bool bgr = false;              // channel order of the model: BGR instead of RGB
  bool nhwc = false;             // layout of the model input: NHWC instead of NCHW
};

struct CalibrationSet {
  std::vector<std::string> names;  // one per sample: file name (or "file.npy[i]")
  std::vector<Sample> samples;     // tensors in the graph's input order
};

// The graph's inputs give the dtypes and shapes samples must have (a file may omit a leading
// batch dim of 1). Files are sorted by name.
core::Result<CalibrationSet> load_calibration_set(const std::string& path, const ir::Graph& g,
                                                  const ImageOptions& image = {});

// Decodes a PNG or JPEG into 8-bit RGB (or gray with channels == 1), HWC.
struct Image {
  int64_t height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;
};
core::Result<Image> read_image(const std::string& path, int channels);
// Bilinear resize (pixel centers aligned, as OpenCV / PIL do without antialiasing).
Image resize_bilinear(const Image& img, int64_t height, int64_t width);
// An image file as the model input tensor of `dims` ([1, C, H, W] or [1, H, W, C] with nhwc).
core::Result<core::Tensor> image_to_tensor(const std::string& path, const core::Dims& dims, const ImageOptions& o);

}  // namespace kestrel::quant

// Calibration sets from .npy files and images.
#include "quant/data/calib_data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "core/npy.h"
#include "core/str_util.h"

namespace kestrel::quant {

namespace fs = std::filesystem;
using core::str_cat;

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
bool is_npy(const fs::path& p) {
  return lower(p.extension().string()) == ".npy";
}
bool is_image(const fs::path& p) {
  const std::string e = lower(p.extension().string());
  return e == ".png" || e == ".jpg" || e == ".jpeg";
}

std::string dims_text(const ir::Shape& s) {
  return s.to_string();
}

// Checks a tensor against a model input and adds a missing leading batch dim of 1.
core::Result<core::Tensor> fit_input(core::Tensor t, const ir::Value& in, const std::string& file) {
  const ir::Shape& s = in.shape();
  if (in.dtype() != core::DType::kUndefined && t.dtype() != in.dtype())
    return core::invalid_argument(str_cat(file, ": input '", in.name(), "' must be ", core::dtype_name(in.dtype()),
                                          ", the file holds ", t.type_string()));
  if (!s.rank_known()) return t;
  if (t.rank() + 1 == s.rank() && (!s[0].known() || s[0].value == 1)) {
    core::Dims d = t.dims();
    d.insert(d.begin(), 1);
    t = core::Tensor::wrap(t.dtype(), d, const_cast<void*>(t.raw_data()), t.owner());
  }
  bool ok = t.rank() == s.rank();
  for (int64_t i = 0; ok && i < s.rank(); ++i)
    if (s[i].known() && s[i].value != t.dims()[static_cast<size_t>(i)]) ok = false;
  if (!ok)
    return core::invalid_argument(str_cat(file, ": input '", in.name(), "' must have shape ", dims_text(s),
                                          " (or without the batch dim), the file holds ", t.type_string()));
  return t;
}

core::Result<core::Tensor> read_npy_sample(const fs::path& p, const ir::Value& in) {
  auto t = core::read_npy(p.string());
  if (!t.is_ok()) return t.status();
  return fit_input(std::move(t).value(), in, p.string());
}

core::Result<core::Dims> image_dims(const ir::Value& in, const ImageOptions& o, const std::string& file) {
  const ir::Shape& s = in.shape();
  if (in.dtype() != core::DType::kF32 || !s.rank_known() || s.rank() != 4)
    return core::invalid_argument(str_cat(file, ": images need a float input of rank 4, input '", in.name(), "' is ",
                                          core::dtype_name(in.dtype()), dims_text(s)));
  const int64_t ci = o.nhwc ? 3 : 1, hi = o.nhwc ? 1 : 2, wi = o.nhwc ? 2 : 3;
  auto known = [&](int64_t i, int64_t def) { return s[i].known() ? s[i].value : def; };
  core::Dims d(4);
  d[0] = 1;
  d[static_cast<size_t>(ci)] = known(ci, 3);
  d[static_cast<size_t>(hi)] = o.height > 0 ? o.height : known(hi, 0);
  d[static_cast<size_t>(wi)] = o.width > 0 ? o.width : known(wi, 0);
  if (d[static_cast<size_t>(hi)] <= 0 || d[static_cast<size_t>(wi)] <= 0)
    return core::invalid_argument(str_cat("input '", in.name(), "' has no fixed height and width: give --resize HxW"));
  if (d[static_cast<size_t>(ci)] != 1 && d[static_cast<size_t>(ci)] != 3)
    return core::invalid_argument(str_cat("input '", in.name(), "' has ", d[static_cast<size_t>(ci)],
                                          " channels; images give 1 or 3 (wrong --layout?)"));
  for (int64_t i = 0; i < 4; ++i)
    if (s[i].known() && s[i].value != d[static_cast<size_t>(i)])
      return core::invalid_argument(str_cat("input '", in.name(), "' has shape ", dims_text(s),
                                            ", the images would be ", core::dims_to_string(d)));
  return d;
}

std::vector<fs::path> sorted_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && (is_npy(e.path()) || is_image(e.path()))) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

core::Result<core::Tensor> image_to_tensor(const std::string& path, const core::Dims& dims, const ImageOptions& o) {
  const int64_t c = o.nhwc ? dims[3] : dims[1], h = o.nhwc ? dims[1] : dims[2], w = o.nhwc ? dims[2] : dims[3];
  KESTREL_ASSIGN_OR_RETURN(Image img, read_image(path, static_cast<int>(c)));
  if (img.height != h || img.width != w) img = resize_bilinear(img, h, w);
  auto per_channel = [&](const std::vector<float>& v, float def, const char* what) -> core::Result<std::vector<float>> {
    if (v.empty()) return std::vector<float>(static_cast<size_t>(c), def);
    if (v.size() == 1) return std::vector<float>(static_cast<size_t>(c), v[0]);
    if (static_cast<int64_t>(v.size()) != c)
      return core::invalid_argument(str_cat("--", what, " has ", v.size(), " values for ", c, " channels"));
    return v;
  };
  KESTREL_ASSIGN_OR_RETURN(std::vector<float> mean, per_channel(o.mean, 0.0f, "mean"));
  KESTREL_ASSIGN_OR_RETURN(std::vector<float> stdv, per_channel(o.std, 1.0f, "std"));
  for (float s : stdv)
    if (!(s != 0)) return core::invalid_argument("--std must not be 0");
  KESTREL_ASSIGN_OR_RETURN(core::Tensor t, core::Tensor::allocate(core::DType::kF32, dims));
  float* dst = t.data<float>();
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k) {
        // The model's channel k reads image channel k (RGB) or 2 - k (BGR).
        const int64_t src_c = o.bgr && c == 3 ? 2 - k : k;
        const float v = img.pixels[static_cast<size_t>((y * w + x) * c + src_c)] / 255.0f;
        const float n = (v - mean[static_cast<size_t>(k)]) / stdv[static_cast<size_t>(k)];
        const int64_t idx = o.nhwc ? (y * w + x) * c + k : (k * h + y) * w + x;
        dst[idx] = n;
      }
  return t;
}

Image resize_bilinear(const Image& img, int64_t height, int64_t width) {
  Image out;
  out.height = height, out.width = width, out.channels = img.channels;
  out.pixels.resize(static_cast<size_t>(height * width * img.channels));
  if (img.height <= 0 || img.width <= 0) return out;
  const double sy = static_cast<double>(img.height) / height, sx = static_cast<double>(img.width) / width;
  for (int64_t y = 0; y < height; ++y) {
    const double fy = std::clamp((y + 0.5) * sy - 0.5, 0.0, static_cast<double>(img.height - 1));
    const int64_t y0 = static_cast<int64_t>(fy), y1 = std::min(y0 + 1, img.height - 1);
    const double wy = fy - y0;
    for (int64_t x = 0; x < width; ++x) {
      const double fx = std::clamp((x + 0.5) * sx - 0.5, 0.0, static_cast<double>(img.width - 1));
      const int64_t x0 = static_cast<int64_t>(fx), x1 = std::min(x0 + 1, img.width - 1);
      const double wx = fx - x0;
      for (int64_t k = 0; k < img.channels; ++k) {
        auto px = [&](int64_t yy, int64_t xx) {
          return static_cast<double>(img.pixels[static_cast<size_t>((yy * img.width + xx) * img.channels + k)]);
        };
        const double v =
            (1 - wy) * ((1 - wx) * px(y0, x0) + wx * px(y0, x1)) + wy * ((1 - wx) * px(y1, x0) + wx * px(y1, x1));
        out.pixels[static_cast<size_t>((y * width + x) * img.channels + k)] =
            static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
      }
    }
  }
  return out;
}

core::Result<CalibrationSet> load_calibration_set(const std::string& path, const ir::Graph& g,
                                                  const ImageOptions& image) {
  CalibrationSet set;
  const std::vector<ir::Value*>& inputs = g.inputs();
  if (inputs.empty()) return core::invalid_argument("the model has no inputs to calibrate");
  std::error_code ec;
  const fs::path root(path);
  if (!fs::exists(root, ec)) return core::io_error(str_cat("calibration data '", path, "' does not exist"));

  // One .npy file holding every sample along its first axis.
  if (fs::is_regular_file(root, ec)) {
    if (inputs.size() != 1 || !is_npy(root))
      return core::invalid_argument(str_cat(path,
                                            ": a single calibration file must be a .npy for a one-input model "
                                            "(else give a folder)"));
    auto all = core::read_npy(path);
    if (!all.is_ok()) return all.status();
    const core::Tensor& t = *all;
    const ir::Value& in = *inputs[0];
    if (t.rank() == 0) return core::invalid_argument(str_cat(path, ": a scalar is not a set of samples"));
    const int64_t n = t.dim(0);
    core::Dims one = t.dims();
    one.erase(one.begin());
    const size_t bytes = n > 0 ? t.nbytes() / static_cast<size_t>(n) : 0;
    for (int64_t i = 0; i < n; ++i) {
      auto owner = t.owner();
      core::Tensor s = core::Tensor::wrap(
          t.dtype(), one, const_cast<char*>(static_cast<const char*>(t.raw_data()) + bytes * static_cast<size_t>(i)),
          owner);
      KESTREL_ASSIGN_OR_RETURN(core::Tensor fit, fit_input(s, in, str_cat(path, "[", i, "]")));
      set.names.push_back(str_cat(root.filename().string(), "[", i, "]"));
      set.samples.push_back({std::move(fit)});
    }
    if (set.samples.empty()) return core::invalid_argument(str_cat(path, ": no samples (first axis is 0)"));
    return set;
  }
  if (!fs::is_directory(root, ec)) return core::invalid_argument(str_cat(path, ": not a file or folder"));

  // One subfolder per input (required for several inputs).
  bool per_input = inputs.size() > 1;
  if (inputs.size() == 1 && fs::is_directory(root / inputs[0]->name(), ec)) per_input = true;
  if (per_input) {
    const fs::path first = root / inputs[0]->name();
    for (const ir::Value* in : inputs)
      if (!fs::is_directory(root / in->name(), ec))
        return core::invalid_argument(str_cat(path, ": the model has ", inputs.size(),
                                              " inputs: expected one subfolder per input, '", in->name(),
                                              "' is missing"));
    std::vector<fs::path> files = sorted_files(first);
    if (files.empty()) return core::invalid_argument(str_cat(first.string(), ": no .npy or image files"));
    for (const fs::path& f : files) {
      Sample s;
      for (const ir::Value* in : inputs) {
        const fs::path p = root / in->name() / f.filename();
        if (!fs::exists(p, ec))
          return core::invalid_argument(
              str_cat(p.string(), " is missing (every input folder needs a file named like ", f.string(), ")"));
        if (is_image(p)) {
          KESTREL_ASSIGN_OR_RETURN(core::Dims d, image_dims(*in, image, p.string()));
          KESTREL_ASSIGN_OR_RETURN(core::Tensor t, image_to_tensor(p.string(), d, image));
          s.push_back(std::move(t));
        } else {
          KESTREL_ASSIGN_OR_RETURN(core::Tensor t, read_npy_sample(p, *in));
          s.push_back(std::move(t));
        }
      }
      set.names.push_back(f.filename().string());
      set.samples.push_back(std::move(s));
    }
    return set;
  }

  std::vector<fs::path> files = sorted_files(root);
  if (files.empty()) return core::invalid_argument(str_cat(path, ": no .npy or image (.png, .jpg) files"));
  const ir::Value& in = *inputs[0];
  for (const fs::path& f : files) {
    if (is_image(f)) {
      KESTREL_ASSIGN_OR_RETURN(core::Dims d, image_dims(in, image, f.string()));
      KESTREL_ASSIGN_OR_RETURN(core::Tensor t, image_to_tensor(f.string(), d, image));
      set.samples.push_back({std::move(t)});
    } else {
      KESTREL_ASSIGN_OR_RETURN(core::Tensor t, read_npy_sample(f, in));
      set.samples.push_back({std::move(t)});
    }
    set.names.push_back(f.filename().string());
  }
  return set;
}

}  // namespace kestrel::quant

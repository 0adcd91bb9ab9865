// Kestrel demo: classifies held-out handwritten digits with demo/digits.onnx (trained by
// demo/train_digits.py) through the public C++ API and prints each prediction beside its label.
//
//   digits_demo [--min-accuracy FRACTION] [--model FILE] [DEMO_DIR]
//
// --model runs another build of the model on the same samples, e.g. the int8 .kst written by
// `kestrel quantize` (scripts/demo.sh).
// DEMO_DIR holds digits.onnx, digits_samples.npy (f32[N,1,8,8]) and digits_labels.txt; it
// defaults to this source folder. Exits non-zero on any error or if the accuracy is below
// --min-accuracy.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "kestrel/kestrel.hpp"

#ifndef KESTREL_DEMO_DIR
#define KESTREL_DEMO_DIR "."
#endif

namespace {

struct Images {
  std::vector<int64_t> shape;
  std::vector<float> pixels;
};

// Just enough of the .npy format for the committed samples: little-endian f32, C order.
Images read_f32_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0 || bytes[6] != 1)
    throw std::runtime_error(path + ": not a version-1 .npy file");
  size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  if (10 + header_len > bytes.size()) throw std::runtime_error(path + ": truncated header");
  std::string header = bytes.substr(10, header_len);
  if (header.find("'<f4'") == std::string::npos || header.find("'fortran_order': False") == std::string::npos)
    throw std::runtime_error(path + ": expected a C-order float32 array");
  size_t open = header.find("'shape': ("), close = header.find(')', open);
  if (open == std::string::npos || close == std::string::npos) throw std::runtime_error(path + ": no shape");
  Images img;
  size_t n = 1;
  for (size_t i = open + 10; i < close;) {
    if (header[i] < '0' || header[i] > '9') {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < close && header[end] >= '0' && header[end] <= '9') ++end;
    img.shape.push_back(std::stoll(header.substr(i, end - i)));
    n *= static_cast<size_t>(img.shape.back());
    i = end;
  }
  if (img.shape.size() != 4 || n > (size_t{1} << 28) || bytes.size() - 10 - header_len < n * sizeof(float))
    throw std::runtime_error(path + ": expected f32[N,1,8,8] with all its data");
  img.pixels.resize(n);
  std::memcpy(img.pixels.data(), bytes.data() + 10 + header_len, n * sizeof(float));
  return img;
}

std::vector<int> read_labels(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::vector<int> labels;
  int v;
  while (f >> v) labels.push_back(v);
  return labels;
}

// One 8x8 image as text, darker pixels as denser characters.
void print_digit(const float* px) {
  const char* ramp = " .:-=+*#%@";
  for (int y = 0; y < 8; ++y) {
    std::printf("      ");
    for (int x = 0; x < 8; ++x) {
      int level = std::clamp(static_cast<int>(px[y * 8 + x] * 9.0f + 0.5f), 0, 9);
      std::printf("%c%c", ramp[level], ramp[level]);
    }
    std::printf("\n");
  }
}

int run(int argc, char** argv) {
  std::string dir = KESTREL_DEMO_DIR;
  std::string model;
  double min_accuracy = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--min-accuracy" && i + 1 < argc) {
      min_accuracy = std::atof(argv[++i]);
    } else if (a == "--model" && i + 1 < argc) {
      model = argv[++i];
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: digits_demo [--min-accuracy FRACTION] [--model FILE] [DEMO_DIR]\n");
      return 0;
    } else {
      dir = a;
    }
  }

  if (model.empty()) model = dir + "/digits.onnx";
  kestrel::Session session = kestrel::Session::open(model);
  Images images = read_f32_npy(dir + "/digits_samples.npy");
  std::vector<int> labels = read_labels(dir + "/digits_labels.txt");
  const int64_t n = images.shape[0];
  if (static_cast<int64_t>(labels.size()) != n)
    throw std::runtime_error("digits_labels.txt has " + std::to_string(labels.size()) + " labels for " +
                             std::to_string(n) + " images");

  const kestrel::TensorInfo& in = session.inputs().at(0);
  const kestrel::TensorInfo& out = session.outputs().at(0);
  std::printf("Kestrel %s digits demo: %s, input %s %s, output %s %s\n\n", kestrel::version(),
              model.c_str(), in.name.c_str(), in.shape_string().c_str(), out.name.c_str(),
              out.shape_string().c_str());

  // The whole batch in one run: the model's batch dim is symbolic.
  kestrel::Tensor batch = kestrel::Tensor::view(kestrel::DType::kF32, images.shape, images.pixels.data());
  kestrel::Tensor logits = session.run({{in.name, batch}}).at(out.name);
  if (logits.dtype() != kestrel::DType::kF32 || logits.shape() != std::vector<int64_t>{n, 10})
    throw std::runtime_error("unexpected output " + logits.type_string());

  int correct = 0;
  std::vector<int64_t> wrong;
  std::printf("sample  label  predicted  confidence\n");
  for (int64_t i = 0; i < n; ++i) {
    const float* z = logits.data<float>() + i * 10;
    int best = static_cast<int>(std::max_element(z, z + 10) - z);
    double sum = 0;
    for (int k = 0; k < 10; ++k) sum += std::exp(static_cast<double>(z[k] - z[best]));
    bool ok = best == labels[static_cast<size_t>(i)];
    correct += ok;
    if (!ok) wrong.push_back(i);
    std::printf("%6lld  %5d  %9d  %9.1f%%%s\n", static_cast<long long>(i), labels[static_cast<size_t>(i)], best,
                100.0 / sum, ok ? "" : "   <- wrong");
  }
  for (int64_t i : wrong) {
    std::printf("\nsample %lld (label %d):\n", static_cast<long long>(i), labels[static_cast<size_t>(i)]);
    print_digit(images.pixels.data() + i * 64);
  }
  double accuracy = static_cast<double>(correct) / static_cast<double>(n);
  std::printf("\naccuracy: %d/%lld = %.1f%%\n", correct, static_cast<long long>(n), 100.0 * accuracy);
  if (accuracy < min_accuracy) {
    std::fprintf(stderr, "digits_demo: accuracy %.3f is below the required %.3f\n", accuracy, min_accuracy);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const kestrel::Error& e) {
    std::fprintf(stderr, "digits_demo: error: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "digits_demo: error: %s\n", e.what());
  }
  return 1;
}

// Calibration data loading: .npy folders (with and without the batch dim), per-input
// subfolders, one stacked .npy, PNG images with preprocessing, and clear errors naming the file.
#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/npy.h"
#include "quant/data/calib_data.h"
#include "runtime/session.h"

namespace kestrel::quant {
namespace {

namespace fs = std::filesystem;

class QuantData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kestrel_quant_data_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void npy(const fs::path& p, core::Dims dims, float v) {
    core::Tensor t = core::Tensor::allocate(core::DType::kF32, dims).value();
    for (float& x : t.span<float>()) x = v;
    fs::create_directories(p.parent_path());
    ASSERT_TRUE(core::write_npy(p.string(), t).is_ok());
  }
  static std::unique_ptr<ir::Graph> model(std::vector<std::string> inputs, core::Dims dims) {
    auto g = std::make_unique<ir::Graph>();
    for (const std::string& n : inputs) {
      ir::Value* x = g->add_input(n, {core::DType::kF32, ir::Shape(dims)});
      g->add_output(g->add_node("Relu", {x}, {n + "_out"})->output(0));
    }
    EXPECT_TRUE(runtime::prepare_graph(*g).is_ok());
    return g;
  }
  fs::path dir_;
};

TEST_F(QuantData, NpyFolderSortedWithOrWithoutBatchDim) {
  auto g = model({"x"}, {1, 2, 3});
  npy(dir_ / "b.npy", {1, 2, 3}, 2.0f);
  npy(dir_ / "a.npy", {2, 3}, 1.0f);  // batch dim omitted
  std::ofstream(dir_ / "notes.txt") << "ignored";
  auto s = load_calibration_set(dir_.string(), *g);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->samples.size(), 2u);
  EXPECT_EQ(s->names, (std::vector<std::string>{"a.npy", "b.npy"}));
  EXPECT_EQ(s->samples[0][0].dims(), (core::Dims{1, 2, 3}));
  EXPECT_EQ(s->samples[0][0].data<float>()[0], 1.0f);
  EXPECT_EQ(s->samples[1][0].data<float>()[5], 2.0f);
}

TEST_F(QuantData, ErrorsNameTheFile) {
  auto g = model({"x"}, {1, 2, 3});
  auto empty = load_calibration_set(dir_.string(), *g);
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.status().message().find("no .npy or image"), std::string::npos);
  EXPECT_FALSE(load_calibration_set((dir_ / "missing").string(), *g).is_ok());
  npy(dir_ / "good.npy", {1, 2, 3}, 0.0f);
  npy(dir_ / "wrong.npy", {1, 3, 2}, 0.0f);
  auto bad = load_calibration_set(dir_.string(), *g);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("wrong.npy"), std::string::npos) << bad.status().message();
  fs::remove(dir_ / "wrong.npy");
  std::ofstream(dir_ / "broken.npy") << "not numpy";
  auto broken = load_calibration_set(dir_.string(), *g);
  ASSERT_FALSE(broken.is_ok());
  EXPECT_NE(broken.status().message().find("broken.npy"), std::string::npos) << broken.status().message();
}

TEST_F(QuantData, SubfolderPerInput) {
  auto g = model({"a", "b"}, {1, 4});
  npy(dir_ / "a" / "0.npy", {1, 4}, 1.0f);
  npy(dir_ / "b" / "0.npy", {1, 4}, 2.0f);
  npy(dir_ / "a" / "1.npy", {1, 4}, 3.0f);
  auto missing = load_calibration_set(dir_.string(), *g);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("1.npy"), std::string::npos) << missing.status().message();
  npy(dir_ / "b" / "1.npy", {1, 4}, 4.0f);
  auto s = load_calibration_set(dir_.string(), *g);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->samples.size(), 2u);
  EXPECT_EQ(s->samples[1][0].data<float>()[0], 3.0f);
  EXPECT_EQ(s->samples[1][1].data<float>()[0], 4.0f);
}

TEST_F(QuantData, StackedNpyFile) {
  auto g = model({"x"}, {1, 1, 2, 2});
  core::Tensor t = core::Tensor::allocate(core::DType::kF32, {3, 1, 2, 2}).value();
  for (int i = 0; i < 12; ++i) t.data<float>()[i] = static_cast<float>(i);
  ASSERT_TRUE(core::write_npy((dir_ / "all.npy").string(), t).is_ok());
  auto s = load_calibration_set((dir_ / "all.npy").string(), *g);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  ASSERT_EQ(s->samples.size(), 3u);
  EXPECT_EQ(s->samples[2][0].dims(), (core::Dims{1, 1, 2, 2}));
  EXPECT_EQ(s->samples[2][0].data<float>()[0], 8.0f);
}

TEST_F(QuantData, PngImagesWithPreprocessing) {
  // A 2x2 RGB image: pixel (y, x) = (10 * (2y + x), 100, 255).
  std::vector<uint8_t> px(12);
  for (size_t i = 0; i < 4; ++i) {
    px[3 * i] = static_cast<uint8_t>(10 * i);
    px[3 * i + 1] = 100;
    px[3 * i + 2] = 255;
  }
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  img.width = 2, img.height = 2, img.format = PNG_FORMAT_RGB;
  ASSERT_TRUE(png_image_write_to_file(&img, (dir_ / "img.png").c_str(), 0, px.data(), 0, nullptr));

  auto g = model({"x"}, {1, 3, 2, 2});
  ImageOptions o;
  o.mean = {0.0f, 0.5f, 0.0f};
  o.std = {1.0f, 0.5f, 2.0f};
  auto s = load_calibration_set(dir_.string(), *g, o);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  const float* v = s->samples[0][0].data<float>();
  EXPECT_NEAR(v[3], 30 / 255.0f, 1e-6);                   // R of pixel (1, 1)
  EXPECT_NEAR(v[4], (100 / 255.0f - 0.5f) / 0.5f, 1e-6);  // G
  EXPECT_NEAR(v[8], 0.5f, 1e-6);                          // B / 2

  // BGR and NHWC: channel 0 is blue, channels last.
  auto g2 = model({"x"}, {1, 2, 2, 3});
  o = {};
  o.bgr = true;
  o.nhwc = true;
  s = load_calibration_set(dir_.string(), *g2, o);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  v = s->samples[0][0].data<float>();
  EXPECT_NEAR(v[0], 1.0f, 1e-6);
  EXPECT_NEAR(v[3 * 3 + 2], 30 / 255.0f, 1e-6);

  // Resized to the model's 4x4 input; a gray model reads 1 channel.
  auto g3 = model({"x"}, {1, 1, 4, 4});
  s = load_calibration_set(dir_.string(), *g3);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s->samples[0][0].dims(), (core::Dims{1, 1, 4, 4}));

  // A file with an image extension that is not an image.
  std::ofstream(dir_ / "zz.jpg") << "nope";
  auto bad = load_calibration_set(dir_.string(), *g);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("zz.jpg"), std::string::npos) << bad.status().message();
}

TEST(QuantImage, BilinearResize) {
  Image img;
  img.height = 1, img.width = 2, img.channels = 1;
  img.pixels = {0, 200};
  Image r = resize_bilinear(img, 1, 4);
  // Centers at x = -0.25, 0.25, 0.75, 1.25 (clamped): 0, 50, 150, 200.
  EXPECT_EQ(r.pixels, (std::vector<uint8_t>{0, 50, 150, 200}));
  Image same = resize_bilinear(img, 1, 2);
  EXPECT_EQ(same.pixels, img.pixels);
}

}  // namespace
}  // namespace kestrel::quant

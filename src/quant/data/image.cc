// PNG (libpng simplified API) and JPEG (libjpeg) decoding for calibration images.
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <memory>

// jpeglib.h needs size_t and FILE declared before it.
#include <jpeglib.h>
#include <png.h>

#include "core/str_util.h"
#include "quant/data/calib_data.h"

namespace kestrel::quant {

using core::str_cat;

namespace {

constexpr int64_t kMaxPixels = int64_t{1} << 28;

core::Result<Image> read_png(const std::string& path, int channels) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, path.c_str()))
    return core::invalid_argument(str_cat(path, ": cannot read PNG (", img.message, ")"));
  img.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  if (static_cast<int64_t>(img.width) * img.height > kMaxPixels) {
    png_image_free(&img);
    return core::invalid_argument(str_cat(path, ": image too large"));
  }
  Image out;
  out.height = img.height, out.width = img.width, out.channels = channels;
  out.pixels.resize(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, out.pixels.data(), 0, nullptr))
    return core::invalid_argument(str_cat(path, ": cannot decode PNG (", img.message, ")"));
  return out;
}

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_error_exit(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

// The decoder state lives in plain C structs: no C++ object with a destructor may be skipped by
// the longjmp, so the pixels go into a buffer allocated before setjmp.
core::Result<Image> read_jpeg(const std::string& path, int channels) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return core::io_error(str_cat("cannot open '", path, "'"));
  jpeg_decompress_struct cinfo{};
  JpegError err{};
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_error_exit;
  Image out;
  out.channels = channels;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    std::fclose(f);
    return core::invalid_argument(str_cat(path, ": cannot decode JPEG (", err.message, ")"));
  }
  jpeg_create_decompress(&cinfo);
  jpeg_stdio_src(&cinfo, f);
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  const int64_t w = cinfo.output_width, h = cinfo.output_height;
  if (w * h > kMaxPixels || cinfo.output_components != channels) {
    jpeg_destroy_decompress(&cinfo);
    std::fclose(f);
    return core::invalid_argument(str_cat(path, ": unsupported JPEG (too large or unexpected channels)"));
  }
  out.height = h, out.width = w;
  out.pixels.resize(static_cast<size_t>(w * h * channels));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out.pixels.data() + static_cast<size_t>(cinfo.output_scanline) * static_cast<size_t>(w * channels);
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  std::fclose(f);
  return out;
}

}  // namespace

core::Result<Image> read_image(const std::string& path, int channels) {
  if (channels != 1 && channels != 3) return core::invalid_argument(str_cat(path, ": images give 1 or 3 channels"));
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return core::io_error(str_cat("cannot open '", path, "'"));
  unsigned char magic[4] = {0, 0, 0, 0};
  const size_t got = std::fread(magic, 1, 4, f);
  std::fclose(f);
  if (got >= 4 && magic[0] == 0x89 && magic[1] == 'P' && magic[2] == 'N' && magic[3] == 'G')
    return read_png(path, channels);
  if (got >= 3 && magic[0] == 0xFF && magic[1] == 0xD8 && magic[2] == 0xFF) return read_jpeg(path, channels);
  return core::invalid_argument(str_cat(path, ": not a PNG or JPEG file"));
}

}  // namespace kestrel::quant

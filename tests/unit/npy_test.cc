// Tests of the .npy reader and writer: round trips for every supported dtype, files as NumPy
// writes them, and malformed or hostile files (each must give an error naming the file).
#include "core/npy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/temp_dir.h"

namespace kestrel {
namespace {

using core::DType;
using core::Tensor;

// Builds a version-1.0 .npy file around a header dict, padded the way NumPy pads it.
std::string npy_v1(const std::string& dict, const std::string& data) {
  std::string header = dict;
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string dict(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

template <class T>
std::string raw(std::initializer_list<T> v) {
  std::string s(v.size() * sizeof(T), '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

// Fills a tensor with values that differ per element and survive the dtype (small integers).
Tensor make_tensor(DType dtype, const core::Dims& dims) {
  Tensor t = Tensor::allocate(dtype, dims).value();
  core::visit_numeric_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      if constexpr (std::is_same_v<T, bool>)
        p[i] = (i % 3) == 1;
      else
        p[i] = T(static_cast<float>((i * 7) % 100) - (core::is_signed(dtype) ? 50.0f : 0.0f));
    }
  });
  return t;
}

void expect_same(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.dims(), b.dims());
  ASSERT_EQ(a.nbytes(), b.nbytes());
  if (a.nbytes()) {
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0);
  }
}

using testing::TempDir;

void expect_error(const std::string& bytes, const std::string& what) {
  auto r = core::parse_npy(bytes, "bad.npy");
  ASSERT_FALSE(r.is_ok()) << "accepted a file that should fail: " << what;
  EXPECT_NE(r.status().message().find("bad.npy"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
}

TEST(Npy, RoundTripEveryDtypeAndShape) {
  const DType dtypes[] = {DType::kF32, DType::kF16, DType::kF64, DType::kI8,  DType::kU8,  DType::kI16,
                          DType::kU16, DType::kI32, DType::kU32, DType::kI64, DType::kU64, DType::kBool};
  const core::Dims shapes[] = {{}, {1}, {7}, {0}, {2, 0, 3}, {2, 3}, {3, 1, 5}, {1, 2, 3, 4, 5}};
  for (DType dt : dtypes) {
    for (const auto& dims : shapes) {
      SCOPED_TRACE(std::string(core::dtype_name(dt)) + core::dims_to_string(dims));
      Tensor t = make_tensor(dt, dims);
      std::string bytes = core::to_npy_bytes(t);
      // The data starts on a 64-byte boundary, as NumPy lays it out.
      size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
      EXPECT_EQ((10 + header_len) % 64, 0u);
      EXPECT_EQ(bytes.size(), 10 + header_len + t.nbytes());
      auto back = core::parse_npy(bytes, "t.npy");
      ASSERT_TRUE(back.is_ok()) << back.status().to_string();
      expect_same(t, *back);
    }
  }
}

TEST(Npy, FileRoundTrip) {
  TempDir dir;
  Tensor t = make_tensor(DType::kF32, {2, 3, 4});
  ASSERT_TRUE(core::write_npy(dir.file("a.npy"), t).is_ok());
  auto back = core::read_npy(dir.file("a.npy"));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  expect_same(t, *back);
}

TEST(Npy, WriterHeaderMatchesNumpy) {
  // np.save of np.array([[1,2,3],[4,5,6]], dtype='<i4') and of a 1-D array.
  Tensor t = Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(core::to_npy_bytes(t), npy_v1(dict("<i4", "(2, 3)"), raw<int32_t>({1, 2, 3, 4, 5, 6})));
  Tensor v = Tensor::from_vector<float>({1.5f}, {1});
  EXPECT_EQ(core::to_npy_bytes(v), npy_v1(dict("<f4", "(1,)"), raw<float>({1.5f})));
  Tensor s = Tensor::scalar<double>(2.0);
  EXPECT_EQ(core::to_npy_bytes(s), npy_v1(dict("<f8", "()"), raw<double>({2.0})));
}

TEST(Npy, ReadsWhatNumpyWrites) {
  auto r = core::parse_npy(npy_v1(dict("<i8", "(3,)"), raw<int64_t>({-1, 0, 7})), "x.npy");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->dtype(), DType::kI64);
  EXPECT_EQ(r->dims(), (core::Dims{3}));
  EXPECT_EQ(r->data<int64_t>()[0], -1);
  EXPECT_EQ(r->data<int64_t>()[2], 7);

  // Key order and spacing vary between NumPy versions and other writers.
  auto r2 = core::parse_npy(npy_v1("{'shape':(2,2),'fortran_order':False,'descr':'|u1'}", raw<uint8_t>({1, 2, 3, 4})),
                            "y.npy");
  ASSERT_TRUE(r2.is_ok()) << r2.status().to_string();
  EXPECT_EQ(r2->dtype(), DType::kU8);
  EXPECT_EQ(r2->dims(), (core::Dims{2, 2}));

  // Bools: any non-zero byte is true.
  auto b = core::parse_npy(npy_v1(dict("|b1", "(3,)"), raw<uint8_t>({0, 1, 2})), "b.npy");
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ(b->data<uint8_t>()[2], 1);

  // "<i1"-style spellings of single-byte types.
  auto i1 = core::parse_npy(npy_v1(dict("<i1", "(1,)"), raw<int8_t>({-3})), "i1.npy");
  ASSERT_TRUE(i1.is_ok()) << i1.status().to_string();
  EXPECT_EQ(i1->dtype(), DType::kI8);
  EXPECT_EQ(i1->data<int8_t>()[0], -3);
}

TEST(Npy, ReadsVersion2Header) {
  std::string v1 = npy_v1(dict("<f4", "(2,)"), raw<float>({1, 2}));
  size_t header_len = static_cast<unsigned char>(v1[8]) | (static_cast<unsigned char>(v1[9]) << 8);
  std::string v2 = "\x93NUMPY";
  v2 += '\x02';
  v2 += '\x00';
  uint32_t len = static_cast<uint32_t>(header_len);
  v2.append(reinterpret_cast<const char*>(&len), 4);
  v2 += v1.substr(10);
  auto r = core::parse_npy(v2, "v2.npy");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->data<float>()[1], 2.0f);
}

TEST(Npy, RejectsBadMagic) {
  expect_error("", "magic");
  expect_error("hello world, this is not numpy", "magic");
  std::string good = npy_v1(dict("<f4", "(1,)"), raw<float>({1}));
  std::string bad = good;
  bad[0] = 'X';
  expect_error(bad, "magic");
  bad = good;
  bad[3] = 'u';  // \x93NUmPY
  expect_error(bad, "magic");
}

TEST(Npy, RejectsUnknownVersion) {
  std::string bad = npy_v1(dict("<f4", "(1,)"), raw<float>({1}));
  bad[6] = 9;
  expect_error(bad, "version");
}

TEST(Npy, RejectsTruncatedHeader) {
  std::string good = npy_v1(dict("<f4", "(4,)"), raw<float>({1, 2, 3, 4}));
  for (size_t cut : {8, 9, 10, 20, 40}) expect_error(good.substr(0, cut), "");
  expect_error(good.substr(0, 40), "truncated header");
  std::string v2 = "\x93NUMPY\x02";
  v2 += '\x00';
  v2 += "\xff\xff";  // only two of the four length bytes
  expect_error(v2, "truncated header");
  std::string huge_len = good;
  huge_len[8] = '\xff';
  huge_len[9] = '\xff';
  expect_error(huge_len, "truncated header");
}

TEST(Npy, RejectsTruncatedData) {
  std::string good = npy_v1(dict("<f4", "(4,)"), raw<float>({1, 2, 3, 4}));
  for (size_t drop = 1; drop <= 16; ++drop) expect_error(good.substr(0, good.size() - drop), "truncated data");
}

TEST(Npy, RejectsFortranOrder) {
  expect_error(npy_v1(dict("<f4", "(2, 2)", "True"), raw<float>({1, 2, 3, 4})), "Fortran");
  expect_error(npy_v1(dict("<f4", "(2, 2)", "maybe"), raw<float>({1, 2, 3, 4})), "fortran_order");
}

TEST(Npy, RejectsUnsupportedDtypes) {
  for (const char* descr : {">f4", ">i8", "<c8", "<c16", "|O", "<U5", "|S3", "<M8[D]", "<f16", "|V4", ""})
    expect_error(npy_v1(dict(descr, "(1,)"), std::string(64, '\0')), "unsupported dtype");
}

TEST(Npy, RejectsMissingOrMalformedKeys) {
  expect_error(npy_v1("{'fortran_order': False, 'shape': (1,), }", raw<float>({1})), "descr");
  expect_error(npy_v1("{'descr': '<f4', 'shape': (1,), }", raw<float>({1})), "fortran_order");
  expect_error(npy_v1("{'descr': '<f4', 'fortran_order': False, }", raw<float>({1})), "shape");
  expect_error(npy_v1("{'descr': <f4, 'fortran_order': False, 'shape': (1,), }", raw<float>({1})), "descr");
  expect_error(npy_v1("{'descr': '<f4, 'fortran_order': False, 'shape': (1,), }", raw<float>({1})), "");
  expect_error(npy_v1(dict("<f4", "(1, 2"), raw<float>({1, 2})), "shape");
  expect_error(npy_v1(dict("<f4", "(1, a)"), raw<float>({1})), "shape");
  expect_error(npy_v1(dict("<f4", "[1]"), raw<float>({1})), "shape");
}

TEST(Npy, RejectsHostileShapes) {
  std::string data = raw<float>({1, 2, 3, 4});
  expect_error(npy_v1(dict("<f4", "(-1,)"), data), "shape");
  expect_error(npy_v1(dict("<f4", "(2, -2)"), data), "shape");
  // Larger than any tensor Kestrel accepts, then an overflowing product of fine-looking dims.
  expect_error(npy_v1(dict("<f4", "(99999999999999999999999,)"), data), "too large");
  expect_error(npy_v1(dict("<f4", "(4294967296, 4294967296)"), data), "bad.npy");
  expect_error(npy_v1(dict("<u1", "(1048576, 1048576, 1048576)"), data), "bad.npy");
  // Within limits but far more than the file holds: must not allocate first.
  expect_error(npy_v1(dict("<f8", "(1000000000,)"), data), "truncated data");
  std::string many = "(";
  for (int i = 0; i < 40; ++i) many += "1, ";
  expect_error(npy_v1(dict("<f4", many + ")"), data), "dimensions");
}

TEST(Npy, ErrorsNameTheFile) {
  TempDir dir;
  auto missing = core::read_npy(dir.file("missing.npy"));
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), core::StatusCode::kIoError);
  EXPECT_NE(missing.status().message().find("missing.npy"), std::string::npos);
  {
    std::ofstream f(dir.file("junk.npy"), std::ios::binary);
    f << "junk";
  }
  auto junk = core::read_npy(dir.file("junk.npy"));
  ASSERT_FALSE(junk.is_ok());
  EXPECT_NE(junk.status().message().find("junk.npy"), std::string::npos);
  auto unwritable = core::write_npy(dir.file("no/such/dir/x.npy"), Tensor::scalar<float>(1));
  EXPECT_EQ(unwritable.code(), core::StatusCode::kIoError);
}

TEST(Npy, RefusesToWriteStrings) {
  Tensor s = Tensor::allocate(DType::kString, {2}).value();
  TempDir dir;
  EXPECT_EQ(core::write_npy(dir.file("s.npy"), s).code(), core::StatusCode::kUnsupported);
}

}  // namespace
}  // namespace kestrel

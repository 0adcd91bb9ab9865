// .npy parser and writer. The header is a Python dict literal; we parse just the three keys.
#include "core/npy.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/str_util.h"

namespace kestrel::core {

namespace {

struct DescrMap {
  const char* descr;
  DType dtype;
};
constexpr DescrMap kDescrs[] = {
    {"<f4", DType::kF32}, {"<f2", DType::kF16}, {"<f8", DType::kF64}, {"|i1", DType::kI8},
    {"|u1", DType::kU8},  {"<i2", DType::kI16}, {"<u2", DType::kU16}, {"<i4", DType::kI32},
    {"<u4", DType::kU32}, {"<i8", DType::kI64}, {"<u8", DType::kU64}, {"|b1", DType::kBool},
};

const char* descr_of(DType t) {
  for (const auto& d : kDescrs)
    if (d.dtype == t) return d.descr;
  return nullptr;
}

// Finds the value text following 'key': in the header dict.
bool find_value(std::string_view header, std::string_view key, std::string_view* value) {
  std::string quoted = "'" + std::string(key) + "'";
  size_t k = header.find(quoted);
  if (k == std::string_view::npos) return false;
  size_t colon = header.find(':', k + quoted.size());
  if (colon == std::string_view::npos) return false;
  size_t v = colon + 1;
  while (v < header.size() && std::isspace(static_cast<unsigned char>(header[v]))) ++v;
  *value = header.substr(v);
  return true;
}

}  // namespace

Result<Tensor> parse_npy(std::string_view b, const std::string& name) {
  auto bad = [&](const std::string& what) { return invalid_argument(str_cat(name, ": ", what)); };
  if (b.size() < 10 || static_cast<unsigned char>(b[0]) != 0x93 || b.substr(1, 5) != "NUMPY")
    return bad("not a .npy file (missing \\x93NUMPY magic)");
  int major = static_cast<unsigned char>(b[6]);
  size_t header_len, header_off;
  if (major == 1) {
    header_len = static_cast<unsigned char>(b[8]) | (static_cast<size_t>(static_cast<unsigned char>(b[9])) << 8);
    header_off = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) return bad("truncated header");
    uint32_t v;
    std::memcpy(&v, b.data() + 8, 4);
    header_len = v;
    header_off = 12;
  } else {
    return bad(str_cat("unsupported .npy format version ", major));
  }
  if (header_len > b.size() - header_off) return bad("truncated header");
  std::string_view header = b.substr(header_off, header_len);

  std::string_view v;
  if (!find_value(header, "descr", &v) || v.empty() || v[0] != '\'') return bad("header has no 'descr'");
  size_t end = v.find('\'', 1);
  if (end == std::string_view::npos) return bad("malformed 'descr'");
  std::string descr(v.substr(1, end - 1));
  if (descr == "<b1" || descr == "=b1") descr = "|b1";
  if (descr == "<i1" || descr == "=i1") descr = "|i1";
  if (descr == "<u1" || descr == "=u1") descr = "|u1";
  DType dtype = DType::kUndefined;
  for (const auto& d : kDescrs)
    if (descr == d.descr) dtype = d.dtype;
  if (dtype == DType::kUndefined)
    return bad(str_cat("unsupported dtype '", descr,
                       "' (supported: f32 f16 f64 i8 u8 i16 u16 i32 u32 i64 u64 bool, little-endian)"));

  if (!find_value(header, "fortran_order", &v)) return bad("header has no 'fortran_order'");
  if (v.substr(0, 4) == "True") return bad("Fortran-order arrays are not supported");
  if (v.substr(0, 5) != "False") return bad("malformed 'fortran_order'");

  if (!find_value(header, "shape", &v) || v.empty() || v[0] != '(') return bad("header has no 'shape'");
  size_t close = v.find(')');
  if (close == std::string_view::npos) return bad("malformed 'shape'");
  Dims dims;
  std::string_view inner = v.substr(1, close - 1);
  size_t i = 0;
  while (i < inner.size()) {
    while (i < inner.size() && (std::isspace(static_cast<unsigned char>(inner[i])) || inner[i] == ',')) ++i;
    if (i >= inner.size()) break;
    if (!std::isdigit(static_cast<unsigned char>(inner[i]))) return bad("malformed 'shape'");
    int64_t d = 0;
    while (i < inner.size() && std::isdigit(static_cast<unsigned char>(inner[i]))) {
      if (d > (kMaxElements / 10)) return bad("dimension too large in 'shape'");
      d = d * 10 + (inner[i] - '0');
      ++i;
    }
    while (i < inner.size() && inner[i] == 'L') ++i;
    dims.push_back(d);
    if (dims.size() > 32) return bad("more than 32 dimensions");
  }
  auto n = checked_num_elements(dims);
  if (!n.is_ok()) return bad(n.status().message());
  size_t data_off = header_off + header_len;
  size_t need = static_cast<size_t>(*n) * dtype_size(dtype);
  if (b.size() - data_off < need)
    return bad(str_cat("truncated data: shape ", dims_to_string(dims), " needs ", need, " bytes, file has ",
                       b.size() - data_off));
  auto t = Tensor::allocate(dtype, dims);
  if (!t.is_ok()) return bad(t.status().message());
  if (need) std::memcpy(t->raw_data(), b.data() + data_off, need);
  if (dtype == DType::kBool) {  // normalize any nonzero byte to 1
    auto* p = t->data<uint8_t>();
    for (int64_t k = 0; k < *n; ++k) p[k] = p[k] ? 1 : 0;
  }
  return std::move(t).value();
}

Result<Tensor> read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return io_error(str_cat("cannot open ", path));
  std::ostringstream ss;
  ss << f.rdbuf();
  std::string bytes = ss.str();
  return parse_npy(bytes, path);
}

std::string to_npy_bytes(const Tensor& t) {
  const char* descr = descr_of(t.dtype());
  if (t.dtype() == DType::kBF16) descr = "<u2";  // numpy has no bfloat16; keep the bits
  std::string shape = "(";
  for (size_t i = 0; i < t.dims().size(); ++i) {
    shape += std::to_string(t.dims()[i]);
    shape += (t.dims().size() == 1 ? "," : (i + 1 < t.dims().size() ? ", " : ""));
  }
  shape += ")";
  std::string header = str_cat("{'descr': '", descr ? descr : "|u1", "', 'fortran_order': False, 'shape': ", shape, ", }");
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  return out;
}

Status write_npy(const std::string& path, const Tensor& t) {
  if (!descr_of(t.dtype()) && t.dtype() != DType::kBF16)
    return unsupported(str_cat("cannot write ", dtype_name(t.dtype()), " tensors to .npy"));
  std::ofstream f(path, std::ios::binary);
  if (!f) return io_error(str_cat("cannot write ", path));
  std::string bytes = to_npy_bytes(t);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) return io_error(str_cat("error writing ", path));
  return Status::ok();
}

}  // namespace kestrel::core

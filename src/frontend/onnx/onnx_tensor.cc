// TensorProto -> Tensor with every size checked before any copy.
#include "frontend/onnx/onnx_tensor.h"

#include <sys/stat.h>

#include <cstring>
#include <fstream>

#include "core/str_util.h"
#include "ir/onnx_types.h"

namespace kestrel::frontend {

using core::DType;
using core::Result;
using core::Status;
using core::str_cat;
using core::Tensor;

namespace {

template <class Dst, class Field>
Status copy_field(const Field& field, Tensor& t, const std::string& what) {
  if (static_cast<int64_t>(field.size()) != t.num_elements())
    return core::invalid_model(str_cat(what, " has ", field.size(), " values, shape ", core::dims_to_string(t.dims()),
                                       " needs ", t.num_elements()));
  Dst* out = t.data<Dst>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Dst>(field.Get(i));
  return Status::ok();
}

// int32_data carries the 16-bit patterns of float16 / bfloat16 values.
template <class H>
Status copy_half_field(const google::protobuf::RepeatedField<int32_t>& field, Tensor& t, const std::string& what) {
  if (static_cast<int64_t>(field.size()) != t.num_elements())
    return core::invalid_model(str_cat(what, " has ", field.size(), " values, shape needs ", t.num_elements()));
  H* out = t.data<H>();
  for (int i = 0; i < field.size(); ++i) out[i] = H::from_bits(static_cast<uint16_t>(field.Get(i)));
  return Status::ok();
}

bool safe_relative_path(const std::string& p) {
  if (p.empty() || p[0] == '/' || p.find('\\') != std::string::npos) return false;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    if (p.compare(start, end - start, "..") == 0) return false;
    start = end + 1;
  }
  return true;
}

Status read_external(const onnx::TensorProto& tp, const std::string& model_dir, Tensor& t, const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : tp.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset" || kv.key() == "length") {
      char* end = nullptr;
      long long v = std::strtoll(kv.value().c_str(), &end, 10);
      if (kv.value().empty() || *end != '\0' || v < 0)
        return core::invalid_model(str_cat(what, ": bad external data ", kv.key(), " '", kv.value(), "'"));
      (kv.key() == "offset" ? offset : length) = v;
    }
  }
  if (location.empty()) return core::invalid_model(str_cat(what, ": external data without a location"));
  if (model_dir.empty())
    return core::invalid_model(str_cat(what, ": uses external data file '", location,
                                       "' but the model was not loaded from a file"));
  if (!safe_relative_path(location))
    return core::invalid_model(str_cat(what, ": external data location '", location,
                                       "' must be a relative path inside the model's folder"));
  std::string path = model_dir + "/" + location;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return core::io_error(str_cat(what, ": cannot open external data file ", path));
  size_t need = t.nbytes();
  if (length >= 0 && static_cast<size_t>(length) != need)
    return core::invalid_model(str_cat(what, ": external data length ", length, " does not match shape (", need, " bytes)"));
  if (static_cast<uint64_t>(offset) > static_cast<uint64_t>(st.st_size) ||
      static_cast<uint64_t>(st.st_size) - static_cast<uint64_t>(offset) < need)
    return core::invalid_model(str_cat(what, ": external data file ", path, " is too short (", st.st_size,
                                       " bytes, need ", need, " at offset ", offset, ")"));
  std::ifstream f(path, std::ios::binary);
  f.seekg(offset);
  f.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(need));
  if (!f) return core::io_error(str_cat(what, ": error reading ", path));
  return Status::ok();
}

}  // namespace

Result<Tensor> tensor_from_onnx(const onnx::TensorProto& tp, const std::string& model_dir) {
  std::string what = str_cat("tensor '", tp.name(), "'");
  DType dtype = ir::dtype_from_onnx(tp.data_type());
  if (dtype == DType::kUndefined)
    return core::unsupported(str_cat(what, ": data type ", tp.data_type(), " is not supported"));
  if (tp.has_segment()) return core::unsupported(str_cat(what, ": segmented tensors are not supported"));
  core::Dims dims(tp.dims().begin(), tp.dims().end());
  if (dims.size() > 32) return core::invalid_model(str_cat(what, ": rank ", dims.size(), " is too large"));
  auto n = core::checked_num_elements(dims);
  if (!n.is_ok()) return n.status().with_context(what);
  // Before allocating, make sure the file can actually hold that much data: a tiny hostile file
  // must not make us allocate gigabytes.
  size_t es = core::dtype_size(dtype);
  bool external = tp.data_location() == onnx::TensorProto::EXTERNAL;
  if (!external && dtype != DType::kString) {
    uint64_t need = static_cast<uint64_t>(*n) * es;
    if (tp.has_raw_data()) {
      if (tp.raw_data().size() != need)
        return core::invalid_model(str_cat(what, ": raw_data has ", tp.raw_data().size(), " bytes, shape ",
                                           core::dims_to_string(dims), " of ", core::dtype_name(dtype), " needs ", need));
    } else {
      int64_t count = tp.float_data_size() + tp.int32_data_size() + tp.int64_data_size() + tp.double_data_size() +
                      tp.uint64_data_size();
      if (count != *n)
        return core::invalid_model(str_cat(what, ": has ", count, " values, shape ", core::dims_to_string(dims),
                                           " needs ", *n));
    }
  }
  KESTREL_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype, dims));
  if (external) {
    KESTREL_RETURN_IF_ERROR(read_external(tp, model_dir, t, what));
    return t;
  }
  if (dtype == DType::kString) {
    if (tp.string_data_size() != *n)
      return core::invalid_model(str_cat(what, ": has ", tp.string_data_size(), " strings, needs ", *n));
    auto* s = t.data<std::string>();
    for (int i = 0; i < tp.string_data_size(); ++i) s[i] = tp.string_data(i);
    return t;
  }
  if (tp.has_raw_data()) {
    if (!tp.raw_data().empty()) std::memcpy(t.raw_data(), tp.raw_data().data(), tp.raw_data().size());
    if (dtype == DType::kBool) {
      auto* p = t.data<uint8_t>();
      for (int64_t i = 0; i < *n; ++i) p[i] = p[i] ? 1 : 0;
    }
    return t;
  }
  Status st;
  switch (dtype) {
    case DType::kF32: st = copy_field<float>(tp.float_data(), t, what); break;
    case DType::kF64: st = copy_field<double>(tp.double_data(), t, what); break;
    case DType::kI64: st = copy_field<int64_t>(tp.int64_data(), t, what); break;
    case DType::kU64: st = copy_field<uint64_t>(tp.uint64_data(), t, what); break;
    case DType::kU32: st = copy_field<uint32_t>(tp.uint64_data(), t, what); break;
    case DType::kI32: st = copy_field<int32_t>(tp.int32_data(), t, what); break;
    case DType::kI16: st = copy_field<int16_t>(tp.int32_data(), t, what); break;
    case DType::kU16: st = copy_field<uint16_t>(tp.int32_data(), t, what); break;
    case DType::kI8: st = copy_field<int8_t>(tp.int32_data(), t, what); break;
    case DType::kU8: st = copy_field<uint8_t>(tp.int32_data(), t, what); break;
    case DType::kBool: {
      st = copy_field<uint8_t>(tp.int32_data(), t, what);
      auto* p = t.data<uint8_t>();
      for (int64_t i = 0; i < *n; ++i) p[i] = p[i] ? 1 : 0;
      break;
    }
    case DType::kF16: st = copy_half_field<core::Float16>(tp.int32_data(), t, what); break;
    case DType::kBF16: st = copy_half_field<core::BFloat16>(tp.int32_data(), t, what); break;
    default: st = core::unsupported(str_cat(what, ": data type not supported"));
  }
  KESTREL_RETURN_IF_ERROR(st);
  return t;
}

Result<ir::ValueType> type_from_onnx(const onnx::TypeProto& tp) {
  // No type at all is legal (subgraph inputs of Loop/Scan, outputs left to inference): unknown.
  if (tp.value_case() == onnx::TypeProto::VALUE_NOT_SET) return ir::ValueType{};
  if (!tp.has_tensor_type()) {
    const char* kind = tp.has_sequence_type() ? "sequence" : tp.has_map_type() ? "map"
                       : tp.has_optional_type() ? "optional" : tp.has_sparse_tensor_type() ? "sparse tensor" : "unknown";
    return core::unsupported(str_cat(kind, " types are not supported"));
  }
  const auto& tt = tp.tensor_type();
  ir::ValueType vt;
  vt.dtype = ir::dtype_from_onnx(tt.elem_type());
  if (vt.dtype == DType::kUndefined && tt.elem_type() != 0)
    return core::unsupported(str_cat("element type ", tt.elem_type(), " is not supported"));
  if (tt.has_shape()) {
    std::vector<ir::Dim> dims;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        if (d.dim_value() < 0) return core::invalid_model(str_cat("negative dimension ", d.dim_value()));
        dims.emplace_back(d.dim_value());
      } else if (d.has_dim_param()) {
        dims.push_back(ir::Dim::sym(d.dim_param()));
      } else {
        dims.push_back(ir::Dim::unknown());
      }
    }
    vt.shape = ir::Shape(std::move(dims));
  }
  return vt;
}

}  // namespace kestrel::frontend

// Reading and writing NumPy .npy files (format 1.0-3.0, C order, little-endian).
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "core/tensor.h"

namespace kestrel::core {

// Supported dtypes: f32 f16 f64 i8 u8 i16 u16 i32 u32 i64 u64 bool. Anything else (Fortran order,
// big-endian, object arrays, truncated data, hostile shapes) is an error naming the file.
Result<Tensor> read_npy(const std::string& path);
Result<Tensor> parse_npy(std::string_view bytes, const std::string& name_for_errors);
Status write_npy(const std::string& path, const Tensor& t);
std::string to_npy_bytes(const Tensor& t);

}  // namespace kestrel::core

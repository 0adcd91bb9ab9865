// Helpers shared by the kestrel subcommands: .npy I/O on public tensors, tensor summaries,
// file-name sanitizing, argument parsing. Errors are thrown as kestrel::Error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kestrel/kestrel.hpp"

namespace kestrel::cli {

// Throws kestrel::Error(code, message).
[[noreturn]] void fail(ErrorCode code, const std::string& message);

// .npy files (f32 f16 f64 i8 u8 i16 u16 i32 u32 i64 u64 bool); errors name the file.
Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& t);

// min / max / mean over the finite values; nonfinite counts NaN and infinities.
struct TensorSummary {
  bool numeric = false;  // false for strings: nothing to summarize
  double min = 0, max = 0, mean = 0;
  int64_t finite = 0, nonfinite = 0;
};
TensorSummary summarize(const Tensor& t);
// "min=-1.5 max=3 mean=0.25" (plus " nonfinite=N" when there are any).
std::string summary_string(const TensorSummary& s);

// Deterministic random contents: floats uniform in [-1, 1), integers in [0, 10), bools 0/1.
Tensor random_tensor(DType dtype, const std::vector<int64_t>& shape, uint64_t seed);

// A name usable as a file name: characters other than [A-Za-z0-9._-] become '_'; names that
// are empty or only dots ("", ".", "..") become "_" as well.
std::string safe_file_name(std::string_view name);

// "1x3x224x224" (also "1,3,224,224"; "" or "scalar" for rank 0) -> dims; throws on bad text.
std::vector<int64_t> parse_dims(const std::string& text, const std::string& what);
// "NAME=VALUE" split at the first '=' (file paths may contain '=', input names rarely do);
// throws naming `option` and its `form` ("NAME=FILE.npy") if there is no '=' or a side is empty.
std::pair<std::string, std::string> split_assignment(const std::string& text, const std::string& option,
                                                     const std::string& form);

// "1.2 MB" style sizes.
std::string format_bytes(uint64_t bytes);
// "1,234,567"
std::string format_count(uint64_t n);

}  // namespace kestrel::cli

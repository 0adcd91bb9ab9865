// Writes an ir::Graph as a .kst file: FlatBuffer tables, then the 64-byte aligned data section.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/status.h"
#include "format/kst_format.h"
#include "ir/graph.h"

namespace kestrel::format {

struct KstWriteOptions {
  // Store float32 constants as IEEE half (halves their bytes; widened back to f32 at load, the
  // only copy the loader makes). Integer, small and out-of-f16-range tensors are kept as they are.
  bool fp16_weights = false;
  // Float32 constants with fewer elements stay f32: scales, epsilons and small biases are cheap
  // and are where precision matters most.
  int64_t fp16_min_elements = 1024;
  // With fp16_weights: only the constants that ops computing in float read (every reader has float
  // outputs and no integer input). An int8 model's file then halves the weights of the layers left in
  // float while the int8 ops' f32 scales stay exact (`kestrel quantize`).
  bool fp16_float_ops_only = false;
  // Merged over the graph's metadata (same keys win here), e.g. {"convert.opt_level", "2"}.
  std::map<std::string, std::string> metadata;
};

struct KstWriteStats {
  uint64_t file_size = 0;
  uint64_t flatbuffer_size = 0;      // including the size prefix
  uint64_t data_size = 0;            // data section bytes (padding included)
  uint64_t tensor_bytes = 0;         // tensor bytes as the IR holds them (before fp16 storage)
  uint64_t stored_tensor_bytes = 0;  // tensor bytes as stored in the file
  int64_t num_tensors = 0;
  int64_t fp16_tensors = 0;  // tensors stored as f16
};

// The whole file in memory.
core::Result<std::string> write_kst(const ir::Graph& g, const KstWriteOptions& opts = {},
                                    KstWriteStats* stats = nullptr);
// Streams the file to `path` (written to "<path>.tmp" and renamed, so a failed write leaves no
// half file behind).
core::Result<KstWriteStats> write_kst_file(const ir::Graph& g, const std::string& path,
                                           const KstWriteOptions& opts = {});

}  // namespace kestrel::format

// Constants of the .kst file format shared by the writer, the loader and tools (layout: docs/kst_format.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kestrel::format {

// The format version this build writes and the newest it reads. Bump it for any change an older
// reader would misread; purely additive schema fields do not need a bump.
constexpr uint32_t kKstFormatVersion = 1;
// FlatBuffers file identifier (bytes 8..11 of the file, after the 4-byte size prefix).
constexpr char kKstFileIdentifier[] = "KST1";
// Every tensor's data starts at a file offset that is a multiple of this.
constexpr size_t kKstDataAlignment = 64;

// Limits the loader enforces (and the writer respects, so it never writes what cannot be read).
constexpr int kKstMaxSubgraphDepth = 32;
constexpr int kKstMaxRank = 32;

// What a load found, for tools and tests (the zero-copy check compares tensor pointers to base).
struct KstFileInfo {
  uint32_t format_version = 0;
  std::string writer;  // "kestrel 0.1.0"
  uint64_t file_size = 0;
  uint64_t flatbuffer_size = 0;  // including the 4-byte size prefix
  uint64_t data_offset = 0;      // file offset of the data section
  uint64_t data_size = 0;
  const void* base = nullptr;     // first byte of the file in memory (mapping or buffer)
  bool mapped = false;            // base is a read-only file mapping
  bool copied = false;            // the bytes were copied into an aligned buffer first
  int64_t num_tensors = 0;        // constants and attribute tensors
  int64_t zero_copy_tensors = 0;  // used in place
  uint64_t zero_copy_bytes = 0;
  uint64_t widened_bytes = 0;  // f32 bytes produced from f16 storage at load
};

}  // namespace kestrel::format

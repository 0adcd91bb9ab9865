// Loads a .kst file into an ir::Graph: maps it, verifies the FlatBuffer and every cross-reference,
// and wraps constant tensors as views into the mapping (zero copy).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/status.h"
#include "format/kst_format.h"
#include "ir/graph.h"

namespace kestrel::format {

struct KstModel {
  std::unique_ptr<ir::Graph> graph;
  // The mapping or buffer the constants point into (each constant also holds it).
  std::shared_ptr<void> keepalive;
  KstFileInfo info;
};

// mmaps the file read-only. Nothing is copied except f16-stored weights (widened to f32) and
// string tensors. Errors name the file and what is wrong; a newer format version is refused.
core::Result<KstModel> load_kst_file(const std::string& path);
// Copies the bytes into a 64-byte aligned buffer first: `data` need not outlive the call.
core::Result<KstModel> load_kst_memory(const void* data, size_t size, const std::string& source_name = "");
// Uses the bytes in place when `data` is 64-byte aligned (keeping `owner` alive), else copies.
core::Result<KstModel> load_kst_shared(std::shared_ptr<const void> owner, const void* data, size_t size,
                                       const std::string& source_name = "");

// True if the bytes carry the .kst file identifier (needs the first 12 bytes).
bool looks_like_kst(const void* data, size_t size);

}  // namespace kestrel::format

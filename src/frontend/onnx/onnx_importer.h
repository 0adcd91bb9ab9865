// ONNX importer: ModelProto bytes -> ir::Graph in Kestrel's canonical op forms.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "ir/graph.h"

namespace kestrel::frontend {

struct OnnxImportOptions {
  // Directory that external-data locations are relative to ("" = refuse external data).
  std::string model_dir;
  // Name used in error messages (usually the file path).
  std::string source_name = "model.onnx";
};

// Parses and converts a model. Every error names the file, and the node, op type and opset
// where one is involved. Initializers keep their own aligned copy of the data.
core::Result<std::unique_ptr<ir::Graph>> import_onnx(const void* data, size_t size, const OnnxImportOptions& opts);
core::Result<std::unique_ptr<ir::Graph>> import_onnx_file(const std::string& path);

// True if the bytes look like an ONNX ModelProto (cheap sniff, used to pick a loader).
bool looks_like_onnx(const void* data, size_t size);

}  // namespace kestrel::frontend

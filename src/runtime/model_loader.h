// Model loaders by file type. The runtime knows .kst; the converter library adds ONNX (with the
// optimizer) when it is linked, so the runtime itself never depends on protobuf.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "ir/graph.h"

namespace kestrel::runtime {

struct LoadOptions {
  int opt_level = 2;          // optimizer level for formats that are optimized at load (-O0..-O2)
  std::string source_path;    // file path when loading from a file (external data, error messages)
};

// A loaded model: the graph plus whatever keeps its constant data alive (e.g., a file mapping).
struct LoadedModel {
  std::unique_ptr<ir::Graph> graph;
  std::shared_ptr<void> keepalive;
};

// detect() sees at most the first kDetectPrefixBytes of the model (all of it if shorter).
constexpr size_t kDetectPrefixBytes = 64;

struct ModelLoader {
  const char* name;                                 // "onnx", "kst"
  bool (*detect)(std::string_view bytes, const std::string& path);
  core::Result<LoadedModel> (*load)(std::shared_ptr<const std::string> bytes, const LoadOptions& opts);
  // Optional: load from a path directly (mmap); null to read the file into memory.
  core::Result<LoadedModel> (*load_file)(const std::string& path, const LoadOptions& opts) = nullptr;
};

// Registers a loader (later registrations of the same name replace earlier ones).
void register_model_loader(const ModelLoader& loader);
// Picks the loader whose detect() accepts the bytes / path.
const ModelLoader* find_model_loader(std::string_view bytes, const std::string& path);
// Names of registered loaders, for error messages.
std::string model_loader_names();

}  // namespace kestrel::runtime

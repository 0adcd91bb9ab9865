// Loading a model file for the tools that look at the graph itself (inspect, convert): the graph
// as the importer produced it, without the load-time optimizer.
#pragma once

#include <string>

#include "runtime/model_loader.h"

namespace kestrel::cli {

// Throws kestrel::Error when the file cannot be read or parsed.
runtime::LoadedModel load_unoptimized(const std::string& path);

}  // namespace kestrel::cli

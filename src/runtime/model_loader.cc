// Loader registry.
#include "runtime/model_loader.h"

#include <mutex>
#include <vector>

namespace kestrel::runtime {

namespace {
std::mutex& loaders_mu() {
  static std::mutex mu;
  return mu;
}
std::vector<ModelLoader>& loaders() {
  static std::vector<ModelLoader> v;
  return v;
}
}  // namespace

void register_model_loader(const ModelLoader& loader) {
  std::lock_guard<std::mutex> lock(loaders_mu());
  for (auto& l : loaders())
    if (std::string(l.name) == loader.name) {
      l = loader;
      return;
    }
  loaders().push_back(loader);
}

const ModelLoader* find_model_loader(std::string_view bytes, const std::string& path) {
  std::lock_guard<std::mutex> lock(loaders_mu());
  for (const auto& l : loaders())
    if (l.detect(bytes, path)) return &l;
  return nullptr;
}

std::string model_loader_names() {
  std::lock_guard<std::mutex> lock(loaders_mu());
  std::string s;
  for (const auto& l : loaders()) {
    if (!s.empty()) s += ", ";
    s += l.name;
  }
  return s.empty() ? "none" : s;
}

}  // namespace kestrel::runtime

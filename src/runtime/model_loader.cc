// Loader registry; the built-in .kst loader is in it from the start (no static registrar needed).
#include "runtime/model_loader.h"

#include <mutex>
#include <vector>

#include "format/kst_loader.h"

namespace kestrel::runtime {

namespace {

bool kst_detect(std::string_view bytes, const std::string& path) {
  if (format::looks_like_kst(bytes.data(), bytes.size())) return true;
  // A truncated or damaged .kst should get the .kst loader's message, not "unknown format".
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".kst") == 0;
}

core::Result<LoadedModel> kst_loaded(core::Result<format::KstModel> r, const std::string& path) {
  if (!r.is_ok()) return r.status();
  LoadedModel m;
  m.graph = std::move(r->graph);
  m.keepalive = std::move(r->keepalive);
  // Session names the model in its errors by this key (as for ONNX).
  if (!path.empty()) m.graph->metadata()["source_path"] = path;
  return m;
}

core::Result<LoadedModel> kst_load(std::shared_ptr<const std::string> bytes, const LoadOptions& opts) {
  std::shared_ptr<const void> owner(bytes, bytes->data());
  return kst_loaded(format::load_kst_shared(owner, bytes->data(), bytes->size(), opts.source_path),
                    opts.source_path);
}

core::Result<LoadedModel> kst_load_file(const std::string& path, const LoadOptions&) {
  return kst_loaded(format::load_kst_file(path), path);
}

std::mutex& loaders_mu() {
  static std::mutex mu;
  return mu;
}
std::vector<ModelLoader>& loaders() {
  static std::vector<ModelLoader> v = {ModelLoader{"kst", &kst_detect, &kst_load, &kst_load_file}};
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

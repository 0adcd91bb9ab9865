// Registers the ONNX loader with the runtime: import, then optimize at the requested level.
#include <cstring>

#include "core/str_util.h"
#include "frontend/onnx/onnx_importer.h"
#include "passes/pass.h"
#include "runtime/kernel.h"
#include "runtime/model_loader.h"

namespace kestrel::frontend {

namespace {

bool detect(std::string_view bytes, const std::string& path) {
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0) return true;
  return looks_like_onnx(bytes.data(), bytes.size());
}

core::Result<runtime::LoadedModel> load(std::shared_ptr<const std::string> bytes, const runtime::LoadOptions& opts) {
  OnnxImportOptions io;
  if (!opts.source_path.empty()) {
    io.source_name = opts.source_path;
    size_t slash = opts.source_path.find_last_of('/');
    io.model_dir = slash == std::string::npos ? "." : opts.source_path.substr(0, slash);
  }
  KESTREL_ASSIGN_OR_RETURN(auto g, import_onnx(bytes->data(), bytes->size(), io));
  if (!opts.source_path.empty()) g->metadata()["source_path"] = opts.source_path;
  if (opts.opt_level > 0) {
    ir::NodeEvaluator ev = [](const ir::Node& n, std::span<const core::Tensor* const> ins) {
      return runtime::evaluate_node(n, ins);
    };
    passes::PassContext ctx;
    ctx.evaluator = &ev;
    KESTREL_RETURN_IF_ERROR(passes::optimize(*g, opts.opt_level, ctx).with_context(
        opts.source_path.empty() ? std::string("model") : opts.source_path));
  }
  runtime::LoadedModel m;
  m.graph = std::move(g);
  return m;
}

struct Registrar {
  Registrar() { runtime::register_model_loader({"onnx", &detect, &load, nullptr}); }
};
const Registrar registrar;

}  // namespace
}  // namespace kestrel::frontend

// Referenced by the link options of kestrel_convert so this file is always linked in.
extern "C" {
int kestrel_onnx_loader_anchor = 0;
}

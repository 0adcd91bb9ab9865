// `kestrel inspect`: what a model file holds: inputs, outputs, opset and producer, op-type
// histogram, parameter count and size. Loads the graph as imported (no optimization) so the
// histogram describes the file, not what the optimizer makes of it.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "api/convert.h"
#include "cli_util.h"
#include "commands.h"
#include "core/str_util.h"
#include "ir/graph.h"
#include "runtime/model_loader.h"
#include "runtime/session.h"

namespace kestrel::cli {

namespace {

using core::str_cat;

struct InspectOptions {
  std::string model;
};

runtime::LoadedModel load_unoptimized(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorCode::kIoError, str_cat("cannot open model file '", path, "'"));
  std::ostringstream ss;
  ss << f.rdbuf();
  auto bytes = std::make_shared<const std::string>(ss.str());
  const runtime::ModelLoader* loader = runtime::find_model_loader(*bytes, path);
  if (!loader)
    fail(ErrorCode::kInvalidModel,
         str_cat(path, ": not a model file this build can read (formats: ", runtime::model_loader_names(), ")"));
  runtime::LoadOptions lo;
  lo.opt_level = 0;
  lo.source_path = path;
  auto m = loader->load_file ? loader->load_file(path, lo) : loader->load(bytes, lo);
  api::throw_if_error(m.status());
  return std::move(m).value();
}

struct GraphCounts {
  std::map<std::string, int64_t> ops;
  int64_t nodes = 0, subgraphs = 0, constants = 0;
  uint64_t parameters = 0, parameter_bytes = 0;
};

void count(const ir::Graph& g, GraphCounts& c) {
  for (const ir::Value* v : g.constants()) {
    ++c.constants;
    c.parameters += static_cast<uint64_t>(v->constant().num_elements());
    c.parameter_bytes += v->constant().nbytes();
  }
  for (const ir::Node* n : g.nodes()) {
    ++c.nodes;
    ++c.ops[n->domain().empty() ? n->op_type() : n->domain() + "." + n->op_type()];
    for (const ir::Graph* sub : n->subgraphs()) {
      ++c.subgraphs;
      count(*sub, c);
    }
  }
}

void print_values(const char* title, const std::vector<ir::Value*>& values) {
  std::printf("%s (%zu):\n", title, values.size());
  size_t width = 0;
  for (const ir::Value* v : values) width = std::max(width, v->name().size());
  for (const ir::Value* v : values)
    std::printf("  %-*s  %s\n", static_cast<int>(width), v->name().c_str(), v->type().to_string().c_str());
}

void inspect(const InspectOptions& o) {
  runtime::LoadedModel m = load_unoptimized(o.model);
  ir::Graph& g = *m.graph;
  GraphCounts c;
  count(g, c);  // before inference: plan-time evaluation must not change what we report

  const auto& md = g.metadata();
  auto meta = [&](const char* key) { return md.count(key) ? md.at(key) : std::string(); };
  std::printf("model:      %s\n", o.model.c_str());
  std::string format = meta("source_format");
  if (format == "onnx") {
    // A model of optimizer ops may import only ai.onnx.preview.training (no default opset).
    format = str_cat("ONNX, IR version ", meta("onnx_ir_version"));
    if (!meta("onnx_opset").empty()) format += str_cat(", opset ", meta("onnx_opset"));
    if (!meta("onnx_training_opset").empty())
      format += str_cat(", ai.onnx.preview.training opset ", meta("onnx_training_opset"));
  }
  std::printf("format:     %s\n", format.empty() ? "?" : format.c_str());
  std::printf("producer:   %s\n", meta("producer").empty() ? "?" : meta("producer").c_str());
  for (const auto& [key, value] : md)
    if (key.rfind("user.", 0) == 0) std::printf("metadata:   %s = %s\n", key.c_str() + 5, value.c_str());

  // Output shapes are often only declared symbolically or not at all; inference fills them in.
  core::Status inferred = runtime::prepare_graph(g);
  print_values("inputs", g.inputs());
  print_values("outputs", g.outputs());
  if (!inferred.is_ok()) std::printf("  (shape inference failed: %s)\n", inferred.message().c_str());

  std::printf("parameters: %s (%s) in %s constant tensors\n", format_count(c.parameters).c_str(),
              format_bytes(c.parameter_bytes).c_str(), format_count(static_cast<uint64_t>(c.constants)).c_str());
  std::printf("nodes:      %s (%zu op types%s)\n", format_count(static_cast<uint64_t>(c.nodes)).c_str(), c.ops.size(),
              c.subgraphs ? str_cat(", ", c.subgraphs, " subgraphs").c_str() : "");
  std::vector<std::pair<std::string, int64_t>> ops(c.ops.begin(), c.ops.end());
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  size_t width = 0;
  for (const auto& [op, n] : ops) width = std::max(width, op.size());
  for (const auto& [op, n] : ops)
    std::printf("  %-*s  %lld\n", static_cast<int>(width), op.c_str(), static_cast<long long>(n));
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* sub = app.add_subcommand("inspect", "Show a model's inputs, outputs, opset, ops and parameters");
  sub->footer("Example: kestrel inspect model.onnx");
  sub->add_option("model", o->model, "Model file (.onnx)")->required();
  sub->callback([o] { inspect(*o); });
}

}  // namespace kestrel::cli

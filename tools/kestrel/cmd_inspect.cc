// `kestrel inspect`: what a model file holds: inputs, outputs, opset and producer, op-type
// histogram, parameter count and size. Loads the graph as imported (no optimization) so the
// histogram describes the file, not what the optimizer makes of it, unless -O asks for a level.
// --graph prints the graph, or draws it as Graphviz DOT (--dot) or SVG (--svg, runs `dot`).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "api/convert.h"
#include "cli_util.h"
#include "commands.h"
#include "core/str_util.h"
#include "ir/dot.h"
#include "ir/graph.h"
#include "ir/printer.h"
#include "model_file.h"
#include "passes/pass.h"
#include "runtime/kernel.h"
#include "runtime/model_loader.h"
#include "runtime/session.h"

namespace kestrel::cli {

namespace {

using core::str_cat;

struct InspectOptions {
  std::string model;
  int opt_level = 0;
  bool graph = false;
  std::string dot_path, svg_path;
};

// The Graphviz `dot` program on PATH, or "".
std::string find_dot() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string cand = (dir.empty() ? std::string(".") : dir) + "/dot";
    if (::access(cand.c_str(), X_OK) == 0) return cand;
    start = end + 1;
  }
  return "";
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f) fail(ErrorCode::kIoError, str_cat("cannot write '", path, "'"));
  f << text;
  f.close();
  if (!f) fail(ErrorCode::kIoError, str_cat("cannot write '", path, "'"));
}

// Renders DOT text to an SVG file with `dot -Tsvg` (the DOT goes through a temporary file next to
// the output).
void render_svg(const std::string& dot_text, const std::string& svg_path) {
  const std::string dot = find_dot();
  if (dot.empty())
    fail(ErrorCode::kUnsupported,
         "--svg needs the Graphviz 'dot' program, which is not on PATH (Debian: apt-get install graphviz); "
         "--dot FILE writes the graph for rendering elsewhere");
  const std::string tmp = svg_path + ".dot.tmp";
  write_text_file(tmp, dot_text);
  std::vector<std::string> args = {dot, "-Tsvg", "-o", svg_path, tmp};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, dot.c_str(), nullptr, nullptr, argv.data(), environ);
  int status = 0;
  if (rc == 0 && waitpid(pid, &status, 0) < 0) rc = errno;
  std::remove(tmp.c_str());
  if (rc != 0) fail(ErrorCode::kIoError, str_cat("cannot run '", dot, "': ", std::strerror(rc)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail(ErrorCode::kIoError, str_cat("'", dot, " -Tsvg' failed (exit status ",
                                      WIFEXITED(status) ? WEXITSTATUS(status) : -1, ") writing '", svg_path, "'"));
}

void optimize_for_display(ir::Graph& g, int level) {
  ir::NodeEvaluator ev = [](const ir::Node& n, std::span<const core::Tensor* const> ins) {
    return runtime::evaluate_node(n, ins);
  };
  passes::PassContext ctx;
  ctx.evaluator = &ev;
  api::throw_if_error(passes::optimize(g, level, ctx));
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
  if (o.opt_level > 0) optimize_for_display(g, o.opt_level);
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
  if (!o.graph) return;
  if (!o.dot_path.empty()) {
    write_text_file(o.dot_path, ir::graph_to_dot(g));
    std::printf("graph:      wrote %s\n", o.dot_path.c_str());
  } else if (!o.svg_path.empty()) {
    render_svg(ir::graph_to_dot(g), o.svg_path);
    std::printf("graph:      wrote %s\n", o.svg_path.c_str());
  } else {
    std::printf("\n");
    ir::print_graph(g, std::cout);
    std::cout.flush();
  }
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* sub = app.add_subcommand("inspect", "Show a model's inputs, outputs, opset, ops and parameters");
  sub->footer("Examples: kestrel inspect model.onnx\n          kestrel inspect model.onnx -O2 --graph --svg model.svg");
  sub->add_option("model", o->model, "Model file (.onnx or .kst)")->required();
  sub->add_option("-O", o->opt_level, "Optimize first (0: the file as stored, 1, 2) to see what the optimizer does")
      ->check(CLI::Range(0, 2))
      ->default_val(0);
  CLI::Option* graph =
      sub->add_flag("--graph", o->graph, "Print the graph (one line per node), or draw it with --dot / --svg");
  CLI::Option* dot =
      sub->add_option("--dot", o->dot_path, "With --graph: write Graphviz DOT to this file")->needs(graph);
  sub->add_option("--svg", o->svg_path, "With --graph: render SVG to this file (needs Graphviz 'dot')")
      ->needs(graph)
      ->excludes(dot);
  sub->callback([o] { inspect(*o); });
}

}  // namespace kestrel::cli

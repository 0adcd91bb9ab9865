// `kestrel convert`: ONNX (or any loadable model) -> optimized .kst. Prints what each optimizer
// pass did (nodes removed / fused, time), node count and weight bytes before and after, and the
// file written. A status line shows progress when stderr is a terminal.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/convert.h"
#include "cli_util.h"
#include "commands.h"
#include "core/str_util.h"
#include "format/kst_writer.h"
#include "ir/graph.h"
#include "ir/op_schema.h"
#include "model_file.h"
#include "passes/pass.h"
#include "passes/weight_only_int8.h"
#include "runtime/kernel.h"
#include "runtime/session.h"

namespace kestrel::cli {

namespace {

using core::str_cat;

struct ConvertOptions {
  std::string input, output;
  int opt_level = 2;
  bool fp16_weights = false;
  bool int8_weights = false;
  std::vector<std::string> input_shapes;
  bool quiet = false;
};

struct Totals {
  int64_t nodes = 0;
  uint64_t weight_bytes = 0;
  std::map<std::string, int64_t> ops;
};

void totals(const ir::Graph& g, Totals& t) {
  for (const ir::Value* v : g.constants()) t.weight_bytes += v->constant().nbytes();
  for (const ir::Node* n : g.nodes()) {
    ++t.nodes;
    ++t.ops[n->domain().empty() ? n->op_type() : n->domain() + "." + n->op_type()];
    for (const ir::Graph* sub : n->subgraphs()) totals(*sub, t);
  }
}

void apply_input_shapes(ir::Graph& g, const std::vector<std::string>& specs) {
  for (const std::string& spec : specs) {
    auto [name, dims_text] = split_assignment(spec, "--input-shape", "NAME=1x3x224x224");
    std::vector<int64_t> dims = parse_dims(dims_text, str_cat("--input-shape ", name));
    ir::Value* in = nullptr;
    std::string names;
    for (ir::Value* v : g.inputs()) {
      names += str_cat(names.empty() ? "" : ", ", v->name());
      if (v->name() == name) in = v;
    }
    if (!in)
      fail(ErrorCode::kInvalidArgument,
           str_cat("--input-shape: the model has no input '", name, "' (inputs: ", names, ")"));
    const ir::Shape& old = in->shape();
    if (old.rank_known() && old.rank() != static_cast<int64_t>(dims.size()))
      fail(ErrorCode::kInvalidArgument,
           str_cat("--input-shape ", name, ": rank ", dims.size(), " but the model declares ", old.to_string()));
    for (size_t i = 0; old.rank_known() && i < dims.size(); ++i) {
      const ir::Dim& d = old[static_cast<int64_t>(i)];
      if (d.known() && d.value != dims[i])
        fail(ErrorCode::kInvalidArgument,
             str_cat("--input-shape ", name, ": dim ", i, " is ", d.value, " in the model, not ", dims[i]));
    }
    in->set_type({in->dtype(), ir::Shape(core::Dims(dims))});
  }
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void convert(const ConvertOptions& o) {
  const int level = o.opt_level;
  const bool tty = !o.quiet && isatty(fileno(stderr));
  auto t_start = std::chrono::steady_clock::now();

  runtime::LoadedModel m = load_unoptimized(o.input);
  ir::Graph& g = *m.graph;
  apply_input_shapes(g, o.input_shapes);
  api::throw_if_error(runtime::prepare_graph(g));
  Totals before;
  totals(g, before);
  const double load_ms = ms_since(t_start);

  ir::NodeEvaluator ev = [](const ir::Node& n, std::span<const core::Tensor* const> ins) {
    return runtime::evaluate_node(n, ins);
  };
  passes::PassContext ctx;
  ctx.evaluator = &ev;
  const size_t per_round = passes::make_pipeline(level).size();
  if (tty)
    ctx.on_pass_start = [per_round](const char* pass, int round, int index) {
      std::fprintf(stderr, "\r\033[Koptimizing: round %d, pass %zu/%zu  %s", round + 1,
                   static_cast<size_t>(index) % std::max<size_t>(per_round, 1) + 1, per_round, pass);
      std::fflush(stderr);
    };
  std::vector<passes::PassReport> reports;
  auto t_opt = std::chrono::steady_clock::now();
  core::Status st = passes::optimize(g, level, ctx, &reports);
  if (tty) std::fprintf(stderr, "\r\033[K");
  api::throw_if_error(st);
  const double opt_ms = ms_since(t_opt);
  passes::WeightInt8Stats int8_stats;
  if (o.int8_weights) {
    // After the fusions (they match on constant f32 weights); the runtime lowers the result.
    auto r = passes::quantize_weights_int8(g);
    api::throw_if_error(r.status());
    int8_stats = *r;
    api::throw_if_error(ir::infer_graph(g, &ev));
  }
  Totals after;
  totals(g, after);

  format::KstWriteOptions wo;
  wo.fp16_weights = o.fp16_weights;
  wo.metadata["convert.opt_level"] = std::to_string(level);
  wo.metadata["convert.fp16_weights"] = o.fp16_weights ? "1" : "0";
  if (o.int8_weights) wo.metadata["convert.int8_weights"] = "1";
  std::string shapes;
  for (const std::string& s : o.input_shapes) shapes += str_cat(shapes.empty() ? "" : " ", s);
  if (!shapes.empty()) wo.metadata["convert.input_shapes"] = shapes;
  if (tty) std::fprintf(stderr, "writing %s", o.output.c_str());
  auto t_write = std::chrono::steady_clock::now();
  auto ws = format::write_kst_file(g, o.output, wo);
  if (tty) std::fprintf(stderr, "\r\033[K");
  api::throw_if_error(ws.status());
  const double write_ms = ms_since(t_write);

  if (o.quiet) return;
  std::printf("%s -> %s (-O%d%s%s)\n", o.input.c_str(), o.output.c_str(), level, o.fp16_weights ? ", fp16 weights" : "",
              o.int8_weights ? ", int8 MatMul/Gemm weights" : "");
  std::printf("loaded in %.1f ms: %lld nodes, %s of weights\n", load_ms, static_cast<long long>(before.nodes),
              format_bytes(before.weight_bytes).c_str());
  if (!reports.empty()) {
    std::printf("  %-34s %8s %6s %7s %10s\n", "pass", "removed", "fused", "nodes", "time");
    for (const passes::PassReport& r : reports)
      std::printf("  %-34s %8d %6d %7zu %8.1f ms\n", r.name.c_str(), r.stats.removed, r.stats.fused, r.nodes_after,
                  r.ms);
  }
  std::printf("optimized in %.1f ms: nodes %lld -> %lld, weights %s -> %s\n", opt_ms,
              static_cast<long long>(before.nodes), static_cast<long long>(after.nodes),
              format_bytes(before.weight_bytes).c_str(), format_bytes(after.weight_bytes).c_str());
  if (o.int8_weights)
    std::printf("int8 weights: %d weights of %d MatMul/Gemm nodes, %s -> %s\n", int8_stats.weights, int8_stats.nodes,
                format_bytes(int8_stats.f32_bytes).c_str(), format_bytes(int8_stats.int8_bytes).c_str());
  std::string ops;
  for (const auto& [op, n] : after.ops) ops += str_cat(ops.empty() ? "" : ", ", op, " ", n);
  std::printf("ops after: %s\n", ops.c_str());
  std::printf("wrote %s in %.1f ms: %s (%lld tensors%s)\n", o.output.c_str(), write_ms,
              format_bytes(ws->file_size).c_str(), static_cast<long long>(ws->num_tensors),
              ws->fp16_tensors ? str_cat(", ", ws->fp16_tensors, " stored as f16").c_str() : "");
}

}  // namespace

void add_convert_command(CLI::App& app) {
  auto o = std::make_shared<ConvertOptions>();
  CLI::App* sub = app.add_subcommand("convert", "Optimize a model and write it as .kst");
  sub->footer("Example: kestrel convert model.onnx -o model.kst -O2 --input-shape input=1x3x224x224");
  sub->add_option("input", o->input, "Model file (.onnx)")->required();
  sub->add_option("-o,--output", o->output, "Output .kst file")->required();
  sub->add_option("-O", o->opt_level, "Optimization level: -O0 import only, -O1 cleanups and folding, -O2 all fusions")
      ->check(CLI::Range(0, 2))
      ->default_val(2);
  sub->add_flag("--fp16-weights", o->fp16_weights, "Store float32 weights as float16 (widened back at load)");
  sub->add_flag("--int8-weights", o->int8_weights,
                "Store MatMul/Gemm weights as int8 with a float scale per output channel (weight-only; math stays "
                "float32)");
  sub->add_option("--input-shape", o->input_shapes, "Fix an input's shape: NAME=1x3x224x224 (repeatable)");
  sub->add_flag("-q,--quiet", o->quiet, "Print nothing on success");
  sub->callback([o] { convert(*o); });
}

}  // namespace kestrel::cli

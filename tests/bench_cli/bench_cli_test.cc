// `kestrel bench` end to end on a small in-memory model: the --json line parses and has every key,
// --trace writes valid trace-event JSON with one event per node and run, --profile lists every
// node. Plus the command's helpers: percentiles, FLOP counts, JSON escaping. No timing assertions.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "common/onnx_builder.h"
#include "common/temp_dir.h"
#include "core/npy.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "ir/op_schema.h"

namespace kestrel {
namespace {

using json = nlohmann::json;
using kestrel::testing::OnnxBuilder;

using testing::TempDir;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct CliResult {
  bool exited = false;
  int code = -1;
  std::string out, err;
};

CliResult run_cli(const TempDir& dir, const std::string& args) {
  std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  std::string cmd = std::string("'") + KESTREL_CLI_PATH + "' " + args + " >'" + out + "' 2>'" + err + "'";
  int status = std::system(cmd.c_str());
  CliResult r;
  r.exited = status != -1 && WIFEXITED(status);
  r.code = r.exited ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::string q(const std::string& s) {
  return "'" + s + "'";
}

// x f32[1,4,6,6] + c -> Relu -> Sigmoid -> y; four nodes run per iteration (Add, Relu, Sigmoid, Neg).
std::string small_model() {
  OnnxBuilder b;
  b.input("x", 1, {1, 4, 6, 6}).initializer_f32("c", {6}, {1, -2, 3, -4, 5, -6});
  b.node("Add", {"x", "c"}, {"s"}, "add");
  b.node("Relu", {"s"}, {"r"}, "relu");
  b.node("Sigmoid", {"r"}, {"y"}, "sigmoid");
  b.node("Neg", {"y"}, {"z"}, "neg");
  b.output("y").output("z");
  return b.bytes();
}

class BenchCli : public ::testing::Test {
 protected:
  TempDir dir;
  std::string model = dir.write("small.onnx", small_model());
};

json parse_single_line(const std::string& out) {
  EXPECT_FALSE(out.empty());
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(out.find('\n'), out.size() - 1) << "more than one line:\n" << out;
  return json::parse(out);  // throws (test error) when not JSON
}

TEST_F(BenchCli, JsonHasTheKeys) {
  CliResult r = run_cli(dir, "bench " + q(model) + " --json --iters 7 --warmup 2 --threads 2");
  ASSERT_TRUE(r.exited);
  ASSERT_EQ(r.code, 0) << r.err;
  json j = parse_single_line(r.out);
  for (const char* k : {"median_ms", "p10_ms", "p90_ms", "min_ms", "max_ms", "mean_ms", "session_ms", "open_ms",
                        "plan_ms", "first_run_ms"}) {
    ASSERT_TRUE(j.contains(k)) << k;
    EXPECT_TRUE(j[k].is_number()) << k;
    EXPECT_GE(j[k].get<double>(), 0.0) << k;
  }
  for (const char* k : {"threads", "iters", "warmup", "arena_bytes", "sum_activation_bytes", "peak_rss_bytes",
                        "allocs_per_run", "opt_level", "static_steps"}) {
    ASSERT_TRUE(j.contains(k)) << k;
    EXPECT_TRUE(j[k].is_number_integer()) << k;
  }
  EXPECT_EQ(j["engine"], "kestrel");
  EXPECT_EQ(j["model"], "small");
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["iters"], 7);
  EXPECT_EQ(j["warmup"], 2);
  EXPECT_TRUE(j["isa"] == "scalar" || j["isa"] == "avx2" || j["isa"] == "avx512") << j["isa"];
  // Order statistics of the same sample.
  EXPECT_LE(j["min_ms"].get<double>(), j["p10_ms"].get<double>());
  EXPECT_LE(j["p10_ms"].get<double>(), j["median_ms"].get<double>());
  EXPECT_LE(j["median_ms"].get<double>(), j["p90_ms"].get<double>());
  EXPECT_LE(j["p90_ms"].get<double>(), j["max_ms"].get<double>());
  EXPECT_GT(j["peak_rss_bytes"].get<int64_t>(), 0);
  // s and r are arena activations (y and z are outputs): 144 floats each, s dead when r is made
  // only after r is written, so both are live at once.
  EXPECT_EQ(j["sum_activation_bytes"].get<int64_t>(), 2 * 576);
  EXPECT_LE(j["arena_bytes"].get<int64_t>(), j["sum_activation_bytes"].get<int64_t>());
  EXPECT_EQ(j["static_steps"], 4);
  EXPECT_EQ(j["inputs"].size(), 1u);
  EXPECT_EQ(j["inputs"][0]["name"], "x");
  EXPECT_EQ(j["inputs"][0]["type"], "f32[1,4,6,6]");
  EXPECT_EQ(j["inputs"][0]["source"], "random");
}

TEST_F(BenchCli, TraceIsValidJsonWithOneEventPerNodeAndRun) {
  std::string trace = dir.file("trace.json");
  CliResult r = run_cli(dir, "bench " + q(model) + " --json --iters 3 --warmup 1 --trace " + q(trace));
  ASSERT_TRUE(r.exited);
  ASSERT_EQ(r.code, 0) << r.err;
  json j = parse_single_line(r.out);
  EXPECT_EQ(j["trace"], trace);
  json t = json::parse(slurp(trace));
  ASSERT_TRUE(t.contains("traceEvents"));
  ASSERT_TRUE(t["traceEvents"].is_array());
  int runs = 0, ops = 0;
  std::map<std::string, int> per_node;
  for (const json& e : t["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph"));
    if (e["ph"] != "X") continue;
    for (const char* k : {"name", "ts", "dur", "pid", "tid"}) ASSERT_TRUE(e.contains(k)) << k << " in " << e;
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    if (e["cat"] == "run") {
      ++runs;
      continue;
    }
    ++ops;
    ++per_node[e["name"].get<std::string>()];
    ASSERT_TRUE(e.contains("args"));
    EXPECT_EQ(e["args"]["op"], e["cat"]);
    EXPECT_FALSE(e["args"]["impl"].get<std::string>().empty());
    EXPECT_FALSE(e["args"]["outputs"].get<std::string>().empty());
  }
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(ops, 3 * 4);
  EXPECT_EQ(per_node.size(), 4u);
  for (const auto& [name, n] : per_node) EXPECT_EQ(n, 3) << name;
  EXPECT_EQ(per_node.count("add"), 1u);
}

TEST_F(BenchCli, ProfileListsEveryNode) {
  CliResult r = run_cli(dir, "bench " + q(model) + " --json --profile --iters 4 --warmup 0");
  ASSERT_TRUE(r.exited);
  ASSERT_EQ(r.code, 0) << r.err;
  json j = parse_single_line(r.out);
  ASSERT_TRUE(j["ops"].is_array());
  ASSERT_EQ(j["ops"].size(), 4u);
  double share = 0;
  for (const json& op : j["ops"]) {
    EXPECT_EQ(op["calls"], 4) << op;
    EXPECT_EQ(op["flop"], 0) << op;  // elementwise ops: no FLOP count
    share += op["share"].get<double>();
  }
  EXPECT_NEAR(share, 1.0, 1e-3);
  EXPECT_EQ(j["ops"][0]["node"], "add");
  EXPECT_EQ(j["ops"][0]["op"], "Add");
  EXPECT_EQ(j["ops"][0]["outputs"], "f32[1,4,6,6]");
  ASSERT_TRUE(j["op_types"].is_array());
  EXPECT_EQ(j["op_types"].size(), 4u);

  // The human-readable form prints the tables.
  CliResult h = run_cli(dir, "bench " + q(model) + " --profile --iters 2");
  ASSERT_EQ(h.code, 0) << h.err;
  for (const char* s : {"median", "arena", "peak RSS", "op type", "GFLOP/s", "sigmoid", "Relu"})
    EXPECT_NE(h.out.find(s), std::string::npos) << s << " not in:\n" << h.out;
}

TEST_F(BenchCli, InputFromFileAndShapeErrors) {
  auto x = core::Tensor::allocate(core::DType::kF32, {1, 4, 6, 6});
  ASSERT_TRUE(x.is_ok());
  std::string xf = dir.file("x.npy");
  ASSERT_TRUE(core::write_npy(xf, *x).is_ok());
  CliResult r = run_cli(dir, "bench " + q(model) + " --json --iters 1 --input x=" + q(xf));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(parse_single_line(r.out)["inputs"][0]["source"], xf);

  CliResult bad = run_cli(dir, "bench " + q(model) + " --json --shape x=1x4x6");
  ASSERT_TRUE(bad.exited);
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("'x'"), std::string::npos) << bad.err;

  CliResult no_trace = run_cli(dir, "bench " + q(model) + " --trace /nonexistent/dir/t.json");
  ASSERT_TRUE(no_trace.exited);
  EXPECT_NE(no_trace.code, 0);
  EXPECT_NE(no_trace.err.find("/nonexistent/dir/t.json"), std::string::npos) << no_trace.err;
}

// --against: a second model (here the small model without its Neg) timed in alternation; its statistics and the ratio
// in the JSON and the text; refused with --profile; a bad second model fails naming it.
TEST_F(BenchCli, AgainstTimesASecondModel) {
  OnnxBuilder b;
  b.input("x", 1, {1, 4, 6, 6}).initializer_f32("c", {6}, {1, -2, 3, -4, 5, -6});
  b.node("Add", {"x", "c"}, {"s"}, "add");
  b.node("Sigmoid", {"s"}, {"y"}, "sigmoid");
  b.output("y");
  const std::string second = dir.write("second.onnx", b.bytes());
  CliResult r = run_cli(dir, "bench " + q(model) + " --json --iters 6 --warmup 1 --against " + q(second));
  ASSERT_TRUE(r.exited);
  ASSERT_EQ(r.code, 0) << r.err;
  json j = parse_single_line(r.out);
  EXPECT_EQ(j["iters"], 6);
  ASSERT_TRUE(j.contains("against"));
  const json& a = j["against"];
  EXPECT_EQ(a["model"], "second");
  EXPECT_EQ(a["model_path"], second);
  for (const char* k : {"median_ms", "p10_ms", "p90_ms", "min_ms", "session_ms", "ratio", "ratio_of_medians"}) {
    ASSERT_TRUE(a.contains(k)) << k;
    EXPECT_GT(a[k].get<double>(), 0.0) << k;
  }
  EXPECT_LE(a["min_ms"].get<double>(), a["median_ms"].get<double>());
  // The JSON numbers have 6 significant digits.
  const double of_medians = a["median_ms"].get<double>() / j["median_ms"].get<double>();
  EXPECT_NEAR(a["ratio_of_medians"].get<double>(), of_medians, 1e-4 * of_medians);

  CliResult text = run_cli(dir, "bench " + q(model) + " --iters 2 --against " + q(second));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("against    " + second), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("of this model"), std::string::npos) << text.out;

  CliResult with_profile = run_cli(dir, "bench " + q(model) + " --profile --against " + q(second));
  ASSERT_TRUE(with_profile.exited);
  EXPECT_NE(with_profile.code, 0);
  EXPECT_NE(with_profile.err.find("--against"), std::string::npos) << with_profile.err;

  CliResult missing = run_cli(dir, "bench " + q(model) + " --against " + q(dir.file("missing.onnx")));
  ASSERT_TRUE(missing.exited);
  EXPECT_NE(missing.code, 0);
  EXPECT_NE(missing.err.find("missing.onnx"), std::string::npos) << missing.err;
}

// ------------------------------------------------------------------ helpers

TEST(BenchUtil, Percentile) {
  std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(cli::percentile(v, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(cli::percentile(v, 0.1), 1.3);
  EXPECT_DOUBLE_EQ(cli::percentile(v, 0.9), 3.7);
  EXPECT_DOUBLE_EQ(cli::percentile(v, 0.0), 1);
  EXPECT_DOUBLE_EQ(cli::percentile(v, 1.0), 4);
  EXPECT_DOUBLE_EQ(cli::percentile({5}, 0.5), 5);
  EXPECT_DOUBLE_EQ(cli::percentile({1, 2, 10}, 0.5), 2);
  EXPECT_DOUBLE_EQ(cli::percentile({}, 0.5), 0);
}

// A FusedConv with a MaxPool counts the conv over its unpooled output: 3 -> 4 channels, 3x3 stride 2 pad 1 on
// 9x9 gives 5x5, pooled 3x3 stride 2 to 2x2.
TEST(BenchUtil, NodeFlopsOfPooledConv) {
  using D = std::vector<std::vector<int64_t>>;
  ir::Graph g("g");
  ir::Value* x = g.add_input("x", {core::DType::kF32, ir::Shape(core::Dims{1, 3, 9, 9})});
  ir::Value* w = g.add_constant("w", core::Tensor::from_vector<float>(std::vector<float>(108, 1.f), {4, 3, 3, 3}));
  ir::Node* n = g.add_node("FusedConv", {x, w}, {"y"}, "conv", ir::kKestrelDomain);
  n->set_attr("strides", std::vector<int64_t>{2, 2});
  n->set_attr("pads", std::vector<int64_t>{1, 1, 1, 1});
  const D in{{1, 3, 9, 9}, {4, 3, 3, 3}};
  EXPECT_DOUBLE_EQ(cli::node_flops(*n, in, D{{1, 4, 5, 5}}), 2.0 * 100 * 27);  // no pool: Y is the conv's
  n->set_attr("pool_kernel_shape", std::vector<int64_t>{3, 3});
  n->set_attr("pool_strides", std::vector<int64_t>{2, 2});
  EXPECT_DOUBLE_EQ(cli::node_flops(*n, in, D{{1, 4, 2, 2}}), 2.0 * 100 * 27);
  n->set_attr("strides", std::vector<int64_t>{0, 2});  // a bad conv window: not counted
  EXPECT_DOUBLE_EQ(cli::node_flops(*n, in, D{{1, 4, 2, 2}}), 0);
}

TEST(BenchUtil, FlopsFromShapes) {
  using D = std::vector<std::vector<int64_t>>;
  // Conv: 2 * |Y| * C/group * kh * kw.
  EXPECT_DOUBLE_EQ(cli::op_flops("Conv", D{{1, 3, 8, 8}, {4, 3, 3, 3}, {4}}, D{{1, 4, 6, 6}}), 2.0 * 144 * 27);
  // Depthwise (group 4): W [4,1,3,3].
  EXPECT_DOUBLE_EQ(cli::op_flops("Conv", D{{1, 4, 5, 5}, {4, 1, 3, 3}}, D{{1, 4, 3, 3}}), 2.0 * 36 * 9);
  // 1-D conv, no bias; fused forms count the same.
  EXPECT_DOUBLE_EQ(cli::op_flops("FusedConv", D{{2, 3, 10}, {5, 3, 3}}, D{{2, 5, 8}}), 2.0 * 80 * 9);
  // QLinearConv: W is input 3.
  EXPECT_DOUBLE_EQ(cli::op_flops("QLinearConv", D{{1, 3, 8, 8}, {}, {}, {4, 3, 3, 3}}, D{{1, 4, 6, 6}}),
                   2.0 * 144 * 27);
  // ConvTranspose: every input element meets M/group * kh * kw weights.
  EXPECT_DOUBLE_EQ(cli::op_flops("ConvTranspose", D{{1, 2, 3, 3}, {2, 3, 2, 2}}, D{{1, 3, 4, 4}}), 2.0 * 18 * 12);
  // Gemm: K from A, whichever way it is transposed.
  EXPECT_DOUBLE_EQ(cli::op_flops("Gemm", D{{5, 7}, {7, 3}, {3}}, D{{5, 3}}), 2.0 * 15 * 7);
  EXPECT_DOUBLE_EQ(cli::op_flops("Gemm", D{{7, 5}, {3, 7}}, D{{5, 3}}), 2.0 * 15 * 7);
  // MatMul: batched, broadcast, and a 1-D left operand.
  EXPECT_DOUBLE_EQ(cli::op_flops("MatMul", D{{2, 4, 6}, {6, 3}}, D{{2, 4, 3}}), 2.0 * 24 * 6);
  EXPECT_DOUBLE_EQ(cli::op_flops("MatMul", D{{6}, {6, 3}}, D{{3}}), 2.0 * 3 * 6);
  // FusedPointwiseDepthwise: expand 2 * |X| * M, depthwise 2 * N*M*OH*OW * k*k, projection 2 * |Y| * M.
  EXPECT_DOUBLE_EQ(cli::op_flops("FusedPointwiseDepthwise",
                                 D{{2, 3, 8, 8}, {6, 3, 1, 1}, {6}, {6, 1, 3, 3}, {6}, {4, 6, 1, 1}}, D{{2, 4, 4, 4}}),
                   2.0 * 384 * 6 + 2.0 * 192 * 9 + 2.0 * 128 * 6);
  EXPECT_DOUBLE_EQ(
      cli::op_flops("FusedPointwiseDepthwise", D{{1, 3, 8, 8}, {6, 3, 1, 1}, {}, {6, 1, 5, 5}}, D{{1, 6, 8, 8}}),
      2.0 * 192 * 6 + 2.0 * 384 * 25);
  // A grouped middle conv (W2 [M, M / group, k, k]): M / group multiply-adds per tap.
  EXPECT_DOUBLE_EQ(
      cli::op_flops("FusedPointwiseDepthwise", D{{1, 4, 8, 8}, {32, 4, 1, 1}, {}, {32, 16, 3, 3}, {}, {8, 32, 1, 1}},
                    D{{1, 8, 8, 8}}),
      2.0 * 256 * 32 + 2.0 * 2048 * 16 * 9 + 2.0 * 512 * 32);
  // Without the expansion (W1 absent): the depthwise over X's M channels and the projection.
  EXPECT_DOUBLE_EQ(cli::op_flops("FusedPointwiseDepthwise", D{{1, 6, 8, 8}, {}, {}, {6, 1, 3, 3}, {}, {4, 6, 1, 1}},
                                 D{{1, 4, 8, 8}}),
                   2.0 * 384 * 9 + 2.0 * 256 * 6);
  // Not counted, or shapes missing.
  EXPECT_EQ(cli::op_flops("Relu", D{{4, 4}}, D{{4, 4}}), 0);
  EXPECT_EQ(cli::op_flops("Conv", D{{1, 3, 8, 8}}, D{{1, 4, 6, 6}}), 0);
  EXPECT_EQ(cli::op_flops("MatMul", D{{2, 3}, {3, 4}}, D{}), 0);
}

TEST(BenchUtil, JsonText) {
  EXPECT_EQ(cli::json_string("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
  EXPECT_EQ(json::parse(cli::json_string("/x/y.1:0 \t")), "/x/y.1:0 \t");
  EXPECT_EQ(cli::json_number(1.5), "1.5");
  EXPECT_EQ(cli::json_number(1.0 / 0.0), "null");
  EXPECT_GT(cli::peak_rss_bytes(), 0u);
}

}  // namespace
}  // namespace kestrel

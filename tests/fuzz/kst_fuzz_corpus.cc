// Writes the seed corpus for kst_loader_fuzz: .kst files of the sample graphs, of small ONNX
// models, and of every shared model ($KESTREL_DATA/models) that imports in this build, both as
// imported and converted at -O2 (as `kestrel convert` writes them: fused kestrel.* ops, folded
// weights), the latter also with fp16 weights.
#include <cstdio>
#include <filesystem>
#include <string>

#include "common/kst_samples.h"
#include "common/onnx_builder.h"
#include "common/test_data.h"
#include "format/kst_writer.h"
#include "frontend/onnx/onnx_importer.h"
#include "passes/pass.h"
#include "runtime/kernel.h"

namespace {

using namespace kestrel;

int written = 0;

void save(const ir::Graph& g, const std::string& path, const format::KstWriteOptions& o = {}) {
  auto r = format::write_kst_file(g, path, o);
  if (!r.is_ok()) {
    std::fprintf(stderr, "kst_fuzz_corpus: %s: %s\n", path.c_str(), r.status().to_string().c_str());
    return;
  }
  ++written;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kst_fuzz_corpus OUT_DIR [MAX_MODEL_BYTES]\n");
    return 2;
  }
  const std::string out = argv[1];
  // Big seeds make every fuzz iteration slow; skip shared models beyond this size.
  const uintmax_t max_bytes = argc > 2 ? std::stoull(argv[2]) : uintmax_t{4} << 20;
  std::filesystem::create_directories(out);

  auto g = testing::make_feature_graph();
  save(*g, out + "/feature.kst");
  format::KstWriteOptions half;
  half.fp16_weights = true;
  half.fp16_min_elements = 1;
  save(*g, out + "/feature_fp16.kst", half);

  testing::OnnxBuilder b;
  b.input("x", 1, {-1, 3}, {"batch", ""}).initializer_f32("c", {3}, {1, -2, 3});
  b.node("Add", {"x", "c"}, {"s"});
  b.node("Relu", {"s"}, {"y"});
  b.output("y");
  std::string onnx = b.bytes();
  auto small = frontend::import_onnx(onnx.data(), onnx.size(), {});
  if (small.is_ok()) save(**small, out + "/add_relu.kst");

  const std::string models = testing::data_dir() + "/models";
  if (std::filesystem::exists(models)) {
    for (const auto& e : std::filesystem::directory_iterator(models)) {
      if (e.path().extension() != ".onnx") continue;
      if (e.file_size() > max_bytes) {
        std::fprintf(stderr, "kst_fuzz_corpus: skipping %s (%ju bytes, over the %ju-byte seed limit)\n",
                     e.path().filename().c_str(), e.file_size(), max_bytes);
        continue;
      }
      auto m = frontend::import_onnx_file(e.path().string());
      if (!m.is_ok()) {
        std::fprintf(stderr, "kst_fuzz_corpus: skipping %s (%s)\n", e.path().filename().c_str(),
                     m.status().message().substr(0, 100).c_str());
        continue;
      }
      save(**m, out + "/" + e.path().stem().string() + ".kst");
      ir::NodeEvaluator ev = [](const ir::Node& n, std::span<const core::Tensor* const> ins) {
        return runtime::evaluate_node(n, ins);
      };
      passes::PassContext ctx;
      ctx.evaluator = &ev;
      core::Status st = passes::optimize(**m, 2, ctx);
      if (!st.is_ok()) {
        std::fprintf(stderr, "kst_fuzz_corpus: %s: -O2 failed (%s)\n", e.path().filename().c_str(),
                     st.message().substr(0, 100).c_str());
        continue;
      }
      save(**m, out + "/" + e.path().stem().string() + ".O2.kst");
      save(**m, out + "/" + e.path().stem().string() + ".O2.fp16.kst", half);
    }
  }
  std::printf("kst_fuzz_corpus: wrote %d seed files to %s\n", written, out.c_str());
  return written > 0 ? 0 : 1;
}

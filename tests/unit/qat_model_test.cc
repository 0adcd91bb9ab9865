// A QDQ CNN from PyTorch's quantization-aware training flow (tests/data/qat/export_qat.py) runs
// through Session at -O0 and -O2 and matches PyTorch's converted int8 model, measured in quanta.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/npy.h"
#include "ir/op_schema.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::Tensor;

std::string qat_path(const std::string& file) {
  return std::string(KESTREL_SOURCE_DIR) + "/tests/data/qat/" + file;
}

struct QatCase {
  const char* case_name;
  int opt_level;
  bool reference_only = false;  // every op on its reference kernel
};

void PrintTo(const QatCase& c, std::ostream* os) {
  *os << c.case_name << " -O" << c.opt_level << (c.reference_only ? " reference" : "");
}

struct QuantaStats {
  double max_quanta = 0;     // max |out - ref| / scale
  double within_one = 0;     // fraction of elements with |out - ref| <= 1 quantum
  int64_t off_grid = 0;      // elements of out that are not a whole multiple of scale
};

// The outputs are DequantizeLinear results, (q - zp) * scale with integer q - zp: differences are
// whole quanta, so the small slack only absorbs float rounding of the division.
QuantaStats compare_in_quanta(const Tensor& out, const Tensor& ref, float scale) {
  QuantaStats st;
  int64_t within = 0;
  const int64_t n = ref.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    const double g = out.data<float>()[i], r = ref.data<float>()[i];
    const double q = std::isnan(g) ? INFINITY : std::fabs(g - r) / scale;
    st.max_quanta = std::max(st.max_quanta, q);
    if (q <= 1.0 + 1e-3) ++within;
    const double steps = g / scale;
    if (!(std::fabs(steps - std::nearbyint(steps)) <= 1e-3)) ++st.off_grid;
  }
  st.within_one = n > 0 ? static_cast<double>(within) / static_cast<double>(n) : 1.0;
  return st;
}

class QatModel : public ::testing::TestWithParam<QatCase> {};

// Tolerance (see tests/data/qat/README.md): Kestrel and PyTorch's int8 kernels compute the same
// Quantize(Conv(Dequantize(.))) chain but differ below one quantum before each rounding (bias
// rounded to int32 at scale_x*scale_w: < 2% of an output quantum here; requantization multiplier
// and summation order: ~1e-6), so a layer's output can flip by one quantum only where the exact
// value sits at a rounding boundary, and a flipped activation moves the next layer's output by
// |w|*scale_x/scale_y quanta (< 0.5 for the layers producing both outputs). Hence: at least 99% of
// elements within one quantum, none further than two. Measured with the float reference Q/DQ path:
// max 2 quanta, >= 99.96% within one (vs int8), exact vs the fake-quant model. The fake-quant
// model gets the same bound: once the int8 kernels run, Kestrel rounds like PyTorch's int8 model.
void check_output(const std::string& case_name, const std::string& how, const std::string& name, const Tensor& out) {
  const std::string prefix = "qat_cnn." + case_name;
  auto scale_t = core::read_npy(qat_path("qat_cnn.scale." + name + ".npy"));
  ASSERT_TRUE(scale_t.is_ok()) << scale_t.status().to_string();
  ASSERT_EQ(scale_t->num_elements(), 1);
  const float scale = scale_t->data<float>()[0];
  ASSERT_GT(scale, 0.0f);
  ASSERT_EQ(out.dtype(), core::DType::kF32) << name;
  for (const char* ref_kind : {"int8", "fq"}) {
    auto ref = core::read_npy(qat_path(prefix + "." + ref_kind + "." + name + ".npy"));
    ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
    ASSERT_EQ(out.dims(), ref->dims()) << name;
    const QuantaStats q = compare_in_quanta(out, *ref, scale);
    std::printf("[ qat      ] %-8s %-4s %-6s vs %-4s: max %.2f quanta, %.4f%% within 1 quantum\n", case_name.c_str(),
                how.c_str(), name.c_str(), ref_kind, q.max_quanta, 100.0 * q.within_one);
    EXPECT_LE(q.max_quanta, 2.0 + 1e-3) << prefix << " " << how << " " << name << " vs PyTorch " << ref_kind;
    EXPECT_GE(q.within_one, 0.99) << prefix << " " << how << " " << name << " vs PyTorch " << ref_kind;
    // Not a tolerance: the output is a DequantizeLinear result, so it must sit on the grid.
    EXPECT_EQ(q.off_grid, 0) << prefix << " " << how << " " << name << " has values off the quantization grid";
  }
}

TEST_P(QatModel, MatchesPyTorchInt8) {
  const QatCase& c = GetParam();
  runtime::SessionOptions so;
  so.opt_level = c.opt_level;
  so.reference_only = c.reference_only;
  auto s = runtime::Session::open(qat_path("qat_cnn.onnx"), so);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  auto x = core::read_npy(qat_path(std::string("qat_cnn.") + c.case_name + ".in.x.npy"));
  ASSERT_TRUE(x.is_ok()) << x.status().to_string();
  std::vector<std::pair<std::string, Tensor>> inputs;
  inputs.emplace_back("x", std::move(x).value());
  std::vector<Tensor> out;
  auto st = (*s)->run(inputs, out);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(out.size(), 2u);
  for (size_t k = 0; k < out.size(); ++k)
    check_output(c.case_name, "-O" + std::to_string(c.opt_level) + (c.reference_only ? "r" : ""),
                 (*s)->outputs()[k].name, out[k]);
}

INSTANTIATE_TEST_SUITE_P(Exported, QatModel,
                         ::testing::Values(QatCase{"digit1", 0}, QatCase{"digit1", 2}, QatCase{"digits4", 0},
                                           QatCase{"digits4", 2}, QatCase{"noise2", 0}, QatCase{"noise2", 2},
                                           QatCase{"digits4", 2, true}),
                         [](const ::testing::TestParamInfo<QatCase>& i) {
                           return std::string(i.param.case_name) + "_O" + std::to_string(i.param.opt_level) +
                                  (i.param.reference_only ? "_reference" : "");
                         });

// One session, batch sizes 1 -> 4 -> 2 -> 1: the symbolic batch dim re-plans and every run still
// equals a fresh session's output for the same input (no state carried between runs).
TEST(QatModelSession, ReplansAcrossBatchSizes) {
  auto s = runtime::Session::open(qat_path("qat_cnn.onnx"));
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  for (const char* c : {"digit1", "digits4", "noise2", "digit1"}) {
    auto x = core::read_npy(qat_path(std::string("qat_cnn.") + c + ".in.x.npy"));
    ASSERT_TRUE(x.is_ok());
    std::vector<std::pair<std::string, Tensor>> inputs;
    inputs.emplace_back("x", std::move(x).value());
    std::vector<Tensor> shared_out, fresh_out;
    ASSERT_TRUE((*s)->run(inputs, shared_out).is_ok()) << c;
    auto fresh = runtime::Session::open(qat_path("qat_cnn.onnx"));
    ASSERT_TRUE(fresh.is_ok());
    ASSERT_TRUE((*fresh)->run(inputs, fresh_out).is_ok()) << c;
    ASSERT_EQ(shared_out.size(), fresh_out.size());
    for (size_t k = 0; k < shared_out.size(); ++k) {
      ASSERT_EQ(shared_out[k].dims(), fresh_out[k].dims());
      for (int64_t i = 0; i < fresh_out[k].num_elements(); ++i)
        ASSERT_EQ(shared_out[k].data<float>()[i], fresh_out[k].data<float>()[i]) << c << " output " << k << " [" << i << "]";
    }
  }
}

#ifdef KESTREL_CLI_PATH
// `kestrel run qat_cnn.onnx --input x=FILE.npy --output-dir DIR` writes outputs that match too.
TEST(QatModelCli, RunMatchesPyTorchInt8) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kestrel_qat_cli_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string log_path = dir.string() + ".log";
  const std::string cmd = std::string("'") + KESTREL_CLI_PATH + "' run '" + qat_path("qat_cnn.onnx") + "' --input 'x=" +
                          qat_path("qat_cnn.digits4.in.x.npy") + "' --output-dir '" + dir.string() + "' >'" + log_path +
                          "' 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream log_file(log_path);
  std::stringstream log;
  log << log_file.rdbuf();
  std::filesystem::remove(log_path);
  ASSERT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << log.str();
  for (const char* name : {"logits", "feat"}) {
    auto got = core::read_npy((dir / (std::string(name) + ".npy")).string());
    ASSERT_TRUE(got.is_ok()) << got.status().to_string() << "\n" << log.str();
    check_output("digits4", "cli", name, *got);
  }
  std::filesystem::remove_all(dir);
}
#endif

// Issue 6: at -O2 the lower-qdq pass rewrites every DequantizeLinear -> Conv/Gemm/MatMul ->
// QuantizeLinear into a kestrel "Q*" int8 op, so no float convolution or matrix product is left
// (neither the ONNX ops nor kestrel's float FusedConv/FusedMatMul/...).
TEST(QatModelLowering, O2LeavesNoFloatConvOrGemm) {
  if (ir::OpRegistry::global().find(ir::kKestrelDomain, "QConv") == nullptr)
    GTEST_SKIP() << "kestrel.QConv is not registered: the int8 kernels and the lower-qdq pass (issue 6) are not "
                    "merged yet; this test runs once they are";
  runtime::SessionOptions so;
  so.opt_level = 2;
  auto s = runtime::Session::open(qat_path("qat_cnn.onnx"), so);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  int quantized_ops = 0;
  for (const ir::Node* n : (*s)->graph().nodes()) {
    const std::string& op = n->op_type();
    const bool heavy = op.find("Conv") != std::string::npos || op.find("Gemm") != std::string::npos ||
                       op.find("MatMul") != std::string::npos;
    const bool lowered = n->domain() == ir::kKestrelDomain && !op.empty() && op[0] == 'Q';
    if (lowered) ++quantized_ops;
    if (heavy) {
      EXPECT_TRUE(lowered) << "node '" << n->name() << "' is still " << (n->domain().empty() ? "" : n->domain() + ".")
                           << op << " (float) at -O2";
    }
  }
  // 4 Conv + 1 Gemm in the model, each must have become an int8 op.
  EXPECT_GE(quantized_ops, 5);
}

}  // namespace
}  // namespace kestrel

// Small models exported from PyTorch (tests/data/export_torch_models.py: recurrent layers, and
// scripted If/Loop control flow) run through Session and match PyTorch's own outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/npy.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::Tensor;

std::string data_path(const std::string& file) {
  return std::string(KESTREL_SOURCE_DIR) + "/tests/data/" + file;
}

struct TorchCase {
  const char* model;
  const char* case_name;
};

void PrintTo(const TorchCase& c, std::ostream* os) {
  *os << c.model << "." << c.case_name;
}

class TorchModel : public ::testing::TestWithParam<TorchCase> {};

// Reference: max|out - ref| / max|ref| <= 1e-4 per output (the shared model tests' measure).
TEST_P(TorchModel, MatchesPyTorch) {
  const TorchCase& c = GetParam();
  const std::string prefix = std::string(c.model) + "." + c.case_name;
  auto s = runtime::Session::open(data_path(std::string(c.model) + ".onnx"));
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  std::vector<std::pair<std::string, Tensor>> inputs;
  for (const auto& in : (*s)->inputs()) {
    auto t = core::read_npy(data_path(prefix + ".in." + in.name + ".npy"));
    ASSERT_TRUE(t.is_ok()) << t.status().to_string();
    inputs.emplace_back(in.name, std::move(t).value());
  }
  std::vector<Tensor> out;
  auto st = (*s)->run(inputs, out);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(out.size(), (*s)->outputs().size());
  for (size_t k = 0; k < out.size(); ++k) {
    const std::string& name = (*s)->outputs()[k].name;
    auto ref = core::read_npy(data_path(prefix + ".out." + name + ".npy"));
    ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
    ASSERT_EQ(out[k].dtype(), core::DType::kF32) << name;
    ASSERT_EQ(out[k].dims(), ref->dims()) << name;
    double max_err = 0, max_ref = 0;
    for (int64_t i = 0; i < ref->num_elements(); ++i) {
      double g = out[k].data<float>()[i], r = ref->data<float>()[i];
      max_err = std::max(max_err, std::isnan(g) ? INFINITY : std::fabs(g - r));
      max_ref = std::max(max_ref, std::fabs(r));
    }
    double rel = max_ref > 0 ? max_err / max_ref : max_err;
    EXPECT_LE(rel, 1e-4) << prefix << " output " << name;
    std::printf("[ torch    ] %-26s %-7s max|out-ref|/max|ref| = %.3g\n", prefix.c_str(), name.c_str(), rel);
  }
}

INSTANTIATE_TEST_SUITE_P(Exported, TorchModel,
                         ::testing::Values(TorchCase{"torch_rnn_states", "s7b2"}, TorchCase{"torch_rnn_states", "s3b5"},
                                           TorchCase{"torch_lstm_gru", "s7b2"}, TorchCase{"torch_lstm_gru", "s4b3"},
                                           TorchCase{"torch_if_loop", "then_n3"}, TorchCase{"torch_if_loop", "else_n2"},
                                           TorchCase{"torch_if_loop", "then_n0"}),
                         [](const ::testing::TestParamInfo<TorchCase>& i) {
                           return std::string(i.param.model) + "_" + i.param.case_name;
                         });

// One session serves both recurrent cases in turn: the symbolic seq and batch dims re-plan.
TEST(TorchModel, RecurrentSessionReplansAcrossSizes) {
  auto s = runtime::Session::open(data_path("torch_rnn_states.onnx"));
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  for (const char* c : {"s7b2", "s3b5", "s7b2"}) {
    std::vector<std::pair<std::string, Tensor>> inputs;
    for (const char* n : {"x", "h0", "c0"}) {
      auto t = core::read_npy(data_path(std::string("torch_rnn_states.") + c + ".in." + n + ".npy"));
      ASSERT_TRUE(t.is_ok()) << t.status().to_string();
      inputs.emplace_back(n, std::move(t).value());
    }
    std::vector<Tensor> out;
    ASSERT_TRUE((*s)->run(inputs, out).is_ok());
    auto ref = core::read_npy(data_path(std::string("torch_rnn_states.") + c + ".out.y.npy"));
    ASSERT_TRUE(ref.is_ok());
    ASSERT_EQ(out[0].dims(), ref->dims());
    for (int64_t i = 0; i < ref->num_elements(); ++i)
      EXPECT_NEAR(out[0].data<float>()[i], ref->data<float>()[i], 1e-5) << c << " element " << i;
  }
}

}  // namespace
}  // namespace kestrel

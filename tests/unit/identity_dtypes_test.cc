// Identity passes every dtype through unchanged (bool and int64 included), as scripted PyTorch
// loops need for their carried condition.
#include <gtest/gtest.h>

#include "common/onnx_builder.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::Tensor;
using testing::OnnxBuilder;

TEST(Identity, BoolAndIntegerPassThrough) {
  OnnxBuilder b;
  b.input("c", 9, {3}).input("i", 7, {2});
  b.node("Identity", {"c"}, {"c_out"});
  b.node("Identity", {"i"}, {"i_out"});
  b.output("c_out", 9).output("i_out", 7);
  std::string bytes = b.bytes();
  auto s = runtime::Session::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  std::vector<Tensor> out;
  auto st = (*s)->run({{"c", Tensor::from_vector<bool>({true, false, true})},
                       {"i", Tensor::from_vector<int64_t>({-7, int64_t{1} << 40})}},
                      out);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data<bool>()[0], true);
  EXPECT_EQ(out[0].data<bool>()[1], false);
  EXPECT_EQ(out[0].data<bool>()[2], true);
  EXPECT_EQ(out[1].data<int64_t>()[0], -7);
  EXPECT_EQ(out[1].data<int64_t>()[1], int64_t{1} << 40);
}

}  // namespace
}  // namespace kestrel

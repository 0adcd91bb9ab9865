// Kernels that derive pads, slice ranges, reduce rows or split sizes once per input shape (so a
// static-shape run() allocates nothing) must derive them again when one session runs them on
// other shapes or other shape-like input values: each run is compared with the reference.
#include <gtest/gtest.h>

#include <random>

#include "common/fast_kernel_test_util.h"
#include "runtime/session.h"

namespace kestrel::testing {
namespace {

using core::Tensor;

// One session (graph inputs of unknown dims, fast kernels) runs every input set in turn; each
// result must match the reference evaluation of the same node on that set.
void expect_reruns_match(const std::string& op, const std::vector<std::vector<Tensor>>& sets, const Attrs& attrs,
                         int num_outputs = 1) {
  std::vector<bool> as_input(sets[0].size(), true);
  OneNode g = one_node(op, sets[0], attrs, num_outputs, as_input, true);
  runtime::LoadedModel m;
  m.graph = std::move(g.graph);
  auto session = runtime::Session::from_model(std::move(m));
  ASSERT_TRUE(session.is_ok()) << session.status().to_string();
  for (size_t k = 0; k < sets.size(); ++k) {
    std::vector<const Tensor*> feed;
    for (const Tensor& t : sets[k])
      if (t.defined()) feed.push_back(&t);
    std::vector<Tensor> got;
    core::Status st = (*session)->run(feed, got);
    ASSERT_TRUE(st.is_ok()) << op << " set " << k << ": " << st.to_string();
    auto want = eval_op(op, sets[k], attrs, num_outputs);
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    ASSERT_EQ(got.size(), want->size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(tensors_close(got[i], (*want)[i], 1e-5, 1e-5)) << op << " set " << k << " output " << i;
  }
}

TEST(FastRerun, ReduceFollowsShapesAndAxes) {
  std::mt19937 rng(1);
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax"}) {
    Tensor a = random_f32({2, 3, 4}, rng), b = random_f32({5, 3, 2}, rng);
    expect_reruns_match(op, {{a, i64s({1})}, {a, i64s({2})}, {b, i64s({2})}, {b, i64s({0})}, {a, i64s({0, 1})}},
                        {{"keepdims", ir::Attribute(int64_t{0})}});
  }
}

TEST(FastRerun, SliceFollowsShapesAndStarts) {
  std::mt19937 rng(2);
  Tensor a = random_f32({4, 6, 5}, rng), b = random_f32({7, 3, 9}, rng);
  expect_reruns_match("Slice",
                      {{a, i64s({1, 0}), i64s({3, 4}), i64s({0, 2}), i64s({1, 2})},
                       {a, i64s({0, 1}), i64s({3, 4}), i64s({0, 2}), i64s({1, 2})},
                       {b, i64s({0, 1}), i64s({3, 4}), i64s({0, 2}), i64s({1, 2})},
                       {b, i64s({-1, 0}), i64s({-9, 4}), i64s({0, 2}), i64s({-1, 3})}},
                      {});
}

TEST(FastRerun, PoolsFollowShapes) {
  std::mt19937 rng(3);
  Tensor a = random_f32({1, 2, 9, 9}, rng), b = random_f32({2, 3, 6, 11}, rng);
  for (const char* op : {"MaxPool", "AveragePool"})
    expect_reruns_match(op, {{a}, {b}, {a}},
                        {{"kernel_shape", ir::Attribute(std::vector<int64_t>{3, 3})},
                         {"strides", ir::Attribute(std::vector<int64_t>{2, 2})},
                         {"auto_pad", ir::Attribute(std::string("SAME_UPPER"))}});
}

TEST(FastRerun, SplitConcatGatherFollowShapes) {
  std::mt19937 rng(4);
  Tensor a = random_f32({4, 6}, rng), b = random_f32({3, 10}, rng);
  expect_reruns_match("Split", {{a, i64s({2, 4})}, {a, i64s({5, 1})}, {b, i64s({3, 7})}},
                      {{"axis", ir::Attribute(int64_t{1})}}, 2);
  expect_reruns_match("Concat", {{a, random_f32({4, 2}, rng)}, {b, random_f32({3, 1}, rng)}},
                      {{"axis", ir::Attribute(int64_t{-1})}});
  expect_reruns_match("Gather", {{a, i64s({3, -1, 0})}, {b, i64s({2})}, {a, i64s({0, 1, -2, 3})}},
                      {{"axis", ir::Attribute(int64_t{0})}});
}

TEST(FastRerun, MatMulFollowsShapes) {
  std::mt19937 rng(5);
  expect_reruns_match("MatMul",
                      {{random_f32({2, 3, 4, 5}, rng), random_f32({3, 5, 6}, rng)},
                       {random_f32({1, 2, 7, 5}, rng), random_f32({2, 5, 2}, rng)},
                       {random_f32({4, 1, 3, 5}, rng), random_f32({6, 5, 8}, rng)}},
                      {});
}

TEST(FastRerun, ResizeFollowsShapesAndScales) {
  std::mt19937 rng(6);
  Tensor a = random_f32({1, 2, 4, 5}, rng), b = random_f32({2, 1, 3, 3}, rng);
  auto f32s = [](std::vector<float> v) { return make<float>({static_cast<int64_t>(v.size())}, v); };
  for (const char* mode : {"nearest", "linear", "cubic"})
    expect_reruns_match("Resize",
                        {{a, Tensor(), f32s({1, 1, 2, 2})},
                         {a, Tensor(), f32s({1, 1, 0.5f, 1.5f})},
                         {b, Tensor(), f32s({1, 1, 0.5f, 1.5f})},
                         {a, Tensor(), f32s({1, 1, 2, 2})}},
                        {{"mode", ir::Attribute(std::string(mode))}});
}

}  // namespace
}  // namespace kestrel::testing

// Fast ConvTranspose (GEMM + col2im, kernels/cpu/conv_transpose) against the reference kernel on
// every ISA of this CPU, with 1 and 2 threads: random 1-D and 2-D shapes with strides, pads,
// output_padding, dilations, groups, batches, with and without bias, auto_pad and output_shape,
// and a plane large enough to be computed in several chunks of input rows.
#include <gtest/gtest.h>

#include <random>

#include "common/fast_kernel_test_util.h"
#include "runtime/session.h"

namespace kestrel::testing {
namespace {

using core::Tensor;

// Constant weights and bias (what the fast binding needs), X a graph input.
void check(const Tensor& x, const Tensor& w, const Tensor& b, const Attrs& attrs, const std::string& what) {
  SCOPED_TRACE(what);
  // GEMM sums in another order than the reference: the error grows with C/G * taps.
  const double atol = 1e-5 * static_cast<double>(w.dim(0) * w.num_elements() / std::max<int64_t>(w.dim(0), 1));
  expect_fast_matches_reference("ConvTranspose", {x, w, b}, attrs, 1e-4, std::max(atol, 1e-5), 1, true,
                                {false, true, true});
}

TEST(FastConvTranspose, Random2dMatchesReference) {
  std::mt19937 rng(21);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int it = 0; it < 40; ++it) {
    const int64_t group = it % 5 == 0 ? 3 : it % 7 == 0 ? 2 : 1;
    const int64_t n = pick(1, 2), cg = pick(1, 6), mg = pick(1, 7), h = pick(1, 9), w = pick(1, 11);
    const int64_t kh = pick(1, 4), kw = pick(1, 5), sh = pick(1, 3), sw = pick(1, 3), dh = pick(1, 2), dw = pick(1, 2);
    const int64_t ph0 = pick(0, kh - 1), ph1 = pick(0, kh - 1), pw0 = pick(0, kw - 1), pw1 = pick(0, kw - 1);
    const int64_t oph = pick(0, std::max(sh, dh) - 1), opw = pick(0, std::max(sw, dw) - 1);
    Attrs a = {{"strides", ir::Attribute(std::vector<int64_t>{sh, sw})},
               {"dilations", ir::Attribute(std::vector<int64_t>{dh, dw})},
               {"pads", ir::Attribute(std::vector<int64_t>{ph0, pw0, ph1, pw1})},
               {"output_padding", ir::Attribute(std::vector<int64_t>{oph, opw})},
               {"group", ir::Attribute(group)}};
    if (it % 3 == 0) a.emplace("kernel_shape", ir::Attribute(std::vector<int64_t>{kh, kw}));
    Tensor x = random_f32({n, cg * group, h, w}, rng), wt = random_f32({cg * group, mg, kh, kw}, rng);
    Tensor b = it % 4 == 1 ? Tensor() : random_f32({mg * group}, rng);
    check(x, wt, b, a, "case " + std::to_string(it));
  }
}

TEST(FastConvTranspose, Random1dMatchesReference) {
  std::mt19937 rng(22);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int it = 0; it < 20; ++it) {
    const int64_t group = it % 4 == 0 ? 2 : 1;
    const int64_t n = pick(1, 3), cg = pick(1, 5), mg = pick(1, 6), len = pick(1, 17), k = pick(1, 5);
    const int64_t s = pick(1, 4), d = pick(1, 3), p0 = pick(0, k - 1), p1 = pick(0, k - 1);
    const int64_t op = pick(0, std::max(s, d) - 1);
    Attrs a = {{"strides", ir::Attribute(std::vector<int64_t>{s})},
               {"dilations", ir::Attribute(std::vector<int64_t>{d})},
               {"pads", ir::Attribute(std::vector<int64_t>{p0, p1})},
               {"output_padding", ir::Attribute(std::vector<int64_t>{op})},
               {"group", ir::Attribute(group)}};
    Tensor x = random_f32({n, cg * group, len}, rng), wt = random_f32({cg * group, mg, k}, rng);
    check(x, wt, random_f32({mg * group}, rng), a, "1-D case " + std::to_string(it));
  }
}

TEST(FastConvTranspose, AutoPadOutputShapeAndLargePlanes) {
  std::mt19937 rng(23);
  Tensor x = random_f32({2, 4, 5, 6}, rng), w = random_f32({4, 3, 3, 3}, rng), b = random_f32({3}, rng);
  for (const char* pad : {"SAME_UPPER", "SAME_LOWER", "VALID"})
    check(x, w, b,
          {{"auto_pad", ir::Attribute(std::string(pad))}, {"strides", ir::Attribute(std::vector<int64_t>{2, 2})}}, pad);
  // A larger output than the attributes give: zeros + bias at the end; a smaller one crops.
  for (std::vector<int64_t> shape : {std::vector<int64_t>{13, 15}, std::vector<int64_t>{9, 10}})
    check(x, w, b, {{"output_shape", ir::Attribute(shape)}, {"strides", ir::Attribute(std::vector<int64_t>{2, 2})}},
          "output_shape");
  // col = [64 * 9, rows * 64] exceeds the chunk bound: several chunks of input rows per image.
  check(random_f32({1, 4, 100, 64}, rng), random_f32({4, 64, 3, 3}, rng), random_f32({64}, rng),
        {{"strides", ir::Attribute(std::vector<int64_t>{2, 2})},
         {"pads", ir::Attribute(std::vector<int64_t>{1, 1, 1, 1})}},
        "large plane");
  // Depthwise-like groups (one channel per group).
  check(random_f32({1, 6, 7, 7}, rng), random_f32({6, 1, 4, 4}, rng), random_f32({6}, rng),
        {{"group", ir::Attribute(int64_t{6})}, {"strides", ir::Attribute(std::vector<int64_t>{2, 2})}}, "depthwise");
}

// Pads are resolved once per input shape: one session run on X of other shapes (dims unknown at
// load, constant W) must resolve them again.
TEST(FastConvTranspose, FollowsInputShapeChanges) {
  std::mt19937 rng(24);
  const Tensor w = random_f32({3, 2, 3, 3}, rng), b = random_f32({2}, rng);
  const Attrs attrs = {{"strides", ir::Attribute(std::vector<int64_t>{2, 1})},
                       {"auto_pad", ir::Attribute(std::string("SAME_UPPER"))}};
  OneNode g = one_node("ConvTranspose", {random_f32({1, 3, 4, 4}, rng), w, b}, attrs, 1, {true, false, false}, true);
  runtime::LoadedModel m;
  m.graph = std::move(g.graph);
  auto session = runtime::Session::from_model(std::move(m));
  ASSERT_TRUE(session.is_ok()) << session.status().to_string();
  for (const core::Dims& d : std::vector<core::Dims>{{1, 3, 4, 4}, {2, 3, 5, 7}, {1, 3, 4, 4}, {1, 3, 1, 9}}) {
    const Tensor x = random_f32(d, rng);
    const Tensor* feed[] = {&x};
    std::vector<Tensor> got;
    ASSERT_TRUE((*session)->run(feed, got).is_ok()) << core::dims_to_string(d);
    auto want = eval_op("ConvTranspose", {x, w, b}, attrs);
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    EXPECT_TRUE(tensors_close(got[0], (*want)[0], 1e-4, 1e-5)) << core::dims_to_string(d);
  }
}

}  // namespace
}  // namespace kestrel::testing

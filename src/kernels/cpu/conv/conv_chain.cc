// FastConvChain (conv_chain.h): expand 1x1 -> depthwise -> [project 1x1] over strips of output rows.
#include "kernels/cpu/conv/conv_chain.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>
#include <string>

#include "core/str_util.h"
#include "core/thread_scratch.h"

namespace kestrel::kernels::cpu {

using core::str_cat;

namespace {

core::ScratchSlot g_chain_scratch;
core::ScratchSlot g_chain_out_scratch;  // small planes: each task's depthwise strip

int64_t round_up16(int64_t n) {
  return (n + 15) / 16 * 16;
}

}  // namespace

Result<FastConvChain> FastConvChain::create(std::optional<FastConv> expand, FastConv depthwise,
                                            std::optional<FastConv> project, int64_t shortcut_channels) {
  // Convs of other shapes: Unsupported (a caller then runs them another way); mismatched ones: InvalidArgument.
  if (!expand && !project) return core::invalid_argument("conv chain: needs an expansion, a projection or both");
  // Small planes: both pointwise convs made by create_transposed_pointwise, around a depthwise conv.
  const bool small = expand && project && expand->is_transposed_pointwise() && project->is_transposed_pointwise();
  if (small && !depthwise.is_depthwise())
    return core::unsupported("conv chain: on small planes the middle conv must be depthwise");
  if (!small && ((expand && expand->is_transposed_pointwise()) || (project && project->is_transposed_pointwise())))
    return core::invalid_argument("conv chain: transposed pointwise convs need both an expansion and a projection");
  if (expand && !small && !expand->is_pointwise())
    return core::unsupported("conv chain: the expansion must be a 1x1 conv, group 1");
  if (!depthwise.has_direct_rows())
    return core::unsupported(
        "conv chain: the middle conv must be depthwise (3x3 or 5x5) or grouped with whole vectors per group");
  const int64_t m = depthwise.out_channels();
  if (depthwise.in_channels() != m || (expand && expand->out_channels() != m))
    return core::invalid_argument(
        str_cat("conv chain: the middle conv maps ", depthwise.in_channels(), " to ", m, " channels",
                expand ? str_cat(", the expansion gives ", expand->out_channels()) : std::string()));
  if (project && !small && !project->is_pointwise())
    return core::unsupported("conv chain: the projection must be a 1x1 conv, group 1");
  const int64_t x_channels = expand ? expand->in_channels() : m;
  if (shortcut_channels < 0 || (shortcut_channels > 0 && (!project || small || shortcut_channels != x_channels)))
    return core::invalid_argument(str_cat("conv chain: a shortcut of ", shortcut_channels,
                                          " channels needs a projection", " on the strip path and X's ", x_channels,
                                          " channels"));
  if (project && project->in_channels() != m + shortcut_channels)
    return core::invalid_argument(str_cat("conv chain: the projection reads ", project->in_channels(),
                                          " channels, the chain has ", m, " + ", shortcut_channels, " (shortcut)"));
  if ((expand && expand->isa() != depthwise.isa()) || (project && project->isa() != depthwise.isa()))
    return core::invalid_argument("conv chain: the convs must be made for one instruction set");
  FastConvChain c;
  c.expand_ = std::move(expand);
  c.depthwise_ = std::move(depthwise);
  c.project_ = std::move(project);
  c.small_ = small;
  c.shortcut_c_ = shortcut_channels;
  return c;
}

const char* FastConvChain::name() const {
  switch (depthwise_.isa()) {
    case core::Isa::kScalar:
      return "conv_chain.scalar";
    case core::Isa::kAvx2:
      return "conv_chain.avx2";
    case core::Isa::kAvx512:
      return "conv_chain.avx512";
  }
  return "conv_chain";
}

Status FastConvChain::run(const ConvChainParams& p, const Tensor& x, const Tensor* b1, const Tensor* b2,
                          const Tensor* b3, const Tensor* z, Tensor& y, core::ThreadPool* pool) const {
  for (const Tensor* t : {&x, b1, b2, b3, z, static_cast<const Tensor*>(&y)})
    if (t && t->dtype() != core::DType::kF32)
      return core::invalid_argument(str_cat("conv chain: needs f32, got ", t->type_string()));
  const int64_t m = depthwise_.out_channels(), c = expand_ ? expand_->in_channels() : m;
  const int64_t out_c = project_ ? project_->out_channels() : m;
  const int k = depthwise_.kernel_size();
  if (x.rank() != 4 || x.dim(1) != c)
    return core::invalid_argument(str_cat("conv chain: X ", x.type_string(), " must be [N, ", c, ", H, W]"));
  const int64_t n = x.dim(0), h = x.dim(2), w = x.dim(3);
  if (y.rank() != 4 || y.dim(0) != n || y.dim(1) != out_c)
    return core::invalid_argument(str_cat("conv chain: Y ", y.type_string(), " must be [", n, ", ", out_c, ", H, W]"));
  const int64_t oh = y.dim(2), ow = y.dim(3), s = p.stride, pt = p.pad_top, pl = p.pad_left;
  if ((s != 1 && s != 2) || pt < 0 || pl < 0 || pt >= k || pl >= k)
    return core::invalid_argument(str_cat("conv chain: stride ", s, " / pads ", pt, ", ", pl, " unsupported"));
  // Every output's first tap inside the input (true of any ONNX geometry with pads below the kernel size).
  if (oh > 0 && ow > 0 && ((oh - 1) * s - pt >= h || (ow - 1) * s - pl >= w))
    return core::invalid_argument(str_cat("conv chain: Y ", y.type_string(), " is too large for X ", x.type_string()));
  if ((b1 && (!expand_ || b1->num_elements() != m)) || (b2 && b2->num_elements() != m) ||
      (b3 && (!project_ || b3->num_elements() != out_c)))
    return core::invalid_argument("conv chain: a bias has the wrong size");
  if (z && (!project_ || shortcut_c_ || z->dims() != y.dims()))
    return core::invalid_argument(
        str_cat("conv chain: residual must be ", y.type_string(), ", with a projection and no shortcut"));
  if (y.num_elements() == 0) return Status::ok();
  if (small_) return run_small(p, x, b1, b2, b3, z, y, pool);

  // Strip height: the expanded rows of one strip ((rows - 1) * s + k rows of m channels) in kStripFloats. Without
  // the expansion the same rows of X are read in place and a strip only bounds the depthwise output kept for the
  // projection: with one thread the whole image is one strip (the plane-direct depthwise then walks each channel's
  // rows in one run). On Zen 4, BM_Chain 0 -> 32 -> 16 at 112 cold 384 -> 310 us, warm 302 -> 296; in the models
  // (10-14 interleaved rounds, the first block's node) MnasNet and MobileNet-V2 -10%, MobileNet-V3-Large's 16 -> 16
  // equal; with 2 threads the bench was unchanged and MnasNet's node slower in its median, so threads keep strips,
  // of kDepthwiseStripFloats of depthwise output each. Each thread takes an equal share of the n * oh output rows
  // (image-major) and cuts it into near-equal strips of at most `rows`: strips of the full height with a short
  // last one, dealt out whole, gave one of 2 threads 68 of 112 rows (MobileNet-V2's first block, 34-row strips).
  const int threads = pool ? pool->num_threads() : 1;
  int64_t rows = expand_        ? std::max<int64_t>((kStripFloats / std::max<int64_t>(m * w, 1) - k) / s + 1, 1)
                 : threads == 1 ? oh
                                : std::max<int64_t>(kDepthwiseStripFloats / std::max<int64_t>(m * ow, 1), 1);
  rows = std::min(rows, oh);
  const int64_t total_rows = n * oh;
  const int64_t rows_in = (rows - 1) * s + k;
  const int64_t e_plane = rows_in * w, e_floats = expand_ ? round_up16(m * e_plane) : 0,
                d_floats = project_ ? round_up16((m + shortcut_c_) * rows * ow) : 0;
  const int64_t s_floats = round_up16(depthwise_.direct_rows_scratch_floats(rows, ow, static_cast<int>(s)));

  const float* xd = x.data<float>();
  const float* b1d = b1 ? b1->data<float>() : nullptr;
  const float* b2d = b2 ? b2->data<float>() : nullptr;
  const float* b3d = b3 ? b3->data<float>() : nullptr;
  const float* zd = z ? z->data<float>() : nullptr;
  float* yd = y.data<float>();
  const conv_detail::Im2colFn gather = shortcut_c_ ? conv_detail::im2col_fn(depthwise_.isa()) : nullptr;
  const int64_t tasks = std::min<int64_t>(threads, total_rows);
  std::atomic<bool> failed{false};
  core::parallel_for(pool, tasks, 1, [&](int64_t t0, int64_t t1) {
    float* buf = g_chain_scratch.get_as<float>(static_cast<size_t>(e_floats + d_floats + s_floats));
    if (!buf) {
      failed.store(true);
      return;
    }
    float* e = buf;  // [m][rows_in][w]: the expanded input rows [a, b) of the current strip (with the expansion)
    float* dbuf = buf + e_floats;
    float* dscratch = dbuf + d_floats;
    for (int64_t t = t0; t < t1 && !failed.load(); ++t) {
      // This task's output rows [q0, q1) of n * oh in strips of `height` rows (a strip ends early at an image's
      // end); the expanded rows of the last strip carry over to the next.
      const int64_t q0 = total_rows * t / tasks, q1 = total_rows * (t + 1) / tasks;
      const int64_t share = q1 - q0, strips = (share + rows - 1) / rows, height = (share + strips - 1) / strips;
      int64_t prev_img = -1, prev_a = 0, prev_b = 0;
      for (int64_t q = q0; q < q1;) {
        const int64_t img = q / oh, r0 = q % oh, r1 = std::min({oh, r0 + height, r0 + q1 - q});
        q += r1 - r0;
        const int64_t a = std::max<int64_t>(0, r0 * s - pt), b = std::min(h, (r1 - 1) * s - pt + k);
        const float* xn = xd + img * c * h * w;
        // The middle conv's input rows [a, b): expanded into e, or X's own rows (planes h * w apart).
        const float* rows_a = xn + a * w;
        int64_t rows_plane = h * w;
        if (expand_) {
          int64_t start = a;
          if (img == prev_img && prev_a <= a && a < prev_b) {  // rows [a, prev_b) are there: move them to the top
            const int64_t keep = std::min(prev_b, b) - a;
            if (a > prev_a)
              for (int64_t ch = 0; ch < m; ++ch)
                std::memmove(e + ch * e_plane, e + ch * e_plane + (a - prev_a) * w,
                             static_cast<size_t>(keep * w) * sizeof(float));
            start = a + keep;
          }
          if (start < b) {
            Status st = expand_->pointwise_columns(xn + start * w, h * w, (b - start) * w, b1d, nullptr, 0,
                                                   e + (start - a) * w, e_plane);
            if (!st.is_ok()) {
              failed.store(true);
              return;
            }
          }
          rows_a = e;
          rows_plane = e_plane;
        }
        conv_detail::DepthwiseBlockArgs da;
        da.c = m;
        da.iw = w;
        da.ow = ow;
        da.stride = static_cast<int>(s);
        da.pad_left = pl;
        da.bias = b2d;
        if (project_) {
          // The strip as an image of its own: rows [a, b) of the input, output rows [r0, r1) into dbuf.
          da.x = rows_a;
          da.x_plane = rows_plane;
          da.ih = b - a;
          da.oh = r1 - r0;
          da.pad_top = pt + a - r0 * s;
          da.y = dbuf;
          depthwise_.direct_rows(da, 0, r1 - r0, dscratch);
          const int64_t cols = (r1 - r0) * ow, plane = oh * ow;
          if (gather) {  // the shortcut's input below the depthwise rows: X at rows r0 * s, ..., columns 0, s, ...
            conv_detail::Im2colArgs ga;
            ga.x = xn;
            ga.ih = h;
            ga.iw = w;
            ga.sh = ga.sw = s;
            ga.pt = -r0 * s;
            ga.oh = r1 - r0;
            ga.ow = ow;
            ga.col = dbuf + m * cols;
            gather(ga, 0, c);
          }
          Status st =
              project_->pointwise_columns(dbuf, cols, cols, b3d, zd ? zd + img * out_c * plane + r0 * ow : nullptr,
                                          plane, yd + img * out_c * plane + r0 * ow, plane);
          if (!st.is_ok()) {
            failed.store(true);
            return;
          }
        } else {
          // Output rows [r0, r1) of the whole image, straight into y; e holds rows [a, b) of each plane (create
          // refuses a chain without both the expansion and this branch's missing projection).
          da.x = e - a * w;
          da.x_plane = e_plane;
          da.ih = h;
          da.oh = oh;
          da.pad_top = pt;
          da.y = yd + img * m * oh * ow;
          depthwise_.direct_rows(da, r0, r1, dscratch);
        }
        prev_img = img;
        prev_a = a;
        prev_b = b;
      }
    }
  });
  if (failed.load()) return Status(core::StatusCode::kOutOfMemory, "conv chain: scratch or GEMM failed");
  return Status::ok();
}

// Per image: E [h * w][m] = act1(X^T W1^T + b1) and D [oh * ow][m] = depthwise(E), both pixel-major in one
// buffer, each thread through both for its own range of the m channels (the depthwise needs only its channels);
// then, after all threads are done, Y^T [oh * ow][out_c] = D W3^T by ranges of output channels or of pixels
// (FastConv::transposed_share), each transposed to NCHW with b3, the residual and the activation (as FastConv's
// transposed pointwise path).
Status FastConvChain::run_small(const ConvChainParams& p, const Tensor& x, const Tensor* b1, const Tensor* b2,
                                const Tensor* b3, const Tensor* z, Tensor& y, core::ThreadPool* pool) const {
  const int64_t m = depthwise_.out_channels(), c = expand_->in_channels(), out_c = project_->out_channels();
  const int64_t n = x.dim(0), h = x.dim(2), w = x.dim(3), oh = y.dim(2), ow = y.dim(3);
  const int64_t hw = h * w, ohw = oh * ow;
  const int threads = pool ? pool->num_threads() : 1;
  const PackedB& w1t = expand_->transposed_weights();
  // Channel ranges in whole GEMM column slivers and depthwise vectors.
  const int64_t unit1 = std::lcm<int64_t>(w1t.nr(), depthwise_.vector_width());
  const int64_t tasks1 = std::min<int64_t>(threads, (m + unit1 - 1) / unit1);
  const int64_t tasks3 = project_->transposed_tasks(ohw, threads);
  const int64_t e_floats = round_up16(hw * m);
  const int64_t dw_scratch = conv_detail::depthwise_nhwc_scratch_floats(
      oh, ow, depthwise_.kernel_size(), static_cast<int>(p.stride), depthwise_.vector_width());
  float* buf = g_chain_scratch.get_as<float>(static_cast<size_t>(e_floats + round_up16(ohw * m)));
  if (!buf) return Status(core::StatusCode::kOutOfMemory, "conv chain: cannot allocate the small-plane scratch");
  float* e = buf;
  float* d = buf + e_floats;
  const FusedActivation& a1 = expand_->activation();
  const SgemmContext ctx{nullptr, depthwise_.isa()};
  std::atomic<bool> failed{false};
  for (int64_t img = 0; img < n && !failed.load(); ++img) {
    const float* xn = x.data<float>() + img * c * hw;
    core::parallel_for(pool, tasks1, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const auto [m0, m1] = FastConv::unit_share(m, unit1, tasks1, t);
        Result<PackedB> slice = w1t.slice_cols(m0, m1);
        GemmEpilogue ep;
        if (b1) {
          ep.bias_kind = GemmBias::kPerColumn;
          ep.bias = b1->data<float>() + m0;
        }
        ep.activation = a1.kind;
        ep.act_alpha = a1.alpha;
        ep.act_beta = a1.beta;
        if (!slice.is_ok() ||
            !sgemm(hw, m1 - m0, c, 1.f, SgemmA(xn, hw, true), SgemmB(*slice), 0.f, e + m0, m, ep, ctx).is_ok()) {
          failed.store(true);
          return;
        }
        conv_detail::DepthwiseNhwcArgs da;
        da.scratch = g_chain_out_scratch.get_as<float>(static_cast<size_t>(dw_scratch));
        if (!da.scratch) {
          failed.store(true);
          return;
        }
        da.x = e;
        da.ldx = m;
        da.ih = h;
        da.iw = w;
        da.y = d;
        da.ldy = m;
        da.oh = oh;
        da.ow = ow;
        da.stride = static_cast<int>(p.stride);
        da.pad_top = p.pad_top;
        da.pad_left = p.pad_left;
        da.bias = b2 ? b2->data<float>() : nullptr;
        depthwise_.depthwise_nhwc(da, m0, m1);
      }
    });
    if (failed.load()) break;
    core::parallel_for(pool, tasks3, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        if (!project_
                 ->transposed_part(SgemmA(d, m), ohw, project_->transposed_share(ohw, tasks3, t),
                                   b3 ? b3->data<float>() : nullptr, z ? z->data<float>() + img * out_c * ohw : nullptr,
                                   y.data<float>() + img * out_c * ohw)
                 .is_ok()) {
          failed.store(true);
          return;
        }
      }
    });
  }
  if (failed.load()) return Status(core::StatusCode::kOutOfMemory, "conv chain: scratch or GEMM failed");
  return Status::ok();
}

}  // namespace kestrel::kernels::cpu

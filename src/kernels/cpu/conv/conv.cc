// Fast f32 convolution: path choice, pointwise GEMM, depthwise dispatch, im2col + GEMM.
#include "kernels/cpu/conv/conv.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

#include "core/str_util.h"
#include "core/thread_scratch.h"
#include "kernels/cpu/conv/depthwise.h"

namespace kestrel::kernels::cpu {

using core::str_cat;

namespace conv_detail {

int64_t depthwise_block_scratch_floats(int64_t rows_out, int64_t ow, int k, int stride, int width, int64_t channels) {
  const int64_t lp = (ow - 1) * stride + k, rows_in = (rows_out - 1) * stride + k;
  return rows_in * lp * channels + (rows_out * ow + width) * width + 64;
}

int64_t depthwise_direct_scratch_floats(int64_t rows_out, int64_t ow, int k, int width) {
  // dw_direct_channel's stride-1 rows: (ow rounded up to the width) + (k - 1 rounded up) padded columns.
  const int64_t owr = (ow + width - 1) / width * width, pad = (k - 1 + width - 1) / width * width;
  return (rows_out - 1 + k) * (owr + pad) + 64;
}

int64_t stem_scratch_floats(int64_t c, int64_t rows_out, int64_t ow, int width) {
  const int64_t owr = (ow + width - 1) / width * width;  // layout of stem_block (depthwise_blocked_inl.h)
  return c * ((rows_out - 1) * 2 + 3) * 2 * (owr + width) + 64;
}

std::vector<float> stem_weights(const float* w, int64_t m, int64_t c) {
  std::vector<float> t(static_cast<size_t>(m * c * 9));
  for (int64_t o = 0; o < m; ++o)
    for (int64_t k = 0; k < c * 9; ++k) t[static_cast<size_t>(k * m + o)] = w[o * c * 9 + k];
  return t;
}

DepthwiseBlocked depthwise_blocked(core::Isa isa) {
  switch (isa) {
    case core::Isa::kScalar:
      return depthwise_blocked_scalar();
#if defined(__x86_64__) || defined(_M_X64)
    case core::Isa::kAvx2:
      return depthwise_blocked_avx2();
    case core::Isa::kAvx512:
      return depthwise_blocked_avx512();
#else
    default:
      return {};
#endif
  }
  return {};
}

WinogradKernels winograd_kernels(core::Isa isa) {
  switch (isa) {
    case core::Isa::kScalar:
      return winograd_kernels_scalar();
#if defined(__x86_64__) || defined(_M_X64)
    case core::Isa::kAvx2:
      return winograd_kernels_avx2();
    case core::Isa::kAvx512:
      return winograd_kernels_avx512();
#else
    default:
      return {};
#endif
  }
  return {};
}

Im2colFn im2col_fn(core::Isa isa) {
  switch (isa) {
    case core::Isa::kScalar:
      return im2col_fn_scalar();
#if defined(__x86_64__) || defined(_M_X64)
    case core::Isa::kAvx2:
      return im2col_fn_avx2();
    case core::Isa::kAvx512:
      return im2col_fn_avx512();
#else
    default:
      return nullptr;
#endif
  }
  return nullptr;
}

TransposeOutFn transpose_out_fn(core::Isa isa) {
  switch (isa) {
    case core::Isa::kScalar:
      return transpose_out_fn_scalar();
#if defined(__x86_64__) || defined(_M_X64)
    case core::Isa::kAvx2:
      return transpose_out_fn_avx2();
    case core::Isa::kAvx512:
      return transpose_out_fn_avx512();
#else
    default:
      return nullptr;
#endif
  }
  return nullptr;
}

SoftmaxRowsFn softmax_rows_fn(core::Isa isa) {
  switch (isa) {
    case core::Isa::kScalar:
      return softmax_rows_fn_scalar();
#if defined(__x86_64__) || defined(_M_X64)
    case core::Isa::kAvx2:
      return softmax_rows_fn_avx2();
    case core::Isa::kAvx512:
      return softmax_rows_fn_avx512();
#else
    default:
      return nullptr;
#endif
  }
  return nullptr;
}

}  // namespace conv_detail

namespace {

// Per-thread scratch that grows to the largest request and is then reused (no allocation in
// steady state, no zero-initialization cost).
// Slots 1-3 are further buffers for work that runs while slot 0 is in use on the same thread.
core::ScratchSlot g_conv_scratch[4];

float* thread_scratch(int64_t floats, int slot = 0) {
  return g_conv_scratch[slot].get_as<float>(static_cast<size_t>(floats));
}

// dst[0, n) = src[0, n), the 16-byte-aligned middle with non-temporal stores (SSE's movntps, on every x86-64
// CPU), then a fence unless `fence` is false (the caller fences after its last copy); elsewhere a plain copy.
// For outputs whose lines the other core may still hold: a non-temporal store does not wait for that copy to
// be invalidated (docs/architecture.md, "What a line costs").
void copy_streaming(float* dst, const float* src, int64_t n, bool fence = true) {
#if defined(__x86_64__) || defined(_M_X64)
  int64_t i = 0;
  for (; i < n && (reinterpret_cast<uintptr_t>(dst + i) & 15) != 0; ++i) dst[i] = src[i];
  for (; i + 4 <= n; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
  for (; i < n; ++i) dst[i] = src[i];
  if (fence) _mm_sfence();
#else
  if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
#endif
}

const char* conv_impl_name(core::Isa isa) {
  switch (isa) {
    case core::Isa::kScalar:
      return "conv.scalar";
    case core::Isa::kAvx2:
      return "conv.avx2";
    case core::Isa::kAvx512:
      return "conv.avx512";
  }
  return "conv";
}

// Runs task(0 .. n-1) as one contiguous range of tasks per thread, the caller's first (not taken in
// turn): each thread then reads the rows / channels that it wrote in the ops before.
void run_in_ranges(core::ThreadPool* pool, int64_t n, core::FunctionRef<void(int64_t)> task) {
  core::parallel_for(pool, n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) task(i);
  });
}

// Output rows per call of the channel-blocked depthwise: its interleaved input strip (rows x lp x width, lp =
// (ow - 1) * stride + k) stays near 64 KiB, so the strip is still in L2 when the taps read it.
int64_t blocked_depthwise_rows(int64_t stride, int64_t lp, int width) {
  return std::max<int64_t>(16384 / std::max<int64_t>(stride * lp * width, 1), 1);
}

// Output rows per call of the direct grouped conv: its interleaved input strip (rows x lp x cg) stays near 128 KiB
// (L2).
int64_t grouped_rows(int64_t stride, int64_t lp, int64_t cg) {
  return std::max<int64_t>(32768 / std::max<int64_t>(stride * lp * cg, 1), 1);
}

}  // namespace

struct FastConv::Geometry {
  int64_t n = 0, c = 0, ih = 1, iw = 1, oh = 1, ow = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;

  // The direct kernels' arguments (depthwise, grouped, stem) for image n of x / y (and the
  // residual z), m output channels per image; the caller sets w, cg / mg and scratch.
  conv_detail::DepthwiseBlockArgs block_args(int64_t img, int64_t m, int k, int stride, const float* x,
                                             const float* bias, const float* z, float* y,
                                             const FusedActivation& act) const {
    conv_detail::DepthwiseBlockArgs a;
    a.x = x + img * c * ih * iw;
    a.c = c;
    a.ih = ih;
    a.iw = iw;
    a.oh = oh;
    a.ow = ow;
    a.k = k;
    a.stride = stride;
    a.pad_top = pt;
    a.pad_left = pl;
    a.bias = bias;
    a.residual = z ? z + img * m * oh * ow : nullptr;
    a.y = y + img * m * oh * ow;
    a.activation = act.kind;
    a.act_alpha = act.alpha;
    a.act_beta = act.beta;
    return a;
  }
};

Result<FastConv> FastConv::create(const Tensor& w, int64_t group, FusedActivation act, core::Isa isa,
                                  bool allow_winograd, int64_t plane_hint) {
  if (w.dtype() != core::DType::kF32 || (w.rank() != 3 && w.rank() != 4))
    return core::unsupported(str_cat("fast conv: weights must be f32 of rank 3 or 4, are ", w.type_string()));
  if (group < 1 || w.dim(0) % group != 0)
    return core::invalid_argument(str_cat("conv: ", w.dim(0), " output channels not divisible by group ", group));
  if (isa > core::detected_isa() || !conv_detail::depthwise_blocked(isa).fn)
    return core::unsupported(str_cat("fast conv: ", core::isa_name(isa), " not available"));
  FastConv c;
  c.isa_ = isa;
  c.act_ = act;
  c.rank_ = w.rank();
  c.m_ = w.dim(0);
  c.cg_ = w.dim(1);
  c.kh_ = w.rank() == 4 ? w.dim(2) : 1;
  c.kw_ = w.dim(-1);
  c.group_ = group;
  c.w_ = std::make_shared<const std::vector<float>>(w.data<float>(), w.data<float>() + w.num_elements());
  const int64_t mg = c.m_ / group, kdim = c.cg_ * c.kh_ * c.kw_;
  const bool depthwise_shaped = c.cg_ == 1 && mg == 1 && c.kh_ == c.kw_ && (c.kh_ == 3 || c.kh_ == 5);
  c.depthwise_shaped_ = depthwise_shaped;
  if (depthwise_shaped) {
    // One vector of weights per tap and block of channels (zero lanes past the last channel).
    const int width = conv_detail::depthwise_blocked(isa).width;
    const int64_t taps = c.kh_ * c.kw_, blocks = (c.m_ + width - 1) / width;
    auto packed = std::make_shared<std::vector<float>>(static_cast<size_t>(blocks * taps * width), 0.f);
    for (int64_t ch = 0; ch < c.m_; ++ch)
      for (int64_t t = 0; t < taps; ++t)
        (*packed)[static_cast<size_t>(((ch / width) * taps + t) * width + ch % width)] = (*c.w_)[ch * taps + t];
    c.dw_width_ = width;
    c.dw_packed_ = std::move(packed);
  }
  // Winograd F(2x2, 3x3) for dense 3x3 convs with enough channels that the 16 GEMMs (K = C)
  // stay efficient: U = G g G^T per (m, c), one pre-packed [M, C] GEMM operand per element.
  if (allow_winograd && group == 1 && c.rank_ == 4 && c.kh_ == 3 && c.kw_ == 3 && c.cg_ >= kWinogradMinChannels &&
      c.m_ >= kWinogradMinChannels && conv_detail::winograd_kernels(isa).input) {
    const int64_t cm = c.m_ * c.cg_;
    std::vector<float> u(static_cast<size_t>(16 * cm));
    for (int64_t mc = 0; mc < cm; ++mc) {
      const float* g = c.w_->data() + mc * 9;
      float t[4][3];  // G g
      for (int j = 0; j < 3; ++j) {
        t[0][j] = g[j];
        t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
        t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
        t[3][j] = g[6 + j];
      }
      for (int i = 0; i < 4; ++i) {  // (G g) G^T
        u[static_cast<size_t>((i * 4 + 0) * cm + mc)] = t[i][0];
        u[static_cast<size_t>((i * 4 + 1) * cm + mc)] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
        u[static_cast<size_t>((i * 4 + 2) * cm + mc)] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
        u[static_cast<size_t>((i * 4 + 3) * cm + mc)] = t[i][2];
      }
    }
    for (int xi = 0; xi < 16; ++xi) {
      KESTREL_ASSIGN_OR_RETURN(PackedA a, pack_a(c.m_, c.cg_, u.data() + xi * cm, c.cg_, false, isa));
      c.winograd_.push_back(std::move(a));
    }
    c.tile_mr_ = c.winograd_.front().mr();
  }
  static_assert(kStemMaxChannels == conv_detail::kStemMaxInputChannels);
  if (group == 1 && c.rank_ == 4 && c.kh_ == 3 && c.kw_ == 3 && c.cg_ <= kStemMaxChannels)
    c.stem_w_ = std::make_shared<const std::vector<float>>(conv_detail::stem_weights(c.w_->data(), c.m_, c.cg_));
  // Grouped k x k with group widths that are whole vectors (RegNet's 16): direct conv over the
  // group's input rows packed in blocks of W channels (stride 1 or 2), weights [M / W][k * k][cg][W].
  const int width = conv_detail::depthwise_blocked(isa).width;
  if (group > 1 && c.rank_ == 4 && c.kh_ == c.kw_ && c.kh_ > 1 && c.kh_ <= 7 && c.cg_ * mg > 1 &&
      c.cg_ % width == 0 && mg % width == 0 && c.cg_ <= 256) {
    const int64_t taps = c.kh_ * c.kw_;
    auto packed = std::make_shared<std::vector<float>>(static_cast<size_t>(c.m_ * taps * c.cg_), 0.f);
    for (int64_t m = 0; m < c.m_; ++m)
      for (int64_t ci = 0; ci < c.cg_; ++ci)
        for (int64_t t = 0; t < taps; ++t)
          (*packed)[static_cast<size_t>((((m / width) * taps + t) * c.cg_ + ci) * width + m % width)] =
              (*c.w_)[(m * c.cg_ + ci) * taps + t];
    c.gp_width_ = width;
    c.gp_packed_ = std::move(packed);
  }
  // Pointwise on a small plane (known at creation): W^T packed as GEMM B for C^T = X^T W^T; then only
  // planes of other sizes (dynamic shapes) use W itself, unpacked.
  if (group == 1 && kdim == c.cg_ && plane_hint > 0 && plane_hint <= pointwise_transposed_max_plane(isa) &&
      conv_detail::transpose_out_fn(isa)) {
    KESTREL_ASSIGN_OR_RETURN(c.pointwise_t_, pack_b(c.cg_, c.m_, c.w_->data(), c.cg_, true, isa));
    return c;
  }
  // Grouped weights stay row-major: the groups run as one batched GEMM with strided A.
  if (group == 1) {
    KESTREL_ASSIGN_OR_RETURN(PackedA a, pack_a(mg, kdim, c.w_->data(), kdim, false, isa));
    c.packed_.push_back(std::move(a));
  }
  return c;
}

const char* FastConv::name() const {
  return conv_impl_name(isa_);
}

FastConv::Path FastConv::path_for(const ref::ConvParams& p) const {
  const size_t sp = p.strides.size();
  const int64_t sh = sp == 2 ? p.strides[0] : 1, sw = p.strides[sp - 1];
  const int64_t dh = sp == 2 ? p.dilations[0] : 1, dw = p.dilations[sp - 1];
  const int64_t pt = sp == 2 ? p.pads_begin[0] : 0, pl = p.pads_begin[sp - 1];
  if (depthwise_shaped_ && rank_ == 4 && sh == sw && (sh == 1 || sh == 2) && dh == 1 && dw == 1)
    return Path::kDepthwise;
  if (kh_ == 1 && kw_ == 1 && sh == 1 && sw == 1 && pt == 0 && pl == 0) return Path::kPointwise;
  // Network stems (3x3 stride 2 on RGB): direct, im2col's K = 27 GEMM is bound by the copy.
  if (stem_w_ && sh == 2 && sw == 2 && dh == 1 && dw == 1) return Path::kStem;
  if (!winograd_.empty() && sh == 1 && sw == 1 && dh == 1 && dw == 1) return Path::kWinograd;
  if (gp_packed_ && sh == sw && (sh == 1 || sh == 2) && dh == 1 && dw == 1) return Path::kGrouped;
  return Path::kIm2col;
}

const char* FastConv::path_name(const ref::ConvParams& p) const {
  switch (path_for(p)) {
    case Path::kPointwise:
      return "pointwise";
    case Path::kDepthwise:
      return "depthwise";
    case Path::kIm2col:
      return "im2col";
    case Path::kGrouped:
      return "grouped";
    case Path::kWinograd:
      return "winograd";
    case Path::kStem:
      return "stem";
  }
  return "?";
}

// Checks the operands against this kernel and fills the geometry; `ydims` is the conv output's
// shape (y's, or the pre-pool shape for run_max_pooled).
Status FastConv::make_geometry(const ref::ConvParams& p, const Tensor& x, const Tensor* bias,
                               std::span<const int64_t> ydims, Geometry* out) const {
  const size_t sp = static_cast<size_t>(rank_ - 2);
  if (x.rank() != rank_ || static_cast<int64_t>(ydims.size()) != rank_)
    return core::invalid_argument(str_cat("conv: X ", x.type_string(), " and Y (rank ", ydims.size(),
                                          ") must have rank ", rank_));
  if (p.strides.size() != sp || p.dilations.size() != sp || p.pads_begin.size() != sp)
    return core::invalid_argument("conv: strides/dilations/pads must have one value per spatial axis");
  Geometry& g = *out;
  g.n = x.dim(0);
  g.c = x.dim(1);
  g.iw = x.dim(-1);
  g.ow = ydims.back();
  g.sw = p.strides[sp - 1];
  g.dw = p.dilations[sp - 1];
  g.pl = p.pads_begin[sp - 1];
  if (sp == 2) {
    g.ih = x.dim(2);
    g.oh = ydims[2];
    g.sh = p.strides[0];
    g.dh = p.dilations[0];
    g.pt = p.pads_begin[0];
  }
  if (g.c != cg_ * group_)
    return core::invalid_argument(str_cat("conv: X ", x.type_string(), " needs ", cg_ * group_, " channels"));
  if (ydims[0] != g.n || ydims[1] != m_)
    return core::invalid_argument(str_cat("conv: Y must be [", g.n, ",", m_, ",...]"));
  for (int64_t v : {g.sh, g.sw, g.dh, g.dw})
    if (v < 1 || v > core::kMaxElements) return core::invalid_argument("conv: bad stride or dilation");
  if (g.pt < 0 || g.pl < 0 || g.pt > core::kMaxElements || g.pl > core::kMaxElements)
    return core::invalid_argument("conv: bad pads");
  if (bias && bias->num_elements() != m_)
    return core::invalid_argument(str_cat("conv: bias ", bias->type_string(), " must have ", m_, " elements"));
  return Status::ok();
}

Status FastConv::run(const ref::ConvParams& p, const Tensor& x, const Tensor* bias, const Tensor* z, Tensor& y,
                     core::ThreadPool* pool) const {
  for (const Tensor* t : {&x, bias, z, static_cast<const Tensor*>(&y)})
    if (t && t->dtype() != core::DType::kF32)
      return core::invalid_argument(str_cat("conv: fast kernel needs f32, got ", t->type_string()));
  Geometry g;
  KESTREL_RETURN_IF_ERROR(make_geometry(p, x, bias, y.dims(), &g));
  if (z && z->dims() != y.dims())
    return core::invalid_argument(str_cat("conv: residual ", z->type_string(), " must be ", y.type_string()));
  if (y.num_elements() == 0) return Status::ok();
  const float* bd = bias ? bias->data<float>() : nullptr;
  const float* zd = z ? z->data<float>() : nullptr;
  switch (path_for(p)) {
    case Path::kDepthwise:
      return run_depthwise(g, x.data<float>(), bd, zd, y.data<float>(), pool);
    case Path::kPointwise:
      if (g.oh == g.ih && g.ow == g.iw) return run_pointwise(g, x.data<float>(), bd, zd, y.data<float>(), pool);
      break;
    case Path::kGrouped:
      if (conv_detail::depthwise_blocked(isa_).width == gp_width_)
        return run_grouped(g, x.data<float>(), bd, zd, y.data<float>(), pool);
      break;
    case Path::kWinograd:
      return run_winograd(g, x.data<float>(), bd, zd, y.data<float>(), pool);
    case Path::kStem:
      return run_stem(g, x.data<float>(), bd, zd, y.data<float>(), pool);
    case Path::kIm2col:
      break;
  }
  return run_im2col(g, x.data<float>(), bd, zd, y.data<float>(), pool);
}

Status FastConv::run_pointwise(const Geometry& g, const float* x, const float* bias, const float* z, float* y,
                               core::ThreadPool* pool) const {
  const int64_t hw = g.oh * g.ow, mg = m_ / group_;
  SgemmContext ctx{pool, isa_, split_columns_};
  GemmEpilogue ep;
  ep.activation = act_.kind;
  ep.act_alpha = act_.alpha;
  ep.act_beta = act_.beta;
  if (pointwise_transposed(hw)) return run_pointwise_transposed(g, x, bias, z, y, pool);
  if (!bf16_.empty()) {
    if (bias) {
      ep.bias_kind = GemmBias::kPerRow;
      ep.bias = bias;
    }
    for (int64_t n = 0; n < g.n; ++n) {
      if (z) {
        ep.residual = z + n * m_ * hw;
        ep.ldr = hw;
      }
      KESTREL_RETURN_IF_ERROR(bf16_gemm(bf16_, hw, x + n * g.c * hw, hw, y + n * m_ * hw, hw, ep, pool));
    }
    return Status::ok();
  }
  if (group_ == 1) {
    // One GEMM per image, batched over images, sharing the packed weights.
    if (bias) {
      ep.bias_kind = GemmBias::kPerRow;
      ep.bias = bias;
    }
    SgemmBatch batch;
    batch.count = g.n;
    batch.stride_b = g.c * hw;
    batch.stride_c = m_ * hw;
    if (z) {
      ep.residual = z;
      ep.ldr = hw;
      batch.stride_residual = m_ * hw;
    }
    const SgemmA a = packed_.empty() ? SgemmA(w_->data(), cg_) : SgemmA(packed_[0]);
    return sgemm_batched(mg, hw, cg_, 1.f, a, SgemmB(x, hw), 0.f, y, hw, batch, ep, ctx);
  }
  // Groups: per image, one batched GEMM over the groups (bias written into Y first, as in im2col).
  for (int64_t n = 0; n < g.n; ++n) {
    float* yn = y + n * m_ * hw;
    float beta = 0.f;
    if (bias) {
      for (int64_t m = 0; m < m_; ++m) std::fill(yn + m * hw, yn + (m + 1) * hw, bias[m]);
      beta = 1.f;
    }
    SgemmBatch batch;
    batch.count = group_;
    batch.stride_a = mg * cg_;
    batch.stride_b = cg_ * hw;
    batch.stride_c = mg * hw;
    GemmEpilogue e = ep;
    if (z) {
      e.residual = z + n * m_ * hw;
      e.ldr = hw;
      batch.stride_residual = mg * hw;
    }
    KESTREL_RETURN_IF_ERROR(sgemm_batched(mg, hw, cg_, 1.f, SgemmA(w_->data(), cg_), SgemmB(x + n * g.c * hw, hw), beta,
                                          yn, hw, batch, e, ctx));
  }
  return Status::ok();
}

// Per image: C^T [hw, M] = X^T W^T into scratch (M in the vector lanes: a 7x7 plane fills 49 of 64
// lanes when the pixels are), then transposed to NCHW with bias, residual and activation. With
// threads, each takes a range of output channels through both steps, so no core reads the other's
// scratch (docs/architecture.md, "What a line costs"); each packs X^T itself.
Status FastConv::run_pointwise_transposed(const Geometry& g, const float* x, const float* bias, const float* z,
                                          float* y, core::ThreadPool* pool) const {
  const int64_t hw = g.oh * g.ow;
  const int64_t tasks = transposed_tasks(hw, pool ? pool->num_threads() : 1);
  std::atomic<bool> failed{false};
  for (int64_t n = 0; n < g.n && !failed.load(); ++n) {
    core::parallel_for(pool, tasks, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        if (!transposed_part(SgemmA(x + n * cg_ * hw, hw, true), hw, transposed_share(hw, tasks, t), bias,
                             z ? z + n * m_ * hw : nullptr, y + n * m_ * hw)
                 .is_ok()) {
          failed.store(true);
          return;
        }
      }
    });
  }
  if (failed.load()) return Status(core::StatusCode::kOutOfMemory, "conv: pointwise scratch or GEMM failed");
  return Status::ok();
}

namespace {

// Column slivers and pixel tiles of a transposed pointwise conv, and whether `threads` split its pixels: when the
// busiest thread then computes fewer pixel rows x slivers (a partial last tile counts its rows only). Ties keep
// the channels: each thread then streams only its slivers of W^T. kestrel_conv_bench at 2 threads: 400 -> 400 on
// 7x7 (13 slivers, 7 : 6) 81 us by channels, 93 by pixels (28 + 21 rows of all 13).
struct TransposedUnits {
  int64_t nr, mr, cols, rows, plane;
  bool by_pixels(int64_t threads) const {
    if (threads <= 1 || cols <= 0 || rows <= 0) return false;
    const int64_t tc = std::min(threads, cols), tp = std::min(threads, rows);
    const int64_t by_cols = (cols + tc - 1) / tc * plane;
    int64_t by_rows = 0;
    for (int64_t t = 0; t < tp; ++t) {
      const auto [p0, p1] = FastConv::unit_share(plane, mr, tp, t);
      by_rows = std::max(by_rows, (p1 - p0) * cols);
    }
    return by_rows < by_cols;
  }
};

TransposedUnits transposed_units(const PackedB& w, core::Isa isa, int64_t plane) {
  const Result<SgemmTileShape> tile = sgemm_tile_shape(isa);
  const int64_t nr = w.nr(), mr = tile.is_ok() ? tile->mr : 1;
  return {nr, mr, (w.n() + nr - 1) / nr, (plane + mr - 1) / mr, plane};
}

}  // namespace

int64_t FastConv::transposed_tasks(int64_t plane, int threads) const {
  const TransposedUnits u = transposed_units(pointwise_t_, isa_, plane);
  const int64_t t = std::max(threads, 1);
  return std::max<int64_t>(1, std::min(t, u.by_pixels(t) ? u.rows : u.cols));
}

FastConv::TransposedShare FastConv::transposed_share(int64_t plane, int64_t tasks, int64_t t) const {
  const TransposedUnits u = transposed_units(pointwise_t_, isa_, plane);
  if (u.by_pixels(tasks)) {
    const auto [p0, p1] = unit_share(plane, u.mr, tasks, t);
    return {p0, p1, 0, m_};
  }
  const auto [n0, n1] = unit_share(m_, u.nr, tasks, t);
  return {0, plane, n0, n1};
}

Status FastConv::transposed_part(const SgemmA& a, int64_t plane, const TransposedShare& share, const float* bias,
                                 const float* z, float* y) const {
  const int64_t pixels = share.p1 - share.p0, cols = share.n1 - share.n0;
  if (pixels <= 0 || cols <= 0) return Status::ok();
  float* ct = thread_scratch(pixels * cols, 1);
  if (!ct) return Status(core::StatusCode::kOutOfMemory, "conv: cannot allocate transposed pointwise scratch");
  KESTREL_ASSIGN_OR_RETURN(PackedB slice, pointwise_t_.slice_cols(share.n0, share.n1));
  const SgemmA rows = a.trans ? SgemmA(a.data + share.p0, a.ld, true) : SgemmA(a.data + share.p0 * a.ld, a.ld);
  KESTREL_RETURN_IF_ERROR(
      sgemm(pixels, cols, cg_, 1.f, rows, SgemmB(slice), 0.f, ct, cols, {}, SgemmContext{nullptr, isa_}));
  conv_detail::TransposeOutArgs at;
  at.ct = ct;
  at.ldc = cols;
  at.pixels = pixels;
  at.plane = plane;
  at.bias = bias;
  at.residual = z ? z + share.p0 : nullptr;
  at.y = y + share.p0;
  at.activation = act_.kind;
  at.act_alpha = act_.alpha;
  at.act_beta = act_.beta;
  conv_detail::transpose_out_fn(isa_)(at, share.n0, share.n1);
  return Status::ok();
}

Status FastConv::run_depthwise(const Geometry& g, const float* x, const float* bias, const float* z, float* y,
                               core::ThreadPool* pool) const {
  const conv_detail::DepthwiseBlockFn fn = conv_detail::depthwise_blocked(isa_).fn;
  const int k = static_cast<int>(kh_), s = static_cast<int>(g.sh), width = dw_width_;
  const int64_t lp = (g.ow - 1) * s + k;
  const int64_t blocks = (g.c + width - 1) / width;
  const bool direct = conv_detail::depthwise_runs_direct(s, g.ow, width, act_.kind);
  int64_t rows_per_strip;
  if (direct) {
    // The plane-direct path reads one channel's rows at a time: a strip of 8 rows made each task hop
    // between 16 planes every 4.5 KiB, and the hardware prefetcher restarted at each hop. Whole planes
    // per task (split only to give every thread two tasks): 32 ch 3x3 at 112 alone 149-170 -> 134-142 us.
    const int threads = pool ? pool->num_threads() : 1;
    const int64_t split = std::clamp<int64_t>((2 * threads + g.n * blocks - 1) / (g.n * blocks), 1, g.oh);
    rows_per_strip = (g.oh + split - 1) / split;
  } else {
    rows_per_strip = std::min(blocked_depthwise_rows(s, lp, width), g.oh);
  }
  const int64_t strips = (g.oh + rows_per_strip - 1) / rows_per_strip, tasks = g.n * blocks * strips;
  const int64_t scratch = direct_rows_scratch_floats(rows_per_strip, g.ow, s);
  std::atomic<bool> oom{false};
  auto task = [&](int64_t i) {
    float* buf = thread_scratch(scratch);
    if (!buf) {
      oom.store(true);
      return;
    }
    const int64_t strip = i % strips, block = i / strips % blocks, n = i / strips / blocks;
    conv_detail::DepthwiseBlockArgs a = g.block_args(n, g.c, k, s, x, bias, z, y, act_);
    a.stream = pool && pool->num_threads() > 1 &&
               g.n * g.c * g.oh * g.ow * int64_t{4} >= kStreamOutputBytes;
    a.w = dw_packed_->data();
    a.scratch = buf;
    const int64_t oy0 = strip * rows_per_strip;
    fn(a, block, oy0, std::min(g.oh, oy0 + rows_per_strip));
  };
  // One contiguous range of channel blocks per thread (the caller's first): the GEMM before split
  // its output channels the same way and the SE / activation ops after split them into the same
  // halves, so each thread mostly reads what it wrote (small dynamic tasks scatter the blocks).
  run_in_ranges(pool, tasks, task);
  if (oom.load()) return Status(core::StatusCode::kOutOfMemory, "conv: cannot allocate depthwise scratch");
  return Status::ok();
}

Status FastConv::pointwise_columns(const float* x, int64_t ldx, int64_t cols, const float* bias, const float* z,
                                   int64_t ldz, float* y, int64_t ldy) const {
  if (!is_pointwise()) return core::internal_error("conv: pointwise_columns on a conv that is not 1x1, group 1");
  GemmEpilogue ep;
  ep.activation = act_.kind;
  ep.act_alpha = act_.alpha;
  ep.act_beta = act_.beta;
  if (bias) {
    ep.bias_kind = GemmBias::kPerRow;
    ep.bias = bias;
  }
  ep.residual = z;
  ep.ldr = ldz;
  if (!bf16_.empty()) return bf16_gemm(bf16_, cols, x, ldx, y, ldy, ep);
  return sgemm(m_, cols, cg_, 1.f, SgemmA(packed_[0]), SgemmB(x, ldx), 0.f, y, ldy, ep, SgemmContext{nullptr, isa_});
}

Status FastConv::enable_bf16() {
  if (!bf16_cpu(isa_)) return Status::ok();
  if (act_.kind == GemmActivation::kSilu) act_.kind = GemmActivation::kSiluBf16;
  if (is_pointwise() && bf16_applies(m_, isa_) && bf16_.empty()) {
    KESTREL_ASSIGN_OR_RETURN(bf16_, PackedBf16A::pack(m_, cg_, w_->data(), cg_));
  }
  return Status::ok();
}

int64_t FastConv::direct_rows_scratch_floats(int64_t rows, int64_t ow, int stride) const {
  const int k = static_cast<int>(kh_);
  if (!depthwise_shaped_) {
    rows = std::min(rows, grouped_rows(stride, (ow - 1) * stride + k, cg_));
    return conv_detail::depthwise_block_scratch_floats(rows, ow, k, stride, gp_width_, cg_);
  }
  const int width = dw_width_;
  if (conv_detail::depthwise_runs_direct(stride, ow, width, act_.kind))
    return conv_detail::depthwise_direct_scratch_floats(rows, ow, k, width);
  rows = std::min(rows, blocked_depthwise_rows(stride, (ow - 1) * stride + k, width));
  return conv_detail::depthwise_block_scratch_floats(rows, ow, k, stride, width, width);
}

void FastConv::direct_rows(conv_detail::DepthwiseBlockArgs a, int64_t oy0, int64_t oy1, float* scratch) const {
  const conv_detail::DepthwiseBlocked kernels = conv_detail::depthwise_blocked(isa_);
  a.k = static_cast<int>(kh_);
  a.activation = act_.kind;
  a.act_alpha = act_.alpha;
  a.act_beta = act_.beta;
  a.scratch = scratch;
  const int64_t lp = (a.ow - 1) * a.stride + a.k;
  if (!depthwise_shaped_) {  // grouped: as run_grouped, one group at a time in strips
    a.w = gp_packed_->data();
    a.cg = cg_;
    a.mg = m_ / group_;
    const int64_t step = grouped_rows(a.stride, lp, cg_);
    for (int64_t grp = 0; grp < group_; ++grp)
      for (int64_t oy = oy0; oy < oy1; oy += step) kernels.grouped(a, grp, oy, std::min(oy1, oy + step));
    return;
  }
  const int width = dw_width_;
  a.w = dw_packed_->data();
  // As run_depthwise: the plane-direct path takes the rows whole, the channel-blocked one in strips.
  const int64_t step = conv_detail::depthwise_runs_direct(a.stride, a.ow, width, act_.kind)
                           ? oy1 - oy0
                           : blocked_depthwise_rows(a.stride, lp, width);
  const int64_t blocks = (a.c + width - 1) / width;
  for (int64_t block = 0; block < blocks; ++block)
    for (int64_t oy = oy0; oy < oy1; oy += step) kernels.fn(a, block, oy, std::min(oy1, oy + step));
}

Result<FastConv> FastConv::create_transposed_pointwise(const Tensor& w, FusedActivation act, core::Isa isa) {
  if (w.rank() != 4 || w.dim(2) != 1 || w.dim(3) != 1)
    return core::unsupported(
        str_cat("fast conv: transposed pointwise weights must be [M, C, 1, 1], are ", w.type_string()));
  return create(w, 1, act, isa, false, 1);  // a one-pixel plane hint: only W^T is packed, on every ISA
}

void FastConv::depthwise_nhwc(conv_detail::DepthwiseNhwcArgs a, int64_t c0, int64_t c1) const {
  a.k = static_cast<int>(kh_);
  a.w = dw_packed_->data();
  a.activation = act_.kind;
  a.act_alpha = act_.alpha;
  a.act_beta = act_.beta;
  conv_detail::depthwise_blocked(isa_).nhwc(a, c0, c1);
}

Status FastConv::run_grouped(const Geometry& g, const float* x, const float* bias, const float* z, float* y,
                             core::ThreadPool* pool) const {
  const conv_detail::DepthwiseBlockFn fn = conv_detail::depthwise_blocked(isa_).grouped;
  const int k = static_cast<int>(kh_), s = static_cast<int>(g.sh);
  const int64_t lp = (g.ow - 1) * s + k, mg = m_ / group_;
  const int64_t rows_per_strip = std::min(grouped_rows(s, lp, cg_), g.oh);
  const int64_t strips = (g.oh + rows_per_strip - 1) / rows_per_strip, tasks = g.n * group_ * strips;
  const int64_t scratch = direct_rows_scratch_floats(rows_per_strip, g.ow, s);
  std::atomic<bool> oom{false};
  auto task = [&](int64_t i) {
    float* buf = thread_scratch(scratch);
    if (!buf) {
      oom.store(true);
      return;
    }
    const int64_t strip = i % strips, grp = i / strips % group_, n = i / strips / group_;
    conv_detail::DepthwiseBlockArgs a = g.block_args(n, m_, k, s, x, bias, z, y, act_);
    a.w = gp_packed_->data();
    a.scratch = buf;
    a.cg = cg_;
    a.mg = mg;
    const int64_t oy0 = strip * rows_per_strip;
    fn(a, grp, oy0, std::min(g.oh, oy0 + rows_per_strip));
  };
  // Contiguous ranges of groups per thread, as in run_depthwise.
  run_in_ranges(pool, tasks, task);
  if (oom.load()) return Status(core::StatusCode::kOutOfMemory, "conv: cannot allocate grouped conv scratch");
  return Status::ok();
}

Status FastConv::run_stem(const Geometry& g, const float* x, const float* bias, const float* z, float* y,
                          core::ThreadPool* pool) const {
  const conv_detail::DepthwiseBlocked dw = conv_detail::depthwise_blocked(isa_);
  // Strips of output rows whose split input rows (C x rows x 2 (ow + width)) stay near 64 KiB (L1/L2).
  const int64_t row_floats = cg_ * 4 * (g.ow + dw.width);
  const int64_t rows_per_strip = std::clamp<int64_t>(16384 / std::max<int64_t>(row_floats, 1), 1, g.oh);
  const int64_t strips = (g.oh + rows_per_strip - 1) / rows_per_strip, tasks = g.n * strips;
  const int64_t scratch = conv_detail::stem_scratch_floats(cg_, rows_per_strip, g.ow, dw.width);
  const int threads = pool ? pool->num_threads() : 1;
  const bool by_thread = stem_rows_per_thread_ && threads > 1;
  const bool stream = threads > 1 && !by_thread && g.n * m_ * g.oh * g.ow * int64_t{4} >= kStreamOutputBytes;
  std::atomic<bool> oom{false};
  // Output rows [oy0, oy1) of image n, in strips.
  auto rows = [&](int64_t n, int64_t oy0, int64_t oy1) {
    float* buf = thread_scratch(scratch);
    if (!buf) {
      oom.store(true);
      return;
    }
    conv_detail::DepthwiseBlockArgs a = g.block_args(n, m_, 3, 2, x, bias, z, y, act_);
    a.stream = stream;
    a.w = stem_w_->data();
    a.scratch = buf;
    a.cg = cg_;
    a.mg = m_;
    for (int64_t r = oy0; r < oy1; r += rows_per_strip) dw.stem(a, 0, r, std::min(oy1, r + rows_per_strip));
  };
  if (by_thread) {
    // Thread t's share of the n * oh rows (image-major), as FastConvChain::run shares its output rows.
    const int64_t total = g.n * g.oh;
    core::parallel_for(pool, threads, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t)
        for (int64_t q = total * t / threads, q1 = total * (t + 1) / threads; q < q1;) {
          const int64_t n = q / g.oh, oy0 = q % g.oh, oy1 = std::min(g.oh, oy0 + (q1 - q));
          rows(n, oy0, oy1);
          q += oy1 - oy0;
        }
    });
  } else {
    core::run_tasks(pool, tasks, [&](int64_t i) {
      const int64_t oy0 = i % strips * rows_per_strip;
      rows(i / strips, oy0, std::min(g.oh, oy0 + rows_per_strip));
    });
  }
  if (oom.load()) return Status(core::StatusCode::kOutOfMemory, "conv: cannot allocate stem scratch");
  return Status::ok();
}

Status FastConv::run_max_pooled(const ref::ConvParams& p, int64_t conv_oh, int64_t conv_ow, const Pool2dParams& q,
                                const Tensor& x, const Tensor* bias, Tensor& y, core::ThreadPool* pool) const {
  for (const Tensor* t : {&x, bias, static_cast<const Tensor*>(&y)})
    if (t && t->dtype() != core::DType::kF32)
      return core::invalid_argument(str_cat("conv: fast kernel needs f32, got ", t->type_string()));
  if (path_for(p) != Path::kStem) return core::unsupported("conv: a pooled epilogue runs on the stem path only");
  if (!q.is_max || q.dh != 1 || q.dw != 1 || q.kh < 1 || q.kw < 1 || q.sh < 1 || q.sw < 1 || q.pad_top < 0 ||
      q.pad_top >= q.kh || q.pad_left < 0 || q.pad_left >= q.kw || q.kh > conv_oh + q.pad_top + q.pad_bottom ||
      q.kw > conv_ow + q.pad_left + q.pad_right)
    return core::invalid_argument("conv: bad MaxPool window for the pooled epilogue");
  Geometry g;
  const int64_t ydims[4] = {x.rank() > 0 ? x.dim(0) : 0, m_, conv_oh, conv_ow};
  KESTREL_RETURN_IF_ERROR(make_geometry(p, x, bias, ydims, &g));
  if (y.rank() != 4 || y.dim(0) != g.n || y.dim(1) != m_)
    return core::invalid_argument(str_cat("conv: pooled Y ", y.type_string(), " must be [", g.n, ",", m_, ",...]"));
  const int64_t poh = y.dim(2), pw = y.dim(3);
  if (y.num_elements() == 0 || g.oh == 0 || g.ow == 0) return Status::ok();
  // Every pool row's window must start inside the conv rows (or the top padding).
  if ((poh - 1) * q.sh - q.pad_top >= g.oh || (pw - 1) * q.sw - q.pad_left >= g.ow)
    return core::invalid_argument(str_cat("conv: pooled Y ", y.type_string(), " is too large for the conv output"));
  const conv_detail::DepthwiseBlocked dw = conv_detail::depthwise_blocked(isa_);
  const PoolTable* pt = pool_table(isa_);
  if (!pt) return core::unsupported("conv: no pool kernels for this ISA");
  // Strips of pool rows whose conv rows ((R - 1) * sh + kh rows of all M channels) stay near
  // 256 KiB, in L2 while they are pooled; the rows where two strips' windows overlap are computed
  // by both (kh - sh of (R - 1) * sh + kh).
  const int64_t conv_row = m_ * g.ow;
  const int64_t rows_fit = std::max<int64_t>((int64_t{1} << 16) / std::max<int64_t>(conv_row, 1), q.kh);
  const int64_t per_strip = std::clamp<int64_t>((rows_fit - q.kh) / q.sh + 1, 1, poh);
  const int64_t max_conv_rows = std::min(g.oh, (per_strip - 1) * q.sh + q.kh);
  const int64_t strips = (poh + per_strip - 1) / per_strip, tasks = g.n * strips;
  const int64_t stem_floats = conv_detail::stem_scratch_floats(cg_, max_conv_rows, g.ow, dw.width);
  const int64_t buf_len = pool2d_buffer_len(q, g.ow, pw);
  std::atomic<bool> oom{false};
  // Strips go in runs of consecutive ones, so the conv rows that a strip shares with the one before it (kh - sh
  // rows when the windows overlap: 1 of SqueezeNet's 9) are moved up in `rows` instead of computed again. With
  // threads, two runs per thread, claimed as they finish, to keep some of the balance of claiming single strips (at
  // 2 threads one range per thread was 1.09x the time in one loaded run, even with these runs in a second).
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t runs = threads > 1 ? std::min<int64_t>(tasks, 2 * threads) : 1;
  core::run_tasks(pool, runs, [&](int64_t r) {
    const int64_t i0 = tasks * r / runs, i1 = tasks * (r + 1) / runs;
    float* stem_buf = thread_scratch(stem_floats, 0);
    float* rows = thread_scratch(max_conv_rows * conv_row, 2);
    float* pool_buf = thread_scratch(buf_len * per_strip, 3);
    if (!stem_buf || !rows || !pool_buf) {
      oom.store(true);
      return;
    }
    int64_t held_n = -1, held0 = 0, held1 = 0;  // rows holds conv rows [held0, held1) of image held_n
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t n = i / strips, pr0 = i % strips * per_strip, pr1 = std::min(poh, pr0 + per_strip);
      const int64_t cr0 = std::max<int64_t>(0, pr0 * q.sh - q.pad_top);
      const int64_t cr1 = std::min(g.oh, (pr1 - 1) * q.sh - q.pad_top + q.kh);
      // Conv rows [cr0, cr1) of every channel in rows[m][cr - cr0][ow] (planes max_conv_rows rows apart).
      const int64_t kept = n == held_n && cr0 >= held0 && cr0 < held1 ? std::min(held1, cr1) - cr0 : 0;
      if (kept > 0 && cr0 > held0)
        for (int64_t m = 0; m < m_; ++m) {
          float* plane = rows + m * max_conv_rows * g.ow;
          std::memmove(plane, plane + (cr0 - held0) * g.ow, static_cast<size_t>(kept * g.ow) * sizeof(float));
        }
      if (cr0 + kept < cr1) {
        // The stem writes row oy of channel m at y + m * oh * ow + oy * ow: oh is the planes' height here and
        // y is shifted up by cr0 rows.
        conv_detail::DepthwiseBlockArgs a =
            g.block_args(n, m_, 3, 2, x.data<float>(), bias ? bias->data<float>() : nullptr, nullptr, rows, act_);
        a.oh = max_conv_rows;
        a.y = rows - cr0 * g.ow;
        a.w = stem_w_->data();
        a.scratch = stem_buf;
        a.cg = cg_;
        a.mg = m_;
        dw.stem(a, 0, cr0 + kept, cr1);
      }
      held_n = n, held0 = cr0, held1 = cr1;
      // Pool rows [pr0, pr1) from those rows: windows start at pr * sh - pad_top, so relative to
      // row cr0 the top padding remains only for the first strip.
      Pool2dParams sq = q;
      sq.pad_top = q.pad_top - (pr0 * q.sh - cr0);
      for (int64_t m = 0; m < m_; ++m)
        pt->plane(sq, rows + m * max_conv_rows * g.ow, cr1 - cr0, g.ow,
                  y.data<float>() + ((n * m_ + m) * poh + pr0) * pw, pr1 - pr0, pw, pool_buf, buf_len, per_strip);
    }
  });
  if (oom.load()) return Status(core::StatusCode::kOutOfMemory, "conv: cannot allocate the pooled stem's scratch");
  return Status::ok();
}

Status FastConv::run_winograd(const Geometry& g, const float* x, const float* bias, const float* z, float* y,
                              core::ThreadPool* pool) const {
  const conv_detail::WinogradKernels wk = conv_detail::winograd_kernels(isa_);
  const int width = conv_detail::depthwise_blocked(isa_).width;
  const int64_t tw = (g.ow + 1) / 2, th = (g.oh + 1) / 2;
  // Chunks of tile rows whose transformed input and GEMM output (16 x (C + M) x tiles) stay near 1 MiB.
  const int64_t per_row = 16 * (cg_ + m_) * tw;
  int64_t rows_per_chunk = std::clamp<int64_t>((int64_t{1} << 18) / std::max<int64_t>(per_row, 1), 1, th);
  const int64_t row_floats = conv_detail::winograd_row_scratch_floats(tw, width);
  const int threads = pool ? pool->num_threads() : 1;
  // With threads, whole chunks are tasks when there are enough tiles: each thread transforms,
  // multiplies and writes back its own tiles in its own cache. Splitting every phase across the
  // threads instead makes each phase read half its operands from the other core's cache.
  bool chunk_tasks = false;
  if (threads > 1) {
    const int64_t chunks = (th + rows_per_chunk - 1) / rows_per_chunk;
    const int64_t want = (std::max<int64_t>(chunks, threads) + threads - 1) / threads * threads;
    const int64_t rows = (th + want - 1) / want;
    if (rows * tw >= kWinogradMinTilesPerTask) {
      rows_per_chunk = rows;
      chunk_tasks = true;
    }
  }
  const int64_t chunks = (th + rows_per_chunk - 1) / rows_per_chunk;
  const int64_t buf_floats = per_row * rows_per_chunk + 64;
  std::atomic<bool> oom{false};
  // One chunk of tile rows [ty0, ty1) of image n, output channels [m0, m0 + w[0].m()) with `w` the
  // 16 weight operands of those rows; `inner` splits its phases (null: inline). `out`: where those
  // channels' planes go (null: y).
  auto chunk = [&](int64_t n, int64_t ty0, float* buf, const PackedA* w, int64_t m0, core::ThreadPool* inner,
                   float* out = nullptr) -> Status {
    const int64_t mc = w[0].m();
    conv_detail::WinogradArgs a;
    a.x = x + n * g.c * g.ih * g.iw;
    a.c = cg_;
    a.m = mc;
    a.ih = g.ih;
    a.iw = g.iw;
    a.oh = g.oh;
    a.ow = g.ow;
    a.pad_top = g.pt;
    a.pad_left = g.pl;
    a.tw = tw;
    a.ty0 = ty0;
    a.ty1 = std::min(th, ty0 + rows_per_chunk);
    const int64_t nt = (a.ty1 - ty0) * tw;
    a.v = buf;
    float* mt = buf + 16 * cg_ * nt;
    a.mt = mt;
    a.bias = bias ? bias + m0 : nullptr;
    a.residual = z ? z + (n * m_ + m0) * g.oh * g.ow : nullptr;
    a.y = out ? out : y + (n * m_ + m0) * g.oh * g.ow;
    a.activation = act_.kind;
    a.act_alpha = act_.alpha;
    a.act_beta = act_.beta;
    core::parallel_for(inner, cg_, 1, [&](int64_t c0, int64_t c1) {
      conv_detail::WinogradArgs t = a;
      t.row_scratch = thread_scratch(row_floats, 1);
      if (!t.row_scratch) {
        oom.store(true);
        return;
      }
      wk.input(t, c0, c1);
    });
    if (oom.load()) return Status(core::StatusCode::kOutOfMemory, "conv: cannot allocate Winograd buffers");
    // The 16 GEMMs are independent: with a pool each one is a task on one thread (each is small,
    // so splitting every GEMM across threads would mostly add synchronization).
    Status gemm_status[16];
    auto gemm = [&](int64_t xi) {
      SgemmContext one{nullptr, isa_};
      gemm_status[xi] =
          sgemm(mc, nt, cg_, 1.f, SgemmA(w[xi]), SgemmB(a.v + xi * cg_ * nt, nt), 0.f, mt + xi * mc * nt, nt, {}, one);
    };
    if (inner && inner->num_threads() > 1) {
      inner->run(16, gemm);
    } else {
      for (int64_t xi = 0; xi < 16; ++xi) gemm(xi);
    }
    for (const Status& st : gemm_status) KESTREL_RETURN_IF_ERROR(st);
    core::parallel_for(inner, mc, 1, [&](int64_t c0, int64_t c1) { wk.output(a, c0, c1); });
    return Status::ok();
  };
  std::atomic<bool> failed{false};
  if (chunk_tasks) {
    // As in the output-channel split below, the tiles go to the thread's scratch (whole planes, of
    // which the chunk's rows are written) and then into y with non-temporal stores, for outputs up to
    // 1 MiB (the scratch is that big on every thread): SqueezeNet's 27x27 expand3x3 at 2 threads
    // 171-190 -> 152-157 us, the model 2.70-2.79 -> 2.66-2.70 ms (same binary toggled, three pairs).
    const bool via_scratch = m_ * g.oh * g.ow * int64_t{4} <= (int64_t{1} << 20);
    auto task = [&](int64_t i) {
      float* buf = thread_scratch(buf_floats);
      float* out = via_scratch ? thread_scratch(m_ * g.oh * g.ow, 2) : nullptr;
      if (!buf || (via_scratch && !out)) {
        oom.store(true);
        return;
      }
      const int64_t n = i / chunks, ty0 = i % chunks * rows_per_chunk;
      if (!chunk(n, ty0, buf, winograd_.data(), 0, nullptr, out).is_ok()) failed.store(true);
      if (out) {
        const int64_t r0 = 2 * ty0, r1 = std::min(g.oh, 2 * (ty0 + rows_per_chunk)), ohw = g.oh * g.ow;
        for (int64_t m = 0; m < m_; ++m)
          copy_streaming(y + (n * m_ + m) * ohw + r0 * g.ow, out + m * ohw + r0 * g.ow, (r1 - r0) * g.ow, m + 1 == m_);
      }
    };
    // One contiguous range of chunks per thread (the caller's first), as in run_im2col_strips.
    run_in_ranges(pool, g.n * chunks, task);
  } else if (threads > 1 && m_ >= threads * 2 * tile_mr_) {
    // Too few tiles for a chunk per thread: each thread takes a range of output channels (whole
    // tile-height slivers of the packed weights) over all tiles, transforming the whole input
    // itself (C x tiles x 16, small next to the GEMMs). Then it reads and writes only its own
    // buffer and output planes; splitting each phase across the threads instead made every phase
    // read half its operands from the other core's cache (13 x 13, 64 -> 256: 1.1x at 2 threads).
    // The output tiles go to the thread's scratch and then into y with non-temporal stores: both
    // cores read the input, and y's arena lines were last held by both, so ordinary stores there
    // waited for the other core's copies (SqueezeNet's 13x13 expand3x3 in the model at 2 threads:
    // 168-181 -> 142-155 us, the model 2.74-2.75 -> 2.66-2.69 ms; the next op reads y no slower).
    pool->run(threads, [&](int64_t t) {
      const int64_t slivers = (m_ + tile_mr_ - 1) / tile_mr_;
      const int64_t m0 = std::min(m_, (slivers * t + threads / 2) / threads * tile_mr_);
      const int64_t m1 = std::min(m_, (slivers * (t + 1) + threads / 2) / threads * tile_mr_);
      if (m0 >= m1) return;
      PackedA w[16];
      for (int xi = 0; xi < 16; ++xi) {
        Result<PackedA> r = winograd_[static_cast<size_t>(xi)].slice_rows(m0, m1);
        if (!r.is_ok()) {
          failed.store(true);
          return;
        }
        w[xi] = std::move(r).value();
      }
      float* buf = thread_scratch(buf_floats);
      const int64_t planes = (m1 - m0) * g.oh * g.ow;
      float* out = thread_scratch(planes, 2);
      if (!buf || !out) {
        oom.store(true);
        return;
      }
      for (int64_t n = 0; n < g.n; ++n) {
        for (int64_t ty0 = 0; ty0 < th; ty0 += rows_per_chunk)
          if (!chunk(n, ty0, buf, w, m0, nullptr, out).is_ok()) failed.store(true);
        copy_streaming(y + (n * m_ + m0) * g.oh * g.ow, out, planes);
      }
    });
  } else {
    float* buf = thread_scratch(buf_floats);
    if (!buf) return Status(core::StatusCode::kOutOfMemory, "conv: cannot allocate Winograd buffers");
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t ty0 = 0; ty0 < th; ty0 += rows_per_chunk)
        KESTREL_RETURN_IF_ERROR(chunk(n, ty0, buf, winograd_.data(), 0, pool));
    return Status::ok();
  }
  if (oom.load()) return Status(core::StatusCode::kOutOfMemory, "conv: cannot allocate Winograd buffers");
  if (failed.load()) return core::internal_error("conv: Winograd GEMM failed");
  return Status::ok();
}

Status FastConv::run_im2col(const Geometry& g, const float* x, const float* bias, const float* z, float* y,
                            core::ThreadPool* pool) const {
  const int64_t mg = m_ / group_, kdim = cg_ * kh_ * kw_, ihw = g.ih * g.iw, ohw = g.oh * g.ow;
  const int64_t rows = g.c * kh_ * kw_;  // all groups: group gi owns rows [gi * kdim, (gi + 1) * kdim)
  int64_t col_floats;
  if (__builtin_mul_overflow(rows, ohw, &col_floats) || col_floats > (int64_t{1} << 36))
    return core::out_of_range("conv: im2col buffer too large");
  const conv_detail::Im2colFn im2col = conv_detail::im2col_fn(isa_);
  GemmEpilogue ep;
  ep.activation = act_.kind;
  ep.act_alpha = act_.alpha;
  ep.act_beta = act_.beta;
  // With threads and enough output rows, strips of output rows are tasks: each thread unfolds its
  // strip into its own buffer (sized for L2) and multiplies it there. Splitting im2col by rows of
  // col and then the GEMM by columns makes every thread read half of col from the other core.
  const int threads = pool ? pool->num_threads() : 1;
  if (threads > 1) {
    const int64_t per_row = rows * g.ow;  // col floats per output row
    int64_t strips = std::max<int64_t>((per_row * g.oh + kIm2colStripFloats - 1) / kIm2colStripFloats, threads);
    strips = std::min<int64_t>((strips + threads - 1) / threads * threads, g.oh);
    const int64_t rows_per_strip = (g.oh + strips - 1) / strips;
    strips = (g.oh + rows_per_strip - 1) / rows_per_strip;
    if (strips >= threads && rows_per_strip * g.ow >= kIm2colMinStripColumns)
      return run_im2col_strips(g, x, bias, z, y, pool, rows_per_strip, ep);
  }
  float* col = thread_scratch(std::max<int64_t>(col_floats, 1));
  if (!col) return Status(core::StatusCode::kOutOfMemory, "conv: cannot allocate im2col buffer");
  SgemmContext ctx{pool, isa_, split_columns_};
  for (int64_t n = 0; n < g.n; ++n) {
    conv_detail::Im2colArgs args;
    args.x = x + n * g.c * ihw;
    args.ih = g.ih;
    args.iw = g.iw;
    args.kh = kh_;
    args.kw = kw_;
    args.sh = g.sh;
    args.sw = g.sw;
    args.dh = g.dh;
    args.dw = g.dw;
    args.pt = g.pt;
    args.pl = g.pl;
    args.oh = g.oh;
    args.ow = g.ow;
    args.col = col;
    core::parallel_for(pool, rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(ohw, 1)),
                       [&](int64_t r0, int64_t r1) { im2col(args, r0, r1); });
    float* yn = y + n * m_ * ohw;
    const float* zn = z ? z + n * m_ * ohw : nullptr;
    if (group_ == 1) {
      GemmEpilogue e = ep;
      if (bias) {
        e.bias_kind = GemmBias::kPerRow;
        e.bias = bias;
      }
      if (zn) {
        e.residual = zn;
        e.ldr = ohw;
      }
      const SgemmA a = packed_.empty() ? SgemmA(w_->data(), kdim) : SgemmA(packed_[0]);
      KESTREL_RETURN_IF_ERROR(sgemm(mg, ohw, kdim, 1.f, a, SgemmB(col, ohw), 0.f, yn, ohw, e, ctx));
      continue;
    }
    // Groups: one batched GEMM (entry = group; A, B, C, residual strided). The batch shares one
    // bias, so the per-channel bias is written into Y first and accumulated with beta = 1.
    float beta = 0.f;
    if (bias) {
      for (int64_t m = 0; m < m_; ++m) std::fill(yn + m * ohw, yn + (m + 1) * ohw, bias[m]);
      beta = 1.f;
    }
    SgemmBatch batch;
    batch.count = group_;
    batch.stride_a = mg * kdim;
    batch.stride_b = kdim * ohw;
    batch.stride_c = mg * ohw;
    GemmEpilogue e = ep;
    if (zn) {
      e.residual = zn;
      e.ldr = ohw;
      batch.stride_residual = mg * ohw;
    }
    KESTREL_RETURN_IF_ERROR(
        sgemm_batched(mg, ohw, kdim, 1.f, SgemmA(w_->data(), kdim), SgemmB(col, ohw), beta, yn, ohw, batch, e, ctx));
  }
  return Status::ok();
}

Status FastConv::run_im2col_strips(const Geometry& g, const float* x, const float* bias, const float* z, float* y,
                                   core::ThreadPool* pool, int64_t rows_per_strip, const GemmEpilogue& ep) const {
  const int64_t mg = m_ / group_, kdim = cg_ * kh_ * kw_, ihw = g.ih * g.iw, ohw = g.oh * g.ow;
  const int64_t rows = g.c * kh_ * kw_;
  const int64_t strips = (g.oh + rows_per_strip - 1) / rows_per_strip;
  const conv_detail::Im2colFn im2col = conv_detail::im2col_fn(isa_);
  const SgemmContext one{nullptr, isa_};
  std::atomic<bool> oom{false}, failed{false};
  auto task = [&](int64_t i) {
    const int64_t n = i / strips, oy0 = i % strips * rows_per_strip, oy1 = std::min(g.oh, oy0 + rows_per_strip);
    const int64_t cols = (oy1 - oy0) * g.ow;
    float* col = thread_scratch(rows * cols);
    if (!col) {
      oom.store(true);
      return;
    }
    // The strip as an image of its own: output rows from oy0, the top pad shifted to match
    // (negative once the strip starts below the padding).
    conv_detail::Im2colArgs args;
    args.x = x + n * g.c * ihw;
    args.ih = g.ih;
    args.iw = g.iw;
    args.kh = kh_;
    args.kw = kw_;
    args.sh = g.sh;
    args.sw = g.sw;
    args.dh = g.dh;
    args.dw = g.dw;
    args.pt = g.pt - oy0 * g.sh;
    args.pl = g.pl;
    args.oh = oy1 - oy0;
    args.ow = g.ow;
    args.col = col;
    im2col(args, 0, rows);
    float* yn = y + n * m_ * ohw + oy0 * g.ow;
    const float* zn = z ? z + n * m_ * ohw + oy0 * g.ow : nullptr;
    GemmEpilogue e = ep;
    if (zn) {
      e.residual = zn;
      e.ldr = ohw;
    }
    Status st;
    if (group_ == 1) {
      if (bias) {
        e.bias_kind = GemmBias::kPerRow;
        e.bias = bias;
      }
      const SgemmA a = packed_.empty() ? SgemmA(w_->data(), kdim) : SgemmA(packed_[0]);
      st = sgemm(mg, cols, kdim, 1.f, a, SgemmB(col, cols), 0.f, yn, ohw, e, one);
    } else {
      float beta = 0.f;
      if (bias) {
        for (int64_t m = 0; m < m_; ++m) std::fill(yn + m * ohw, yn + m * ohw + cols, bias[m]);
        beta = 1.f;
      }
      SgemmBatch batch;
      batch.count = group_;
      batch.stride_a = mg * kdim;
      batch.stride_b = kdim * cols;
      batch.stride_c = mg * ohw;
      if (zn) batch.stride_residual = mg * ohw;
      st =
          sgemm_batched(mg, cols, kdim, 1.f, SgemmA(w_->data(), kdim), SgemmB(col, cols), beta, yn, ohw, batch, e, one);
    }
    if (!st.is_ok()) failed.store(true);
  };
  // One contiguous range of strips per thread (the caller's first), not strips taken in turn: the
  // rows each thread reads are then the ones that the convs before wrote on that thread when they
  // split their pixels the same way (set_split_columns), and the next convs read its rows back.
  run_in_ranges(pool, g.n * strips, task);
  if (oom.load()) return Status(core::StatusCode::kOutOfMemory, "conv: cannot allocate im2col buffer");
  if (failed.load()) return core::internal_error("conv: im2col GEMM failed");
  return Status::ok();
}

}  // namespace kestrel::kernels::cpu

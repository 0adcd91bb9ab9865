// Fast attention: heads are pool tasks (each runs its two GEMMs on its own thread); with fewer
// heads than threads, heads run one after another and the GEMMs use the pool instead.
#include "kernels/cpu/attention/attention.h"

#include <atomic>
#include <memory>
#include <new>

#include "core/str_util.h"
#include "core/thread_scratch.h"
#include "kernels/cpu/conv/depthwise.h"
#include "kernels/cpu/gemm/sgemm.h"

namespace kestrel::kernels::cpu {

using core::str_cat;
using core::Tensor;

namespace {

core::ScratchSlot g_scores;  // per-thread score rows

float* scores_scratch(int64_t floats) { return g_scores.get_as<float>(static_cast<size_t>(floats)); }

}  // namespace

core::Status attention(float scale, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, Tensor& y,
                       core::ThreadPool* pool, core::Isa isa) {
  for (const Tensor* t : {&q, &k, &v, mask, static_cast<const Tensor*>(&y)})
    if (t && t->dtype() != core::DType::kF32)
      return core::invalid_argument(str_cat("Attention: fast kernel needs f32, got ", t->type_string()));
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4 || y.rank() != 4)
    return core::invalid_argument("Attention: Q, K, V and the output must be 4-D [B, H, S, D]");
  const int64_t sq = q.dim(2), d = q.dim(3), sk = k.dim(2), dv = v.dim(3);
  if (k.dim(3) != d || v.dim(2) != sk)
    return core::invalid_argument(str_cat("Attention: Q ", q.type_string(), ", K ", k.type_string(), " and V ",
                                          v.type_string(), " do not agree on D or Sk"));
  const int64_t nb = y.dim(0), nh = y.dim(1);
  if (y.dim(2) != sq || y.dim(3) != dv)
    return core::invalid_argument(str_cat("Attention: output ", y.type_string(), " must be [B, H, ", sq, ", ", dv, "]"));
  for (const Tensor* t : {&q, &k, &v})
    for (int64_t i = 0; i < 2; ++i)
      if (t->dim(i) != 1 && t->dim(i) != y.dim(i))
        return core::invalid_argument(
            str_cat("Attention: ", t->type_string(), " does not broadcast to the output ", y.type_string()));
  // The mask's strides over the scores [B, H, Sq, Sk] (0 along broadcast dims); fixed arrays, so a
  // call allocates nothing.
  const int64_t scores[4] = {nb, nh, sq, sk};
  int64_t ms[4] = {0, 0, 0, 0};
  if (mask) {
    const int64_t mr = mask->rank();
    bool ok = mr <= 4;
    int64_t stride = 1;
    for (int64_t i = 3; ok && i >= 4 - mr; --i) {
      const int64_t md = mask->dim(i - (4 - mr));
      ok = md == scores[i] || md == 1;
      ms[i] = md == 1 ? 0 : stride;
      stride *= md;
    }
    if (!ok)
      return core::invalid_argument(str_cat("Attention: mask ", mask->type_string(), " does not broadcast to [", nb,
                                            ",", nh, ",", sq, ",", sk, "]"));
  }
  const conv_detail::SoftmaxRowsFn softmax = conv_detail::softmax_rows_fn(isa);
  if (!softmax || isa > core::detected_isa())
    return core::unsupported(str_cat("Attention: ", core::isa_name(isa), " not available"));
  if (y.num_elements() == 0) return core::Status::ok();
  auto head_offset = [](const Tensor& t, int64_t b, int64_t h) {
    return ((t.dim(0) == 1 ? 0 : b) * t.dim(1) + (t.dim(1) == 1 ? 0 : h)) * t.dim(2) * t.dim(3);
  };
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t heads = nb * nh;
  const bool heads_parallel = threads > 1 && heads >= threads;
  const SgemmContext ctx{heads_parallel ? nullptr : pool, isa};
  std::atomic<bool> failed{false};
  core::Status first_error;
  auto head = [&](int64_t t) {
    const int64_t b = t / nh, h = t % nh;
    float* s = scores_scratch(std::max<int64_t>(sq * sk, 1));
    core::Status st = s ? core::Status::ok() : core::Status(core::StatusCode::kOutOfMemory, "Attention: scores");
    if (st.is_ok())
      st = sgemm(sq, sk, d, scale, SgemmA(q.data<float>() + head_offset(q, b, h), d),
                 SgemmB(k.data<float>() + head_offset(k, b, h), d, true), 0.f, s, sk, {}, ctx);
    if (st.is_ok()) {
      if (mask) {
        const float* mp = mask->data<float>() + b * ms[0] + h * ms[1];
        for (int64_t i = 0; i < sq; ++i)
          for (int64_t j = 0; j < sk; ++j) s[i * sk + j] += mp[i * ms[2] + j * ms[3]];
      }
      softmax(s, sq, sk, sk);
      st = sgemm(sq, dv, sk, 1.f, SgemmA(s, sk), SgemmB(v.data<float>() + head_offset(v, b, h), dv), 0.f,
                 y.data<float>() + (b * nh + h) * sq * dv, dv, {}, ctx);
    }
    if (!st.is_ok() && !failed.exchange(true)) first_error = st;
  };
  if (heads_parallel) {
    pool->run(heads, head);
  } else {
    for (int64_t t = 0; t < heads; ++t) head(t);
  }
  return failed.load() ? first_error : core::Status::ok();
}

}  // namespace kestrel::kernels::cpu

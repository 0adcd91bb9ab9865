// Schema of kestrel.Attention: scaled-dot-product attention on [B, H, S, D] tensors with an
// optional additive mask (docs/fused_ops.md).
#include <cmath>

#include "core/str_util.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

// a and b must agree where both are known and neither is 1 (broadcast dims); the larger wins.
core::Result<Dim> broadcast_dim(const InferContext& ctx, const Dim& a, const Dim& b, const char* what) {
  if (a.known() && b.known()) {
    if (a.value != b.value && a.value != 1 && b.value != 1)
      return ctx.fail(what, " do not broadcast: ", a.value, " and ", b.value);
    return Dim(std::max(a.value, b.value));
  }
  if (a.known() && a.value != 1) return a;
  if (b.known() && b.value != 1) return b;
  if (!a.known() && !b.known() && a == b) return a;
  if (a.known()) return b;  // a == 1
  if (b.known()) return a;
  return Dim::unknown();
}

Status infer_attention(InferContext& ctx) {
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    KESTREL_RETURN_IF_ERROR(expect_float(ctx, i));
    DType a = ctx.input_dtype(0), b = ctx.input_dtype(i);
    if (a != DType::kUndefined && b != DType::kUndefined && a != b)
      return ctx.fail("input ", i, " has dtype ", core::dtype_name(b), ", Q has ", core::dtype_name(a));
  }
  KESTREL_ASSIGN_OR_RETURN(float scale, ctx.node().attr_float("scale", 1.0f));
  if (!std::isfinite(scale)) return ctx.fail("scale must be finite, is ", scale);
  static const char* kNames[] = {"Q", "K", "V"};
  for (size_t i = 0; i < 3; ++i) {
    const Shape& s = ctx.input_shape(i);
    if (s.rank_known() && s.rank() != 4) return ctx.fail(kNames[i], " must be [B, H, S, D], is ", s.to_string());
  }
  const Shape& qs = ctx.input_shape(0);
  const Shape& ks = ctx.input_shape(1);
  const Shape& vs = ctx.input_shape(2);
  if (!qs.rank_known() || !ks.rank_known() || !vs.rank_known()) {
    ctx.set_output(0, ctx.input_dtype(0), unknown_dims(4));
    return Status::ok();
  }
  if (qs[3].known() && ks[3].known() && qs[3].value != ks[3].value)
    return ctx.fail("Q ", qs.to_string(), " and K ", ks.to_string(), " must have the same head size D");
  if (ks[2].known() && vs[2].known() && ks[2].value != vs[2].value)
    return ctx.fail("K ", ks.to_string(), " and V ", vs.to_string(), " must have the same sequence length");
  std::vector<Dim> out(4);
  for (int64_t i = 0; i < 2; ++i) {
    KESTREL_ASSIGN_OR_RETURN(Dim d, broadcast_dim(ctx, qs[i], ks[i], "batch/head dims of Q and K"));
    KESTREL_ASSIGN_OR_RETURN(d, broadcast_dim(ctx, d, vs[i], "batch/head dims of Q, K and V"));
    out[static_cast<size_t>(i)] = d;
  }
  out[2] = qs[2];
  out[3] = vs[3];
  if (ctx.has_input(3)) {
    const Shape& ms = ctx.input_shape(3);
    if (ms.rank_known()) {
      if (ms.rank() > 4) return ctx.fail("mask ", ms.to_string(), " has rank > 4");
      const Dim sk = ks[2].known() ? ks[2] : vs[2];
      const Dim want[4] = {out[0], out[1], out[2], sk};
      for (int64_t j = 0; j < ms.rank(); ++j) {
        const Dim& md = ms[j];
        const Dim& w = want[4 - ms.rank() + j];
        if (md.known() && md.value != 1 && w.known() && md.value != w.value)
          return ctx.fail("mask ", ms.to_string(), " does not broadcast to [B, H, Sq, Sk] = [", out[0].to_string(), ",",
                          out[1].to_string(), ",", out[2].to_string(), ",", sk.to_string(), "]");
      }
    }
  }
  ctx.set_output(0, ctx.input_dtype(0), Shape(std::move(out)));
  return Status::ok();
}

}  // namespace

void register_attention_ops(OpRegistry& r) {
  add_kestrel_op(r, "Attention", 3, 4, infer_attention, "softmax(scale * Q K^T + mask) V on [B, H, S, D]");
}

}  // namespace kestrel::ir

// Schemas of the matrix-product ops: Gemm (transA/transB, alpha/beta, optional C with
// unidirectional broadcasting) and MatMul (numpy.matmul semantics, 1-D operands included), and
// Kestrel's kestrel.FusedGemm / kestrel.FusedMatMul (bias, residual and activation epilogues,
// docs/fused_ops.md).
#include "core/str_util.h"
#include "ir/ops/fused_activation.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

Status expect_matmul_dtypes(const InferContext& ctx) {
  DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !core::is_float(t) && t != DType::kI32 && t != DType::kI64 && t != DType::kU32 &&
      t != DType::kU64)
    return ctx.fail("dtype ", core::dtype_name(t), " is not supported (float, i32, i64, u32, u64)");
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    DType u = ctx.input_dtype(i);
    if (t != DType::kUndefined && u != DType::kUndefined && u != t)
      return ctx.fail("input ", i, " has dtype ", core::dtype_name(u), ", input 0 has ", core::dtype_name(t));
  }
  return Status::ok();
}

// a and b must be equal when both are known; the known one wins.
core::Result<Dim> unify(const InferContext& ctx, const Dim& a, const Dim& b, const char* what) {
  if (a.known() && b.known() && a.value != b.value) return ctx.fail(what, " differ: ", a.value, " and ", b.value);
  return a.known() ? a : b;
}

Status infer_gemm(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_matmul_dtypes(ctx));
  KESTREL_RETURN_IF_ERROR(expect_rank(ctx, 0, 2));
  KESTREL_RETURN_IF_ERROR(expect_rank(ctx, 1, 2));
  KESTREL_ASSIGN_OR_RETURN(int64_t ta, ctx.attr_int("transA", 0));
  KESTREL_ASSIGN_OR_RETURN(int64_t tb, ctx.attr_int("transB", 0));
  const Shape& as = ctx.input_shape(0);
  const Shape& bs = ctx.input_shape(1);
  Dim m, k, kb, n;
  if (as.rank_known()) {
    m = as[ta ? 1 : 0];
    k = as[ta ? 0 : 1];
  }
  if (bs.rank_known()) {
    kb = bs[tb ? 1 : 0];
    n = bs[tb ? 0 : 1];
  }
  if (k.known() && kb.known() && k.value != kb.value)
    return ctx.fail("inner dimensions differ: A ", as.to_string(), (ta ? " (transposed)" : ""), " and B ",
                    bs.to_string(), (tb ? " (transposed)" : ""));
  if (ctx.has_input(2)) {
    const Shape& cs = ctx.input_shape(2);
    if (cs.rank_known()) {
      if (cs.rank() > 2) return ctx.fail("C ", cs.to_string(), " must have rank <= 2");
      const Dim* want[2] = {&m, &n};
      for (int64_t i = 0; i < cs.rank(); ++i) {
        const Dim& d = cs[i];
        const Dim& w = *want[2 - cs.rank() + i];
        if (d.known() && d.value != 1 && w.known() && d.value != w.value)
          return ctx.fail("C ", cs.to_string(), " does not broadcast to [", m.to_string(), ",", n.to_string(), "]");
      }
    }
  }
  ctx.set_output(0, ctx.input_dtype(0), Shape(std::vector<Dim>{m, n}));
  return Status::ok();
}

Status infer_matmul(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_matmul_dtypes(ctx));
  const Shape& as = ctx.input_shape(0);
  const Shape& bs = ctx.input_shape(1);
  if (as.rank_known() && as.rank() < 1) return ctx.fail("A must have rank >= 1, is a scalar");
  if (bs.rank_known() && bs.rank() < 1) return ctx.fail("B must have rank >= 1, is a scalar");
  if (!as.rank_known() || !bs.rank_known()) {
    ctx.set_output(0, ctx.input_dtype(0), Shape::unknown_rank());
    return Status::ok();
  }
  std::vector<Dim> ad = *as.dims, bd = *bs.dims;
  if (ad.size() == 1) ad.insert(ad.begin(), Dim(1));
  if (bd.size() == 1) bd.push_back(Dim(1));
  KESTREL_ASSIGN_OR_RETURN(Dim k, unify(ctx, ad.back(), bd[bd.size() - 2], "inner dimensions of MatMul"));
  (void)k;
  Shape abatch(std::vector<Dim>(ad.begin(), ad.end() - 2)), bbatch(std::vector<Dim>(bd.begin(), bd.end() - 2));
  auto batch = broadcast_shapes({&abatch, &bbatch});
  if (!batch.is_ok())
    return ctx.fail("batch dims of ", as.to_string(), " and ", bs.to_string(), ": ", batch.status().message());
  std::vector<Dim> out = *batch->dims;
  if (as.rank() > 1) out.push_back(ad[ad.size() - 2]);
  if (bs.rank() > 1) out.push_back(bd.back());
  ctx.set_output(0, ctx.input_dtype(0), Shape(std::move(out)));
  return Status::ok();
}

Status infer_fused_gemm(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(read_fused_activation(ctx.node()).status());
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  return infer_gemm(ctx);
}

// FusedMatMul: MatMul(A, B) (B of rank >= 2) + bias[N] + Z (the output's shape), then activation.
Status infer_fused_matmul(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(read_fused_activation(ctx.node()).status());
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  const Shape& bs = ctx.input_shape(1);
  if (bs.rank_known() && bs.rank() < 2) return ctx.fail("B must have rank >= 2, is ", bs.to_string());
  KESTREL_RETURN_IF_ERROR(infer_matmul(ctx));
  const Shape& ys = ctx.outputs()[0].shape;
  if (ctx.has_input(2)) {
    const Shape& cs = ctx.input_shape(2);
    if (cs.rank_known() && cs.rank() != 1) return ctx.fail("bias must be 1-D [N], is ", cs.to_string());
    if (cs.rank_known() && ys.rank_known() && cs[0].known() && ys[ys.rank() - 1].known() &&
        cs[0].value != ys[ys.rank() - 1].value)
      return ctx.fail("bias ", cs.to_string(), " must have N = ", ys[ys.rank() - 1].value, " elements");
  }
  KESTREL_RETURN_IF_ERROR(expect_residual_shape(ctx, 3, ys));
  return Status::ok();
}

}  // namespace

void register_matmul_ops(OpRegistry& r) {
  add_op(r, "Gemm", 2, 3, 1, 1, infer_gemm, "alpha * op(A) * op(B) + beta * C");
  add_op(r, "MatMul", 2, 2, 1, 1, infer_matmul, "numpy.matmul");
  add_kestrel_op(r, "FusedGemm", 2, 3, infer_fused_gemm, "activation(alpha * op(A) * op(B) + beta * C)");
  add_kestrel_op(r, "FusedMatMul", 2, 4, infer_fused_matmul, "activation(matmul(A, B) + bias + Z)");
}

}  // namespace kestrel::ir

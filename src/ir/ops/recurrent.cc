// Schemas of the recurrent ops RNN, GRU and LSTM (ONNX opset 14 form, with `layout`): input
// shape checks against hidden_size and direction, and the shapes of Y, Y_h and Y_c.
#include "core/str_util.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

// Input slots shared by the three ops; initial_c and P exist only for LSTM.
enum : size_t { kX = 0, kW, kR, kB, kSeqLens, kInitialH, kInitialC, kP };

struct Cell {
  int64_t gates;  // 1, 3, 4
  bool has_c;     // LSTM: initial_c, P and Y_c
};

// Unifies an expected dim with what an input says; fails on a known mismatch.
Status unify(const InferContext& ctx, Dim& known, const Dim& seen, const char* what) {
  if (seen.known() && known.known() && seen.value != known.value)
    return ctx.fail(what, " is ", seen.value, " but other inputs imply ", known.value);
  if (!known.known() && (seen.known() || !seen.symbol.empty())) known = seen;
  return Status::ok();
}

// Checks that input i has rank want.size() and, where both sides are known, the dims of `want`.
Status check_input(const InferContext& ctx, size_t i, const char* name, const std::vector<Dim>& want) {
  if (!ctx.has_input(i)) return Status::ok();
  const Shape& s = ctx.input_shape(i);
  if (!s.rank_known()) return Status::ok();
  if (s.rank() != static_cast<int64_t>(want.size()))
    return ctx.fail(name, " must have rank ", want.size(), ", has shape ", s.to_string());
  for (size_t d = 0; d < want.size(); ++d) {
    const Dim& have = s[static_cast<int64_t>(d)];
    if (have.known() && want[d].known() && have.value != want[d].value)
      return ctx.fail(name, " has shape ", s.to_string(), ", expected ", Shape(want).to_string());
  }
  return Status::ok();
}

Status infer_recurrent(InferContext& ctx, Cell cell) {
  for (size_t i : {kX, kW, kR, kB, kInitialH, kInitialC, kP}) {
    if (!ctx.has_input(i)) continue;
    KESTREL_RETURN_IF_ERROR(expect_float(ctx, i));
    if (ctx.input_dtype(i) != ctx.input_dtype(kX) && ctx.input_dtype(i) != DType::kUndefined &&
        ctx.input_dtype(kX) != DType::kUndefined)
      return ctx.fail("input ", i, " is ", core::dtype_name(ctx.input_dtype(i)), " but X is ",
                      core::dtype_name(ctx.input_dtype(kX)));
  }
  if (!cell.has_c && (ctx.has_input(kInitialC) || ctx.has_input(kP))) return ctx.fail("has inputs beyond initial_h");
  if (ctx.has_input(kSeqLens)) {
    DType t = ctx.input_dtype(kSeqLens);
    if (t != DType::kUndefined && t != DType::kI32 && t != DType::kI64)
      return ctx.fail("sequence_lens must be int32, is ", core::dtype_name(t));
  }
  KESTREL_ASSIGN_OR_RETURN(std::string direction, ctx.attr_string("direction", "forward"));
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return ctx.fail("direction must be forward, reverse or bidirectional, got '", direction, "'");
  const int64_t D = direction == "bidirectional" ? 2 : 1;
  KESTREL_ASSIGN_OR_RETURN(int64_t layout, ctx.attr_int("layout", 0));
  if (layout != 0 && layout != 1) return ctx.fail("layout must be 0 or 1, got ", layout);
  KESTREL_ASSIGN_OR_RETURN(int64_t hidden_attr, ctx.attr_int("hidden_size", 0));
  if (hidden_attr < 0 || hidden_attr > core::kMaxElements) return ctx.fail("hidden_size ", hidden_attr, " is invalid");
  if (ctx.node().has_attr("hidden_size") && hidden_attr == 0) return ctx.fail("hidden_size must be positive");

  for (size_t i : {kX, kW, kR}) KESTREL_RETURN_IF_ERROR(expect_rank(ctx, i, 3));
  Dim seq, batch, input, hidden = hidden_attr > 0 ? Dim(hidden_attr) : Dim::unknown();
  const Shape& xs = ctx.input_shape(kX);
  if (xs.rank_known()) {
    seq = xs[layout == 1 ? 1 : 0];
    batch = xs[layout == 1 ? 0 : 1];
    input = xs[2];
  }
  const Shape& rs = ctx.input_shape(kR);
  if (rs.rank_known()) KESTREL_RETURN_IF_ERROR(unify(ctx, hidden, rs[2], "R's last dim (hidden_size)"));
  const Shape& ws = ctx.input_shape(kW);
  if (ws.rank_known()) {
    KESTREL_RETURN_IF_ERROR(unify(ctx, input, ws[2], "W's last dim (input_size)"));
    if (!hidden.known() && ws[1].known()) {
      if (ws[1].value % cell.gates != 0)
        return ctx.fail("W's dim 1 (", ws[1].value, ") is not a multiple of ", cell.gates);
      hidden = Dim(ws[1].value / cell.gates);
    }
  }
  if (ctx.has_input(kSeqLens)) {
    const Shape& ss = ctx.input_shape(kSeqLens);
    if (ss.rank_known() && ss.rank() != 1)
      return ctx.fail("sequence_lens must have rank 1, has shape ", ss.to_string());
    if (ss.rank_known()) KESTREL_RETURN_IF_ERROR(unify(ctx, batch, ss[0], "sequence_lens' length (batch_size)"));
  }
  const Dim G = cell.gates;
  KESTREL_RETURN_IF_ERROR(check_input(ctx, kW, "W", {D, dim_mul(G, hidden), input}));
  KESTREL_RETURN_IF_ERROR(check_input(ctx, kR, "R", {D, dim_mul(G, hidden), hidden}));
  KESTREL_RETURN_IF_ERROR(check_input(ctx, kB, "B", {D, dim_mul(2 * cell.gates, hidden)}));
  const std::vector<Dim> state = layout == 1 ? std::vector<Dim>{batch, D, hidden} : std::vector<Dim>{D, batch, hidden};
  KESTREL_RETURN_IF_ERROR(check_input(ctx, kInitialH, "initial_h", state));
  KESTREL_RETURN_IF_ERROR(check_input(ctx, kInitialC, "initial_c", state));
  KESTREL_RETURN_IF_ERROR(check_input(ctx, kP, "P", {D, dim_mul(3, hidden)}));

  DType dt = ctx.input_dtype(kX);
  const std::vector<Dim> y =
      layout == 1 ? std::vector<Dim>{batch, seq, D, hidden} : std::vector<Dim>{seq, D, batch, hidden};
  if (ctx.num_outputs() > 0) ctx.set_output(0, dt, Shape(y));
  if (ctx.num_outputs() > 1) ctx.set_output(1, dt, Shape(state));
  if (ctx.num_outputs() > 2) ctx.set_output(2, dt, Shape(state));
  return Status::ok();
}

}  // namespace

void register_recurrent_ops(OpRegistry& r) {
  add_op(
      r, "RNN", 3, 6, 0, 2,
      [](InferContext& ctx) {
        return infer_recurrent(ctx, {1, false});
      },
      "one-layer simple RNN: H = f(X W^T + H R^T + b)");
  add_op(
      r, "GRU", 3, 6, 0, 2,
      [](InferContext& ctx) {
        return infer_recurrent(ctx, {3, false});
      },
      "one-layer GRU (gates z, r, h)");
  add_op(
      r, "LSTM", 3, 8, 0, 3,
      [](InferContext& ctx) {
        return infer_recurrent(ctx, {4, true});
      },
      "one-layer LSTM (gates i, o, f, c; optional peepholes)");
}

}  // namespace kestrel::ir

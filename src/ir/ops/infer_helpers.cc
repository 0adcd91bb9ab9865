// Shared shape-inference helpers.
#include "ir/ops/infer_helpers.h"

#include "core/str_util.h"

namespace kestrel::ir {

using core::Result;
using core::Status;

Result<Shape> broadcast_shapes(const std::vector<const Shape*>& shapes) {
  int64_t rank = 0;
  for (const Shape* s : shapes) {
    if (!s->rank_known()) return Shape::unknown_rank();
    rank = std::max(rank, s->rank());
  }
  std::vector<Dim> out(static_cast<size_t>(rank), Dim(1));
  for (int64_t i = 0; i < rank; ++i) {
    Dim d(1);
    bool have_unknown = false;
    for (const Shape* s : shapes) {
      int64_t j = i - (rank - s->rank());
      if (j < 0) continue;
      const Dim& sd = (*s)[j];
      if (sd.known()) {
        if (sd.value == 1) continue;
        if (d.known() && d.value != 1 && d.value != sd.value)
          return core::invalid_model(core::str_cat("shapes are not broadcastable: dimension ", i, " is ", d.value,
                                                   " and ", sd.value));
        d = sd;
      } else {
        if (d.known() && d.value == 1) {
          d = sd;  // the symbolic dim wins over 1 (it may itself be 1, then result is 1 anyway)
        } else if (!d.known() && d != sd) {
          have_unknown = true;
        }
      }
    }
    out[static_cast<size_t>(i)] = have_unknown ? Dim::unknown() : d;
  }
  return Shape(std::move(out));
}

Result<Shape> broadcast_inputs(const InferContext& ctx) {
  std::vector<const Shape*> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) shapes.push_back(&ctx.input_shape(i));
  auto r = broadcast_shapes(shapes);
  if (!r.is_ok()) return ctx.fail(r.status().message());
  return r;
}

Status same_as_input(InferContext& ctx, size_t out, size_t in) {
  ctx.set_output(out, ctx.input_type(in));
  return Status::ok();
}

std::optional<std::vector<int64_t>> input_ints(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  const core::Tensor* t = ctx.input_value(i);
  if (!t || (t->raw_data() == nullptr && t->num_elements() > 0)) return std::nullopt;
  return core::tensor_to_int64s(*t);
}

Dim dim_mul(const Dim& a, const Dim& b) {
  if (a.known() && b.known()) return Dim(a.value * b.value);
  if (a.known() && a.value == 1) return b;
  if (b.known() && b.value == 1) return a;
  return Dim::unknown();
}

Shape unknown_dims(int64_t rank) { return Shape(std::vector<Dim>(static_cast<size_t>(rank))); }

Status expect_rank(const InferContext& ctx, size_t input, int64_t rank) {
  const Shape& s = ctx.input_shape(input);
  if (s.rank_known() && s.rank() != rank)
    return ctx.fail("input ", input, " must have rank ", rank, ", has shape ", s.to_string());
  return Status::ok();
}

Status expect_residual_shape(const InferContext& ctx, size_t input, const Shape& out) {
  if (!ctx.has_input(input)) return Status::ok();
  const Shape& zs = ctx.input_shape(input);
  if (!out.rank_known() || !zs.rank_known()) return Status::ok();
  bool same = out.rank() == zs.rank();
  for (int64_t i = 0; same && i < out.rank(); ++i)
    if (out[i].known() && zs[i].known() && out[i].value != zs[i].value) same = false;
  if (!same) return ctx.fail("residual Z ", zs.to_string(), " must have the output's shape ", out.to_string());
  return Status::ok();
}

Status expect_float(const InferContext& ctx, size_t input) {
  DType t = ctx.input_dtype(input);
  if (t != DType::kUndefined && !core::is_float(t))
    return ctx.fail("input ", input, " must be a float tensor, is ", core::dtype_name(t));
  return Status::ok();
}

void add_op(OpRegistry& r, const char* name, int min_in, int max_in, int min_out, int max_out, InferFn fn,
            const char* doc, uint64_t value_inputs, const char* domain) {
  OpSchema s;
  s.domain = domain;
  s.name = name;
  s.min_inputs = min_in;
  s.max_inputs = max_in;
  s.min_outputs = min_out;
  s.max_outputs = max_out;
  s.infer = std::move(fn);
  s.doc = doc;
  s.value_inputs = value_inputs;
  r.add(std::move(s));
}

}  // namespace kestrel::ir

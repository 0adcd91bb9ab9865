// Schemas of the data-rearranging ops: Transpose, Concat, Split, Slice, Tile, Pad, DepthToSpace,
// SpaceToDepth, Trilu, and inference-time Dropout.
#include <algorithm>

#include "core/str_util.h"
#include "ir/ops/axis_helpers.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

Status infer_transpose(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  const Shape& in = ctx.input_shape(0);
  const bool has_perm = ctx.node().has_attr("perm");
  KESTREL_ASSIGN_OR_RETURN(auto perm, ctx.attr_ints("perm", std::vector<int64_t>{}));
  if (!in.rank_known()) {
    ctx.set_output(0, dt, has_perm ? unknown_dims(static_cast<int64_t>(perm.size())) : Shape::unknown_rank());
    return Status::ok();
  }
  if (!has_perm)
    for (int64_t i = in.rank() - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != in.rank())
    return ctx.fail("perm has ", perm.size(), " entries but the input ", in.to_string(), " has rank ", in.rank());
  std::vector<bool> seen(perm.size(), false);
  std::vector<Dim> out;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.rank() || seen[static_cast<size_t>(p)])
      return ctx.fail("perm [", core::join(perm), "] is not a permutation of 0..", in.rank() - 1);
    seen[static_cast<size_t>(p)] = true;
    out.push_back(in[p]);
  }
  ctx.set_output(0, dt, Shape(std::move(out)));
  return Status::ok();
}

Status infer_concat(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis"));
  const DType dt = ctx.input_dtype(0);
  const Shape* ref = nullptr;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.fail("input ", i, " is missing");
    if (ctx.input_dtype(i) != dt && ctx.input_dtype(i) != DType::kUndefined && dt != DType::kUndefined)
      return ctx.fail("inputs have different dtypes: ", core::dtype_name(dt), " and ",
                      core::dtype_name(ctx.input_dtype(i)));
    const Shape& s = ctx.input_shape(i);
    if (!s.rank_known()) continue;
    if (ref && ref->rank() != s.rank())
      return ctx.fail("inputs have different ranks: ", ref->to_string(), " and ", s.to_string());
    if (!ref) ref = &s;
  }
  if (!ref) {
    ctx.set_output(0, dt, Shape::unknown_rank());
    return Status::ok();
  }
  const int64_t rank = ref->rank();
  if (rank == 0) return ctx.fail("cannot concatenate scalars");
  KESTREL_ASSIGN_OR_RETURN(axis, infer_axis(ctx, axis, rank));
  std::vector<Dim> out(static_cast<size_t>(rank));
  bool all_ranks = true;
  int64_t total = 0;
  bool total_known = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Shape& s = ctx.input_shape(i);
    if (!s.rank_known()) {
      all_ranks = false;
      continue;
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis) {
        if (s[d].known())
          total += s[d].value;
        else
          total_known = false;
        continue;
      }
      Dim& o = out[static_cast<size_t>(d)];
      if (s[d].known()) {
        if (o.known() && o.value != s[d].value)
          return ctx.fail("input ", i, " ", s.to_string(), " does not match the others in dim ", d);
        o = s[d];
      } else if (!o.known() && o.symbol.empty()) {
        o = s[d];
      }
    }
  }
  out[static_cast<size_t>(axis)] = total_known && all_ranks ? Dim(total) : Dim::unknown();
  ctx.set_output(0, dt, Shape(std::move(out)));
  return Status::ok();
}

Status infer_split(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  const Shape& in = ctx.input_shape(0);
  const int64_t n = static_cast<int64_t>(ctx.num_outputs());
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, ctx.attr_int("axis", 0));
  std::optional<int64_t> num_outputs;
  if (ctx.node().has_attr("num_outputs")) {
    KESTREL_ASSIGN_OR_RETURN(int64_t v, ctx.attr_int("num_outputs"));
    num_outputs = v;
    if (ctx.has_input(1)) return ctx.fail("give either the split input or num_outputs, not both");
    if (v != n) return ctx.fail("num_outputs is ", v, " but the node has ", n, " outputs");
  }
  std::optional<std::vector<int64_t>> split;
  bool split_unknown = false;
  if (ctx.has_input(1)) {
    KESTREL_ASSIGN_OR_RETURN(auto len, vector_length(ctx, 1, "split"));
    if (len && *len != n) return ctx.fail("split has ", *len, " entries but the node has ", n, " outputs");
    split = input_ints(ctx, 1);
    split_unknown = !split;
    if (split && static_cast<int64_t>(split->size()) != n)
      return ctx.fail("split has ", split->size(), " entries but the node has ", n, " outputs");
    if (split)
      for (int64_t s : *split)
        if (s < 0) return ctx.fail("split [", core::join(*split), "] has a negative size");
  }
  if (!in.rank_known()) {
    for (int64_t i = 0; i < n; ++i) ctx.set_output(static_cast<size_t>(i), dt, Shape::unknown_rank());
    return Status::ok();
  }
  KESTREL_ASSIGN_OR_RETURN(axis, infer_axis(ctx, axis, in.rank()));
  const Dim& dim = in[axis];
  std::vector<Dim> sizes(static_cast<size_t>(n));
  if (split) {
    int64_t sum = 0;
    for (int64_t s : *split) sum += s;
    if (dim.known() && sum != dim.value)
      return ctx.fail("split [", core::join(*split), "] adds up to ", sum, " but dim ", axis, " of ", in.to_string(),
                      " is ", dim.value);
    for (int64_t i = 0; i < n; ++i) sizes[static_cast<size_t>(i)] = Dim((*split)[static_cast<size_t>(i)]);
  } else if (!split_unknown && dim.known()) {
    const int64_t d = dim.value;
    if (num_outputs) {
      // Split-18: ceil(d / n) per chunk, the last one smaller.
      const int64_t chunk = d / n + (d % n != 0 ? 1 : 0);
      const int64_t last = d - chunk * (n - 1);
      if (last < 0) return ctx.fail("cannot split ", d, " into ", n, " chunks of ", chunk);
      for (int64_t i = 0; i < n; ++i) sizes[static_cast<size_t>(i)] = Dim(i + 1 < n ? chunk : last);
    } else {
      if (d % n != 0) return ctx.fail("cannot split dim ", axis, " of ", in.to_string(), " into ", n, " equal parts");
      for (auto& s : sizes) s = Dim(d / n);
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    Shape out = in;
    out[axis] = sizes[static_cast<size_t>(i)];
    ctx.set_output(static_cast<size_t>(i), dt, std::move(out));
  }
  return Status::ok();
}

Status infer_slice(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  const Shape& in = ctx.input_shape(0);
  for (size_t i = 1; i < 5; ++i) {
    if (!ctx.has_input(i)) continue;
    KESTREL_RETURN_IF_ERROR(expect_index_dtype(ctx, i,
                                               i == 1   ? "starts"
                                               : i == 2 ? "ends"
                                               : i == 3 ? "axes"
                                                        : "steps"));
    KESTREL_RETURN_IF_ERROR(vector_length(ctx, i, "starts, ends, axes and steps").status());
  }
  if (!in.rank_known()) {
    ctx.set_output(0, dt, Shape::unknown_rank());
    return Status::ok();
  }
  const int64_t rank = in.rank();
  auto starts = input_ints(ctx, 1), ends = input_ints(ctx, 2);
  auto axes = ctx.has_input(3) ? input_ints(ctx, 3) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
  auto steps = ctx.has_input(4) ? input_ints(ctx, 4) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
  if (!axes) {
    // Any dim may be sliced.
    ctx.set_output(0, dt, unknown_dims(rank));
    return Status::ok();
  }
  std::vector<int64_t> norm_axes;
  if (axes->empty()) {
    std::optional<int64_t> n;
    if (starts)
      n = static_cast<int64_t>(starts->size());
    else if (ends)
      n = static_cast<int64_t>(ends->size());
    else {
      KESTREL_ASSIGN_OR_RETURN(n, vector_length(ctx, 1, "starts"));
    }
    if (!n) {
      ctx.set_output(0, dt, unknown_dims(rank));
      return Status::ok();
    }
    if (*n > rank) return ctx.fail("starts has ", *n, " entries for an input of rank ", rank);
    for (int64_t i = 0; i < *n; ++i) norm_axes.push_back(i);
  } else {
    KESTREL_ASSIGN_OR_RETURN(norm_axes, infer_axes(ctx, *axes, rank));
  }
  const size_t n = norm_axes.size();
  if ((starts && starts->size() != n) || (ends && ends->size() != n) ||
      (steps && !steps->empty() && steps->size() != n))
    return ctx.fail("starts, ends, axes and steps must have the same length");
  Shape out = in;
  for (size_t i = 0; i < n; ++i) {
    const int64_t axis = norm_axes[i];
    const int64_t step = steps && !steps->empty() ? (*steps)[i] : 1;
    if (steps && step == 0) return ctx.fail("steps must not be 0");
    if (!starts || !ends || !steps || !in[axis].known()) {
      out[axis] = Dim::unknown();
      continue;
    }
    out[axis] = Dim(core::slice_range((*starts)[i], (*ends)[i], step, in[axis].value).count);
  }
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status infer_tile(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  const Shape& in = ctx.input_shape(0);
  KESTREL_RETURN_IF_ERROR(expect_index_dtype(ctx, 1, "repeats"));
  KESTREL_ASSIGN_OR_RETURN(auto len, vector_length(ctx, 1, "repeats"));
  if (len && in.rank_known() && *len != in.rank())
    return ctx.fail("repeats has ", *len, " entries for an input of rank ", in.rank());
  auto reps = input_ints(ctx, 1);
  if (!in.rank_known()) {
    ctx.set_output(0, dt, len ? unknown_dims(*len) : Shape::unknown_rank());
    return Status::ok();
  }
  if (!reps) {
    Shape out = in;
    for (int64_t i = 0; i < in.rank(); ++i)
      if (!(in[i].known() && in[i].value == 0)) out[i] = Dim::unknown();
    ctx.set_output(0, dt, std::move(out));
    return Status::ok();
  }
  if (static_cast<int64_t>(reps->size()) != in.rank())
    return ctx.fail("repeats has ", reps->size(), " entries for an input of rank ", in.rank());
  Shape out = in;
  for (int64_t i = 0; i < in.rank(); ++i) {
    const int64_t r = (*reps)[static_cast<size_t>(i)];
    if (r < 0) return ctx.fail("repeats [", core::join(*reps), "] has a negative value");
    if (r == 0)
      out[i] = Dim(0);
    else if (in[i].known() && in[i].value > core::kMaxElements / r)
      return ctx.fail("output is too large");
    else
      out[i] = dim_mul(in[i], Dim(r));
  }
  KESTREL_RETURN_IF_ERROR(check_known_dims(ctx, out));
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status infer_pad(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  const Shape& in = ctx.input_shape(0);
  KESTREL_ASSIGN_OR_RETURN(std::string mode, ctx.attr_string("mode", std::string("constant")));
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return ctx.fail("mode must be constant, reflect, edge or wrap, got '", mode, "'");
  KESTREL_RETURN_IF_ERROR(expect_index_dtype(ctx, 1, "pads"));
  KESTREL_RETURN_IF_ERROR(vector_length(ctx, 1, "pads").status());
  if (ctx.has_input(2)) {
    const DType vt = ctx.input_dtype(2);
    if (vt != DType::kUndefined && dt != DType::kUndefined && vt != dt)
      return ctx.fail("constant_value is ", core::dtype_name(vt), " but the data is ", core::dtype_name(dt));
    const Shape& vs = ctx.input_shape(2);
    if (vs.rank_known() && vs.num_elements() >= 0 && vs.num_elements() != 1)
      return ctx.fail("constant_value must have one element, has shape ", vs.to_string());
  }
  if (ctx.has_input(3)) {
    KESTREL_RETURN_IF_ERROR(expect_index_dtype(ctx, 3, "axes"));
    KESTREL_RETURN_IF_ERROR(vector_length(ctx, 3, "axes").status());
  }
  if (!in.rank_known()) {
    ctx.set_output(0, dt, Shape::unknown_rank());
    return Status::ok();
  }
  const int64_t rank = in.rank();
  auto pads = input_ints(ctx, 1);
  std::optional<std::vector<int64_t>> axes;
  if (ctx.has_input(3)) axes = input_ints(ctx, 3);
  if (!pads || (ctx.has_input(3) && !axes)) {
    ctx.set_output(0, dt, unknown_dims(rank));
    return Status::ok();
  }
  std::vector<int64_t> ax;
  if (axes) {
    KESTREL_ASSIGN_OR_RETURN(ax, infer_axes(ctx, *axes, rank));
  } else {
    for (int64_t i = 0; i < rank; ++i) ax.push_back(i);
  }
  if (pads->size() != 2 * ax.size())
    return ctx.fail("pads has ", pads->size(), " values, expected ", 2 * ax.size(), " (2 per padded axis)");
  Shape out = in;
  for (size_t i = 0; i < ax.size(); ++i) {
    const int64_t b = (*pads)[i], e = (*pads)[i + ax.size()];
    if (b > core::kMaxElements || b < -core::kMaxElements || e > core::kMaxElements || e < -core::kMaxElements)
      return ctx.fail("pads [", core::join(*pads), "] are too large");
    const Dim& d = in[ax[i]];
    if (!d.known()) {
      if (b != 0 || e != 0) out[ax[i]] = Dim::unknown();
      continue;
    }
    const int64_t cropped = d.value - std::max<int64_t>(-b, 0) - std::max<int64_t>(-e, 0);
    if (cropped < 0)
      return ctx.fail("pads [", core::join(*pads), "] crop more than dim ", ax[i], " of ", in.to_string());
    if (mode != "constant" && cropped == 0 && (b > 0 || e > 0))
      return ctx.fail("mode '", mode, "' cannot pad the empty dim ", ax[i], " of ", in.to_string());
    out[ax[i]] = Dim(d.value + b + e);
  }
  KESTREL_RETURN_IF_ERROR(check_known_dims(ctx, out));
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status infer_depth_to_space(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_rank(ctx, 0, 4));
  KESTREL_ASSIGN_OR_RETURN(int64_t b, ctx.attr_int("blocksize"));
  if (b <= 0 || b > (int64_t{1} << 20)) return ctx.fail("blocksize must be positive, is ", b);
  const bool to_space = ctx.node().op_type() == "DepthToSpace";
  if (to_space) {
    KESTREL_ASSIGN_OR_RETURN(std::string mode, ctx.attr_string("mode", std::string("DCR")));
    if (mode != "DCR" && mode != "CRD") return ctx.fail("mode must be DCR or CRD, got '", mode, "'");
  }
  const DType dt = ctx.input_dtype(0);
  const Shape& in = ctx.input_shape(0);
  if (!in.rank_known()) {
    ctx.set_output(0, dt, unknown_dims(4));
    return Status::ok();
  }
  Shape out = in;
  if (to_space) {
    if (in[1].known()) {
      if (in[1].value % (b * b) != 0)
        return ctx.fail("channels ", in[1].value, " are not a multiple of blocksize^2 = ", b * b);
      out[1] = Dim(in[1].value / (b * b));
    } else {
      out[1] = Dim::unknown();
    }
    for (int64_t d : {2, 3}) out[d] = dim_mul(in[d], Dim(b));
  } else {
    for (int64_t d : {2, 3}) {
      if (!in[d].known()) {
        out[d] = Dim::unknown();
        continue;
      }
      if (in[d].value % b != 0)
        return ctx.fail("dim ", d, " of ", in.to_string(), " is not a multiple of blocksize ", b);
      out[d] = Dim(in[d].value / b);
    }
    out[1] = dim_mul(in[1], Dim(b * b));
  }
  ctx.set_output(0, dt, std::move(out));
  return Status::ok();
}

Status infer_trilu(InferContext& ctx) {
  const Shape& in = ctx.input_shape(0);
  if (in.rank_known() && in.rank() < 2) return ctx.fail("input must have rank >= 2, has shape ", in.to_string());
  KESTREL_RETURN_IF_ERROR(ctx.attr_int("upper", 1).status());
  if (ctx.has_input(1)) {
    if (ctx.input_dtype(1) != DType::kI64 && ctx.input_dtype(1) != DType::kUndefined)
      return ctx.fail("k must be int64, is ", core::dtype_name(ctx.input_dtype(1)));
    const Shape& ks = ctx.input_shape(1);
    if (ks.rank_known() && ks.num_elements() >= 0 && ks.num_elements() != 1)
      return ctx.fail("k must be a scalar, has shape ", ks.to_string());
  }
  return same_as_input(ctx);
}

Status infer_dropout(InferContext& ctx) {
  if (ctx.has_input(2)) {
    if (ctx.input_dtype(2) != DType::kBool && ctx.input_dtype(2) != DType::kUndefined)
      return ctx.fail("training_mode must be bool");
    const core::Tensor* training = ctx.input_value(2);
    const core::Tensor* ratio = ctx.input_value(1);
    if (training && training->num_elements() == 1 && training->raw_data() && training->data<bool>()[0] &&
        !(ratio && ratio->num_elements() == 1 && ratio->raw_data() && ratio->element_as_double(0) == 0.0))
      return core::unsupported(ctx.node().describe() + ": training-mode Dropout (random masking) is not supported");
  }
  KESTREL_RETURN_IF_ERROR(same_as_input(ctx));
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::kBool, ctx.input_shape(0));
  return Status::ok();
}

}  // namespace

void register_transform_ops(OpRegistry& r) {
  add_op(r, "Transpose", 1, 1, 1, 1, infer_transpose, "permutes the dims (reverses them without perm)");
  add_op(r, "Concat", 1, -1, 1, 1, infer_concat, "joins the inputs along axis");
  add_op(r, "Split", 1, 2, 1, -1, infer_split, "cuts the input along axis (split sizes, num_outputs, or equal)", 0b10);
  add_op(r, "Slice", 3, 5, 1, 1, infer_slice, "strided sub-tensor (starts, ends, axes, steps as in numpy)", 0b11110);
  add_op(r, "Tile", 2, 2, 1, 1, infer_tile, "repeats the input repeats[d] times along each dim d", 0b10);
  add_op(r, "Pad", 2, 4, 1, 1, infer_pad, "pads (or crops, with negative pads): constant, reflect, edge, wrap", 0b1010);
  add_op(r, "DepthToSpace", 1, 1, 1, 1, infer_depth_to_space, "moves channel blocks into spatial blocks (DCR/CRD)");
  add_op(r, "SpaceToDepth", 1, 1, 1, 1, infer_depth_to_space, "moves spatial blocks into channels");
  add_op(r, "Trilu", 1, 2, 1, 1, infer_trilu, "upper or lower triangle of the last two dims (diagonal offset k)");
  add_op(r, "Dropout", 1, 3, 1, 2, infer_dropout, "inference: identity, mask all true (training mode unsupported)");
}

}  // namespace kestrel::ir

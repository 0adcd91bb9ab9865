// Schemas of the linear-algebra ops: Einsum (output shape from the equation, numpy rules) and Det.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>

#include "core/str_util.h"
#include "ir/ops/axis_helpers.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

constexpr int kEllipsis = -1;

// Letters as their character codes, "..." as kEllipsis.
core::Result<std::vector<int>> parse_term(const InferContext& ctx, const std::string& term) {
  std::vector<int> out;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size();) {
    if (std::isalpha(static_cast<unsigned char>(term[i]))) {
      out.push_back(static_cast<unsigned char>(term[i++]));
    } else if (term.compare(i, 3, "...") == 0 && !ellipsis) {
      ellipsis = true;
      out.push_back(kEllipsis);
      i += 3;
    } else {
      return ctx.fail("equation term '", term, "' is malformed at '", term.substr(i), "'");
    }
  }
  return out;
}

// Two sizes of one label: equal, or one of them 1 (numpy broadcasting).
core::Result<Dim> merge_dim(const InferContext& ctx, int label, const Dim& a, const Dim& b) {
  if (a.known() && b.known()) {
    if (a.value == b.value || b.value == 1) return a;
    if (a.value == 1) return b;
    return ctx.fail("label '", static_cast<char>(label), "' has sizes ", a.value, " and ", b.value);
  }
  if (a.known() && a.value != 1) return a;
  if (b.known() && b.value != 1) return b;
  if (a == b) return a;
  return Dim::unknown();
}

Status infer_einsum(InferContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(std::string equation, ctx.attr_string("equation"));
  const DType dt = ctx.input_dtype(0);
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.fail("input ", i, " is missing");
    const DType t = ctx.input_dtype(i);
    if (t == DType::kString || t == DType::kBool)
      return ctx.fail("inputs must be numeric, input ", i, " is ", core::dtype_name(t));
    if (t != dt && t != DType::kUndefined && dt != DType::kUndefined)
      return ctx.fail("inputs have different dtypes: ", core::dtype_name(dt), " and ", core::dtype_name(t));
  }
  std::string eq;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c))) eq.push_back(c);
  const size_t arrow = eq.find("->");
  const bool explicit_output = arrow != std::string::npos;
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::vector<int>> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    KESTREL_ASSIGN_OR_RETURN(auto t,
                             parse_term(ctx, lhs.substr(start, comma == std::string::npos ? comma : comma - start)));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ctx.num_inputs())
    return ctx.fail("equation '", equation, "' has ", terms.size(), " input terms for ", ctx.num_inputs(), " inputs");
  std::vector<int> out_term;
  if (explicit_output) {
    const std::string rhs = eq.substr(arrow + 2);
    KESTREL_ASSIGN_OR_RETURN(out_term, parse_term(ctx, rhs));
  }
  const bool out_has_ellipsis = std::count(out_term.begin(), out_term.end(), kEllipsis) > 0;

  // Broadcast shape of the ellipsis axes; letter sizes.
  std::vector<const Shape*> ell_shapes;
  std::vector<Shape> ell_storage(terms.size());
  std::map<int, Dim> size;
  std::map<int, int> count;
  bool rank_unknown = false;
  for (size_t i = 0; i < terms.size(); ++i) {
    for (int l : terms[i])
      if (l != kEllipsis) ++count[l];
    const Shape& s = ctx.input_shape(i);
    if (!s.rank_known()) {
      rank_unknown = true;
      continue;
    }
    const auto letters =
        static_cast<int64_t>(std::count_if(terms[i].begin(), terms[i].end(), [](int l) { return l >= 0; }));
    const bool has_ell = letters != static_cast<int64_t>(terms[i].size());
    if (has_ell ? s.rank() < letters : s.rank() != letters)
      return ctx.fail("input ", i, " has rank ", s.rank(), " but its term has ", letters, " labels",
                      has_ell ? " and an ellipsis" : "");
    const int64_t er = s.rank() - letters;
    int64_t axis = 0;
    std::vector<Dim> ell_dims;
    for (int l : terms[i]) {
      if (l == kEllipsis) {
        for (int64_t k = 0; k < er; ++k) ell_dims.push_back(s[axis++]);
        continue;
      }
      auto it = size.find(l);
      if (it == size.end()) {
        size.emplace(l, s[axis]);
      } else {
        KESTREL_ASSIGN_OR_RETURN(it->second, merge_dim(ctx, l, it->second, s[axis]));
      }
      ++axis;
    }
    ell_storage[i] = Shape(std::move(ell_dims));
    ell_shapes.push_back(&ell_storage[i]);
  }
  for (int l : out_term) {
    if (l == kEllipsis) continue;
    if (!count.count(l)) return ctx.fail("output label '", static_cast<char>(l), "' is not in any input");
    if (std::count(out_term.begin(), out_term.end(), l) > 1)
      return ctx.fail("output repeats label '", static_cast<char>(l), "'");
  }
  if (rank_unknown) {
    if (explicit_output && !out_has_ellipsis) {
      std::vector<Dim> dims;
      for (int l : out_term) dims.push_back(size.count(l) ? size[l] : Dim::unknown());
      ctx.set_output(0, dt, Shape(std::move(dims)));
    } else {
      ctx.set_output(0, dt, Shape::unknown_rank());
    }
    return Status::ok();
  }
  auto ell = broadcast_shapes(ell_shapes);
  if (!ell.is_ok()) return ctx.fail("ellipsis axes do not broadcast: ", ell.status().message());
  if (explicit_output && !out_has_ellipsis && ell->rank() > 0)
    return ctx.fail("the output has no '...' but the inputs' ellipsis covers ", ell->rank(), " axes");
  std::vector<Dim> out;
  if (explicit_output) {
    for (int l : out_term) {
      if (l == kEllipsis)
        out.insert(out.end(), ell->dims->begin(), ell->dims->end());
      else
        out.push_back(size[l]);
    }
  } else {
    out.insert(out.end(), ell->dims->begin(), ell->dims->end());
    for (const auto& [l, n] : count)
      if (n == 1) out.push_back(size[l]);
  }
  ctx.set_output(0, dt, Shape(std::move(out)));
  return Status::ok();
}

Status infer_det(InferContext& ctx) {
  KESTREL_RETURN_IF_ERROR(expect_float(ctx, 0));
  const Shape& s = ctx.input_shape(0);
  if (!s.rank_known()) {
    ctx.set_output(0, ctx.input_dtype(0), Shape::unknown_rank());
    return Status::ok();
  }
  if (s.rank() < 2) return ctx.fail("input must have rank >= 2 (..., M, M), has shape ", s.to_string());
  const Dim& m = s[s.rank() - 1];
  const Dim& n = s[s.rank() - 2];
  if (m.known() && n.known() && m.value != n.value)
    return ctx.fail("matrices must be square, shape is ", s.to_string());
  ctx.set_output(0, ctx.input_dtype(0), Shape(std::vector<Dim>(s.dims->begin(), s.dims->end() - 2)));
  return Status::ok();
}

}  // namespace

void register_linalg_ops(OpRegistry& r) {
  add_op(r, "Einsum", 1, -1, 1, 1, infer_einsum, "Einstein summation over the inputs as the equation says");
  add_op(r, "Det", 1, 1, 1, 1, infer_det, "determinant of each trailing square matrix");
}

}  // namespace kestrel::ir

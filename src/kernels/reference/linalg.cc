// Reference Einsum and Det kernels.
#include "kernels/reference/linalg.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <type_traits>

#include "core/str_util.h"
#include "kernels/reference/numeric.h"

namespace kestrel::kernels::ref {

using core::Dims;
using core::str_cat;

namespace {

constexpr int kEllipsisMark = -1;

core::Result<std::vector<int>> parse_term(const std::string& term) {
  std::vector<int> out;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size();) {
    const char c = term[i];
    if (std::isalpha(static_cast<unsigned char>(c))) {
      out.push_back(static_cast<unsigned char>(c));
      ++i;
    } else if (term.compare(i, 3, "...") == 0) {
      if (ellipsis) return core::invalid_argument(str_cat("Einsum term '", term, "' has more than one ellipsis"));
      ellipsis = true;
      out.push_back(kEllipsisMark);
      i += 3;
    } else {
      return core::invalid_argument(str_cat("Einsum term '", term, "' has the unexpected character '", c, "'"));
    }
  }
  return out;
}

std::string label_name(int l) {
  if (l >= EinsumPlan::kEllipsisLabel) return str_cat("... axis ", l - EinsumPlan::kEllipsisLabel);
  return std::string(1, static_cast<char>(l));
}

}  // namespace

core::Result<EinsumPlan> einsum_plan(const std::string& equation, const std::vector<Dims>& input_dims) {
  std::string eq;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c))) eq.push_back(c);
  const size_t arrow = eq.find("->");
  const bool explicit_output = arrow != std::string::npos;
  const std::string lhs = eq.substr(0, arrow);
  const std::string rhs = explicit_output ? eq.substr(arrow + 2) : "";
  if (rhs.find("->") != std::string::npos) return core::invalid_argument("Einsum equation has more than one '->'");
  std::vector<std::vector<int>> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    KESTREL_ASSIGN_OR_RETURN(auto t, parse_term(lhs.substr(start, comma == std::string::npos ? comma : comma - start)));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != input_dims.size())
    return core::invalid_argument(str_cat("Einsum equation '", equation, "' has ", terms.size(), " input terms for ",
                                          input_dims.size(), " inputs"));

  // Axes covered by each input's ellipsis, and the broadcast ellipsis rank.
  std::vector<int64_t> ell_rank(terms.size(), 0);
  int64_t ell = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const auto letters =
        static_cast<int64_t>(std::count_if(terms[i].begin(), terms[i].end(), [](int l) { return l >= 0; }));
    const bool has_ell = letters != static_cast<int64_t>(terms[i].size());
    const auto rank = static_cast<int64_t>(input_dims[i].size());
    if (has_ell ? rank < letters : rank != letters)
      return core::invalid_argument(str_cat("Einsum input ", i, " has rank ", rank, " but its term has ", letters,
                                            " labels", has_ell ? " and an ellipsis" : ""));
    ell_rank[i] = rank - letters;
    ell = std::max(ell, ell_rank[i]);
  }

  EinsumPlan plan;
  std::map<int, int64_t> size;
  std::map<int, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::vector<int> labels;
    for (int l : terms[i]) {
      if (l != kEllipsisMark) {
        labels.push_back(l);
        ++count[l];
        continue;
      }
      for (int64_t k = 0; k < ell_rank[i]; ++k)
        labels.push_back(EinsumPlan::kEllipsisLabel + static_cast<int>(ell - ell_rank[i] + k));
    }
    std::map<int, int64_t> local;  // a label repeated within one input is a diagonal: equal sizes
    for (size_t a = 0; a < labels.size(); ++a) {
      const int l = labels[a];
      const int64_t s = input_dims[i][a];
      if (auto it = local.find(l); it != local.end() && it->second != s)
        return core::invalid_argument(str_cat("Einsum input ", i, " repeats label '", label_name(l),
                                              "' over axes of sizes ", it->second, " and ", s));
      local[l] = s;
      auto [it, fresh] = size.emplace(l, s);
      if (fresh || it->second == s || s == 1) continue;
      if (it->second != 1)
        return core::invalid_argument(
            str_cat("Einsum label '", label_name(l), "' has sizes ", it->second, " and ", s, " in different inputs"));
      it->second = s;
    }
    plan.inputs.push_back(std::move(labels));
  }

  if (explicit_output) {
    KESTREL_ASSIGN_OR_RETURN(auto out_term, parse_term(rhs));
    bool has_ell = false;
    std::set<int> seen;
    for (int l : out_term) {
      if (l == kEllipsisMark) {
        has_ell = true;
        for (int64_t k = 0; k < ell; ++k) plan.output.push_back(EinsumPlan::kEllipsisLabel + static_cast<int>(k));
        continue;
      }
      if (!size.count(l))
        return core::invalid_argument(str_cat("Einsum output label '", label_name(l), "' is not in any input"));
      if (!seen.insert(l).second)
        return core::invalid_argument(str_cat("Einsum output repeats label '", label_name(l), "'"));
      plan.output.push_back(l);
    }
    if (!has_ell && ell > 0)
      return core::invalid_argument("Einsum output has no '...' but the inputs' ellipsis covers axes");
  } else {
    // numpy's implicit output: the ellipsis axes, then the labels used once, in character order.
    for (int64_t k = 0; k < ell; ++k) plan.output.push_back(EinsumPlan::kEllipsisLabel + static_cast<int>(k));
    for (const auto& [l, n] : count)
      if (n == 1) plan.output.push_back(l);
  }
  for (int l : plan.output) plan.out_dims.push_back(size.at(l));
  KESTREL_RETURN_IF_ERROR(core::checked_num_elements(plan.out_dims).status());
  return plan;
}

namespace {

// Accumulator: double for floats, uint64_t (wrapping) for integers.
template <class T>
using EinsumAcc = std::conditional_t<std::is_floating_point_v<T> || is_half_v<T>, double, uint64_t>;

template <class A, class T>
A to_acc(T v) {
  if constexpr (std::is_same_v<A, double>)
    return load_as<double>(v);
  else if constexpr (std::is_signed_v<T>)
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  else
    return static_cast<uint64_t>(v);
}

template <class T, class A>
T from_acc(A v) {
  if constexpr (std::is_same_v<A, double>)
    return store_as<T>(v);
  else
    return static_cast<T>(v);  // modular
}

template <class A>
struct Operand {
  std::vector<int> labels;  // distinct
  Dims dims;
  Tensor buf;  // f64 or u64; a tensor so that a hostile size is an error, not an exception

  A* data() { return buf.data<A>(); }
  const A* data() const { return buf.data<A>(); }

  int64_t size_of(int l) const {
    auto it = std::find(labels.begin(), labels.end(), l);
    return it == labels.end() ? -1 : dims[static_cast<size_t>(it - labels.begin())];
  }
  // Stride of label l, 0 when absent or broadcast (size 1).
  int64_t stride_of(int l) const {
    int64_t stride = 1;
    for (size_t i = labels.size(); i-- > 0;) {
      if (labels[i] == l) return dims[i] == 1 ? 0 : stride;
      stride *= dims[i];
    }
    return 0;
  }
};

// Walks a multi-index over dims, calling f(flat index, index) for each point.
template <class F>
void for_each_index(const Dims& dims, F&& f) {
  const int64_t n = core::num_elements(dims);
  Dims idx(dims.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, idx);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
}

// An input as a dense operand over its distinct labels (repeated labels read the diagonal).
template <class T, class A>
core::Result<Operand<A>> load_operand(const Tensor& t, const std::vector<int>& axis_labels) {
  Operand<A> op;
  const Dims strides = core::row_major_strides(t.dims());
  std::vector<int64_t> lstride;
  for (size_t a = 0; a < axis_labels.size(); ++a) {
    auto it = std::find(op.labels.begin(), op.labels.end(), axis_labels[a]);
    if (it == op.labels.end()) {
      op.labels.push_back(axis_labels[a]);
      op.dims.push_back(t.dims()[a]);
      lstride.push_back(strides[a]);
    } else {
      lstride[static_cast<size_t>(it - op.labels.begin())] += strides[a];
    }
  }
  KESTREL_ASSIGN_OR_RETURN(op.buf, Tensor::allocate(core::dtype_of<A>, {core::num_elements(op.dims)}));
  A* out = op.data();
  const T* p = t.data<T>();
  for_each_index(op.dims, [&](int64_t i, const Dims& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * lstride[d];
    out[i] = to_acc<A>(p[off]);
  });
  return op;
}

// Product of a and b (b may be null: a alone), summed over every label not in `keep`.
template <class A>
core::Result<Operand<A>> contract(const Operand<A>& a, const Operand<A>* b, const std::set<int>& keep) {
  std::vector<int> all = a.labels;
  if (b)
    for (int l : b->labels)
      if (std::find(all.begin(), all.end(), l) == all.end()) all.push_back(l);
  Operand<A> r;
  std::vector<int> summed;
  Dims sdims;
  for (int l : all) {
    const int64_t sa = a.size_of(l), sb = b ? b->size_of(l) : -1;
    const int64_t s = sa < 0 ? sb : (sb < 0 || sb == 1) ? sa : sb;  // sizes agree or one is 1
    if (keep.count(l)) {
      r.labels.push_back(l);
      r.dims.push_back(s);
    } else {
      summed.push_back(l);
      sdims.push_back(s);
    }
  }
  std::vector<int64_t> ra, rb, sa, sb;
  for (int l : r.labels) ra.push_back(a.stride_of(l)), rb.push_back(b ? b->stride_of(l) : 0);
  for (int l : summed) sa.push_back(a.stride_of(l)), sb.push_back(b ? b->stride_of(l) : 0);
  // An intermediate (an outer product, say) may be far larger than any input or the output.
  auto buf = Tensor::allocate(core::dtype_of<A>, r.dims);
  if (!buf.is_ok())
    return core::invalid_argument(str_cat("Einsum: an intermediate of shape ", core::dims_to_string(r.dims),
                                          " is too large (", buf.status().message(), ")"));
  r.buf = std::move(buf).value();
  A* out = r.data();
  const A* da = a.data();
  const A* db = b ? b->data() : nullptr;
  for_each_index(r.dims, [&](int64_t i, const Dims& ri) {
    int64_t oa = 0, ob = 0;
    for (size_t d = 0; d < ri.size(); ++d) oa += ri[d] * ra[d], ob += ri[d] * rb[d];
    A acc = 0;
    for_each_index(sdims, [&](int64_t, const Dims& si) {
      int64_t pa = oa, pb = ob;
      for (size_t d = 0; d < si.size(); ++d) pa += si[d] * sa[d], pb += si[d] * sb[d];
      acc += b ? da[pa] * db[pb] : da[pa];
    });
    out[i] = acc;
  });
  return r;
}

template <class T>
Status einsum_typed(const EinsumPlan& plan, std::span<const Tensor* const> inputs, Tensor& y) {
  using A = EinsumAcc<T>;
  const size_t n = inputs.size();
  const std::set<int> out_labels(plan.output.begin(), plan.output.end());
  std::vector<Operand<A>> ops;
  for (size_t i = 0; i < n; ++i) {
    KESTREL_ASSIGN_OR_RETURN(Operand<A> op, (load_operand<T, A>(*inputs[i], plan.inputs[i])));
    // Sum out right away the labels no other operand and not the output uses.
    std::set<int> keep = out_labels;
    for (size_t j = 0; j < n; ++j)
      if (j != i) keep.insert(plan.inputs[j].begin(), plan.inputs[j].end());
    bool reduces = false;
    for (int l : op.labels) reduces = reduces || !keep.count(l);
    if (reduces) {
      KESTREL_ASSIGN_OR_RETURN(op, contract<A>(op, nullptr, keep));
    }
    ops.push_back(std::move(op));
  }
  Operand<A> r = std::move(ops[0]);
  for (size_t k = 1; k < n; ++k) {
    std::set<int> keep = out_labels;
    for (size_t j = k + 1; j < n; ++j) keep.insert(plan.inputs[j].begin(), plan.inputs[j].end());
    KESTREL_ASSIGN_OR_RETURN(r, contract<A>(r, &ops[k], keep));
  }
  // Lay the result out in the output's label order.
  std::vector<int64_t> strides;
  for (int l : plan.output) strides.push_back(r.stride_of(l));
  T* py = y.data<T>();
  const A* pr = r.data();
  for_each_index(plan.out_dims, [&](int64_t i, const Dims& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides[d];
    py[i] = from_acc<T>(pr[off]);
  });
  return Status::ok();
}

template <class T>
void det_typed(const Tensor& x, Tensor& y) {
  const int64_t m = x.rank() >= 2 ? x.dim(-1) : 0;
  const int64_t count = y.num_elements();
  const T* px = x.data<T>();
  T* py = y.data<T>();
  std::vector<double> a(static_cast<size_t>(m * m));
  for (int64_t b = 0; b < count; ++b) {
    for (int64_t i = 0; i < m * m; ++i) a[static_cast<size_t>(i)] = load_as<double>(px[b * m * m + i]);
    auto at = [&](int64_t r, int64_t c) -> double& { return a[static_cast<size_t>(r * m + c)]; };
    double d = 1;
    for (int64_t k = 0; k < m; ++k) {
      int64_t p = k;
      for (int64_t r = k + 1; r < m; ++r)
        if (std::fabs(at(r, k)) > std::fabs(at(p, k))) p = r;
      if (at(p, k) == 0) {
        d = 0;
        break;
      }
      if (p != k) {
        for (int64_t c = 0; c < m; ++c) std::swap(at(p, c), at(k, c));
        d = -d;
      }
      d *= at(k, k);
      for (int64_t r = k + 1; r < m; ++r) {
        const double f = at(r, k) / at(k, k);
        for (int64_t c = k + 1; c < m; ++c) at(r, c) -= f * at(k, c);
      }
    }
    py[b] = store_as<T>(d);
  }
}

}  // namespace

Status einsum(const EinsumPlan& plan, std::span<const Tensor* const> inputs, Tensor& y) {
  if (inputs.size() != plan.inputs.size() || inputs.empty())
    return core::internal_error("Einsum: the plan does not match the inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->dtype() != y.dtype())
      return core::invalid_argument(
          str_cat("Einsum: input ", i, " is ", inputs[i]->type_string(), ", expected ", core::dtype_name(y.dtype())));
    if (static_cast<size_t>(inputs[i]->rank()) != plan.inputs[i].size())
      return core::internal_error("Einsum: the plan does not match the input ranks");
  }
  if (y.dims() != plan.out_dims)
    return core::internal_error(
        str_cat("Einsum: output is ", y.type_string(), ", expected ", core::dims_to_string(plan.out_dims)));
  Status st = core::invalid_argument(str_cat("Einsum: inputs must be numeric, are ", core::dtype_name(y.dtype())));
  visit_arith_dtype(y.dtype(), [&](auto tag) { st = einsum_typed<decltype(tag)>(plan, inputs, y); });
  return st;
}

Status det(const Tensor& x, Tensor& y) {
  if (x.rank() < 2 || x.dim(-1) != x.dim(-2))
    return core::invalid_argument(str_cat("Det: input must be (..., M, M), is ", x.type_string()));
  const Dims want(x.dims().begin(), x.dims().end() - 2);
  if (y.dims() != want || y.dtype() != x.dtype())
    return core::internal_error(str_cat("Det: output is ", y.type_string(), ", expected ", core::dims_to_string(want)));
  if (!visit_float(x.dtype(), [&](auto tag) { det_typed<decltype(tag)>(x, y); }))
    return core::invalid_argument(str_cat("Det: input must be a float tensor, is ", x.type_string()));
  return Status::ok();
}

}  // namespace kestrel::kernels::ref

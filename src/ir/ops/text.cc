// Schemas of the text ops: StringNormalizer (output length depends on the data) and TfIdfVectorizer.
#include <algorithm>

#include "core/str_util.h"
#include "ir/ops/infer_helpers.h"

namespace kestrel::ir {

using core::Status;

namespace {

Status infer_string_normalizer(InferContext& ctx) {
  if (ctx.input_dtype(0) != DType::kString && ctx.input_dtype(0) != DType::kUndefined)
    return ctx.fail("input must be a string tensor, is ", core::dtype_name(ctx.input_dtype(0)));
  KESTREL_ASSIGN_OR_RETURN(std::string action, ctx.attr_string("case_change_action", "NONE"));
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    return ctx.fail("case_change_action must be NONE, LOWER or UPPER, is '", action, "'");
  KESTREL_ASSIGN_OR_RETURN(std::string locale, ctx.attr_string("locale", ""));
  if (!locale.empty() && locale != "en_US" && locale != "en_US.UTF-8" && locale != "C" && locale != "en")
    return core::unsupported(
        core::str_cat(ctx.node().describe(), ": locale '", locale, "' is not supported (en_US only)"));
  const Shape& x = ctx.input_shape(0);
  if (x.rank_known() && !(x.rank() == 1 || (x.rank() == 2 && (!x[0].known() || x[0].value == 1))))
    return ctx.fail("input must be [C] or [1, C], has shape ", x.to_string());
  Shape out = x.rank_known() ? unknown_dims(x.rank()) : Shape::unknown_rank();
  if (x.rank() == 2) out[0] = Dim(1);
  ctx.set_output(0, DType::kString, std::move(out));
  return Status::ok();
}

Status infer_tfidf_vectorizer(InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && t != DType::kString && t != DType::kI32 && t != DType::kI64)
    return ctx.fail("input must be string, int32 or int64, is ", core::dtype_name(t));
  KESTREL_ASSIGN_OR_RETURN(std::string mode, ctx.attr_string("mode"));
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    return ctx.fail("mode must be TF, IDF or TFIDF, is '", mode, "'");
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> indexes, ctx.attr_ints("ngram_indexes"));
  int64_t out = 0;
  for (int64_t i : indexes) {
    if (i < 0 || i >= core::kMaxElements) return ctx.fail("ngram_indexes entry ", i, " is out of range");
    out = std::max(out, i + 1);
  }
  const bool string_pool = ctx.node().has_attr("pool_strings");
  if (t != DType::kUndefined && string_pool != (t == DType::kString))
    return ctx.fail(core::dtype_name(t), " input does not match the ", string_pool ? "string" : "int64", " pool");
  const Shape& x = ctx.input_shape(0);
  if (x.rank_known() && x.rank() != 1 && x.rank() != 2)
    return ctx.fail("input must be [C] or [N, C], has shape ", x.to_string());
  Shape y = !x.rank_known()
                ? Shape::unknown_rank()
                : (x.rank() == 1 ? Shape(std::vector<Dim>{Dim(out)}) : Shape(std::vector<Dim>{x[0], Dim(out)}));
  ctx.set_output(0, DType::kF32, std::move(y));
  return Status::ok();
}

}  // namespace

void register_text_ops(OpRegistry& r) {
  OpSchema s;
  s.name = "StringNormalizer";
  s.min_inputs = s.max_inputs = 1;
  s.infer = infer_string_normalizer;
  s.data_dependent_shape = true;
  s.doc = "drops stop words from a string tensor, then lower- or upper-cases what is left";
  r.add(std::move(s));
  add_op(r, "TfIdfVectorizer", 1, 1, 1, 1, infer_tfidf_vectorizer,
         "n-gram counts (with skips) of int or string rows, weighted TF / IDF / TFIDF");
}

}  // namespace kestrel::ir

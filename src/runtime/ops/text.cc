// Kernel bindings for the text ops: StringNormalizer attributes and the TfIdfVectorizer n-gram
// pool (checked and indexed once, at session creation).
#include "kernels/reference/text.h"

#include <memory>

#include "runtime/kernel.h"

namespace kestrel::runtime {

namespace ref = kernels::ref;

namespace {

Result<std::vector<std::string>> strings_attr(const ir::Node& n, const char* name) {
  const ir::Attribute* a = n.attr(name);
  if (!a) return std::vector<std::string>{};
  if (!a->is<std::vector<std::string>>())
    return core::invalid_model(core::str_cat(n.describe(), ": attribute '", name, "' should be strings"));
  return a->get<std::vector<std::string>>();
}

}  // namespace

void register_text_kernels(KernelRegistry& r) {
  r.add("StringNormalizer", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    ref::StringNormalizerParams p;
    KESTREL_ASSIGN_OR_RETURN(std::string action, info.node.attr_string("case_change_action", "NONE"));
    if (action == "LOWER")
      p.case_change = ref::CaseChange::kLower;
    else if (action == "UPPER")
      p.case_change = ref::CaseChange::kUpper;
    else if (action != "NONE")
      return info.fail("case_change_action must be NONE, LOWER or UPPER, is '", action, "'");
    KESTREL_ASSIGN_OR_RETURN(int64_t sensitive, info.node.attr_int("is_case_sensitive", 0));
    p.case_sensitive = sensitive != 0;
    KESTREL_ASSIGN_OR_RETURN(p.stopwords, strings_attr(info.node, "stopwords"));
    return make_kernel([p](KernelContext& ctx) -> Status {
      KESTREL_ASSIGN_OR_RETURN(ctx.output(0), ref::string_normalizer(p, ctx.input(0)));
      return Status::ok();
    });
  });
  r.add("TfIdfVectorizer", [](const KernelCreateInfo& info) -> Result<std::unique_ptr<OpKernel>> {
    const ir::Node& n = info.node;
    ref::TfIdfModel::Attributes a;
    KESTREL_ASSIGN_OR_RETURN(a.min_gram_length, n.attr_int("min_gram_length"));
    KESTREL_ASSIGN_OR_RETURN(a.max_gram_length, n.attr_int("max_gram_length"));
    KESTREL_ASSIGN_OR_RETURN(a.max_skip_count, n.attr_int("max_skip_count"));
    KESTREL_ASSIGN_OR_RETURN(std::string mode, n.attr_string("mode"));
    if (mode == "TF")
      a.mode = ref::TfIdfMode::kTF;
    else if (mode == "IDF")
      a.mode = ref::TfIdfMode::kIDF;
    else if (mode == "TFIDF")
      a.mode = ref::TfIdfMode::kTFIDF;
    else
      return info.fail("mode must be TF, IDF or TFIDF, is '", mode, "'");
    KESTREL_ASSIGN_OR_RETURN(a.ngram_counts, n.attr_ints("ngram_counts"));
    KESTREL_ASSIGN_OR_RETURN(a.ngram_indexes, n.attr_ints("ngram_indexes"));
    KESTREL_ASSIGN_OR_RETURN(a.pool_int64s, n.attr_ints("pool_int64s", std::vector<int64_t>{}));
    KESTREL_ASSIGN_OR_RETURN(a.pool_strings, strings_attr(n, "pool_strings"));
    KESTREL_ASSIGN_OR_RETURN(a.weights, n.attr_floats("weights", std::vector<float>{}));
    auto model = ref::TfIdfModel::create(a);
    if (!model.is_ok()) return info.fail(model.status().message());
    auto shared = std::make_shared<const ref::TfIdfModel>(std::move(model).value());
    return make_kernel([shared](KernelContext& ctx) { return shared->run(ctx.input(0), ctx.output(0)); });
  });
}

}  // namespace kestrel::runtime

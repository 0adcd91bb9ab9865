// Attribute printing.
#include "ir/attribute.h"

#include "core/str_util.h"
#include "ir/graph.h"

namespace kestrel::ir {

const char* attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::kFloat: return "float";
    case AttrKind::kInt: return "int";
    case AttrKind::kString: return "string";
    case AttrKind::kTensor: return "tensor";
    case AttrKind::kGraph: return "graph";
    case AttrKind::kFloats: return "floats";
    case AttrKind::kInts: return "ints";
    case AttrKind::kStrings: return "strings";
    case AttrKind::kTensors: return "tensors";
    case AttrKind::kGraphs: return "graphs";
  }
  return "?";
}

std::string Attribute::to_string() const {
  using core::join;
  using core::str_cat;
  switch (kind()) {
    case AttrKind::kFloat: return str_cat(get<float>());
    case AttrKind::kInt: return str_cat(get<int64_t>());
    case AttrKind::kString: return "\"" + get<std::string>() + "\"";
    case AttrKind::kTensor: return "tensor " + get<core::Tensor>().type_string();
    case AttrKind::kGraph: return "graph(" + get<GraphPtr>()->name() + ")";
    case AttrKind::kFloats: return "[" + join(get<std::vector<float>>()) + "]";
    case AttrKind::kInts: return "[" + join(get<std::vector<int64_t>>()) + "]";
    case AttrKind::kStrings: return "[" + join(get<std::vector<std::string>>()) + "]";
    case AttrKind::kTensors: return str_cat("tensors x", get<std::vector<core::Tensor>>().size());
    case AttrKind::kGraphs: return str_cat("graphs x", get<std::vector<GraphPtr>>().size());
  }
  return "?";
}

}  // namespace kestrel::ir

// ONNX importer: model, graphs (with subgraphs and outer-scope references), nodes, attributes.
#include "frontend/onnx/onnx_importer.h"

#include <fstream>
#include <sstream>
#include <unordered_map>

#include <onnx/onnx_pb.h>

#include "core/str_util.h"
#include "frontend/onnx/onnx_tensor.h"
#include "frontend/onnx/opset_upgrade.h"
#include "ir/op_schema.h"

namespace kestrel::frontend {

using core::Result;
using core::Status;
using core::str_cat;

namespace {

constexpr int64_t kMinOpset = 1;
constexpr int64_t kMaxOpset = 21;
constexpr int kMaxSubgraphDepth = 32;
constexpr int64_t kNoDefaultOpset = 0;  // a model importing only other domains (the training ops)

class Importer {
 public:
  // opset: of the default domain (kNoDefaultOpset: not imported); training: the model imports
  // ai.onnx.preview.training (version 1).
  Importer(const OnnxImportOptions& opts, int64_t opset, bool training)
      : opts_(opts), opset_(opset), training_imported_(training) {}

  Status import_graph(const onnx::GraphProto& gp, ir::Graph& g, int depth) {
    if (depth > kMaxSubgraphDepth) return core::invalid_model("subgraphs nested too deeply");
    // Initializers first: an input with the same name as an initializer is a constant.
    for (const auto& init : gp.initializer()) {
      if (init.name().empty()) return core::invalid_model(str_cat("graph '", gp.name(), "': initializer without a name"));
      if (g.find_value(init.name()))
        return core::invalid_model(str_cat("graph '", gp.name(), "': initializer '", init.name(), "' defined twice"));
      KESTREL_ASSIGN_OR_RETURN(core::Tensor t, tensor_from_onnx(init, opts_.model_dir));
      g.add_constant(init.name(), std::move(t));
    }
    if (gp.sparse_initializer_size() > 0)
      return core::unsupported(str_cat("graph '", gp.name(), "': sparse initializers are not supported"));
    for (const auto& in : gp.input()) {
      if (g.find_value(in.name())) {
        if (g.find_value(in.name())->is_constant()) continue;
        return core::invalid_model(str_cat("graph '", gp.name(), "': input '", in.name(), "' declared twice"));
      }
      auto t = type_from_onnx(in.type());
      if (!t.is_ok()) return t.status().with_context(str_cat("graph input '", in.name(), "'"));
      g.add_input(in.name(), *t);
    }
    for (const auto& vi : gp.value_info()) {
      auto t = type_from_onnx(vi.type());
      if (t.is_ok()) declared_[&g][vi.name()] = *t;
    }
    for (const auto& out : gp.output()) {
      auto t = type_from_onnx(out.type());
      if (!t.is_ok()) return t.status().with_context(str_cat("graph output '", out.name(), "'"));
      declared_[&g][out.name()] = *t;
    }
    int index = 0;
    for (const auto& np : gp.node()) {
      Status st = import_node(np, g, depth, index++);
      if (!st.is_ok()) return st;
    }
    for (const auto& out : gp.output()) {
      ir::Value* v = resolve(g, out.name());
      if (!v)
        return core::invalid_model(str_cat("graph '", gp.name(), "': output '", out.name(), "' is never computed"));
      g.add_output(v);
    }
    // Declared types (value_info, outputs) seed inference where it knows less.
    for (const auto& [name, type] : declared_[&g])
      if (ir::Value* v = g.find_value(name); v && v->kind() == ir::ValueKind::kNodeOutput) v->set_type(type);
    return Status::ok();
  }

 private:
  // Finds a value by name, creating outer-scope references through enclosing graphs as needed.
  ir::Value* resolve(ir::Graph& g, const std::string& name) {
    if (ir::Value* v = g.find_value(name)) return v;
    if (!g.parent()) return nullptr;
    ir::Value* outer = resolve(*g.parent(), name);
    if (!outer) return nullptr;
    ir::Value* ref = g.add_outer_scope(name, outer->type());
    // The control-flow node owning g must keep `outer` alive: record it as an implicit input.
    auto it = owner_.find(&g);
    if (it != owner_.end()) it->second->add_implicit_input(outer);
    return ref;
  }

  Status import_attribute(const onnx::AttributeProto& ap, ir::Node& n, ir::Graph& g, int depth) {
    using onnx::AttributeProto;
    const std::string& name = ap.name();
    auto sub = [&](const onnx::GraphProto& gp) -> Result<ir::Attribute::GraphPtr> {
      auto sg = std::make_shared<ir::Graph>(gp.name().empty() ? name : gp.name(), &g);
      owner_[sg.get()] = &n;
      Status st = import_graph(gp, *sg, depth + 1);
      if (!st.is_ok()) return st.with_context(str_cat(n.describe(), " attribute '", name, "'"));
      return sg;
    };
    switch (ap.type()) {
      case AttributeProto::FLOAT: n.set_attr(name, ap.f()); break;
      case AttributeProto::INT: n.set_attr(name, static_cast<int64_t>(ap.i())); break;
      case AttributeProto::STRING: n.set_attr(name, ap.s()); break;
      case AttributeProto::FLOATS:
        n.set_attr(name, std::vector<float>(ap.floats().begin(), ap.floats().end()));
        break;
      case AttributeProto::INTS:
        n.set_attr(name, std::vector<int64_t>(ap.ints().begin(), ap.ints().end()));
        break;
      case AttributeProto::STRINGS:
        n.set_attr(name, std::vector<std::string>(ap.strings().begin(), ap.strings().end()));
        break;
      case AttributeProto::TENSOR: {
        auto t = tensor_from_onnx(ap.t(), opts_.model_dir);
        if (!t.is_ok()) return t.status().with_context(str_cat(n.describe(), " attribute '", name, "'"));
        n.set_attr(name, std::move(t).value());
        break;
      }
      case AttributeProto::TENSORS: {
        std::vector<core::Tensor> ts;
        for (const auto& tp : ap.tensors()) {
          auto t = tensor_from_onnx(tp, opts_.model_dir);
          if (!t.is_ok()) return t.status().with_context(str_cat(n.describe(), " attribute '", name, "'"));
          ts.push_back(std::move(t).value());
        }
        n.set_attr(name, std::move(ts));
        break;
      }
      case AttributeProto::GRAPH: {
        KESTREL_ASSIGN_OR_RETURN(auto sg, sub(ap.g()));
        n.set_attr(name, std::move(sg));
        break;
      }
      case AttributeProto::GRAPHS: {
        std::vector<ir::Attribute::GraphPtr> gs;
        for (const auto& gp : ap.graphs()) {
          KESTREL_ASSIGN_OR_RETURN(auto sg, sub(gp));
          gs.push_back(std::move(sg));
        }
        n.set_attr(name, std::move(gs));
        break;
      }
      case AttributeProto::UNDEFINED:
        // Old exporters leave the type unset; infer it from which field is filled.
        if (ap.has_f()) n.set_attr(name, ap.f());
        else if (ap.has_i()) n.set_attr(name, static_cast<int64_t>(ap.i()));
        else if (ap.has_s()) n.set_attr(name, ap.s());
        else if (ap.ints_size()) n.set_attr(name, std::vector<int64_t>(ap.ints().begin(), ap.ints().end()));
        else if (ap.floats_size()) n.set_attr(name, std::vector<float>(ap.floats().begin(), ap.floats().end()));
        else return core::invalid_model(str_cat(n.describe(), ": attribute '", name, "' has no type"));
        break;
      default:
        return core::unsupported(str_cat(n.describe(), ": attribute '", name, "' of type ",
                                         AttributeProto::AttributeType_Name(ap.type()), " is not supported"));
    }
    return Status::ok();
  }

  Status import_node(const onnx::NodeProto& np, ir::Graph& g, int depth, int index) {
    std::string domain = np.domain();
    if (domain == "ai.onnx") domain.clear();
    std::string node_name = np.name().empty() ? str_cat(np.op_type(), "_", index) : np.name();
    auto where = [&] {
      const int64_t version = domain == ir::kOnnxTrainingDomain ? 1 : opset_;
      return str_cat("node '", node_name, "' (", domain.empty() ? "" : domain + ".", np.op_type(), ", opset ", version,
                     ")");
    };
    if (!domain.empty() && domain != ir::kKestrelDomain && domain != ir::kOnnxTrainingDomain)
      return core::unsupported(str_cat(where(), ": operator domain '", domain, "' is not supported"));
    if (domain.empty() && opset_ == kNoDefaultOpset)
      return core::invalid_model(str_cat(where(), ": the model does not import the default ONNX domain"));
    if (domain == ir::kOnnxTrainingDomain && !training_imported_)
      return core::invalid_model(str_cat(where(), ": the model does not import domain '", domain, "'"));
    std::vector<ir::Value*> inputs;
    for (const auto& in : np.input()) {
      if (in.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      ir::Value* v = resolve(g, in);
      if (!v) return core::invalid_model(str_cat(where(), ": input '", in, "' is not defined by any earlier node, input or initializer"));
      inputs.push_back(v);
    }
    std::vector<std::string> outs;
    for (const auto& o : np.output()) {
      if (!o.empty() && g.find_value(o))
        return core::invalid_model(str_cat(where(), ": output '", o, "' is already defined"));
      outs.push_back(o.empty() ? g.unique_value_name("_unused") : o);
    }
    ir::Node* n = g.add_node(np.op_type(), inputs, outs, node_name, domain);
    for (const auto& ap : np.attribute()) {
      Status st = import_attribute(ap, *n, g, depth);
      if (!st.is_ok()) return st.message().find("opset") == std::string::npos ? st.with_context(str_cat("opset ", opset_)) : st;
    }
    // Canonicalize first: some ONNX ops exist only as import-time rewrites (Constant becomes a
    // constant value, Scatter becomes ScatterElements), so the op set is checked afterwards.
    if (domain.empty()) {
      Status st = upgrade_node(g, n, opset_);
      if (!st.is_ok()) return core::Status(st.code(), str_cat(where(), ": ", st.message()));
    }
    if (n && !ir::OpRegistry::global().find(n->domain(), n->op_type())) {
      std::string rewritten = n->op_type() == np.op_type() ? "" : str_cat(" (rewritten as ", n->op_type(), ")");
      return core::unsupported(str_cat(where(), rewritten, ": unknown op (not in Kestrel's op set)"));
    }
    return Status::ok();
  }

  const OnnxImportOptions& opts_;
  int64_t opset_;
  bool training_imported_;
  std::unordered_map<const ir::Graph*, ir::Node*> owner_;
  std::unordered_map<const ir::Graph*, std::unordered_map<std::string, ir::ValueType>> declared_;
};

}  // namespace

bool looks_like_onnx(const void* data, size_t size) {
  // ModelProto starts with field 1 (ir_version, varint: 0x08) in practice; also accept a model
  // whose first field is another known one (opset_import 0x42, producer_name 0x12, graph 0x3a).
  if (size < 2) return false;
  auto b = static_cast<const unsigned char*>(data)[0];
  return b == 0x08 || b == 0x12 || b == 0x1a || b == 0x3a || b == 0x42;
}

Result<std::unique_ptr<ir::Graph>> import_onnx(const void* data, size_t size, const OnnxImportOptions& opts) {
  const std::string& src = opts.source_name;
  if (size > static_cast<size_t>(INT32_MAX))
    return core::unsupported(str_cat(src, ": models over 2 GiB must keep their weights in external data files"));
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size)))
    return core::invalid_model(str_cat(src, ": not a valid ONNX model (protobuf parse failed; truncated or not ONNX?)"));
  if (!model.has_graph()) return core::invalid_model(str_cat(src, ": ONNX model has no graph"));
  int64_t opset = -1;
  bool training = false;
  for (const auto& os : model.opset_import()) {
    if (os.domain().empty() || os.domain() == "ai.onnx") opset = os.version();
    if (os.domain() == ir::kOnnxTrainingDomain) {
      if (os.version() != 1)
        return core::unsupported(str_cat(src, ": domain '", os.domain(), "' version ", os.version(),
                                         " is not supported (only version 1)"));
      training = true;
    }
  }
  if (opset < 0) {
    if (model.opset_import_size() == 0) {
      opset = 1;  // IR version 3 models without opset_import
    } else {
      // Only other domains: fine when Kestrel knows them all (a model of optimizer ops needs no
      // default opset); a default-domain node is then an error at import_node.
      for (const auto& os : model.opset_import())
        if (os.domain() != ir::kKestrelDomain && os.domain() != ir::kOnnxTrainingDomain)
          return core::unsupported(str_cat(src, ": operator domain '", os.domain(), "' is not supported"));
      if (!training) return core::invalid_model(str_cat(src, ": model imports no default ONNX opset"));
      opset = kNoDefaultOpset;
    }
  }
  if (opset != kNoDefaultOpset && (opset < kMinOpset || opset > kMaxOpset))
    return core::unsupported(str_cat(src, ": ONNX opset ", opset, " is not supported (", kMinOpset, " to ", kMaxOpset, ")"));
  auto g = std::make_unique<ir::Graph>(model.graph().name().empty() ? "main" : model.graph().name());
  Importer imp(opts, opset, training);
  Status st = imp.import_graph(model.graph(), *g, 0);
  if (!st.is_ok()) return st.with_context(src);
  g->metadata()["source_format"] = "onnx";
  if (opset != kNoDefaultOpset) g->metadata()["onnx_opset"] = std::to_string(opset);
  if (training) g->metadata()["onnx_training_opset"] = "1";
  g->metadata()["onnx_ir_version"] = std::to_string(model.ir_version());
  g->metadata()["producer"] = model.producer_name() + (model.producer_version().empty() ? "" : " " + model.producer_version());
  for (const auto& kv : model.metadata_props()) g->metadata()["user." + kv.key()] = kv.value();
  return g;
}

Result<std::unique_ptr<ir::Graph>> import_onnx_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return core::io_error(str_cat("cannot open ", path));
  std::ostringstream ss;
  ss << f.rdbuf();
  std::string bytes = ss.str();
  OnnxImportOptions opts;
  opts.source_name = path;
  size_t slash = path.find_last_of('/');
  opts.model_dir = slash == std::string::npos ? "." : path.substr(0, slash);
  return import_onnx(bytes.data(), bytes.size(), opts);
}

}  // namespace kestrel::frontend

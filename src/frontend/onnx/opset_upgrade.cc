// Opset canonicalization table (see opset_upgrade.h). Each entry names the opset where the
// form changed in the ONNX changelog.
#include "frontend/onnx/opset_upgrade.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/str_util.h"

namespace kestrel::frontend {

using core::Result;
using core::Status;
using core::str_cat;
using core::Tensor;

namespace {

// Moves an int-list attribute into input `index` as an i64 constant (absent attribute: no input).
void ints_attr_to_input(ir::Graph& g, ir::Node* n, const char* attr, size_t index) {
  const ir::Attribute* a = n->attr(attr);
  if (!a || !a->is<std::vector<int64_t>>()) return;
  auto v = a->get<std::vector<int64_t>>();
  Tensor t = Tensor::from_vector<int64_t>(v, core::Dims{static_cast<int64_t>(v.size())});
  ir::Value* c = g.add_constant(g.unique_value_name(n->name() + "_" + attr), std::move(t));
  while (n->num_inputs() < index) n->add_input(nullptr);
  n->set_input(index, c);
  n->remove_attr(attr);
}

void float_attr_to_input(ir::Graph& g, ir::Node* n, const char* attr, size_t index, std::optional<float> def) {
  const ir::Attribute* a = n->attr(attr);
  float v;
  if (a && a->is<float>()) v = a->get<float>();
  else if (def) v = *def;
  else return;
  ir::Value* c = g.add_constant(g.unique_value_name(n->name() + "_" + attr), Tensor::scalar<float>(v));
  while (n->num_inputs() < index) n->add_input(nullptr);
  n->set_input(index, c);
  n->remove_attr(attr);
}

Status upgrade_constant(ir::Graph& g, ir::Node*& n) {
  Tensor t;
  const auto& attrs = n->attributes();
  if (attrs.size() != 1) return core::invalid_model("Constant needs exactly one value attribute");
  const auto& [name, a] = *attrs.begin();
  if (name == "value" && a.is<Tensor>()) t = a.get<Tensor>();
  else if (name == "value_float" && a.is<float>()) t = Tensor::scalar<float>(a.get<float>());
  else if (name == "value_int" && a.is<int64_t>()) t = Tensor::scalar<int64_t>(a.get<int64_t>());
  else if (name == "value_floats" && a.is<std::vector<float>>())
    t = Tensor::from_vector<float>(a.get<std::vector<float>>(),
                                   core::Dims{static_cast<int64_t>(a.get<std::vector<float>>().size())});
  else if (name == "value_ints" && a.is<std::vector<int64_t>>())
    t = Tensor::from_vector<int64_t>(a.get<std::vector<int64_t>>(),
                                     core::Dims{static_cast<int64_t>(a.get<std::vector<int64_t>>().size())});
  else if (name == "value_string" && a.is<std::string>()) {
    KESTREL_ASSIGN_OR_RETURN(t, Tensor::allocate(core::DType::kString, {}));
    t.data<std::string>()[0] = a.get<std::string>();
  } else if (name == "value_strings" && a.is<std::vector<std::string>>()) {
    const auto& v = a.get<std::vector<std::string>>();
    KESTREL_ASSIGN_OR_RETURN(t, Tensor::allocate(core::DType::kString, {static_cast<int64_t>(v.size())}));
    for (size_t i = 0; i < v.size(); ++i) t.data<std::string>()[i] = v[i];
  } else {
    return core::unsupported(str_cat("Constant attribute '", name, "' is not supported"));
  }
  if (n->num_outputs() != 1) return core::invalid_model("Constant must have one output");
  std::string out_name = n->output(0)->name();
  KESTREL_RETURN_IF_ERROR(g.remove_node(n));
  g.add_constant(out_name, std::move(t));
  n = nullptr;
  return Status::ok();
}

// Opset < 13 Softmax/LogSoftmax/Hardmax: coerce to 2-D at `axis` (default 1), apply on the last
// axis, reshape back. Rewritten as Flatten -> op(axis=-1) -> Reshape(Shape(x)).
Status upgrade_softmax_2d(ir::Graph& g, ir::Node*& n) {
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, n->attr_int("axis", 1));
  ir::Value* x = n->input(0);
  ir::Value* y = n->output(0);
  std::string base = n->name();
  ir::Node* flat = g.insert_node_before(n, "Flatten", {x}, {g.unique_value_name(base + "_2d")}, base + "_flatten");
  flat->set_attr("axis", axis);
  ir::Node* op = g.insert_node_before(n, n->op_type(), {flat->output(0)}, {g.unique_value_name(base + "_y2d")},
                                      base + "_lastaxis");
  op->set_attr("axis", int64_t{-1});
  ir::Node* shape = g.insert_node_before(n, "Shape", {x}, {g.unique_value_name(base + "_shape")}, base + "_shape");
  // Move the original output value onto a Reshape so downstream names stay the same.
  std::string y_name = y->name();
  ir::Node* reshape = g.insert_node_before(n, "Reshape", {op->output(0), shape->output(0)},
                                           {g.unique_value_name(y_name + "_tmp")}, base + "_reshape");
  g.replace_all_uses(y, reshape->output(0));
  KESTREL_RETURN_IF_ERROR(g.remove_node(n));
  if (!g.rename_value(reshape->output(0), y_name)) return core::internal_error("rename failed");
  n = reshape;
  return Status::ok();
}

// Replaces `n` by a node of another op type with the given inputs and n's attributes and output
// names; `n` then points at the new node.
Status replace_op(ir::Graph& g, ir::Node*& n, const std::string& op_type, std::vector<ir::Value*> inputs) {
  std::vector<std::string> tmp_names;
  for (ir::Value* o : n->outputs()) tmp_names.push_back(g.unique_value_name(o->name() + "_" + op_type));
  ir::Node* m = g.insert_node_before(n, op_type, std::move(inputs), tmp_names, n->name());
  for (const auto& [k, a] : n->attributes()) m->set_attr(k, a);
  std::vector<std::string> names;
  for (size_t i = 0; i < n->num_outputs(); ++i) {
    names.push_back(n->output(i)->name());
    g.replace_all_uses(n->output(i), m->output(i));
  }
  KESTREL_RETURN_IF_ERROR(g.remove_node(n));
  for (size_t i = 0; i < names.size(); ++i)
    if (!g.rename_value(m->output(i), names[i])) return core::internal_error("rename failed");
  n = m;
  return Status::ok();
}

// Upsample (opsets 7-9) and Resize-10 are Resize with asymmetric coordinates and, for nearest,
// floor rounding (Upsample's definition: output index i reads input index floor(i / scale)).
// Upsample-7 had `scales` as an attribute; Upsample-1 had height_scale / width_scale.
Status upgrade_upsample(ir::Graph& g, ir::Node*& n, int64_t opset) {
  KESTREL_ASSIGN_OR_RETURN(std::string mode, n->attr_string("mode", std::string("nearest")));
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear")
    return core::unsupported(str_cat(n->describe(), ": mode '", mode, "' is not supported"));
  ir::Value* scales = n->input(1);
  if (n->op_type() == "Upsample" && opset < 9) {
    std::vector<float> v;
    if (n->has_attr("scales")) {
      KESTREL_ASSIGN_OR_RETURN(v, n->attr_floats("scales"));
    } else if (n->has_attr("height_scale") && n->has_attr("width_scale")) {
      KESTREL_ASSIGN_OR_RETURN(float h, n->attr_float("height_scale"));
      KESTREL_ASSIGN_OR_RETURN(float w, n->attr_float("width_scale"));
      v = {1.f, 1.f, h, w};
    } else {
      return core::invalid_model(str_cat(n->describe(), ": needs the 'scales' attribute"));
    }
    scales = g.add_constant(g.unique_value_name(n->name() + "_scales"),
                            Tensor::from_vector<float>(v, core::Dims{static_cast<int64_t>(v.size())}));
  }
  if (!n->input(0) || !scales) return core::invalid_model(str_cat(n->describe(), ": needs X and scales"));
  for (const char* a : {"scales", "height_scale", "width_scale", "mode"}) n->remove_attr(a);
  ir::Value* x = n->input(0);
  KESTREL_RETURN_IF_ERROR(replace_op(g, n, "Resize", {x, nullptr, scales}));
  n->set_attr("mode", mode);
  n->set_attr("coordinate_transformation_mode", std::string("asymmetric"));
  n->set_attr("nearest_mode", std::string("floor"));
  return Status::ok();
}

using Upgrade = std::function<Status(ir::Graph&, ir::Node*&, int64_t opset)>;

const std::map<std::string, Upgrade>& upgrades() {
  static const std::map<std::string, Upgrade> table = [] {
    std::map<std::string, Upgrade> t;
    t["Constant"] = [](ir::Graph& g, ir::Node*& n, int64_t) { return upgrade_constant(g, n); };
    // Clip-11: min/max attributes became optional inputs.
    t["Clip"] = [](ir::Graph& g, ir::Node*& n, int64_t opset) {
      if (opset < 11) {
        float_attr_to_input(g, n, "min", 1, std::nullopt);
        float_attr_to_input(g, n, "max", 2, std::nullopt);
      }
      return Status::ok();
    };
    // Split-13: `split` attribute became an input. Split-18 adds num_outputs (kept as attribute).
    t["Split"] = [](ir::Graph& g, ir::Node*& n, int64_t opset) {
      if (opset < 13) ints_attr_to_input(g, n, "split", 1);
      return Status::ok();
    };
    // Squeeze/Unsqueeze-13: `axes` attribute became an input.
    for (const char* op : {"Squeeze", "Unsqueeze"})
      t[op] = [](ir::Graph& g, ir::Node*& n, int64_t opset) {
        if (opset < 13) ints_attr_to_input(g, n, "axes", 1);
        return Status::ok();
      };
    // ReduceSum-13 and the other reductions at 18: `axes` became an input.
    for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                           "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
      t[op] = [](ir::Graph& g, ir::Node*& n, int64_t opset) {
        if (opset < 18) ints_attr_to_input(g, n, "axes", 1);
        return Status::ok();
      };
    t["ReduceSum"] = [](ir::Graph& g, ir::Node*& n, int64_t opset) {
      if (opset < 13) ints_attr_to_input(g, n, "axes", 1);
      return Status::ok();
    };
    // Pad-11: pads and value became inputs; Pad-2 called it `paddings` in opset 1.
    t["Pad"] = [](ir::Graph& g, ir::Node*& n, int64_t opset) {
      if (opset < 11) {
        if (n->has_attr("paddings")) {
          n->set_attr("pads", *n->attr("paddings"));
          n->remove_attr("paddings");
        }
        ints_attr_to_input(g, n, "pads", 1);
        float_attr_to_input(g, n, "value", 2, std::nullopt);
      }
      return Status::ok();
    };
    // Slice-10: starts/ends/axes became inputs (and steps was added).
    t["Slice"] = [](ir::Graph& g, ir::Node*& n, int64_t opset) {
      if (opset < 10) {
        ints_attr_to_input(g, n, "starts", 1);
        ints_attr_to_input(g, n, "ends", 2);
        ints_attr_to_input(g, n, "axes", 3);
      }
      return Status::ok();
    };
    // Dropout-12: ratio became an input; inference-time Dropout is identity either way.
    t["Dropout"] = [](ir::Graph& g, ir::Node*& n, int64_t opset) {
      if (opset < 12) float_attr_to_input(g, n, "ratio", 1, std::nullopt);
      n->remove_attr("is_test");
      return Status::ok();
    };
    // TopK-10: k became an input.
    t["TopK"] = [](ir::Graph& g, ir::Node*& n, int64_t opset) {
      if (opset < 10) {
        KESTREL_ASSIGN_OR_RETURN(int64_t k, n->attr_int("k"));
        ir::Value* c = g.add_constant(g.unique_value_name(n->name() + "_k"),
                                      Tensor::from_vector<int64_t>({k}, core::Dims{1}));
        n->set_input(1, c);
        n->remove_attr("k");
      }
      return Status::ok();
    };
    // DFT-20: `axis` (default 1) became input 2 (default -2).
    t["DFT"] = [](ir::Graph& g, ir::Node*& n, int64_t opset) {
      if (opset < 20) {
        KESTREL_ASSIGN_OR_RETURN(int64_t axis, n->attr_int("axis", 1));
        ir::Value* c = g.add_constant(g.unique_value_name(n->name() + "_axis"), Tensor::scalar<int64_t>(axis));
        while (n->num_inputs() < 2) n->add_input(nullptr);
        if (n->num_inputs() < 3) n->add_input(c);
        else n->set_input(2, c);
        n->remove_attr("axis");
      }
      return Status::ok();
    };
    for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"})
      t[op] = [](ir::Graph& g, ir::Node*& n, int64_t opset) {
        if (opset < 13) return upgrade_softmax_2d(g, n);
        return Status::ok();
      };
    // Scatter (deprecated at 11) is ScatterElements.
    t["Scatter"] = [](ir::Graph& g, ir::Node*& n, int64_t) {
      ir::Node* m = g.insert_node_before(n, "ScatterElements", n->inputs(), {g.unique_value_name(n->output(0)->name() + "_s")},
                                         n->name() + "_scatter");
      for (const auto& [k, a] : n->attributes()) m->set_attr(k, a);
      std::string y = n->output(0)->name();
      g.replace_all_uses(n->output(0), m->output(0));
      KESTREL_RETURN_IF_ERROR(g.remove_node(n));
      g.rename_value(m->output(0), y);
      n = m;
      return Status::ok();
    };
    // Scan-8 had a leading batch axis on every input and an optional sequence_lens input first;
    // Scan-9 dropped both. We keep the batched form behind an attribute the kernel understands.
    t["Scan"] = [](ir::Graph&, ir::Node*& n, int64_t opset) {
      if (opset >= 9) return Status::ok();
      if (n->num_inputs() > 0 && n->input(0))
        return core::unsupported("Scan (opset 8) with sequence_lens is not supported");
      std::vector<ir::Value*> rest(n->inputs().begin() + (n->num_inputs() > 0 ? 1 : 0), n->inputs().end());
      n->truncate_inputs(0);
      for (ir::Value* v : rest) n->add_input(v);
      if (n->has_attr("directions")) {
        n->set_attr("scan_input_directions", *n->attr("directions"));
        n->remove_attr("directions");
      }
      n->set_attr("kestrel_batched_scan8", int64_t{1});
      return Status::ok();
    };
    t["Upsample"] = upgrade_upsample;
    t["Resize"] = [](ir::Graph& g, ir::Node*& n, int64_t opset) {
      if (opset < 11) return upgrade_upsample(g, n, opset);
      return Status::ok();
    };
    // GridSample-20 renamed bilinear / bicubic to linear / cubic (and allowed N-D input).
    t["GridSample"] = [](ir::Graph&, ir::Node*& n, int64_t) {
      auto mode = n->attr_string("mode", std::string("linear"));
      if (mode.is_ok() && *mode == "bilinear") n->set_attr("mode", std::string("linear"));
      if (mode.is_ok() && *mode == "bicubic") n->set_attr("mode", std::string("cubic"));
      return Status::ok();
    };
    // RoiAlign-10 had no coordinate_transformation_mode and behaved as output_half_pixel; the
    // attribute (default half_pixel) came with opset 16.
    t["RoiAlign"] = [](ir::Graph&, ir::Node*& n, int64_t opset) {
      if (opset < 16 && !n->has_attr("coordinate_transformation_mode"))
        n->set_attr("coordinate_transformation_mode", std::string("output_half_pixel"));
      return Status::ok();
    };
    // BatchNormalization before 9 had `spatial` (always 1 in practice) and is_test.
    t["BatchNormalization"] = [](ir::Graph&, ir::Node*& n, int64_t) {
      if (n->has_attr("spatial")) {
        auto s = n->attr_int("spatial");
        if (s.is_ok() && *s == 0) return core::unsupported("BatchNormalization with spatial=0 is not supported");
        n->remove_attr("spatial");
      }
      n->remove_attr("is_test");
      n->remove_attr("consumed_inputs");
      return Status::ok();
    };
    return t;
  }();
  return table;
}

}  // namespace

Status upgrade_node(ir::Graph& g, ir::Node*& n, int64_t opset) {
  auto it = upgrades().find(n->op_type());
  if (it == upgrades().end()) return Status::ok();
  return it->second(g, n, opset);
}

}  // namespace kestrel::frontend

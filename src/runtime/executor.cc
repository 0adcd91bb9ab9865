// Executor: planning (inference, plan-time folding, arena placement) and the run loop.
#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "core/str_util.h"
#include "ir/op_schema.h"
#include "kernels/reference/data_movement.h"
#include "kernels/reference/transform.h"

namespace kestrel::runtime {

using core::str_cat;
namespace ref = kernels::ref;

enum class SlotState : uint8_t {
  kUnknown,
  kInput,     // a graph input, bound by run()
  kOuter,     // an outer-scope value, bound by bind_outer()
  kConstant,  // an initializer
  kFolded,    // computed at plan time
  kArena,     // static shape: lives in the arena
  kOutput,    // static shape graph output: caller's buffer or allocated per run
  kOwned,     // static shape but not arena-placeable (strings): its own allocation, made at plan time
  kDynamic,   // shape known only at run time: allocated per run, freed after last use
};

struct Executor::Slot {
  const ir::Value* value = nullptr;
  core::DType dtype = core::DType::kUndefined;
  SlotState state = SlotState::kUnknown;
  Tensor tensor;
  ir::ValueType type;  // planned type (concrete when static)
  int def_step = -1;
  int last_use = -1;
  bool graph_output = false;
  size_t offset = 0;
  // Lives in another arena slot's bytes (a Concat input written into its slice of the output, or a view of an
  // input, see plan_concat_in_place and plan_views): its bytes start alias_offset into slot alias_of, which is
  // placed for the lifetimes of all the slots living in it and never lives in another itself.
  int alias_of = -1;
  size_t alias_offset = 0;
  bool has_aliases = false;
  core::Dims out_dims;  // kOutput: the planned dims, to recognize a caller's matching tensor
  // Kernel arguments that refer to this slot (fixed after build()); run() points them at the
  // caller's input and output tensors, so binding those copies nothing.
  std::vector<const Tensor**> readers;
  std::vector<Tensor**> writers;
  const Tensor* bound = nullptr;  // the caller's tensor while run() has it bound
};

struct Executor::Step {
  const ir::Node* node = nullptr;
  const ir::OpSchema* schema = nullptr;
  std::unique_ptr<OpKernel> kernel;
  std::vector<int> in, out, implicit;
  std::vector<const Tensor*> in_ptrs, implicit_ptrs;
  std::vector<Tensor*> out_ptrs;
  std::vector<core::DType> out_dtypes;
  bool folded = false;
  bool dynamic = false;
  bool view = false;               // its outputs are views of its input (plan_views): not run
  std::vector<int> release_after;  // dynamic slots whose last use is this step
};

Executor::Executor(const ir::Graph& g, const ExecutorOptions& opts) : graph_(g), opts_(opts) {}
Executor::~Executor() = default;

Result<std::unique_ptr<Executor>> Executor::create(const ir::Graph& graph, const ExecutorOptions& opts) {
  std::unique_ptr<Executor> ex(new Executor(graph, opts));
  KESTREL_RETURN_IF_ERROR(ex->build());
  return ex;
}

void Executor::bind_outer(const std::string& name, const Tensor* t) {
  for (size_t i = 0; i < outer_names_.size(); ++i)
    if (outer_names_[i] == name) slots_[static_cast<size_t>(outer_slots_[i])].tensor = *t;
}

Status Executor::build() {
  std::unordered_map<const ir::Value*, int> slot_of;
  auto slot_for = [&](const ir::Value* v) {
    auto it = slot_of.find(v);
    if (it != slot_of.end()) return it->second;
    int id = static_cast<int>(slots_.size());
    Slot s;
    s.value = v;
    s.dtype = v->dtype();
    s.graph_output = v->is_graph_output();
    slots_.push_back(std::move(s));
    slot_of[v] = id;
    if (v->kind() == ir::ValueKind::kOuterScope) {
      outer_names_.push_back(v->name());
      outer_slots_.push_back(id);
    }
    return id;
  };
  for (const ir::Value* v : graph_.inputs()) input_slots_.push_back(slot_for(v));
  for (const ir::Node* n : graph_.nodes()) {
    Step s;
    s.node = n;
    s.schema = ir::OpRegistry::global().find(n->domain(), n->op_type());
    if (!s.schema) return core::unsupported(str_cat(n->describe(), ": unknown op"));
    KernelCreateInfo info{*n, {}, {}, {}, opts_.kernel};
    for (const ir::Value* v : n->inputs()) {
      s.in.push_back(v ? slot_for(v) : -1);
      info.input_types.push_back(v ? &v->type() : nullptr);
      info.constant_inputs.push_back(v && v->is_constant() ? &v->constant() : nullptr);
    }
    for (const ir::Value* v : n->implicit_inputs()) s.implicit.push_back(slot_for(v));
    for (const ir::Value* v : n->outputs()) {
      s.out.push_back(slot_for(v));
      s.out_dtypes.push_back(v->dtype());
    }
    info.output_dtypes = s.out_dtypes;
    KESTREL_ASSIGN_OR_RETURN(s.kernel, create_kernel(info));
    steps_.push_back(std::move(s));
  }
  for (const ir::Value* v : graph_.outputs()) output_slots_.push_back(slot_for(v));
  // Pointers into slots_ and into the steps' pointer arrays are stable from here on.
  for (auto& s : steps_) {
    for (int id : s.in) s.in_ptrs.push_back(id >= 0 ? &slots_[static_cast<size_t>(id)].tensor : nullptr);
    for (int id : s.out) s.out_ptrs.push_back(&slots_[static_cast<size_t>(id)].tensor);
    for (int id : s.implicit) s.implicit_ptrs.push_back(&slots_[static_cast<size_t>(id)].tensor);
  }
  for (auto& s : steps_) {
    for (size_t i = 0; i < s.in.size(); ++i)
      if (s.in[i] >= 0) slots_[static_cast<size_t>(s.in[i])].readers.push_back(&s.in_ptrs[i]);
    for (size_t i = 0; i < s.implicit.size(); ++i)
      slots_[static_cast<size_t>(s.implicit[i])].readers.push_back(&s.implicit_ptrs[i]);
    for (size_t i = 0; i < s.out.size(); ++i) slots_[static_cast<size_t>(s.out[i])].writers.push_back(&s.out_ptrs[i]);
  }
  for (auto& sl : slots_) {
    if (sl.value->is_constant()) {
      sl.state = SlotState::kConstant;
      sl.tensor = sl.value->constant();
    }
  }
  return Status::ok();
}

Status Executor::infer_step(const Step& s, std::vector<ir::ValueType>& out_types, bool use_values) {
  std::vector<ir::ValueType> types(s.in.size());
  std::vector<const ir::ValueType*> type_ptrs(s.in.size(), nullptr);
  std::vector<const Tensor*> values(s.in.size(), nullptr);
  for (size_t i = 0; i < s.in.size(); ++i) {
    if (s.in[i] < 0) continue;
    const Slot& sl = slots_[static_cast<size_t>(s.in[i])];
    type_ptrs[i] = &sl.type;
    bool has_value = sl.state == SlotState::kConstant || sl.state == SlotState::kFolded || use_values;
    // Through the kernel argument: at run time it may point at a caller's tensor.
    if (has_value && s.in_ptrs[i]->defined()) values[i] = s.in_ptrs[i];
  }
  ir::InferContext ctx(*s.node, type_ptrs, values);
  KESTREL_RETURN_IF_ERROR(ir::run_inference(*s.schema, ctx));
  out_types = std::move(ctx.outputs());
  for (size_t i = 0; i < out_types.size(); ++i)
    if (out_types[i].dtype == core::DType::kUndefined) out_types[i].dtype = s.out_dtypes[i];
  return Status::ok();
}

Status Executor::plan(std::span<const Tensor* const> inputs) {
  planned_ = false;
  stats_ = PlanStats{};
  for (auto& sl : slots_) {
    if (sl.value->kind() == ir::ValueKind::kOuterScope) continue;  // bound by bind_outer()
    if (sl.state != SlotState::kConstant) {
      sl.state = SlotState::kUnknown;
      sl.tensor = Tensor();
      sl.type = ir::ValueType{sl.dtype, ir::Shape::unknown_rank()};
    } else {
      sl.type = ir::ValueType{sl.tensor.dtype(), ir::Shape(sl.tensor.dims())};
    }
    sl.def_step = -1;
    sl.last_use = -1;
  }
  planned_dims_.clear();
  // Inputs are planned by type only; run() binds the caller's tensors.
  for (size_t i = 0; i < input_slots_.size(); ++i) {
    Slot& sl = slots_[static_cast<size_t>(input_slots_[i])];
    sl.state = SlotState::kInput;
    sl.type = ir::ValueType{inputs[i]->dtype(), ir::Shape(inputs[i]->dims())};
    planned_dims_.push_back(inputs[i]->dims());
  }
  for (int id : outer_slots_) {
    Slot& sl = slots_[static_cast<size_t>(id)];
    if (!sl.tensor.defined())
      return core::internal_error(str_cat("outer-scope value '", sl.value->name(), "' was not bound"));
    sl.state = SlotState::kOuter;
    sl.def_step = sl.last_use = -1;
    sl.type = ir::ValueType{sl.tensor.dtype(), ir::Shape(sl.tensor.dims())};
    planned_dims_.push_back(sl.tensor.dims());
  }

  auto known_value = [&](int id) {
    if (id < 0) return true;
    SlotState st = slots_[static_cast<size_t>(id)].state;
    return st == SlotState::kConstant || st == SlotState::kFolded;
  };

  for (size_t si = 0; si < steps_.size(); ++si) {
    Step& s = steps_[si];
    s.folded = s.dynamic = s.view = false;
    s.release_after.clear();
    bool dynamic_input = false;
    bool foldable = !s.schema->nondeterministic && s.node->subgraphs().empty() && s.implicit.empty();
    std::vector<Tensor> shape_holders(s.in.size());
    for (size_t i = 0; i < s.in.size(); ++i) {
      int id = s.in[i];
      if (id < 0) continue;
      const Slot& sl = slots_[static_cast<size_t>(id)];
      if (sl.state == SlotState::kDynamic) dynamic_input = true;
      if (!known_value(id) && !(s.schema->reads_only_shape(i) && sl.type.shape.fully_known())) foldable = false;
    }
    for (int id : s.implicit)
      if (slots_[static_cast<size_t>(id)].state == SlotState::kDynamic) dynamic_input = true;

    if (foldable) {
      // Everything this node reads is known now: compute it once, here.
      std::vector<const Tensor*> ins(s.in.size(), nullptr);
      for (size_t i = 0; i < s.in.size(); ++i) {
        if (s.in[i] < 0) continue;
        const Slot& sl = slots_[static_cast<size_t>(s.in[i])];
        if (known_value(s.in[i])) {
          ins[i] = &sl.tensor;
        } else {
          shape_holders[i] = Tensor::view(sl.type.dtype, sl.type.shape.concrete(), nullptr);
          ins[i] = &shape_holders[i];
        }
      }
      KESTREL_ASSIGN_OR_RETURN(auto outs, evaluate_node(*s.node, ins));
      for (size_t o = 0; o < s.out.size(); ++o) {
        Slot& sl = slots_[static_cast<size_t>(s.out[o])];
        sl.state = SlotState::kFolded;
        sl.tensor = std::move(outs[o]);
        sl.type = ir::ValueType{sl.tensor.dtype(), ir::Shape(sl.tensor.dims())};
      }
      s.folded = true;
      ++stats_.folded_steps;
      continue;
    }

    std::vector<ir::ValueType> out_types;
    bool all_known = false;
    if (!dynamic_input) {
      KESTREL_RETURN_IF_ERROR(infer_step(s, out_types, false));
      all_known = !s.schema->data_dependent_shape;
      for (const auto& t : out_types)
        if (!t.shape.fully_known()) all_known = false;
    }
    s.dynamic = !all_known;
    if (s.dynamic) ++stats_.dynamic_steps;
    else ++stats_.static_steps;
    for (size_t o = 0; o < s.out.size(); ++o) {
      Slot& sl = slots_[static_cast<size_t>(s.out[o])];
      sl.def_step = static_cast<int>(si);
      if (s.dynamic) {
        sl.state = SlotState::kDynamic;
        sl.type = ir::ValueType{s.out_dtypes[o], ir::Shape::unknown_rank()};
      } else {
        sl.state = sl.graph_output ? SlotState::kOutput : SlotState::kArena;
        sl.type = out_types[o];
        sl.dtype = out_types[o].dtype;
        s.out_dtypes[o] = sl.dtype;
        if (sl.graph_output) sl.out_dims = sl.type.shape.concrete();
      }
    }
    for (int id : s.in)
      if (id >= 0) slots_[static_cast<size_t>(id)].last_use = static_cast<int>(si);
    for (int id : s.implicit) slots_[static_cast<size_t>(id)].last_use = static_cast<int>(si);
  }

  // Dynamic slots are freed right after their last use.
  for (size_t id = 0; id < slots_.size(); ++id) {
    Slot& sl = slots_[id];
    if (sl.state == SlotState::kDynamic && !sl.graph_output && sl.last_use >= 0)
      steps_[static_cast<size_t>(sl.last_use)].release_after.push_back(static_cast<int>(id));
  }

  for (auto& sl : slots_) {
    sl.alias_of = -1;
    sl.alias_offset = 0;
    sl.has_aliases = false;
  }
  if (!opts_.kernel.reference_only) {
    plan_concat_in_place();
    plan_views();
  }

  // Arena: greedy by size, placing each tensor at the lowest offset that does not overlap a
  // tensor alive at the same time.
  struct Item {
    int slot;
    size_t bytes;
    int begin, end;
  };
  std::vector<Item> items;
  for (size_t id = 0; id < slots_.size(); ++id) {
    Slot& sl = slots_[id];
    if (sl.state != SlotState::kArena) continue;
    if (sl.dtype == core::DType::kString) {
      // std::string elements own heap memory and need construction: they cannot be placed in raw
      // arena bytes. They get their own tensor, reused by every run until the next plan.
      sl.state = SlotState::kOwned;
      KESTREL_ASSIGN_OR_RETURN(sl.tensor, Tensor::allocate(sl.dtype, sl.type.shape.concrete()));
      continue;
    }
    KESTREL_ASSIGN_OR_RETURN(int64_t n, core::checked_num_elements(sl.type.shape.concrete()));
    size_t bytes = core::align_up(static_cast<size_t>(n) * core::dtype_size(sl.dtype));
    stats_.sum_activation_bytes += bytes;
    if (sl.alias_of >= 0) continue;  // placed with the slot it lives in
    int begin = sl.def_step, end = std::max(sl.last_use, sl.def_step);
    if (sl.has_aliases)  // from the first step that writes a slice to the last that reads a view
      for (const Slot& other : slots_)
        if (&other != &sl && other.alias_of == static_cast<int>(id)) {
          begin = std::min(begin, other.def_step);
          end = std::max({end, other.last_use, other.def_step});
        }
    items.push_back({static_cast<int>(id), bytes, begin, end});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.bytes > b.bytes; });
  std::vector<const Item*> placed;
  std::vector<size_t> offsets(slots_.size(), 0);
  size_t total = 0;
  for (const Item& it : items) {
    std::vector<std::pair<size_t, size_t>> busy;
    for (const Item* p : placed)
      if (p->begin <= it.end && it.begin <= p->end)
        busy.emplace_back(offsets[static_cast<size_t>(p->slot)], offsets[static_cast<size_t>(p->slot)] + p->bytes);
    std::sort(busy.begin(), busy.end());
    size_t off = 0;
    for (const auto& [b, e] : busy) {
      if (off + it.bytes <= b) break;
      off = std::max(off, e);
    }
    offsets[static_cast<size_t>(it.slot)] = off;
    total = std::max(total, off + it.bytes);
    placed.push_back(&it);
  }
  if (total > arena_capacity_ || !arena_) {
    KESTREL_ASSIGN_OR_RETURN(arena_, core::allocate_arena(std::max<size_t>(total, 64)));
    arena_capacity_ = std::max<size_t>(total, 64);
  }
  stats_.arena_bytes = total;
  auto* base = static_cast<uint8_t*>(arena_.get());
  for (const Item& it : items) {
    Slot& sl = slots_[static_cast<size_t>(it.slot)];
    sl.offset = offsets[static_cast<size_t>(it.slot)];
    sl.tensor = Tensor::view(sl.dtype, sl.type.shape.concrete(), base + sl.offset);
  }
  for (Slot& sl : slots_) {
    if (sl.alias_of < 0) continue;
    sl.offset = slots_[static_cast<size_t>(sl.alias_of)].offset + sl.alias_offset;
    sl.tensor = Tensor::view(sl.dtype, sl.type.shape.concrete(), base + sl.offset);
  }
  planned_ = true;
  return Status::ok();
}

// A Concat whose inputs are only read by it, along an axis with nothing but 1s before it (NCHW
// channels at batch 1): each input is placed at its slice of the output, so its producer writes
// there and the Concat finds every input in place (concat_fast then copies nothing). SqueezeNet's
// eight Fire-module Concats, ShuffleNet's branch joins. An input that is itself such a Concat's
// output, or a graph output, or read by anything else, keeps its own memory.
void Executor::plan_concat_in_place() {
  for (size_t si = 0; si < steps_.size(); ++si) {
    const Step& s = steps_[si];
    if (s.folded || s.dynamic || s.out.size() != 1 || !s.node->domain().empty() || s.node->op_type() != "Concat")
      continue;
    Slot& out = slots_[static_cast<size_t>(s.out[0])];
    if (out.state != SlotState::kArena || out.alias_of >= 0) continue;
    auto axis_attr = s.node->attr_int("axis");
    if (!axis_attr.is_ok()) continue;
    const core::Dims& od = out.type.shape.concrete();
    const int64_t rank = static_cast<int64_t>(od.size());
    const int64_t axis = *axis_attr < 0 ? *axis_attr + rank : *axis_attr;
    if (axis < 0 || axis >= rank) continue;
    bool ok = true;
    for (int64_t d = 0; d < axis; ++d) ok = ok && od[static_cast<size_t>(d)] == 1;
    for (size_t i = 0; ok && i < s.in.size(); ++i) {
      if (s.in[i] < 0) {
        ok = false;
        break;
      }
      const Slot& in = slots_[static_cast<size_t>(s.in[i])];
      ok = in.state == SlotState::kArena && !in.graph_output && !in.has_aliases && in.alias_of < 0 &&
           in.dtype == out.dtype && in.dtype != core::DType::kString && in.def_step >= 0 &&
           in.value->uses().size() == 1 && in.last_use == static_cast<int>(si) &&
           std::count(s.in.begin(), s.in.end(), s.in[i]) == 1;
    }
    // Every slice must start on the arena's alignment, as any tensor does (vector kernels).
    size_t pos = 0;
    for (size_t i = 0; ok && i < s.in.size(); ++i) {
      const Slot& in = slots_[static_cast<size_t>(s.in[i])];
      ok = core::align_up(pos) == pos;
      pos += static_cast<size_t>(in.type.shape.num_elements()) * core::dtype_size(in.dtype);
    }
    if (!ok) continue;
    pos = 0;
    for (int id : s.in) {
      Slot& in = slots_[static_cast<size_t>(id)];
      in.alias_of = s.out[0];
      in.alias_offset = pos;
      pos += static_cast<size_t>(in.type.shape.num_elements()) * core::dtype_size(in.dtype);
    }
    out.has_aliases = true;
  }
}

std::vector<size_t> Executor::view_offsets(const Step& s) const {
  if (!s.node->domain().empty() || s.in.empty() || s.in[0] < 0) return {};
  const std::string& op = s.node->op_type();
  const Slot& x = slots_[static_cast<size_t>(s.in[0])];
  const core::Dims& xd = x.type.shape.concrete();
  const size_t esize = core::dtype_size(x.dtype);
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Identity") {
    if (s.out.size() != 1) return {};
    return {0};
  }
  std::vector<int64_t> strides(xd.size(), 1);
  for (size_t d = xd.size(); d-- > 1;) strides[d - 1] = strides[d] * xd[d];
  if (op == "Slice") {
    // Contiguous: whole axes inside the last partial one p, which takes a run of elements (step 1), and one
    // index on every axis outside p. starts / ends / axes / steps must be known at plan time.
    std::vector<int64_t> args[4];
    for (size_t i = 1; i < s.in.size() && i <= 4; ++i) {
      if (s.in[i] < 0) continue;
      const Slot& a = slots_[static_cast<size_t>(s.in[i])];
      if (a.state != SlotState::kConstant && a.state != SlotState::kFolded) return {};
      auto v = ref::read_indices(a.tensor, "Slice argument");
      if (!v.is_ok()) return {};
      args[i - 1] = std::move(*v);
    }
    auto spec = ref::resolve_slice(xd, args[0], args[1], args[2], args[3]);
    if (!spec.is_ok()) return {};
    const auto& sp = *spec;
    size_t p = 0;
    bool partial = false;
    for (size_t d = 0; d < xd.size(); ++d) {
      if (sp[d].count == 0) return {};
      if (sp[d].count != xd[d] || (sp[d].count > 1 && sp[d].step != 1)) {
        p = d;
        partial = true;
      }
    }
    int64_t off = 0;
    for (size_t d = 0; partial && d <= p; ++d) {
      if ((d < p && sp[d].count != 1) || (d == p && sp[d].count > 1 && sp[d].step != 1)) return {};
      off += sp[d].start * strides[d];
    }
    return {static_cast<size_t>(off) * esize};
  }
  if (op == "Split") {
    // Along an axis with only 1s before it: each output is the next run of the input.
    auto axis_attr = s.node->attr_int("axis", 0);
    if (!axis_attr.is_ok()) return {};
    auto normalized = core::normalize_axis(*axis_attr, static_cast<int64_t>(xd.size()), "Split axis");
    if (!normalized.is_ok()) return {};
    const int64_t axis = *normalized;
    for (int64_t d = 0; d < axis; ++d)
      if (xd[static_cast<size_t>(d)] != 1) return {};
    std::vector<size_t> offs;
    int64_t pos = 0;
    for (int id : s.out) {
      const core::Dims& yd = slots_[static_cast<size_t>(id)].type.shape.concrete();
      if (yd.size() != xd.size()) return {};
      offs.push_back(static_cast<size_t>(pos * strides[static_cast<size_t>(axis)]) * esize);
      pos += yd[static_cast<size_t>(axis)];
    }
    if (pos > xd[static_cast<size_t>(axis)]) return {};
    return offs;
  }
  return {};
}

// Steps whose outputs are byte ranges of their input (view_offsets) are not run: each output lives in the
// input's bytes (the slot the input lives in, if it lives in one), which stays alive until the views' last
// readers. Both must be arena slots, so neither is ever a caller's tensor; an output already living in a
// Concat's output keeps its copy. ShuffleNet's channel-shuffle Reshapes and channel-split Slices, the
// transformers' Reshapes, Squeezes and Splits.
void Executor::plan_views() {
  for (Step& s : steps_) {
    if (s.folded || s.dynamic || s.in.empty() || s.in[0] < 0 || s.out.empty()) continue;
    const Slot& x = slots_[static_cast<size_t>(s.in[0])];
    if (x.state != SlotState::kArena || x.dtype == core::DType::kString) continue;
    bool ok = true;
    for (int id : s.out) {
      const Slot& y = slots_[static_cast<size_t>(id)];
      ok = ok && y.state == SlotState::kArena && y.alias_of < 0 && !y.has_aliases && y.dtype == x.dtype &&
           id != s.in[0] && std::count(s.out.begin(), s.out.end(), id) == 1 && y.type.shape.num_elements() > 0 &&
           y.type.shape.num_elements() <= x.type.shape.num_elements();
    }
    if (!ok) continue;
    const std::vector<size_t> offs = view_offsets(s);
    if (offs.size() != s.out.size()) continue;
    for (size_t off : offs) ok = ok && core::align_up(off) == off;  // every tensor starts aligned (vector kernels)
    if (!ok) continue;
    const int root = x.alias_of >= 0 ? x.alias_of : s.in[0];
    const size_t base = x.alias_of >= 0 ? x.alias_offset : 0;
    for (size_t o = 0; o < s.out.size(); ++o) {
      Slot& y = slots_[static_cast<size_t>(s.out[o])];
      y.alias_of = root;
      y.alias_offset = base + offs[o];
    }
    slots_[static_cast<size_t>(root)].has_aliases = true;
    s.view = true;
    ++stats_.view_steps;
  }
}

Status Executor::run_step(Step& s) {
  if (s.dynamic) {
    std::vector<ir::ValueType> out_types;
    for (size_t i = 0; i < s.in.size(); ++i) {
      if (s.in[i] < 0) continue;
      Slot& sl = slots_[static_cast<size_t>(s.in[i])];
      const Tensor& t = *s.in_ptrs[i];
      if (!t.defined()) return core::internal_error(str_cat(s.node->describe(), ": input ", i, " was not computed"));
      sl.type = ir::ValueType{t.dtype(), ir::Shape(t.dims())};
    }
    for (size_t i = 0; i < s.implicit.size(); ++i) {
      Slot& sl = slots_[static_cast<size_t>(s.implicit[i])];
      const Tensor& t = *s.implicit_ptrs[i];
      sl.type = ir::ValueType{t.dtype(), ir::Shape(t.dims())};
    }
    KESTREL_RETURN_IF_ERROR(infer_step(s, out_types, true));
    for (size_t o = 0; o < s.out.size(); ++o) {
      Slot& sl = slots_[static_cast<size_t>(s.out[o])];
      s.out_dtypes[o] = out_types[o].dtype;
      if (!s.schema->data_dependent_shape && out_types[o].shape.fully_known()) {
        KESTREL_ASSIGN_OR_RETURN(sl.tensor, Tensor::allocate(out_types[o].dtype, out_types[o].shape.concrete()));
      } else {
        sl.tensor = Tensor();
      }
    }
  }
  KernelContext ctx(s.in_ptrs, s.out_ptrs, s.out_dtypes, opts_.pool, s.implicit_ptrs);
  if (profiler_) [[unlikely]] {
    auto t0 = std::chrono::steady_clock::now();
    Status st = s.kernel->run(ctx);
    auto t1 = std::chrono::steady_clock::now();
    if (!st.is_ok()) return st.with_context(s.node->describe());
    profiler_(ProfileEvent{*s.node, s.kernel->impl_name(), t0, t1, s.in_ptrs, s.out_ptrs});
  } else {
    Status st = s.kernel->run(ctx);
    if (!st.is_ok()) return st.with_context(s.node->describe());
  }
  for (size_t o = 0; o < s.out.size(); ++o)
    if (!s.out_ptrs[o]->defined())
      return core::internal_error(str_cat(s.node->describe(), ": kernel did not produce output ", o));
  for (int id : s.release_after) slots_[static_cast<size_t>(id)].tensor = Tensor();
  return Status::ok();
}

Status Executor::check_and_plan(std::span<const Tensor* const> inputs) {
  if (inputs.size() != input_slots_.size())
    return core::invalid_argument(str_cat("graph '", graph_.name(), "' takes ", input_slots_.size(), " inputs, got ",
                                          inputs.size()));
  bool same = planned_ && planned_dims_.size() == inputs.size() + outer_slots_.size();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i] || !inputs[i]->defined())
      return core::invalid_argument(str_cat("input '", graph_.inputs()[i]->name(), "' is missing"));
    if (same && inputs[i]->dims() != planned_dims_[i]) same = false;
    if (inputs[i]->dtype() != slots_[static_cast<size_t>(input_slots_[i])].dtype &&
        slots_[static_cast<size_t>(input_slots_[i])].dtype != core::DType::kUndefined)
      return core::invalid_argument(str_cat("input '", graph_.inputs()[i]->name(), "' must be ",
                                            core::dtype_name(slots_[static_cast<size_t>(input_slots_[i])].dtype),
                                            ", got ", core::dtype_name(inputs[i]->dtype())));
  }
  for (size_t k = 0; same && k < outer_slots_.size(); ++k)
    if (slots_[static_cast<size_t>(outer_slots_[k])].tensor.dims() != planned_dims_[inputs.size() + k]) same = false;
  if (!same) KESTREL_RETURN_IF_ERROR(plan(inputs));
  return Status::ok();
}

Status Executor::prepare(std::span<const Tensor* const> inputs) { return check_and_plan(inputs); }

void Executor::bind_slot(int id, const Tensor* read, Tensor* write) {
  Slot& sl = slots_[static_cast<size_t>(id)];
  const Tensor* r = read ? read : &sl.tensor;
  Tensor* w = write ? write : &sl.tensor;
  for (const Tensor** p : sl.readers) *p = r;
  for (Tensor** p : sl.writers) *p = w;
  sl.bound = read;
}

void Executor::unbind_caller_tensors() {
  for (int id : input_slots_)
    if (slots_[static_cast<size_t>(id)].bound) bind_slot(id, nullptr, nullptr);
  for (int id : output_slots_)
    if (slots_[static_cast<size_t>(id)].bound) bind_slot(id, nullptr, nullptr);
}

Status Executor::run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs) {
  KESTREL_RETURN_IF_ERROR(check_and_plan(inputs));
  // Kernel arguments point at caller tensors only while this call runs, whatever way it returns.
  struct Unbind {
    Executor* ex;
    ~Unbind() { ex->unbind_caller_tensors(); }
  } unbind{this};
  for (size_t i = 0; i < inputs.size(); ++i) bind_slot(input_slots_[i], inputs[i], nullptr);
  outputs.resize(output_slots_.size());
  auto first_index = [&](size_t k) {
    return static_cast<size_t>(std::find(output_slots_.begin(), output_slots_.end(), output_slots_[k]) -
                               output_slots_.begin());
  };
  // Static graph outputs: the caller's tensor if it already has the right type, else a new one.
  for (size_t k = 0; k < output_slots_.size(); ++k) {
    Slot& sl = slots_[static_cast<size_t>(output_slots_[k])];
    if (sl.state != SlotState::kOutput || first_index(k) != k) continue;
    if (outputs[k].defined() && outputs[k].dtype() == sl.dtype && outputs[k].dims() == sl.out_dims &&
        (outputs[k].raw_data() || outputs[k].num_elements() == 0)) {
      bind_slot(output_slots_[k], &outputs[k], &outputs[k]);
    } else {
      KESTREL_ASSIGN_OR_RETURN(sl.tensor, Tensor::allocate(sl.dtype, sl.out_dims));
    }
  }
  for (auto& s : steps_) {
    if (s.folded || s.view) continue;
    KESTREL_RETURN_IF_ERROR(run_step(s));
  }
  for (size_t k = 0; k < output_slots_.size(); ++k) {
    Slot& sl = slots_[static_cast<size_t>(output_slots_[k])];
    size_t first = first_index(k);
    if ((sl.state == SlotState::kOutput || sl.state == SlotState::kDynamic) && first == k) {
      if (sl.bound) continue;  // written in place
      outputs[k] = sl.tensor;
      sl.tensor = Tensor();  // the caller holds it now
    } else {
      // An input, constant or folded value, or a repeated output: the caller gets its own copy.
      const Tensor& src = first < k ? outputs[first] : sl.bound ? *sl.bound : sl.tensor;
      KESTREL_ASSIGN_OR_RETURN(outputs[k], src.clone());
    }
  }
  return Status::ok();
}

}  // namespace kestrel::runtime

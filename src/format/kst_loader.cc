// .kst loader: version check, FlatBuffers verification, then a checked walk that builds the IR.
// Nothing is trusted: every index, offset, size, enum and shape product is checked before use,
// and the bytes materialized from the FlatBuffer are budgeted so a crafted file that points many
// tables at the same data cannot make the loader allocate without bound.
#include "format/kst_loader.h"

#include <bit>
#include <cstring>
#include <map>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/buffer.h"
#include "core/function_ref.h"
#include "core/str_util.h"
#include "format/half_widen.h"
#include "format/kst_schema.h"
#include "format/mapped_file.h"

namespace kestrel::format {

namespace {

using core::Result;
using core::Status;
using core::str_cat;

// FlatBuffers nesting per subgraph level is Graph -> Node -> Attribute (3 tables); Value ->
// Tensor and the Model/Metadata tables add a few more. Anything deeper is refused by the verifier.
constexpr uint32_t kVerifierMaxDepth = 3 * (kKstMaxSubgraphDepth + 1) + 8;
// Notional bytes charged per table we turn into IR objects (a real table is at least this big).
constexpr uint64_t kTableCost = 8;

Status corrupt(std::string m) {
  return core::invalid_model(std::move(m));
}

// Names the object being read, for error messages; only called on failure, so a load that
// succeeds builds no message strings.
using What = core::FunctionRef<std::string()>;

// The FlatBuffers 2.x verifier checks a vector's length prefix (4-byte aligned) but not that
// 8-byte elements are 8-byte aligned (google/flatbuffers#8397); reading a misaligned int64 is
// undefined behaviour. The builder always aligns them, so a misaligned one means corruption.
template <class T>
Status check_elements_aligned(const flatbuffers::Vector<T>* v, What what) {
  if (v && v->size() > 0 && reinterpret_cast<uintptr_t>(v->data()) % alignof(T) != 0)
    return corrupt(what() + ": a list is misaligned (corrupt file)");
  return Status::ok();
}

uint32_t read_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

class Reader {
 public:
  Reader(const uint8_t* data_section, uint64_t data_size, std::shared_ptr<void> keep, uint64_t budget,
         KstFileInfo& info)
      : data_(data_section), data_size_(data_size), keep_(std::move(keep)), budget_(budget), info_(info) {}

  Status graph(const kst::Graph* fg, ir::Graph& g, int depth) {
    if (depth > kKstMaxSubgraphDepth)
      return corrupt(str_cat("subgraphs are nested more than ", kKstMaxSubgraphDepth, " deep"));
    KESTREL_RETURN_IF_ERROR(charge(kTableCost));
    const auto* fvalues = fg->values();
    const size_t nv = fvalues ? fvalues->size() : 0;
    const std::string where = str_cat("graph '", g.name(), "'");

    std::vector<std::string> names(nv);
    std::vector<kst::ValueKind> kinds(nv);
    std::unordered_set<std::string_view> seen;  // views into `names`, which never reallocates
    seen.reserve(nv);
    for (size_t i = 0; i < nv; ++i) {
      const kst::Value* fv = fvalues->Get(static_cast<flatbuffers::uoffset_t>(i));
      KESTREL_RETURN_IF_ERROR(charge(kTableCost));
      KESTREL_ASSIGN_OR_RETURN(names[i], str(fv->name()));
      if (names[i].empty()) return corrupt(str_cat(where, ": value ", i, " has no name"));
      if (!seen.insert(names[i]).second) return corrupt(str_cat(where, ": two values are named '", names[i], "'"));
      kinds[i] = fv->kind();
      if (kinds[i] > kst::ValueKind::MAX)
        return corrupt(str_cat(where, ": value '", names[i], "' has unknown kind ", static_cast<int>(kinds[i])));
      if (kinds[i] != kst::ValueKind::Constant && fv->constant())
        return corrupt(str_cat(where, ": value '", names[i], "' is not a constant but carries data"));
    }
    auto value_at = [&](size_t i) { return fvalues->Get(static_cast<flatbuffers::uoffset_t>(i)); };
    auto value_name = [&](size_t i) { return str_cat("value '", names[i], "'"); };

    std::vector<ir::Value*> vals(nv, nullptr);
    std::vector<bool> produced(nv, false);
    if (const auto* ins = fg->inputs()) {
      KESTREL_RETURN_IF_ERROR(charge(uint64_t{4} * ins->size()));
      for (uint32_t idx : *ins) {
        if (idx >= nv) return corrupt(str_cat(where, ": input refers to value ", idx, ", but the graph has ", nv));
        if (kinds[idx] != kst::ValueKind::GraphInput)
          return corrupt(str_cat(where, ": input ", value_name(idx), " is not of kind GraphInput"));
        if (vals[idx]) return corrupt(str_cat(where, ": ", value_name(idx), " is listed twice as an input"));
        KESTREL_ASSIGN_OR_RETURN(ir::ValueType type,
                                 value_type(value_at(idx), [&] { return str_cat(where, ": ", value_name(idx)); }));
        vals[idx] = g.add_input(names[idx], std::move(type));
      }
    }
    for (size_t i = 0; i < nv; ++i) {
      const kst::Value* fv = value_at(i);
      auto what = [&] { return str_cat(where, ": ", value_name(i)); };
      switch (kinds[i]) {
        case kst::ValueKind::GraphInput:
          if (!vals[i]) return corrupt(what() + " is of kind GraphInput but not among the graph's inputs");
          break;
        case kst::ValueKind::Constant: {
          KESTREL_ASSIGN_OR_RETURN(core::Tensor t, tensor(fv->constant(), what));
          vals[i] = g.add_constant(names[i], std::move(t));
          break;
        }
        case kst::ValueKind::OuterScope: {
          bool found = false;
          for (const ir::Graph* p = g.parent(); p && !found; p = p->parent()) found = p->find_value(names[i]);
          if (!found) return corrupt(what() + " refers to an enclosing graph's value that does not exist");
          KESTREL_ASSIGN_OR_RETURN(ir::ValueType type, value_type(fv, what));
          vals[i] = g.add_outer_scope(names[i], std::move(type));
          break;
        }
        case kst::ValueKind::NodeOutput:
          break;
      }
    }

    const auto* fnodes = fg->nodes();
    const size_t nn = fnodes ? fnodes->size() : 0;
    for (size_t k = 0; k < nn; ++k) {
      const kst::Node* fn = fnodes->Get(static_cast<flatbuffers::uoffset_t>(k));
      KESTREL_RETURN_IF_ERROR(charge(kTableCost));
      KESTREL_ASSIGN_OR_RETURN(std::string op, str(fn->op_type()));
      KESTREL_ASSIGN_OR_RETURN(std::string domain, str(fn->domain()));
      KESTREL_ASSIGN_OR_RETURN(std::string name, str(fn->name()));
      auto what = [&] {
        return str_cat(where, ": node ", k, " '", name, "' (", domain.empty() ? "" : domain + ".", op, ")");
      };
      if (op.empty()) return corrupt(str_cat(where, ": node ", k, " has no op type"));

      std::vector<ir::Value*> ins;
      if (const auto* fins = fn->inputs()) {
        KESTREL_RETURN_IF_ERROR(charge(uint64_t{4} * fins->size()));
        for (flatbuffers::uoffset_t i = 0; i < fins->size(); ++i) {
          int32_t idx = fins->Get(i);
          if (idx == -1) {
            ins.push_back(nullptr);
            continue;
          }
          if (idx < 0 || static_cast<size_t>(idx) >= nv)
            return corrupt(str_cat(what(), ": input ", i, " refers to value ", idx, ", but the graph has ", nv));
          if (!vals[static_cast<size_t>(idx)])
            return corrupt(str_cat(what(), ": input ", i, " '", names[static_cast<size_t>(idx)],
                                   "' is used before a node defines it (nodes must be in topological order)"));
          ins.push_back(vals[static_cast<size_t>(idx)]);
        }
      }
      std::vector<uint32_t> outs;
      std::vector<std::string> out_names;
      if (const auto* fouts = fn->outputs()) {
        KESTREL_RETURN_IF_ERROR(charge(uint64_t{4} * fouts->size()));
        for (uint32_t idx : *fouts) {
          if (idx >= nv) return corrupt(str_cat(what(), ": output refers to value ", idx, ", but the graph has ", nv));
          if (kinds[idx] != kst::ValueKind::NodeOutput)
            return corrupt(str_cat(what(), ": output ", value_name(idx), " is not of kind NodeOutput"));
          if (produced[idx]) return corrupt(str_cat(what(), ": ", value_name(idx), " is produced twice"));
          produced[idx] = true;
          outs.push_back(idx);
          out_names.push_back(names[idx]);
        }
      }
      ir::Node* n = g.add_node(op, std::move(ins), out_names, name, domain);
      for (size_t i = 0; i < outs.size(); ++i) {
        ir::Value* v = n->output(i);
        if (v->name() != names[outs[i]]) return core::internal_error(str_cat(what(), ": output renamed"));
        KESTREL_ASSIGN_OR_RETURN(ir::ValueType type, value_type(value_at(outs[i]), [&] { return what() + " output"; }));
        v->set_type(std::move(type));
        vals[outs[i]] = v;
      }
      if (const auto* imp = fn->implicit_inputs()) {
        KESTREL_RETURN_IF_ERROR(charge(uint64_t{4} * imp->size()));
        for (uint32_t idx : *imp) {
          if (idx >= nv)
            return corrupt(str_cat(what(), ": implicit input refers to value ", idx, ", but the graph has ", nv));
          if (!vals[idx] || vals[idx]->producer() == n)
            return corrupt(str_cat(what(), ": implicit input ", value_name(idx), " is used before it is defined"));
          n->add_implicit_input(vals[idx]);
        }
      }
      if (const auto* attrs = fn->attributes()) {
        for (const kst::Attribute* fa : *attrs) KESTREL_RETURN_IF_ERROR(attribute(fa, *n, g, depth, what));
      }
    }
    for (size_t i = 0; i < nv; ++i)
      if (!vals[i]) return corrupt(str_cat(where, ": ", value_name(i), " is never produced by any node"));
    if (const auto* outs = fg->outputs()) {
      KESTREL_RETURN_IF_ERROR(charge(uint64_t{4} * outs->size()));
      for (uint32_t idx : *outs) {
        if (idx >= nv) return corrupt(str_cat(where, ": output refers to value ", idx, ", but the graph has ", nv));
        g.add_output(vals[idx]);
      }
    }
    return Status::ok();
  }

  Status metadata(const kst::Metadata* m, std::map<std::string, std::string>& out) {
    if (!m) return Status::ok();
    KESTREL_RETURN_IF_ERROR(charge(kTableCost));
    auto put = [&](std::string k, std::string v) -> Status {
      if (!out.emplace(k, std::move(v)).second) return corrupt(str_cat("metadata key '", k, "' appears twice"));
      return Status::ok();
    };
    if (m->producer()) {
      KESTREL_ASSIGN_OR_RETURN(std::string v, str(m->producer()));
      KESTREL_RETURN_IF_ERROR(put(kMetaProducer, std::move(v)));
    }
    std::string format;
    if (m->source_format()) {
      KESTREL_ASSIGN_OR_RETURN(format, str(m->source_format()));
      KESTREL_RETURN_IF_ERROR(put(kMetaSourceFormat, format));
    }
    if (m->source_opset() != -1) {
      if (m->source_opset() < 0 || !m->source_format())
        return corrupt(str_cat("metadata has source opset ", m->source_opset(), " without a valid source format"));
      KESTREL_RETURN_IF_ERROR(put(format + "_opset", std::to_string(m->source_opset())));
    }
    auto kvs = [&](const flatbuffers::Vector<flatbuffers::Offset<kst::KeyValue>>* v, const char* prefix) -> Status {
      if (!v) return Status::ok();
      for (const kst::KeyValue* kv : *v) {
        KESTREL_RETURN_IF_ERROR(charge(kTableCost));
        KESTREL_ASSIGN_OR_RETURN(std::string k, str(kv->key()));
        KESTREL_ASSIGN_OR_RETURN(std::string val, str(kv->value()));
        KESTREL_RETURN_IF_ERROR(put(prefix + k, std::move(val)));
      }
      return Status::ok();
    };
    KESTREL_RETURN_IF_ERROR(kvs(m->conversion(), kMetaConvertPrefix));
    KESTREL_RETURN_IF_ERROR(kvs(m->user(), kMetaUserPrefix));
    return kvs(m->other(), "");
  }

 private:
  Status charge(uint64_t bytes) {
    if (bytes > budget_)
      return corrupt("the file refers to the same data over and over (more data than the file holds); corrupt");
    budget_ -= bytes;
    return Status::ok();
  }

  Result<std::string> str(const flatbuffers::String* s) {
    if (!s) return std::string();
    KESTREL_RETURN_IF_ERROR(charge(s->size() + 1));
    return std::string(s->data(), s->size());
  }

  // Dims of a tensor: each in [0, 2^40] and the product of the non-zero ones at most 2^40.
  Result<core::Dims> tensor_dims(const flatbuffers::Vector<int64_t>* fd, What what) {
    core::Dims dims;
    if (!fd) return dims;
    KESTREL_RETURN_IF_ERROR(check_elements_aligned(fd, what));
    if (fd->size() > static_cast<uint32_t>(kKstMaxRank))
      return corrupt(str_cat(what(), " has rank ", fd->size(), " (at most ", kKstMaxRank, ")"));
    KESTREL_RETURN_IF_ERROR(charge(uint64_t{8} * fd->size()));
    int64_t product = 1;
    for (int64_t d : *fd) {
      dims.push_back(d);
      if (d < 0 || d > core::kMaxElements || (d > 0 && product > core::kMaxElements / d))
        return corrupt(str_cat(what(), " has shape ", core::dims_to_string(dims),
                               "...: a dimension is negative or the ", "shape has more than 2^40 elements"));
      if (d > 0) product *= d;
    }
    return dims;
  }

  Result<ir::ValueType> value_type(const kst::Value* fv, What what) {
    ir::ValueType t;
    auto dt = from_kst(fv->dtype());
    if (!dt) return corrupt(str_cat(what(), " has unknown dtype ", static_cast<int>(fv->dtype())));
    t.dtype = *dt;
    const kst::Shape* s = fv->shape();
    if (!s) return t;  // rank unknown
    KESTREL_RETURN_IF_ERROR(charge(kTableCost));
    const auto* dims = s->dims();
    KESTREL_RETURN_IF_ERROR(check_elements_aligned(dims, what));
    const auto* symbols = s->symbols();
    const size_t rank = dims ? dims->size() : 0;
    if (rank > static_cast<size_t>(kKstMaxRank))
      return corrupt(str_cat(what(), " has rank ", rank, " (at most ", kKstMaxRank, ")"));
    if (symbols && symbols->size() != rank)
      return corrupt(str_cat(what(), ": shape has ", rank, " dims but ", symbols->size(), " symbols"));
    KESTREL_RETURN_IF_ERROR(charge(uint64_t{8} * rank));
    std::vector<ir::Dim> out(rank);
    int64_t product = 1;
    for (size_t i = 0; i < rank; ++i) {
      int64_t d = dims->Get(static_cast<flatbuffers::uoffset_t>(i));
      if (d < -1 || d > core::kMaxElements || (d > 0 && product > core::kMaxElements / d))
        return corrupt(str_cat(what(), ": dimension ", i, " is ", d,
                               " (dims must be -1 for unknown or sizes with at most 2^40 elements in all)"));
      if (d > 0) product *= d;
      out[i].value = d;
      if (symbols) {
        KESTREL_ASSIGN_OR_RETURN(out[i].symbol, str(symbols->Get(static_cast<flatbuffers::uoffset_t>(i))));
      }
    }
    t.shape = ir::Shape(std::move(out));
    return t;
  }

  Result<core::Tensor> tensor(const kst::Tensor* t, What what) {
    if (!t) return corrupt(what() + " has no tensor");
    KESTREL_RETURN_IF_ERROR(charge(kTableCost));
    auto dt = from_kst(t->dtype());
    if (!dt || *dt == core::DType::kUndefined)
      return corrupt(str_cat(what(), ": tensor has invalid dtype ", static_cast<int>(t->dtype())));
    KESTREL_ASSIGN_OR_RETURN(core::Dims dims, tensor_dims(t->dims(), what));
    const int64_t numel = core::num_elements(dims);
    const kst::Encoding enc = t->encoding();
    if (enc > kst::Encoding::MAX)
      return corrupt(str_cat(what(), ": tensor has unknown encoding ", static_cast<int>(enc)));
    ++info_.num_tensors;

    if (*dt == core::DType::kString) {
      const auto* strs = t->strings();
      const uint64_t count = strs ? strs->size() : 0;
      if (enc != kst::Encoding::Raw || t->data_size() != 0)
        return corrupt(what() + ": a string tensor must keep its elements in the FlatBuffer");
      if (count != static_cast<uint64_t>(numel))
        return corrupt(str_cat(what(), ": string tensor ", core::dims_to_string(dims), " has ", count, " elements"));
      KESTREL_RETURN_IF_ERROR(charge(uint64_t{4} * count));
      KESTREL_ASSIGN_OR_RETURN(core::Tensor out, core::Tensor::allocate(core::DType::kString, dims));
      for (flatbuffers::uoffset_t i = 0; i < count; ++i) {
        KESTREL_ASSIGN_OR_RETURN(out.data<std::string>()[i], str(strs->Get(i)));
      }
      return out;
    }
    if (t->strings()) return corrupt(what() + ": a non-string tensor carries strings");
    if (enc == kst::Encoding::F16FromF32 && *dt != core::DType::kF32)
      return corrupt(str_cat(what(), ": f16 storage is only for f32 tensors, this one is ", core::dtype_name(*dt)));
    const uint64_t stored_elem = enc == kst::Encoding::Raw ? core::dtype_size(*dt) : 2;
    const uint64_t need = static_cast<uint64_t>(numel) * stored_elem;  // <= 2^40 * 8: no overflow
    const uint64_t off = t->data_offset();
    const uint64_t size = t->data_size();
    if (size != need)
      return corrupt(str_cat(what(), ": tensor ", core::dtype_name(*dt), core::dims_to_string(dims), " needs ", need,
                             " bytes but records ", size));
    if (off % kKstDataAlignment != 0)
      return corrupt(str_cat(what(), ": tensor data offset ", off, " is not a multiple of ", kKstDataAlignment));
    if (off > data_size_ || size > data_size_ - off)
      return corrupt(str_cat(what(), ": tensor data [", off, ", +", size, ") lies outside the data section of ",
                             data_size_, " bytes"));
    const uint8_t* src = data_ + off;
    if (enc == kst::Encoding::F16FromF32) {
      KESTREL_ASSIGN_OR_RETURN(core::Tensor out, core::Tensor::allocate(core::DType::kF32, dims));
      widen_halves(reinterpret_cast<const uint16_t*>(src), out.data<float>(), static_cast<size_t>(numel));
      info_.widened_bytes += out.nbytes();
      return out;
    }
    if (*dt == core::DType::kBool) {
      // Any byte other than 0 or 1 read as a C++ bool is undefined behaviour in the kernels.
      for (uint64_t i = 0; i < size; ++i)
        if (src[i] > 1) return corrupt(str_cat(what(), ": bool tensor holds byte ", int{src[i]}, " at element ", i));
    }
    ++info_.zero_copy_tensors;
    info_.zero_copy_bytes += size;
    return core::Tensor::wrap(*dt, std::move(dims), const_cast<uint8_t*>(src), keep_);
  }

  Status attribute(const kst::Attribute* fa, ir::Node& n, ir::Graph& g, int depth, What node_what) {
    using GraphPtr = ir::Attribute::GraphPtr;
    KESTREL_RETURN_IF_ERROR(charge(kTableCost));
    KESTREL_ASSIGN_OR_RETURN(std::string name, str(fa->name()));
    auto what = [&] { return str_cat(node_what(), " attribute '", name, "'"); };
    if (name.empty()) return corrupt(node_what() + ": an attribute has no name");
    if (n.has_attr(name)) return corrupt(what() + " appears twice");
    auto sub = [&](const kst::Graph* fg) -> Result<GraphPtr> {
      if (!fg) return corrupt(what() + " holds no graph");
      KESTREL_ASSIGN_OR_RETURN(std::string gname, str(fg->name()));
      auto sg = std::make_shared<ir::Graph>(std::move(gname), &g);
      Status st = graph(fg, *sg, depth + 1);
      if (!st.is_ok()) return st.with_context(what());
      return sg;
    };
    ir::Attribute a;
    switch (fa->kind()) {
      case kst::AttrKind::Float:
        a = ir::Attribute(fa->f());
        break;
      case kst::AttrKind::Int:
        a = ir::Attribute(fa->i());
        break;
      case kst::AttrKind::String: {
        if (!fa->s()) return corrupt(what() + " holds no string");
        KESTREL_ASSIGN_OR_RETURN(std::string s, str(fa->s()));
        a = ir::Attribute(std::move(s));
        break;
      }
      case kst::AttrKind::Tensor: {
        KESTREL_ASSIGN_OR_RETURN(core::Tensor t, tensor(fa->t(), what));
        a = ir::Attribute(std::move(t));
        break;
      }
      case kst::AttrKind::Graph: {
        KESTREL_ASSIGN_OR_RETURN(GraphPtr sg, sub(fa->g()));
        a = ir::Attribute(std::move(sg));
        break;
      }
      case kst::AttrKind::Floats: {
        std::vector<float> v;
        if (const auto* f = fa->floats()) {
          KESTREL_RETURN_IF_ERROR(charge(uint64_t{4} * f->size()));
          v.assign(f->begin(), f->end());
        }
        a = ir::Attribute(std::move(v));
        break;
      }
      case kst::AttrKind::Ints: {
        std::vector<int64_t> v;
        if (const auto* f = fa->ints()) {
          KESTREL_RETURN_IF_ERROR(check_elements_aligned(f, what));
          KESTREL_RETURN_IF_ERROR(charge(uint64_t{8} * f->size()));
          v.assign(f->begin(), f->end());
        }
        a = ir::Attribute(std::move(v));
        break;
      }
      case kst::AttrKind::Strings: {
        std::vector<std::string> v;
        if (const auto* f = fa->strings()) {
          KESTREL_RETURN_IF_ERROR(charge(uint64_t{4} * f->size()));
          for (const flatbuffers::String* s : *f) {
            KESTREL_ASSIGN_OR_RETURN(std::string x, str(s));
            v.push_back(std::move(x));
          }
        }
        a = ir::Attribute(std::move(v));
        break;
      }
      case kst::AttrKind::Tensors: {
        std::vector<core::Tensor> v;
        if (const auto* f = fa->tensors()) {
          KESTREL_RETURN_IF_ERROR(charge(uint64_t{4} * f->size()));
          for (const kst::Tensor* t : *f) {
            KESTREL_ASSIGN_OR_RETURN(core::Tensor x, tensor(t, what));
            v.push_back(std::move(x));
          }
        }
        a = ir::Attribute(std::move(v));
        break;
      }
      case kst::AttrKind::Graphs: {
        std::vector<GraphPtr> v;
        if (const auto* f = fa->graphs()) {
          KESTREL_RETURN_IF_ERROR(charge(uint64_t{4} * f->size()));
          for (const kst::Graph* fg : *f) {
            KESTREL_ASSIGN_OR_RETURN(GraphPtr sg, sub(fg));
            v.push_back(std::move(sg));
          }
        }
        a = ir::Attribute(std::move(v));
        break;
      }
      default:
        return corrupt(str_cat(what(), " has unknown kind ", static_cast<int>(fa->kind())));
    }
    n.set_attr(name, std::move(a));
    return Status::ok();
  }

  const uint8_t* data_;
  uint64_t data_size_;
  std::shared_ptr<void> keep_;
  uint64_t budget_;
  KstFileInfo& info_;
};

// Reads Model.format_version having verified only the root table and that one field, so a
// newer file whose other tables this build cannot verify still gets the right message.
Result<uint32_t> read_version(const uint8_t* p, size_t fb_total) {
  flatbuffers::Verifier::Options vo;
  vo.max_depth = 2;
  vo.max_tables = 1;
  flatbuffers::Verifier v(p, fb_total, vo);
  flatbuffers::uoffset_t root = v.VerifyOffset(sizeof(flatbuffers::uoffset_t));
  if (!root) return corrupt("the FlatBuffer root offset is invalid (corrupt file)");
  const auto* t = reinterpret_cast<const flatbuffers::Table*>(p + sizeof(flatbuffers::uoffset_t) + root);
  if (!t->VerifyTableStart(v) || !t->VerifyField<uint32_t>(v, kst::Model::VT_FORMAT_VERSION, 4))
    return corrupt("cannot read the format version (corrupt file)");
  return t->GetField<uint32_t>(kst::Model::VT_FORMAT_VERSION, 0);
}

// `p` is 64-byte aligned and stays valid as long as `keep` lives.
Result<KstModel> load_aligned(const uint8_t* p, size_t n, std::shared_ptr<void> keep, KstFileInfo info) {
  if constexpr (std::endian::native != std::endian::little)
    return core::unsupported(".kst files are little-endian; this host is not");
  constexpr size_t kPrefix = sizeof(flatbuffers::uoffset_t);
  if (n < 3 * kPrefix) return corrupt(str_cat("too small to be a .kst file (", n, " bytes; truncated?)"));
  if (!looks_like_kst(p, n)) return corrupt(str_cat("not a .kst file (no '", kKstFileIdentifier, "' identifier)"));
  const uint64_t fb_len = read_u32(p);
  if (fb_len > n - kPrefix)
    return corrupt(str_cat("truncated: the FlatBuffer needs ", fb_len + kPrefix, " bytes, the file has ", n));
  const size_t fb_total = static_cast<size_t>(fb_len) + kPrefix;
  if (fb_total >= FLATBUFFERS_MAX_BUFFER_SIZE) return corrupt("the FlatBuffer is larger than 2 GiB (corrupt file)");

  KESTREL_ASSIGN_OR_RETURN(uint32_t version, read_version(p, fb_total));
  if (version == 0) return corrupt("the file has no format version (corrupt file)");
  if (version > kKstFormatVersion)
    return core::unsupported(str_cat("file format version ", version, " is newer than the version ", kKstFormatVersion,
                                     " this Kestrel reads; upgrade Kestrel"));

  flatbuffers::Verifier::Options vo;
  vo.max_depth = kVerifierMaxDepth;
  // Every table takes at least 4 bytes; more visits than that means tables are reached through
  // many references (a crafted DAG), which would make verification and loading blow up.
  vo.max_tables = static_cast<flatbuffers::uoffset_t>(fb_total / 4 + 64);
  flatbuffers::Verifier verifier(p, fb_total, vo);
  if (!verifier.VerifySizePrefixedBuffer<kst::Model>(kKstFileIdentifier))
    return corrupt("the FlatBuffer does not verify (corrupt or truncated file, or nested too deeply)");
  const kst::Model* model = flatbuffers::GetSizePrefixedRoot<kst::Model>(p);

  const uint64_t data_offset = core::align_up(fb_total, kKstDataAlignment);
  const uint64_t data_size = model->data_size();
  if (data_offset > n || data_size > n - data_offset)
    return corrupt(str_cat("truncated: the data section needs ", data_size, " bytes at offset ", data_offset,
                           ", the file has ", n));
  if (data_offset + data_size != n)
    return corrupt(str_cat("the file has ", n - data_offset - data_size, " unexpected bytes after the data section"));

  info.format_version = version;
  info.file_size = n;
  info.flatbuffer_size = fb_total;
  info.data_offset = data_offset;
  info.data_size = data_size;
  info.base = p;
  if (model->writer()) info.writer.assign(model->writer()->data(), model->writer()->size());

  // A valid file materializes each FlatBuffer byte once at most.
  Reader reader(p + data_offset, data_size, keep, fb_total + 4096, info);
  const kst::Graph* fg = model->graph();
  std::string gname = fg->name() ? std::string(fg->name()->data(), fg->name()->size()) : std::string();
  auto g = std::make_unique<ir::Graph>(std::move(gname));
  KESTREL_RETURN_IF_ERROR(reader.graph(fg, *g, 0));
  KESTREL_RETURN_IF_ERROR(reader.metadata(model->metadata(), g->metadata()));
  KstModel m;
  m.graph = std::move(g);
  m.keepalive = std::move(keep);
  m.info = std::move(info);
  return m;
}

Result<KstModel> load_copy(const void* data, size_t size, const std::string& name) {
  KESTREL_ASSIGN_OR_RETURN(std::shared_ptr<void> buf, core::allocate_aligned(size));
  if (size) std::memcpy(buf.get(), data, size);
  KstFileInfo info;
  info.copied = true;
  const auto* p = static_cast<const uint8_t*>(buf.get());
  auto r = load_aligned(p, size, std::move(buf), std::move(info));
  if (!r.is_ok()) return r.status().with_context(name.empty() ? "kst buffer" : name);
  return r;
}

}  // namespace

bool looks_like_kst(const void* data, size_t size) {
  return size >= 12 && std::memcmp(static_cast<const char*>(data) + 8, kKstFileIdentifier, 4) == 0;
}

Result<KstModel> load_kst_file(const std::string& path) {
  KESTREL_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> mf, MappedFile::open(path));
  KstFileInfo info;
  info.mapped = true;
  const uint8_t* p = mf->data();
  size_t n = mf->size();
  auto r = load_aligned(p, n, std::shared_ptr<void>(mf, const_cast<uint8_t*>(p)), std::move(info));
  if (!r.is_ok()) return r.status().with_context(path);
  return r;
}

Result<KstModel> load_kst_memory(const void* data, size_t size, const std::string& source_name) {
  return load_copy(data, size, source_name);
}

Result<KstModel> load_kst_shared(std::shared_ptr<const void> owner, const void* data, size_t size,
                                 const std::string& source_name) {
  if (!owner || reinterpret_cast<uintptr_t>(data) % kKstDataAlignment != 0) return load_copy(data, size, source_name);
  auto r = load_aligned(static_cast<const uint8_t*>(data), size, std::const_pointer_cast<void>(owner), KstFileInfo{});
  if (!r.is_ok()) return r.status().with_context(source_name.empty() ? "kst buffer" : source_name);
  return r;
}

}  // namespace kestrel::format

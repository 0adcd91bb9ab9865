// .kst writer: builds the FlatBuffer tables bottom-up, queues tensor bytes for the data section,
// then emits both (into memory or streamed to a file).
#include "format/kst_writer.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/buffer.h"
#include "core/str_util.h"
#include "format/kst_schema.h"

#ifndef KESTREL_VERSION_STRING
#define KESTREL_VERSION_STRING "unknown"
#endif

namespace kestrel::format {

namespace {

using core::Result;
using core::Status;
using core::str_cat;
using flatbuffers::Offset;

// Far below FlatBuffers' 2 GiB limit, where its builder would assert instead of failing. Only
// names, attributes and string tensors live in the FlatBuffer, so real models stay far below.
constexpr uint64_t kMaxFlatBufferBytes = uint64_t{1} << 30;
constexpr float kMaxHalf = 65504.0f;

// One tensor's bytes waiting for the data section.
struct Blob {
  const void* data = nullptr;  // the IR tensor's own bytes, or
  std::vector<uint16_t> half;  // its f16 conversion
  uint64_t size = 0;
  uint64_t offset = 0;  // within the data section
  const void* bytes() const { return half.empty() ? data : static_cast<const void*>(half.data()); }
};

bool fits_half(const core::Tensor& t) {
  for (float x : t.span<float>())
    if (std::isfinite(x) && std::fabs(x) > kMaxHalf) return false;
  return true;
}

// Every reader of `v` computes in float: its outputs are float and none of its inputs is an integer
// tensor (a DequantizeLinear or an int8 op reads integers or writes them). Subgraph reads count as
// not float.
bool read_only_by_float_ops(const ir::Value& v) {
  if (v.uses().empty()) return false;
  for (const ir::Use& u : v.uses()) {
    if (u.input_index < 0) return false;
    for (const ir::Value* in : u.node->inputs())
      if (in && core::is_integer(in->dtype())) return false;
    for (const ir::Value* out : u.node->outputs())
      if (out && !core::is_float(out->dtype())) return false;
  }
  return true;
}

class Writer {
 public:
  explicit Writer(const KstWriteOptions& opts) : opts_(opts) {}

  Status build(const ir::Graph& g) {
    KESTREL_ASSIGN_OR_RETURN(auto writer, str("kestrel " KESTREL_VERSION_STRING));
    std::map<std::string, std::string> md = g.metadata();
    for (const auto& [k, v] : opts_.metadata) md[k] = v;
    KESTREL_ASSIGN_OR_RETURN(auto meta, metadata(md));
    KESTREL_ASSIGN_OR_RETURN(auto graph_off, graph(g, 0));
    kst::ModelBuilder mb(fbb_);
    mb.add_format_version(kKstFormatVersion);
    mb.add_writer(writer);
    mb.add_data_size(data_end_);
    mb.add_metadata(meta);
    mb.add_graph(graph_off);
    fbb_.FinishSizePrefixed(mb.Finish(), kKstFileIdentifier);
    stats_.flatbuffer_size = fbb_.GetSize();
    stats_.data_size = data_end_;
    stats_.file_size = data_offset() + data_end_;
    return Status::ok();
  }

  uint64_t data_offset() const { return core::align_up(fbb_.GetSize(), kKstDataAlignment); }
  const KstWriteStats& stats() const { return stats_; }

  // Sink: write(const void*, size_t) -> bool and zeros(size_t) -> bool.
  template <class Sink>
  bool emit(Sink& sink) const {
    uint64_t fb = fbb_.GetSize();
    if (!sink.write(fbb_.GetBufferPointer(), fb) || !sink.zeros(data_offset() - fb)) return false;
    uint64_t pos = 0;
    for (const Blob& b : blobs_) {
      if (!sink.zeros(b.offset - pos) || !sink.write(b.bytes(), b.size)) return false;
      pos = b.offset + b.size;
    }
    return true;
  }

 private:
  Status room(uint64_t more) const {
    if (fbb_.GetSize() + more + 4096 > kMaxFlatBufferBytes)
      return core::unsupported(str_cat("model too large for a .kst file: names, attributes and string tensors exceed ",
                                       kMaxFlatBufferBytes >> 20, " MiB"));
    return Status::ok();
  }

  Result<Offset<flatbuffers::String>> str(const std::string& s) {
    KESTREL_RETURN_IF_ERROR(room(s.size()));
    return fbb_.CreateString(s.data(), s.size());
  }

  template <class T>
  Result<Offset<flatbuffers::Vector<T>>> vec(const std::vector<T>& v) {
    KESTREL_RETURN_IF_ERROR(room(v.size() * sizeof(T)));
    return fbb_.CreateVector(v);
  }

  Result<Offset<flatbuffers::Vector<Offset<flatbuffers::String>>>> strs(const std::string* s, size_t n) {
    std::vector<Offset<flatbuffers::String>> offs;
    offs.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      KESTREL_ASSIGN_OR_RETURN(auto o, str(s[i]));
      offs.push_back(o);
    }
    return vec(offs);
  }

  // `weights`: a constant initializer (fp16 storage applies), not an attribute tensor.
  Result<Offset<kst::Tensor>> tensor(const core::Tensor& t, bool weights, const std::string& what) {
    if (!t.defined()) return core::invalid_argument(str_cat(what, " has no data"));
    if (t.rank() > kKstMaxRank)
      return core::unsupported(str_cat(what, " has rank ", t.rank(), " (.kst allows at most ", kKstMaxRank, ")"));
    KESTREL_ASSIGN_OR_RETURN(auto dims, vec(t.dims()));
    ++stats_.num_tensors;
    if (t.dtype() == core::DType::kString) {
      KESTREL_ASSIGN_OR_RETURN(auto s, strs(t.data<std::string>(), static_cast<size_t>(t.num_elements())));
      kst::TensorBuilder tb(fbb_);
      tb.add_dtype(kst::DType::String);
      tb.add_dims(dims);
      tb.add_strings(s);
      return tb.Finish();
    }
    Blob b;
    kst::Encoding enc = kst::Encoding::Raw;
    stats_.tensor_bytes += t.nbytes();
    if (weights && opts_.fp16_weights && t.dtype() == core::DType::kF32 &&
        t.num_elements() >= opts_.fp16_min_elements && fits_half(t)) {
      b.half.resize(static_cast<size_t>(t.num_elements()));
      const float* src = t.data<float>();
      for (size_t i = 0; i < b.half.size(); ++i) b.half[i] = core::float_to_half_bits(src[i]);
      b.size = b.half.size() * sizeof(uint16_t);
      enc = kst::Encoding::F16FromF32;
      ++stats_.fp16_tensors;
    } else {
      b.data = t.raw_data();
      b.size = t.nbytes();
    }
    data_end_ = core::align_up(data_end_, kKstDataAlignment);
    b.offset = data_end_;
    data_end_ += b.size;
    stats_.stored_tensor_bytes += b.size;
    kst::TensorBuilder tb(fbb_);
    tb.add_dtype(to_kst(t.dtype()));
    tb.add_dims(dims);
    tb.add_encoding(enc);
    tb.add_data_offset(b.offset);
    tb.add_data_size(b.size);
    blobs_.push_back(std::move(b));
    return tb.Finish();
  }

  Result<Offset<kst::Shape>> shape(const ir::Shape& s, const std::string& what) {
    if (!s.rank_known()) return Offset<kst::Shape>();
    if (s.rank() > kKstMaxRank)
      return core::unsupported(str_cat(what, " has rank ", s.rank(), " (.kst allows at most ", kKstMaxRank, ")"));
    std::vector<int64_t> dims;
    std::vector<std::string> symbols;
    bool any_symbol = false;
    for (const ir::Dim& d : *s.dims) {
      dims.push_back(d.value < 0 ? -1 : d.value);
      symbols.push_back(d.symbol);
      any_symbol = any_symbol || !d.symbol.empty();
    }
    KESTREL_ASSIGN_OR_RETURN(auto dims_off, vec(dims));
    Offset<flatbuffers::Vector<Offset<flatbuffers::String>>> sym_off;
    if (any_symbol) {
      KESTREL_ASSIGN_OR_RETURN(sym_off, strs(symbols.data(), symbols.size()));
    }
    kst::ShapeBuilder sb(fbb_);
    sb.add_dims(dims_off);
    if (any_symbol) sb.add_symbols(sym_off);
    return sb.Finish();
  }

  // Values in the order the loader recreates them (inputs, then constants and outer-scope
  // values in creation order, then node outputs in node order), so load -> write reproduces the
  // file byte for byte.
  static Result<std::vector<const ir::Value*>> canonical_values(const ir::Graph& g) {
    std::vector<const ir::Value*> out;
    out.reserve(g.num_values());
    std::unordered_set<const ir::Value*> inputs;
    for (const ir::Value* v : g.inputs()) {
      if (v->kind() != ir::ValueKind::kGraphInput || !inputs.insert(v).second)
        return core::invalid_argument(
            str_cat("graph '", g.name(), "': input '", v->name(), "' is not a graph input value"));
      out.push_back(v);
    }
    for (const ir::Value* v : g.values()) {
      switch (v->kind()) {
        case ir::ValueKind::kConstant:
        case ir::ValueKind::kOuterScope:
          out.push_back(v);
          break;
        case ir::ValueKind::kGraphInput:
          if (!inputs.count(v))
            return core::invalid_argument(str_cat("graph '", g.name(), "': value '", v->name(),
                                                  "' is a graph input but not among the graph's inputs"));
          break;
        case ir::ValueKind::kNodeOutput:
          if (!v->producer() || v->producer()->graph() != &g)
            return core::invalid_argument(
                str_cat("graph '", g.name(), "': value '", v->name(), "' has no producer in this graph"));
          break;
      }
    }
    for (const ir::Node* n : g.nodes())
      for (const ir::Value* v : n->outputs()) out.push_back(v);
    if (out.size() != g.num_values())
      return core::invalid_argument(str_cat("graph '", g.name(), "': ", g.num_values(), " values but ", out.size(),
                                            " are inputs, constants, outer-scope values or node outputs"));
    return out;
  }

  Result<Offset<kst::Graph>> graph(const ir::Graph& g, int depth) {
    if (depth > kKstMaxSubgraphDepth)
      return core::unsupported(str_cat("subgraphs nested more than ", kKstMaxSubgraphDepth, " deep"));
    KESTREL_ASSIGN_OR_RETURN(const std::vector<const ir::Value*> values, canonical_values(g));
    std::unordered_map<const ir::Value*, uint32_t> index;
    for (size_t i = 0; i < values.size(); ++i) index[values[i]] = static_cast<uint32_t>(i);
    auto idx = [&](const ir::Value* v, const std::string& where) -> Result<uint32_t> {
      auto it = index.find(v);
      if (it == index.end())
        return core::invalid_argument(
            str_cat("graph '", g.name(), "': ", where, " refers to value '", v->name(), "' of another graph"));
      return it->second;
    };

    std::vector<Offset<kst::Value>> value_offs;
    value_offs.reserve(values.size());
    for (const ir::Value* v : values) {
      std::string what = str_cat("value '", v->name(), "' of graph '", g.name(), "'");
      KESTREL_ASSIGN_OR_RETURN(auto name, str(v->name()));
      Offset<kst::Shape> shape_off;
      Offset<kst::Tensor> data_off;
      if (v->is_constant()) {
        const bool fp16_ok = !opts_.fp16_float_ops_only || read_only_by_float_ops(*v);
        KESTREL_ASSIGN_OR_RETURN(data_off, tensor(v->constant(), /*weights=*/fp16_ok, what));
      } else {
        KESTREL_ASSIGN_OR_RETURN(shape_off, shape(v->shape(), what));
      }
      kst::ValueBuilder vb(fbb_);
      vb.add_name(name);
      vb.add_kind(to_kst(v->kind()));
      if (v->is_constant()) {
        vb.add_constant(data_off);
      } else {
        vb.add_dtype(to_kst(v->dtype()));
        vb.add_shape(shape_off);
      }
      value_offs.push_back(vb.Finish());
    }

    std::vector<Offset<kst::Node>> node_offs;
    for (const ir::Node* n : g.nodes()) {
      std::vector<int32_t> ins;
      std::vector<uint32_t> outs, implicit;
      for (size_t i = 0; i < n->num_inputs(); ++i) {
        const ir::Value* v = n->input(i);
        if (!v) {
          ins.push_back(-1);
          continue;
        }
        KESTREL_ASSIGN_OR_RETURN(uint32_t k, idx(v, str_cat(n->describe(), " input ", i)));
        ins.push_back(static_cast<int32_t>(k));
      }
      for (const ir::Value* v : n->outputs()) {
        KESTREL_ASSIGN_OR_RETURN(uint32_t k, idx(v, n->describe()));
        outs.push_back(k);
      }
      for (const ir::Value* v : n->implicit_inputs()) {
        KESTREL_ASSIGN_OR_RETURN(uint32_t k, idx(v, n->describe()));
        implicit.push_back(k);
      }
      std::vector<Offset<kst::Attribute>> attrs;
      for (const auto& [name, a] : n->attributes()) {
        KESTREL_ASSIGN_OR_RETURN(auto off, attribute(name, a, depth, *n));
        attrs.push_back(off);
      }
      KESTREL_ASSIGN_OR_RETURN(auto name, str(n->name()));
      KESTREL_ASSIGN_OR_RETURN(auto op, str(n->op_type()));
      Offset<flatbuffers::String> domain;
      if (!n->domain().empty()) {
        KESTREL_ASSIGN_OR_RETURN(domain, str(n->domain()));
      }
      KESTREL_ASSIGN_OR_RETURN(auto ins_off, vec(ins));
      KESTREL_ASSIGN_OR_RETURN(auto outs_off, vec(outs));
      KESTREL_ASSIGN_OR_RETURN(auto imp_off, vec(implicit));
      KESTREL_ASSIGN_OR_RETURN(auto attrs_off, vec(attrs));
      kst::NodeBuilder nb(fbb_);
      nb.add_name(name);
      nb.add_op_type(op);
      if (!n->domain().empty()) nb.add_domain(domain);
      nb.add_inputs(ins_off);
      nb.add_outputs(outs_off);
      if (!implicit.empty()) nb.add_implicit_inputs(imp_off);
      if (!attrs.empty()) nb.add_attributes(attrs_off);
      node_offs.push_back(nb.Finish());
    }

    std::vector<uint32_t> ins, outs;
    for (const ir::Value* v : g.inputs()) {
      KESTREL_ASSIGN_OR_RETURN(uint32_t k, idx(v, "graph input"));
      ins.push_back(k);
    }
    for (const ir::Value* v : g.outputs()) {
      KESTREL_ASSIGN_OR_RETURN(uint32_t k, idx(v, "graph output"));
      outs.push_back(k);
    }
    KESTREL_ASSIGN_OR_RETURN(auto name, str(g.name()));
    KESTREL_ASSIGN_OR_RETURN(auto values_off, vec(value_offs));
    KESTREL_ASSIGN_OR_RETURN(auto nodes_off, vec(node_offs));
    KESTREL_ASSIGN_OR_RETURN(auto ins_off, vec(ins));
    KESTREL_ASSIGN_OR_RETURN(auto outs_off, vec(outs));
    kst::GraphBuilder gb(fbb_);
    gb.add_name(name);
    gb.add_values(values_off);
    gb.add_nodes(nodes_off);
    gb.add_inputs(ins_off);
    gb.add_outputs(outs_off);
    return gb.Finish();
  }

  Result<Offset<kst::Attribute>> attribute(const std::string& name, const ir::Attribute& a, int depth,
                                           const ir::Node& n) {
    using GraphPtr = ir::Attribute::GraphPtr;
    std::string what = str_cat(n.describe(), " attribute '", name, "'");
    KESTREL_ASSIGN_OR_RETURN(auto name_off, str(name));
    Offset<flatbuffers::String> s;
    Offset<kst::Tensor> t;
    Offset<kst::Graph> g;
    Offset<flatbuffers::Vector<float>> floats;
    Offset<flatbuffers::Vector<int64_t>> ints;
    Offset<flatbuffers::Vector<Offset<flatbuffers::String>>> strings;
    Offset<flatbuffers::Vector<Offset<kst::Tensor>>> tensors;
    Offset<flatbuffers::Vector<Offset<kst::Graph>>> graphs;
    auto sub = [&](const GraphPtr& p) -> Result<Offset<kst::Graph>> {
      if (!p) return core::invalid_argument(str_cat(what, " holds no graph"));
      auto r = graph(*p, depth + 1);
      if (!r.is_ok()) return r.status().with_context(what);
      return r;
    };
    switch (a.kind()) {
      case ir::AttrKind::kFloat:
      case ir::AttrKind::kInt:
        break;
      case ir::AttrKind::kString: {
        KESTREL_ASSIGN_OR_RETURN(s, str(a.get<std::string>()));
        break;
      }
      case ir::AttrKind::kTensor: {
        KESTREL_ASSIGN_OR_RETURN(t, tensor(a.get<core::Tensor>(), /*weights=*/false, what));
        break;
      }
      case ir::AttrKind::kGraph: {
        KESTREL_ASSIGN_OR_RETURN(g, sub(a.get<GraphPtr>()));
        break;
      }
      case ir::AttrKind::kFloats: {
        KESTREL_ASSIGN_OR_RETURN(floats, vec(a.get<std::vector<float>>()));
        break;
      }
      case ir::AttrKind::kInts: {
        KESTREL_ASSIGN_OR_RETURN(ints, vec(a.get<std::vector<int64_t>>()));
        break;
      }
      case ir::AttrKind::kStrings: {
        const auto& v = a.get<std::vector<std::string>>();
        KESTREL_ASSIGN_OR_RETURN(strings, strs(v.data(), v.size()));
        break;
      }
      case ir::AttrKind::kTensors: {
        std::vector<Offset<kst::Tensor>> offs;
        for (const core::Tensor& x : a.get<std::vector<core::Tensor>>()) {
          KESTREL_ASSIGN_OR_RETURN(auto o, tensor(x, /*weights=*/false, what));
          offs.push_back(o);
        }
        KESTREL_ASSIGN_OR_RETURN(tensors, vec(offs));
        break;
      }
      case ir::AttrKind::kGraphs: {
        std::vector<Offset<kst::Graph>> offs;
        for (const GraphPtr& p : a.get<std::vector<GraphPtr>>()) {
          KESTREL_ASSIGN_OR_RETURN(auto o, sub(p));
          offs.push_back(o);
        }
        KESTREL_ASSIGN_OR_RETURN(graphs, vec(offs));
        break;
      }
    }
    kst::AttributeBuilder ab(fbb_);
    ab.add_name(name_off);
    ab.add_kind(to_kst(a.kind()));
    switch (a.kind()) {
      case ir::AttrKind::kFloat:
        // FlatBuffers drops a field equal to its default, and -0.0f == 0.0f: force it out so
        // the sign of zero survives.
        fbb_.ForceDefaults(true);
        ab.add_f(a.get<float>());
        fbb_.ForceDefaults(false);
        break;
      case ir::AttrKind::kInt:
        ab.add_i(a.get<int64_t>());
        break;
      case ir::AttrKind::kString:
        ab.add_s(s);
        break;
      case ir::AttrKind::kTensor:
        ab.add_t(t);
        break;
      case ir::AttrKind::kGraph:
        ab.add_g(g);
        break;
      case ir::AttrKind::kFloats:
        ab.add_floats(floats);
        break;
      case ir::AttrKind::kInts:
        ab.add_ints(ints);
        break;
      case ir::AttrKind::kStrings:
        ab.add_strings(strings);
        break;
      case ir::AttrKind::kTensors:
        ab.add_tensors(tensors);
        break;
      case ir::AttrKind::kGraphs:
        ab.add_graphs(graphs);
        break;
    }
    return ab.Finish();
  }

  Result<Offset<flatbuffers::Vector<Offset<kst::KeyValue>>>> key_values(
      const std::vector<std::pair<std::string, std::string>>& kvs) {
    std::vector<Offset<kst::KeyValue>> offs;
    for (const auto& [k, v] : kvs) {
      KESTREL_ASSIGN_OR_RETURN(auto ko, str(k));
      KESTREL_ASSIGN_OR_RETURN(auto vo, str(v));
      offs.push_back(kst::CreateKeyValue(fbb_, ko, vo));
    }
    return vec(offs);
  }

  // Splits the flat key/value map into the Metadata table's fields (see kst.fbs).
  Result<Offset<kst::Metadata>> metadata(const std::map<std::string, std::string>& md) {
    std::vector<std::pair<std::string, std::string>> conversion, user, other;
    const std::string* producer = nullptr;
    const std::string* format = nullptr;
    int64_t opset = -1;
    auto fmt = md.find(kMetaSourceFormat);
    std::string opset_key = fmt == md.end() ? std::string() : fmt->second + "_opset";
    for (const auto& kv : md) {
      const std::string& k = kv.first;
      const std::string& v = kv.second;
      auto starts = [&](const char* p) { return k.rfind(p, 0) == 0; };
      if (k == kMetaProducer) {
        producer = &v;
      } else if (k == kMetaSourceFormat) {
        format = &v;
      } else if (!opset_key.empty() && k == opset_key && is_plain_int(v)) {
        opset = std::stoll(v);
      } else if (starts(kMetaConvertPrefix)) {
        conversion.emplace_back(k.substr(sizeof(kMetaConvertPrefix) - 1), v);
      } else if (starts(kMetaUserPrefix)) {
        user.emplace_back(k.substr(sizeof(kMetaUserPrefix) - 1), v);
      } else {
        other.emplace_back(k, v);
      }
    }
    Offset<flatbuffers::String> producer_off, format_off;
    if (producer) {
      KESTREL_ASSIGN_OR_RETURN(producer_off, str(*producer));
    }
    if (format) {
      KESTREL_ASSIGN_OR_RETURN(format_off, str(*format));
    }
    KESTREL_ASSIGN_OR_RETURN(auto conv_off, key_values(conversion));
    KESTREL_ASSIGN_OR_RETURN(auto user_off, key_values(user));
    KESTREL_ASSIGN_OR_RETURN(auto other_off, key_values(other));
    kst::MetadataBuilder mb(fbb_);
    if (producer) mb.add_producer(producer_off);
    if (format) mb.add_source_format(format_off);
    mb.add_source_opset(opset);
    mb.add_conversion(conv_off);
    mb.add_user(user_off);
    mb.add_other(other_off);
    return mb.Finish();
  }

  // A non-negative decimal that prints back identically (so the split is exactly reversible).
  static bool is_plain_int(const std::string& s) {
    if (s.empty() || s.size() > 18) return false;
    for (char c : s)
      if (c < '0' || c > '9') return false;
    return s.size() == 1 || s[0] != '0';
  }

  const KstWriteOptions& opts_;
  flatbuffers::FlatBufferBuilder fbb_{1 << 16};
  std::vector<Blob> blobs_;
  uint64_t data_end_ = 0;
  KstWriteStats stats_;
};

struct StringSink {
  std::string* out;
  bool write(const void* p, uint64_t n) {
    if (n == 0) return true;
    out->append(static_cast<const char*>(p), static_cast<size_t>(n));
    return true;
  }
  bool zeros(uint64_t n) {
    out->append(static_cast<size_t>(n), '\0');
    return true;
  }
};

struct FileSink {
  std::ofstream* f;
  bool write(const void* p, uint64_t n) {
    if (n == 0) return true;
    f->write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
    return static_cast<bool>(*f);
  }
  bool zeros(uint64_t n) {
    static const char kZeros[kKstDataAlignment] = {};
    while (n > 0) {
      uint64_t k = n < sizeof(kZeros) ? n : sizeof(kZeros);
      if (!write(kZeros, k)) return false;
      n -= k;
    }
    return true;
  }
};

Status check_host() {
  if constexpr (std::endian::native != std::endian::little)
    return core::unsupported(".kst files are little-endian; this host is not");
  return Status::ok();
}

}  // namespace

Result<std::string> write_kst(const ir::Graph& g, const KstWriteOptions& opts, KstWriteStats* stats) {
  KESTREL_RETURN_IF_ERROR(check_host());
  Writer w(opts);
  KESTREL_RETURN_IF_ERROR(w.build(g));
  std::string out;
  out.reserve(static_cast<size_t>(w.stats().file_size));
  StringSink sink{&out};
  w.emit(sink);
  if (stats) *stats = w.stats();
  return out;
}

Result<KstWriteStats> write_kst_file(const ir::Graph& g, const std::string& path, const KstWriteOptions& opts) {
  KESTREL_RETURN_IF_ERROR(check_host());
  Writer w(opts);
  KESTREL_RETURN_IF_ERROR(w.build(g).with_context(path));
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return core::io_error(str_cat("cannot create '", tmp, "'"));
    FileSink sink{&f};
    bool ok = w.emit(sink);
    f.close();
    if (!ok || !f) {
      std::remove(tmp.c_str());
      return core::io_error(str_cat("error writing '", tmp, "' (disk full?)"));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return core::io_error(str_cat("cannot rename '", tmp, "' to '", path, "'"));
  }
  return w.stats();
}

}  // namespace kestrel::format

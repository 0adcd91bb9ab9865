// Tests of the .kst format: round trips, ONNX -> .kst -> Session parity, zero copy, fp16 weight
// storage, and refusal of corrupted files (truncation, bit flips, bad offsets, shapes, versions).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>

#include "common/kst_samples.h"
#include "common/onnx_builder.h"
#include "common/test_data.h"
#include "core/buffer.h"
#include "core/npy.h"
#include "format/half_widen.h"
#include "format/kst_generated.h"
#include "format/kst_loader.h"
#include "format/kst_writer.h"
#include "frontend/onnx/onnx_importer.h"
#include "ir/op_schema.h"
#include "ir/printer.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

using core::DType;
using core::Tensor;
using format::KstModel;
using format::KstWriteOptions;
namespace fs = std::filesystem;

// ---------------------------------------------------------------- helpers

// A per-process folder under the system temp dir, removed when the test binary exits.
std::string temp_path(const std::string& name) {
  struct Dir {
    fs::path path = fs::temp_directory_path() / ("kestrel_kst_test_" + std::to_string(::getpid()));
    Dir() { fs::create_directories(path); }
    ~Dir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static Dir dir;
  return (dir.path / name).string();
}

std::string write_or_die(const ir::Graph& g, const KstWriteOptions& o = {}, format::KstWriteStats* stats = nullptr) {
  auto r = format::write_kst(g, o, stats);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(r).value() : std::string();
}

KstModel load_or_die(const std::string& bytes) {
  auto r = format::load_kst_memory(bytes.data(), bytes.size());
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(r).value() : KstModel{};
}

void expect_tensor_eq(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.dims(), b.dims()) << what;
  if (a.dtype() == DType::kString) {
    for (int64_t i = 0; i < a.num_elements(); ++i)
      EXPECT_EQ(a.data<std::string>()[i], b.data<std::string>()[i]) << what << " element " << i;
  } else if (a.nbytes() > 0) {
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0) << what << ": data differs";
  }
}

void expect_type_eq(const ir::ValueType& a, const ir::ValueType& b, const std::string& what) {
  EXPECT_EQ(a.dtype, b.dtype) << what;
  ASSERT_EQ(a.shape.rank_known(), b.shape.rank_known()) << what;
  if (!a.shape.rank_known()) return;
  ASSERT_EQ(a.shape.rank(), b.shape.rank()) << what;
  for (int64_t i = 0; i < a.shape.rank(); ++i) {
    EXPECT_EQ(a.shape[i].value, b.shape[i].value) << what << " dim " << i;
    EXPECT_EQ(a.shape[i].symbol, b.shape[i].symbol) << what << " dim " << i;
  }
}

std::vector<std::string> names_of(const std::vector<ir::Value*>& vs) {
  std::vector<std::string> out;
  for (const ir::Value* v : vs) out.push_back(v ? v->name() : "<absent>");
  return out;
}

// Structural equality of everything the IR holds (the printer leaves out kinds, outer-scope
// values, implicit inputs, attribute values and metadata).
void expect_graph_eq(const ir::Graph& a, const ir::Graph& b, const std::string& path = "main") {
  EXPECT_EQ(a.name(), b.name()) << path;
  EXPECT_EQ(names_of(a.inputs()), names_of(b.inputs())) << path;
  EXPECT_EQ(names_of(a.outputs()), names_of(b.outputs())) << path;
  EXPECT_EQ(a.metadata(), b.metadata()) << path;
  ASSERT_EQ(a.num_values(), b.num_values()) << path;
  for (const ir::Value* va : a.values()) {
    const ir::Value* vb = b.find_value(va->name());
    ASSERT_NE(vb, nullptr) << path << ": value " << va->name() << " missing";
    std::string what = path + ": value " + va->name();
    EXPECT_EQ(va->kind(), vb->kind()) << what;
    expect_type_eq(va->type(), vb->type(), what);
    if (va->is_constant()) expect_tensor_eq(va->constant(), vb->constant(), what);
  }
  auto na = a.nodes(), nb = b.nodes();
  ASSERT_EQ(na.size(), nb.size()) << path;
  for (size_t k = 0; k < na.size(); ++k) {
    const ir::Node& x = *na[k];
    const ir::Node& y = *nb[k];
    std::string what = path + ": node " + x.name();
    EXPECT_EQ(x.name(), y.name()) << what;
    EXPECT_EQ(x.op_type(), y.op_type()) << what;
    EXPECT_EQ(x.domain(), y.domain()) << what;
    EXPECT_EQ(names_of(x.inputs()), names_of(y.inputs())) << what;
    EXPECT_EQ(names_of(x.outputs()), names_of(y.outputs())) << what;
    EXPECT_EQ(names_of(x.implicit_inputs()), names_of(y.implicit_inputs())) << what;
    ASSERT_EQ(x.attributes().size(), y.attributes().size()) << what;
    for (const auto& [name, ax] : x.attributes()) {
      const ir::Attribute* ay = y.attr(name);
      ASSERT_NE(ay, nullptr) << what << " attribute " << name;
      std::string aw = what + " attribute " + name;
      ASSERT_EQ(ax.kind(), ay->kind()) << aw;
      using GraphPtr = ir::Attribute::GraphPtr;
      switch (ax.kind()) {
        case ir::AttrKind::kFloat: {
          float fx = ax.get<float>(), fy = ay->get<float>();
          EXPECT_EQ(std::memcmp(&fx, &fy, 4), 0) << aw;
          break;
        }
        case ir::AttrKind::kInt:
          EXPECT_EQ(ax.get<int64_t>(), ay->get<int64_t>()) << aw;
          break;
        case ir::AttrKind::kString:
          EXPECT_EQ(ax.get<std::string>(), ay->get<std::string>()) << aw;
          break;
        case ir::AttrKind::kTensor:
          expect_tensor_eq(ax.get<Tensor>(), ay->get<Tensor>(), aw);
          break;
        case ir::AttrKind::kGraph:
          EXPECT_EQ(ay->get<GraphPtr>()->parent(), &b) << aw;
          expect_graph_eq(*ax.get<GraphPtr>(), *ay->get<GraphPtr>(), aw);
          break;
        case ir::AttrKind::kFloats: {
          const auto& fx = ax.get<std::vector<float>>();
          const auto& fy = ay->get<std::vector<float>>();
          ASSERT_EQ(fx.size(), fy.size()) << aw;
          EXPECT_EQ(std::memcmp(fx.data(), fy.data(), fx.size() * 4), 0) << aw;
          break;
        }
        case ir::AttrKind::kInts:
          EXPECT_EQ(ax.get<std::vector<int64_t>>(), ay->get<std::vector<int64_t>>()) << aw;
          break;
        case ir::AttrKind::kStrings:
          EXPECT_EQ(ax.get<std::vector<std::string>>(), ay->get<std::vector<std::string>>()) << aw;
          break;
        case ir::AttrKind::kTensors: {
          const auto& tx = ax.get<std::vector<Tensor>>();
          const auto& ty = ay->get<std::vector<Tensor>>();
          ASSERT_EQ(tx.size(), ty.size()) << aw;
          for (size_t i = 0; i < tx.size(); ++i) expect_tensor_eq(tx[i], ty[i], aw);
          break;
        }
        case ir::AttrKind::kGraphs: {
          const auto& gx = ax.get<std::vector<GraphPtr>>();
          const auto& gy = ay->get<std::vector<GraphPtr>>();
          ASSERT_EQ(gx.size(), gy.size()) << aw;
          for (size_t i = 0; i < gx.size(); ++i) {
            EXPECT_EQ(gy[i]->parent(), &b) << aw;
            expect_graph_eq(*gx[i], *gy[i], aw);
          }
          break;
        }
      }
    }
  }
}

// Every constant of a graph and its subgraphs, and every attribute tensor.
void collect_tensors(const ir::Graph& g, std::vector<const Tensor*>& out) {
  for (const ir::Value* v : g.constants()) out.push_back(&v->constant());
  for (const ir::Node* n : g.nodes()) {
    for (const auto& [name, a] : n->attributes()) {
      if (a.is<Tensor>()) out.push_back(&a.get<Tensor>());
      if (a.is<std::vector<Tensor>>())
        for (const Tensor& t : a.get<std::vector<Tensor>>()) out.push_back(&t);
    }
    for (const ir::Graph* sub : n->subgraphs()) collect_tensors(*sub, out);
  }
}

// ---------------------------------------------------------------- round trip

TEST(KstFormat, RoundTripPreservesEverything) {
  auto g = testing::make_feature_graph();
  std::string bytes = write_or_die(*g);
  ASSERT_FALSE(bytes.empty());
  KstModel m = load_or_die(bytes);
  ASSERT_TRUE(m.graph);
  EXPECT_EQ(ir::graph_to_string(*g), ir::graph_to_string(*m.graph));
  expect_graph_eq(*g, *m.graph);
  EXPECT_EQ(m.info.format_version, format::kKstFormatVersion);
  EXPECT_EQ(m.info.writer.rfind("kestrel ", 0), 0u) << m.info.writer;
}

TEST(KstFormat, RewriteIsByteIdentical) {
  auto g = testing::make_feature_graph();
  std::string a = write_or_die(*g);
  KstModel m = load_or_die(a);
  ASSERT_TRUE(m.graph);
  std::string b = write_or_die(*m.graph);
  EXPECT_TRUE(a == b) << "sizes " << a.size() << " vs " << b.size();
}

TEST(KstFormat, FileRoundTripUsesTheMapping) {
  auto g = testing::make_feature_graph();
  std::string path = temp_path("feature.kst");
  auto st = format::write_kst_file(*g, path);
  ASSERT_TRUE(st.is_ok()) << st.status().to_string();
  EXPECT_EQ(st->file_size, fs::file_size(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  auto r = format::load_kst_file(path);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(r->info.mapped);
  expect_graph_eq(*g, *r->graph);
  // The same bytes as the in-memory writer.
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_TRUE(ss.str() == write_or_die(*g));
}

TEST(KstFormat, LayoutMatchesTheDocumentation) {
  auto g = testing::make_feature_graph();
  std::string bytes = write_or_die(*g);
  ASSERT_GE(bytes.size(), 12u);
  EXPECT_EQ(bytes.substr(8, 4), "KST1");
  uint32_t fb_len;
  std::memcpy(&fb_len, bytes.data(), 4);
  uint64_t data_offset = core::align_up(uint64_t{fb_len} + 4, 64);
  const kst::Model* m = kst::GetSizePrefixedModel(bytes.data());
  EXPECT_EQ(m->format_version(), format::kKstFormatVersion);
  EXPECT_EQ(data_offset + m->data_size(), bytes.size());
  // Structured metadata.
  const kst::Metadata* md = m->metadata();
  ASSERT_NE(md, nullptr);
  EXPECT_EQ(md->producer()->str(), "kestrel-tests 1.0");
  EXPECT_EQ(md->source_format()->str(), "onnx");
  EXPECT_EQ(md->source_opset(), 13);
  ASSERT_EQ(md->conversion()->size(), 1u);
  EXPECT_EQ(md->conversion()->Get(0)->key()->str(), "opt_level");
  ASSERT_EQ(md->user()->size(), 2u);
  EXPECT_EQ(md->other()->size(), 2u);  // onnx_ir_version, plain
  // Every non-string tensor starts at a 64-byte aligned file offset inside the data section.
  int checked = 0;
  for (const kst::Value* v : *m->graph()->values()) {
    const kst::Tensor* t = v->constant();
    if (!t || t->dtype() == kst::DType::String) continue;
    EXPECT_EQ((data_offset + t->data_offset()) % 64, 0u) << v->name()->str();
    EXPECT_LE(t->data_offset() + t->data_size(), m->data_size());
    ++checked;
  }
  EXPECT_GE(checked, 14);
}

TEST(KstFormat, MetadataFromOptionsWins) {
  auto g = testing::make_feature_graph();
  KstWriteOptions o;
  o.metadata["convert.opt_level"] = "1";
  o.metadata["convert.fp16_weights"] = "0";
  KstModel m = load_or_die(write_or_die(*g, o));
  ASSERT_TRUE(m.graph);
  EXPECT_EQ(m.graph->metadata().at("convert.opt_level"), "1");
  EXPECT_EQ(m.graph->metadata().at("convert.fp16_weights"), "0");
  EXPECT_EQ(m.graph->metadata().at("user.author"), "someone");
}

TEST(KstFormat, OpsetThatIsNotAPlainIntegerStaysVerbatim) {
  ir::Graph g;
  ir::Value* x = g.add_input("x", {DType::kF32, ir::Shape({ir::Dim(2)})});
  g.add_output(x);
  g.metadata()["source_format"] = "tflite";
  g.metadata()["tflite_opset"] = "007";
  g.metadata()["onnx_opset"] = "13";
  KstModel m = load_or_die(write_or_die(g));
  ASSERT_TRUE(m.graph);
  EXPECT_EQ(m.graph->metadata(), g.metadata());
}

TEST(KstFormat, EveryAttributeKindRoundTrips) {
  auto g = testing::make_feature_graph();
  KstModel m = load_or_die(write_or_die(*g));
  ASSERT_TRUE(m.graph);
  std::set<ir::AttrKind> kinds;
  std::function<void(const ir::Graph&)> walk = [&](const ir::Graph& gr) {
    for (const ir::Node* n : gr.nodes()) {
      for (const auto& [k, a] : n->attributes()) kinds.insert(a.kind());
      for (const ir::Graph* s : n->subgraphs()) walk(*s);
    }
  };
  walk(*m.graph);
  EXPECT_EQ(kinds.size(), 10u) << "the sample graph should use all ten attribute kinds";
  const ir::Node* fused = nullptr;
  for (const ir::Node* n : m.graph->nodes())
    if (n->name() == "fused") fused = n;
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->domain(), "kestrel");
  EXPECT_EQ(fused->attr_string("mode").value(), std::string("bin\0ary", 7));
  EXPECT_EQ(fused->attr_ints("pads").value(), (std::vector<int64_t>{0, 1, INT64_MAX, INT64_MIN}));
  float nz = fused->attr_float("neg_zero").value();
  EXPECT_TRUE(std::signbit(nz));
}

TEST(KstFormat, SymbolicDimsAndOuterScope) {
  auto g = testing::make_feature_graph();
  KstModel m = load_or_die(write_or_die(*g));
  ASSERT_TRUE(m.graph);
  const ir::Value* x = m.graph->find_value("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->shape().to_string(), "[batch,3,?]");
  EXPECT_FALSE(m.graph->find_value("ids")->shape().rank_known());
  EXPECT_EQ(m.graph->find_value("untyped")->shape().rank(), 0);
  const ir::Node* iff = nullptr;
  for (const ir::Node* n : m.graph->nodes())
    if (n->op_type() == "If") iff = n;
  ASSERT_NE(iff, nullptr);
  EXPECT_EQ(names_of(iff->implicit_inputs()), (std::vector<std::string>{"clipped", "x"}));
  const ir::Graph* then_g = iff->attr("then_branch")->get<ir::Attribute::GraphPtr>().get();
  EXPECT_EQ(then_g->parent(), m.graph.get());
  EXPECT_EQ(then_g->find_value("x")->kind(), ir::ValueKind::kOuterScope);
  const ir::Node* loop = then_g->nodes().front();
  const ir::Graph* body = loop->attr("body")->get<ir::Attribute::GraphPtr>().get();
  EXPECT_EQ(body->parent(), then_g);
  EXPECT_EQ(body->find_value("x")->kind(), ir::ValueKind::kOuterScope);
  EXPECT_EQ(loop->input(0), nullptr);
  EXPECT_EQ(loop->num_inputs(), 3u);
  // Use lists are rebuilt: x is used by Add and, implicitly, by If.
  EXPECT_EQ(x->uses().size(), 2u);
}

TEST(KstFormat, WriterRefusesWhatTheLoaderWouldRefuse) {
  ir::Graph g;
  core::Dims dims(static_cast<size_t>(format::kKstMaxRank + 1), 1);
  ir::Value* c = g.add_constant("c", Tensor::allocate(DType::kF32, dims).value());
  g.add_output(c);
  auto r = format::write_kst(g);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("rank"), std::string::npos) << r.status().message();
}

// ---------------------------------------------------------------- zero copy

TEST(KstFormat, ConstantsAreViewsIntoTheMapping) {
  auto g = testing::make_feature_graph();
  std::string path = temp_path("zero_copy.kst");
  ASSERT_TRUE(format::write_kst_file(*g, path).is_ok());
  auto r = format::load_kst_file(path);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const auto* base = static_cast<const uint8_t*>(r->info.base);
  const uint64_t size = r->info.file_size;
  std::vector<const Tensor*> tensors;
  collect_tensors(*r->graph, tensors);
  int in_place = 0;
  for (const Tensor* t : tensors) {
    if (t->dtype() == DType::kString) continue;  // strings live in the FlatBuffer and are copied
    const auto* p = static_cast<const uint8_t*>(t->raw_data());
    EXPECT_GE(p, base + r->info.data_offset);
    EXPECT_LE(p + t->nbytes(), base + size);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    EXPECT_TRUE(t->owns_data()) << "a view must keep the mapping alive";
    ++in_place;
  }
  EXPECT_EQ(in_place, r->info.zero_copy_tensors);
  EXPECT_GE(in_place, 18);
  EXPECT_EQ(r->info.widened_bytes, 0u);
  // Constants outlive the model object: they hold the mapping.
  Tensor keep = r->graph->find_value("big")->constant();
  std::vector<float> want(keep.span<float>().begin(), keep.span<float>().end());
  r = core::Status(core::StatusCode::kInternal, "dropped");
  EXPECT_EQ(std::memcmp(keep.raw_data(), want.data(), want.size() * 4), 0);
}

TEST(KstFormat, SharedBufferIsUsedInPlaceOnlyWhenAligned) {
  auto g = testing::make_feature_graph();
  std::string bytes = write_or_die(*g);
  auto buf = core::allocate_aligned(bytes.size() + 64).value();
  std::memcpy(buf.get(), bytes.data(), bytes.size());
  auto aligned = format::load_kst_shared(buf, buf.get(), bytes.size());
  ASSERT_TRUE(aligned.is_ok()) << aligned.status().to_string();
  EXPECT_FALSE(aligned->info.copied);
  EXPECT_EQ(aligned->info.base, buf.get());
  const Tensor& big = aligned->graph->find_value("big")->constant();
  EXPECT_GE(static_cast<const uint8_t*>(big.raw_data()), static_cast<const uint8_t*>(buf.get()));
  EXPECT_LT(static_cast<const uint8_t*>(big.raw_data()), static_cast<const uint8_t*>(buf.get()) + bytes.size());

  auto buf2 = core::allocate_aligned(bytes.size() + 64).value();
  auto* mis = static_cast<uint8_t*>(buf2.get()) + 8;
  std::memcpy(mis, bytes.data(), bytes.size());
  auto copied = format::load_kst_shared(buf2, mis, bytes.size());
  ASSERT_TRUE(copied.is_ok()) << copied.status().to_string();
  EXPECT_TRUE(copied->info.copied);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(copied->graph->find_value("big")->constant().raw_data()) % 64, 0u);
  expect_graph_eq(*g, *copied->graph);
}

// ---------------------------------------------------------------- fp16 weights

std::unique_ptr<ir::Graph> weights_graph() {
  auto g = std::make_unique<ir::Graph>("weights");
  ir::Value* x = g->add_input("x", {DType::kF32, ir::Shape({ir::Dim(4), ir::Dim(512)})});
  ir::Value* w = g->add_constant("w", testing::random_f32({4, 512}, 1, 0.5f));
  ir::Value* b = g->add_constant("b", testing::random_f32({512}, 2, 0.1f));
  ir::Value* huge = g->add_constant("huge", testing::random_f32({2048}, 3, 1e5f));  // beyond f16 range
  g->add_constant("ints", testing::pattern_tensor(DType::kI64, {4096}, 1));
  ir::Node* mul = g->add_node("Mul", {x, w}, {"xw"});
  ir::Node* add = g->add_node("Add", {mul->output(0), b}, {"xwb"});
  ir::Node* relu = g->add_node("Relu", {add->output(0)}, {"y"});
  ir::Node* neg = g->add_node("Neg", {huge}, {"h"});
  g->add_output(relu->output(0));
  g->add_output(neg->output(0));
  return g;
}

std::vector<Tensor> run_graph(std::unique_ptr<ir::Graph> g, std::shared_ptr<void> keep,
                              const std::vector<std::pair<std::string, Tensor>>& inputs) {
  runtime::LoadedModel lm;
  lm.graph = std::move(g);
  lm.keepalive = std::move(keep);
  auto s = runtime::Session::from_model(std::move(lm));
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  if (!s.is_ok()) return {};
  std::vector<Tensor> out;
  auto st = (*s)->run(inputs, out);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return out;
}

TEST(KstFormat, Fp16WeightsHalveTheBytesAndStayClose) {
  auto g = weights_graph();
  format::KstWriteStats s32, s16;
  std::string f32 = write_or_die(*g, {}, &s32);
  KstWriteOptions o;
  o.fp16_weights = true;
  std::string f16 = write_or_die(*g, o, &s16);
  // Only w is converted: b is small, huge does not fit f16, ints are not float.
  EXPECT_EQ(s16.fp16_tensors, 1);
  EXPECT_EQ(s32.stored_tensor_bytes - s16.stored_tensor_bytes, 4u * 512 * 2);
  EXPECT_EQ(s16.tensor_bytes, s32.tensor_bytes);
  EXPECT_LT(f16.size(), f32.size());

  // The fp16 saving on the converted weights is exactly half.
  KstModel m = load_or_die(f16);
  ASSERT_TRUE(m.graph);
  EXPECT_EQ(m.info.widened_bytes, 4u * 512 * 4);
  const Tensor& w = m.graph->find_value("w")->constant();
  EXPECT_EQ(w.dtype(), DType::kF32);
  const Tensor& w0 = g->find_value("w")->constant();
  for (int64_t i = 0; i < w.num_elements(); ++i) {
    float want = static_cast<float>(core::Float16(w0.data<float>()[i]));
    ASSERT_EQ(w.data<float>()[i], want) << i;
  }
  expect_tensor_eq(g->find_value("b")->constant(), m.graph->find_value("b")->constant(), "b stays f32");
  expect_tensor_eq(g->find_value("huge")->constant(), m.graph->find_value("huge")->constant(), "huge stays f32");
  expect_tensor_eq(g->find_value("ints")->constant(), m.graph->find_value("ints")->constant(), "ints stay");

  Tensor x = testing::random_f32({4, 512}, 9);
  auto want = run_graph(weights_graph(), nullptr, {{"x", x}});
  auto got = run_graph(std::move(m.graph), m.keepalive, {{"x", x}});
  ASSERT_EQ(want.size(), 2u);
  ASSERT_EQ(got.size(), 2u);
  float max_ref = 0, max_err = 0;
  for (int64_t i = 0; i < want[0].num_elements(); ++i) {
    max_ref = std::max(max_ref, std::fabs(want[0].data<float>()[i]));
    max_err = std::max(max_err, std::fabs(want[0].data<float>()[i] - got[0].data<float>()[i]));
  }
  EXPECT_GT(max_err, 0.0f) << "f16 storage should not be lossless on random weights";
  EXPECT_LE(max_err, 1e-3f * max_ref);
  expect_tensor_eq(want[1], got[1], "output from the f32-kept tensor");
}

// fp16_float_ops_only (the int8 files of `kestrel quantize`): a weight only float ops read is
// stored as f16; a scale a DequantizeLinear reads (integer input), a constant a Cast to int32 reads
// (integer output) and a constant read by both kinds of op stay f32.
TEST(KstFormat, Fp16FloatOpsOnlyKeepsTheConstantsOfIntegerOpsF32) {
  auto g = std::make_unique<ir::Graph>("mixed");
  ir::Value* x = g->add_input("x", {DType::kF32, ir::Shape({ir::Dim(4), ir::Dim(512)})});
  ir::Value* w = g->add_constant("w", testing::random_f32({4, 512}, 1, 0.5f));
  ir::Value* q = g->add_constant("q", testing::pattern_tensor(DType::kI8, {2048}, 2));
  ir::Value* s = g->add_constant("s", testing::random_f32({2048}, 3, 0.1f));
  ir::Value* c = g->add_constant("c", testing::random_f32({2048}, 4, 10.f));
  ir::Value* both = g->add_constant("both", testing::random_f32({2048}, 5, 10.f));
  ir::Node* mul = g->add_node("Mul", {x, w}, {"xw"});
  ir::Node* dq = g->add_node("DequantizeLinear", {q, s}, {"deq"});
  dq->set_attr("axis", int64_t{0});
  ir::Node* cast = g->add_node("Cast", {c}, {"ci"});
  cast->set_attr("to", int64_t{6});
  ir::Node* neg = g->add_node("Neg", {both}, {"nb"});
  ir::Node* cast2 = g->add_node("Cast", {both}, {"bi"});
  cast2->set_attr("to", int64_t{6});
  for (ir::Node* n : {mul, dq, cast, neg, cast2}) g->add_output(n->output(0));
  ASSERT_TRUE(ir::infer_graph(*g).is_ok());

  KstWriteOptions o;
  o.fp16_weights = true;
  format::KstWriteStats all, float_only;
  write_or_die(*g, o, &all);
  o.fp16_float_ops_only = true;
  std::string f = write_or_die(*g, o, &float_only);
  EXPECT_EQ(all.fp16_tensors, 4);
  EXPECT_EQ(float_only.fp16_tensors, 1);
  KstModel m = load_or_die(f);
  ASSERT_TRUE(m.graph);
  EXPECT_EQ(m.info.widened_bytes, 4u * 512 * 4);
  for (const char* name : {"s", "c", "both"})
    expect_tensor_eq(g->find_value(name)->constant(), m.graph->find_value(name)->constant(), name);
}

TEST(KstFormat, HalfWideningIsExactForEveryBitPattern) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> got(all.size());
  format::widen_halves(all.data(), got.data(), all.size());
  for (uint32_t i = 0; i < all.size(); ++i) {
    float want = core::half_bits_to_float(static_cast<uint16_t>(i));
    ASSERT_EQ(core::float_bits(got[i]), core::float_bits(want)) << "half bits 0x" << std::hex << i;
  }
}

TEST(KstFormat, Fp16RoundTripWithFp16IsStable) {
  auto g = weights_graph();
  KstWriteOptions o;
  o.fp16_weights = true;
  std::string a = write_or_die(*g, o);
  KstModel m = load_or_die(a);
  ASSERT_TRUE(m.graph);
  EXPECT_TRUE(write_or_die(*m.graph, o) == a);
}

// ---------------------------------------------------------------- ONNX -> .kst -> Session

struct SessionCase {
  std::string name;
  std::string onnx;
  std::vector<std::pair<std::string, Tensor>> inputs;
};

std::vector<SessionCase> onnx_cases() {
  using testing::OnnxBuilder;
  std::vector<SessionCase> cases;
  {
    OnnxBuilder b;
    b.input("x", 1, {2, 3}).initializer_f32("c", {3}, {1, -2, 3});
    b.node("Add", {"x", "c"}, {"s"});
    b.node("Relu", {"s"}, {"y"});
    b.output("y");
    cases.push_back({"add_relu", b.bytes(), {{"x", Tensor::from_vector<float>({0, 1, -5, -1, 0.5f, 2}, {2, 3})}}});
  }
  {
    // Symbolic batch, several elementwise ops, a bool initializer, Where and a Cast to int.
    OnnxBuilder b;
    b.input("x", 1, {-1, 4}, {"batch", ""});
    b.initializer_f32("w", {4}, {0.5f, -1.25f, 2.0f, 3.0f});
    b.initializer_f32("p", {1}, {2.0f});
    auto* cond = b.raw_initializer("cond");
    cond->set_data_type(onnx::TensorProto::BOOL);
    cond->add_dims(4);
    for (int v : {1, 0, 0, 1}) cond->add_int32_data(v);
    b.node("Mul", {"x", "w"}, {"m"});
    b.node("Sigmoid", {"m"}, {"sg"});
    b.node("Pow", {"x", "p"}, {"sq"});
    b.node("Sqrt", {"sq"}, {"ab"});
    b.node("Where", {"cond", "sg", "ab"}, {"wh"});
    b.node("Tanh", {"wh"}, {"y"});
    auto& cast = b.node("Cast", {"m"}, {"yi"});
    OnnxBuilder::attr(cast, "to", int64_t{7});
    b.output("y").output("yi", 7);
    cases.push_back({"where_cast",
                     b.bytes(),
                     {{"x", Tensor::from_vector<float>({0.5f, -1, 2, 3, -4, 5.5f, 0, -0.25f, 9, 1, -2, 7}, {3, 4})}}});
  }
  {
    // A LeakyRelu / Clip / Div chain with a large-ish initializer (a real weight).
    OnnxBuilder b;
    std::vector<float> w(1500);
    for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(static_cast<float>(i)) * 3.0f;
    b.input("x", 1, {1500});
    b.initializer_f32("w", {1500}, w);
    b.initializer_f32("lo", {}, {-1.0f});
    b.initializer_f32("hi", {}, {2.5f});
    b.node("Div", {"x", "w"}, {"d"});
    auto& lr = b.node("LeakyRelu", {"d"}, {"l"});
    OnnxBuilder::attr(lr, "alpha", 0.2f);
    b.node("Clip", {"l", "lo", "hi"}, {"y"});
    b.output("y");
    std::vector<float> x(1500);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(static_cast<float>(i) * 0.37f) * 4.0f;
    cases.push_back({"div_leaky_clip", b.bytes(), {{"x", Tensor::from_vector<float>(x)}}});
  }
  return cases;
}

void expect_same_outputs(runtime::Session& a, runtime::Session& b,
                         const std::vector<std::pair<std::string, Tensor>>& inputs, const std::string& what) {
  std::vector<Tensor> oa, ob;
  auto sa = a.run(inputs, oa);
  ASSERT_TRUE(sa.is_ok()) << what << ": " << sa.to_string();
  auto sb = b.run(inputs, ob);
  ASSERT_TRUE(sb.is_ok()) << what << ": " << sb.to_string();
  ASSERT_EQ(oa.size(), ob.size()) << what;
  for (size_t i = 0; i < oa.size(); ++i) expect_tensor_eq(oa[i], ob[i], what + " output " + std::to_string(i));
}

TEST(KstSession, OnnxAndKstGiveTheSameOutputs) {
  runtime::SessionOptions so;
  so.opt_level = 0;  // the .kst holds the graph as imported: compare against the same graph
  for (const auto& c : onnx_cases()) {
    SCOPED_TRACE(c.name);
    auto onnx_session = runtime::Session::open_memory(c.onnx.data(), c.onnx.size(), so);
    ASSERT_TRUE(onnx_session.is_ok()) << onnx_session.status().to_string();
    frontend::OnnxImportOptions io;
    auto g = frontend::import_onnx(c.onnx.data(), c.onnx.size(), io);
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    std::string path = temp_path(c.name + ".kst");
    ASSERT_TRUE(format::write_kst_file(**g, path).is_ok());

    auto from_file = runtime::Session::open(path, so);
    ASSERT_TRUE(from_file.is_ok()) << from_file.status().to_string();
    expect_same_outputs(**onnx_session, **from_file, c.inputs, c.name + " (file)");
    EXPECT_EQ((*from_file)->graph().metadata().at("source_format"), "onnx");

    std::string bytes = write_or_die(**g);
    auto from_memory = runtime::Session::open_memory(bytes.data(), bytes.size(), so);
    ASSERT_TRUE(from_memory.is_ok()) << from_memory.status().to_string();
    expect_same_outputs(**onnx_session, **from_memory, c.inputs, c.name + " (memory)");
  }
}

TEST(KstSession, DamagedKstFileGetsTheKstLoadersMessage) {
  std::string path = temp_path("damaged.kst");
  {
    std::ofstream f(path, std::ios::binary);
    f << "not really a model";
  }
  auto s = runtime::Session::open(path);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("not a .kst file"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find(path), std::string::npos) << s.status().message();
}

// The shared model set: import, convert, and run both ways on the reference inputs.
TEST(KstSession, SharedModelsMatchOnnx) {
  if (!testing::data_available("models/manifest.json")) GTEST_SKIP() << "no $KESTREL_DATA/models";
  const std::string dir = testing::data_dir() + "/models";
  std::vector<std::string> models;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".onnx") models.push_back(e.path().stem().string());
  std::sort(models.begin(), models.end());
  std::vector<std::string> skipped;
  int ran = 0;
  runtime::SessionOptions so;
  so.opt_level = 0;
  for (const std::string& name : models) {
    SCOPED_TRACE(name);
    auto g = frontend::import_onnx_file(dir + "/" + name + ".onnx");
    if (!g.is_ok()) {
      skipped.push_back(name + " (" + g.status().message().substr(0, 120) + ")");
      continue;
    }
    std::string path = temp_path(name + ".kst");
    ASSERT_TRUE(format::write_kst_file(**g, path).is_ok());
    auto onnx_session = runtime::Session::open(dir + "/" + name + ".onnx", so);
    if (!onnx_session.is_ok()) {
      skipped.push_back(name + " (" + onnx_session.status().message().substr(0, 120) + ")");
      continue;
    }
    auto kst_session = runtime::Session::open(path, so);
    ASSERT_TRUE(kst_session.is_ok()) << kst_session.status().to_string();
    std::vector<std::pair<std::string, Tensor>> inputs;
    for (const auto& io : (*onnx_session)->inputs()) {
      auto t = core::read_npy(dir + "/" + name + ".in." + io.name + ".npy");
      ASSERT_TRUE(t.is_ok()) << t.status().to_string();
      inputs.emplace_back(io.name, std::move(t).value());
    }
    expect_same_outputs(**onnx_session, **kst_session, inputs, name);
    ++ran;
  }
  std::ostringstream msg;
  for (const auto& s : skipped) msg << "\n  skipped " << s;
  if (ran > 0)
    std::cout << "[ shared models ] " << ran << " of " << models.size() << " ran from .kst" << msg.str() << "\n";
  if (ran == 0) GTEST_SKIP() << "no shared model runs with the ops available in this build" << msg.str();
}

// ---------------------------------------------------------------- corrupted files

// Loads `bytes`; a refusal must carry a message. Returns true when the load was accepted; an
// accepted graph must then be printable and writable (the loader hands out only sound graphs).
bool try_load(const std::string& bytes, std::string* message = nullptr) {
  auto r = format::load_kst_memory(bytes.data(), bytes.size(), "fuzzed.kst");
  if (!r.is_ok()) {
    EXPECT_FALSE(r.status().message().empty());
    EXPECT_NE(r.status().message().find("fuzzed.kst"), std::string::npos) << r.status().message();
    if (message) *message = r.status().message();
    return false;
  }
  EXPECT_FALSE(ir::graph_to_string(*r->graph).empty());
  auto again = format::write_kst(*r->graph);
  EXPECT_TRUE(again.is_ok()) << again.status().to_string();
  return true;
}

std::string refusal(const std::string& bytes) {
  std::string msg;
  EXPECT_FALSE(try_load(bytes, &msg)) << "a corrupted file was accepted";
  return msg;
}

#define EXPECT_REFUSED_WITH(bytes, text)                              \
  do {                                                                \
    std::string _m = refusal(bytes);                                  \
    EXPECT_NE(_m.find(text), std::string::npos) << "message: " << _m; \
  } while (0)

kst::Model* mutable_model(std::string& bytes) {
  return kst::GetMutableSizePrefixedModel(bytes.data());
}

kst::Value* mutable_value(std::string& bytes, const std::string& name) {
  auto* values = mutable_model(bytes)->mutable_graph()->mutable_values();
  for (flatbuffers::uoffset_t i = 0; i < values->size(); ++i)
    if (values->Get(i)->name()->str() == name) return values->GetMutableObject(i);
  ADD_FAILURE() << "no value " << name;
  return nullptr;
}

TEST(KstCorrupt, TruncatedAtEveryLength) {
  auto g = testing::make_feature_graph();
  std::string bytes = write_or_die(*g);
  ASSERT_TRUE(try_load(bytes));
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::string cut = bytes.substr(0, n);
    ASSERT_FALSE(try_load(cut)) << "accepted a file cut to " << n << " of " << bytes.size() << " bytes";
  }
  std::string longer = bytes + std::string(64, '\0');
  EXPECT_REFUSED_WITH(longer, "unexpected bytes after the data section");
}

TEST(KstCorrupt, RandomBitFlipsNeverCrash) {
  auto g = testing::make_feature_graph();
  const std::string bytes = write_or_die(*g);
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<size_t> pos(0, bytes.size() - 1);
  std::uniform_int_distribution<int> bit(0, 7), nflips(1, 4);
  int refused = 0, accepted = 0;
  const int kIterations = 3000;
  for (int it = 0; it < kIterations; ++it) {
    std::string b = bytes;
    for (int k = nflips(rng); k > 0; --k) b[pos(rng)] ^= static_cast<char>(1 << bit(rng));
    (try_load(b) ? accepted : refused)++;
  }
  // Flips in tensor data or padding load fine; most flips in the FlatBuffer must be caught.
  std::cout << "[ bit flips ] " << refused << " refused, " << accepted << " accepted of " << kIterations << "\n";
  EXPECT_GT(refused, kIterations / 10);
}

TEST(KstCorrupt, RandomBytesAfterAValidHeader) {
  auto g = testing::make_feature_graph();
  const std::string bytes = write_or_die(*g);
  std::mt19937 rng(7);
  for (int it = 0; it < 500; ++it) {
    std::string b = bytes;
    size_t start = 12 + rng() % (b.size() - 12);
    size_t len = 1 + rng() % 64;
    for (size_t i = start; i < std::min(b.size(), start + len); ++i) b[i] = static_cast<char>(rng());
    try_load(b);
  }
}

TEST(KstCorrupt, NotAKstFile) {
  EXPECT_REFUSED_WITH(std::string(), "too small");
  EXPECT_REFUSED_WITH(std::string(100, 'x'), "not a .kst file");
  testing::OnnxBuilder b;
  b.input("x", 1, {2});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  EXPECT_REFUSED_WITH(b.bytes(), "not a .kst file");
}

TEST(KstCorrupt, NewerFormatVersionIsRefusedWithAMessageSayingSo) {
  auto g = testing::make_feature_graph();
  std::string bytes = write_or_die(*g);
  ASSERT_TRUE(mutable_model(bytes)->mutate_format_version(format::kKstFormatVersion + 1));
  std::string want = "file format version " + std::to_string(format::kKstFormatVersion + 1) +
                     " is newer than the version " + std::to_string(format::kKstFormatVersion) +
                     " this Kestrel reads; upgrade Kestrel";
  auto r = format::load_kst_memory(bytes.data(), bytes.size(), "new.kst");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), core::StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  // Through the runtime too.
  std::string path = temp_path("newer.kst");
  {
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  auto s = runtime::Session::open(path);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find(want), std::string::npos) << s.status().message();

  ASSERT_TRUE(mutable_model(bytes)->mutate_format_version(0));
  EXPECT_REFUSED_WITH(bytes, "no format version");
}

TEST(KstCorrupt, WrongTensorOffsetsAndSizes) {
  auto g = testing::make_feature_graph();
  const std::string good = write_or_die(*g);
  {
    std::string b = good;
    auto* t = mutable_value(b, "big")->mutable_constant();
    ASSERT_TRUE(t->mutate_data_offset(t->data_offset() + 4));
    EXPECT_REFUSED_WITH(b, "not a multiple of 64");
  }
  {
    std::string b = good;
    auto* t = mutable_value(b, "big")->mutable_constant();
    ASSERT_TRUE(t->mutate_data_offset(t->data_offset() + 1024 * 64));
    EXPECT_REFUSED_WITH(b, "outside the data section");
  }
  {
    std::string b = good;
    auto* t = mutable_value(b, "big")->mutable_constant();
    ASSERT_TRUE(t->mutate_data_offset(uint64_t{1} << 63));
    EXPECT_REFUSED_WITH(b, "outside the data section");
  }
  {
    std::string b = good;
    auto* t = mutable_value(b, "big")->mutable_constant();
    ASSERT_TRUE(t->mutate_data_size(t->data_size() + 4));
    EXPECT_REFUSED_WITH(b, "needs 8448 bytes but records 8452");
  }
  {
    std::string b = good;
    ASSERT_TRUE(mutable_model(b)->mutate_data_size(mutable_model(b)->data_size() - 64));
    EXPECT_REFUSED_WITH(b, "unexpected bytes after the data section");
  }
  {
    std::string b = good;
    ASSERT_TRUE(mutable_model(b)->mutate_data_size(mutable_model(b)->data_size() + 64));
    EXPECT_REFUSED_WITH(b, "truncated");
  }
}

TEST(KstCorrupt, OversizedAndNegativeShapes) {
  auto g = testing::make_feature_graph();
  const std::string good = write_or_die(*g);
  auto with_dim = [&](const std::string& value, flatbuffers::uoffset_t i, int64_t d) {
    std::string b = good;
    auto* dims = mutable_value(b, value)->mutable_constant()->mutable_dims();
    dims->Mutate(i, d);
    return b;
  };
  EXPECT_REFUSED_WITH(with_dim("big", 0, -1), "negative");
  EXPECT_REFUSED_WITH(with_dim("big", 0, (int64_t{1} << 40) + 1), "2^40");
  EXPECT_REFUSED_WITH(with_dim("big", 0, int64_t{1} << 35), "2^40");  // 2^35 * 33 elements
  EXPECT_REFUSED_WITH(with_dim("big", 0, INT64_MAX), "2^40");
  EXPECT_REFUSED_WITH(with_dim("big", 0, 65), "needs");  // the byte size no longer matches
  // Value shapes too (they feed shape inference).
  {
    std::string b = good;
    auto* dims = mutable_value(b, "x")->mutable_shape()->mutable_dims();
    dims->Mutate(1, -7);
    EXPECT_REFUSED_WITH(b, "dimension 1 is -7");
  }
  {
    std::string b = good;
    auto* dims = mutable_value(b, "sum")->mutable_shape()->mutable_dims();
    dims->Mutate(1, int64_t{1} << 30);
    dims->Mutate(2, int64_t{1} << 30);
    EXPECT_REFUSED_WITH(b, "2^40");
  }
}

TEST(KstCorrupt, BadEnumsAndBoolBytes) {
  auto g = testing::make_feature_graph();
  const std::string good = write_or_die(*g);
  {
    std::string b = good;
    ASSERT_TRUE(mutable_value(b, "big")->mutable_constant()->mutate_dtype(static_cast<kst::DType>(200)));
    EXPECT_REFUSED_WITH(b, "invalid dtype 200");
  }
  {
    std::string b = good;
    ASSERT_TRUE(mutable_value(b, "x")->mutate_dtype(static_cast<kst::DType>(99)));
    EXPECT_REFUSED_WITH(b, "unknown dtype 99");
  }
  {
    std::string b = good;
    ASSERT_TRUE(mutable_value(b, "x")->mutate_kind(static_cast<kst::ValueKind>(9)));
    EXPECT_REFUSED_WITH(b, "unknown kind 9");
  }
  {
    // A bool tensor whose byte is neither 0 nor 1 (undefined behaviour if a kernel read it).
    std::string b = good;
    kst::Value* v = mutable_value(b, "c_bool");
    uint32_t fb_len;
    std::memcpy(&fb_len, b.data(), 4);
    uint64_t at = core::align_up(uint64_t{fb_len} + 4, 64) + v->constant()->data_offset() + 1;
    b[at] = 2;
    EXPECT_REFUSED_WITH(b, "bool tensor holds byte 2");
  }
  {
    // f16 storage claimed for an int tensor.
    KstWriteOptions o;
    o.fp16_weights = true;
    o.fp16_min_elements = 1;
    std::string b = write_or_die(*g, o);
    kst::Tensor* t = mutable_value(b, "c_f32")->mutable_constant();
    ASSERT_EQ(t->encoding(), kst::Encoding::F16FromF32);
    ASSERT_TRUE(t->mutate_dtype(kst::DType::I16));
    EXPECT_REFUSED_WITH(b, "f16 storage is only for f32");
    ASSERT_TRUE(t->mutate_dtype(kst::DType::F32));
    EXPECT_TRUE(try_load(b));
    ASSERT_TRUE(t->mutate_encoding(static_cast<kst::Encoding>(7)));
    EXPECT_REFUSED_WITH(b, "unknown encoding 7");
  }
}

TEST(KstCorrupt, BadCrossReferences) {
  auto g = testing::make_feature_graph();
  const std::string good = write_or_die(*g);
  auto node_named = [](std::string& b, const std::string& name) -> kst::Node* {
    auto* nodes = mutable_model(b)->mutable_graph()->mutable_nodes();
    for (flatbuffers::uoffset_t i = 0; i < nodes->size(); ++i)
      if (nodes->Get(i)->name()->str() == name) return nodes->GetMutableObject(i);
    return nullptr;
  };
  const int nv = static_cast<int>(kst::GetSizePrefixedModel(good.data())->graph()->values()->size());
  {
    std::string b = good;
    node_named(b, "clip_node")->mutable_inputs()->Mutate(0, nv + 5);
    EXPECT_REFUSED_WITH(b, "input 0 refers to value " + std::to_string(nv + 5));
  }
  {
    std::string b = good;
    node_named(b, "clip_node")->mutable_inputs()->Mutate(0, -2);
    EXPECT_REFUSED_WITH(b, "refers to value -2");
  }
  {
    // Use of a value produced by a later node.
    std::string b = good;
    const auto* values = mutable_model(b)->graph()->values();
    int32_t if_out = -1;
    for (flatbuffers::uoffset_t i = 0; i < values->size(); ++i)
      if (values->Get(i)->name()->str() == "if_out") if_out = static_cast<int32_t>(i);
    node_named(b, "clip_node")->mutable_inputs()->Mutate(0, if_out);
    EXPECT_REFUSED_WITH(b, "used before a node defines it");
  }
  {
    // An output that is a constant (defined twice).
    std::string b = good;
    node_named(b, "clip_node")->mutable_outputs()->Mutate(0, 4);
    EXPECT_REFUSED_WITH(b, "is not of kind NodeOutput");
  }
  {
    // Two nodes producing the same value.
    std::string b = good;
    uint32_t sum = node_named(b, "clip_node")->inputs()->Get(0);
    node_named(b, "clip_node")->mutable_outputs()->Mutate(0, sum);
    std::string m = refusal(b);
    EXPECT_TRUE(m.find("produced twice") != std::string::npos || m.find("used before") != std::string::npos) << m;
  }
  {
    std::string b = good;
    mutable_model(b)->mutable_graph()->mutable_outputs()->Mutate(0, 100000);
    EXPECT_REFUSED_WITH(b, "output refers to value 100000");
  }
  {
    std::string b = good;
    mutable_model(b)->mutable_graph()->mutable_inputs()->Mutate(1, 0);
    EXPECT_REFUSED_WITH(b, "listed twice");
  }
  {
    // A value's name changed to collide with another.
    std::string b = good;
    kst::Value* v = mutable_value(b, "c_u8");
    auto* name = const_cast<flatbuffers::String*>(v->name());
    std::memcpy(const_cast<char*>(name->c_str()), "c_i8", 4);
    EXPECT_REFUSED_WITH(b, "two values are named 'c_i8'");
  }
  {
    // An outer-scope reference to a name no enclosing graph has.
    std::string b = good;
    kst::Value* v = mutable_value(b, "x");
    auto* name = const_cast<flatbuffers::String*>(v->name());
    const_cast<char*>(name->c_str())[0] = 'z';
    std::string m = refusal(b);
    EXPECT_TRUE(m.find("enclosing graph") != std::string::npos || m.find("'z'") != std::string::npos) << m;
  }
}

// The FlatBuffers 2.x verifier lets a vector of int64 start at a 4-byte aligned address
// (google/flatbuffers#8397); the loader must refuse it rather than do a misaligned load.
TEST(KstCorrupt, MisalignedInt64ListIsRefused) {
  auto g = testing::make_feature_graph();
  g->metadata()["pad"] = std::string(64, 'P');
  std::string b = write_or_die(*g);
  ASSERT_TRUE(try_load(b));
  // Write a dims vector [2][64][33] whose elements are 4 mod 8 into the padding string...
  size_t at = b.find(std::string(64, 'P'));
  ASSERT_NE(at, std::string::npos);
  size_t q = core::align_up(at, 8);
  uint32_t len = 2;
  int64_t dims[2] = {64, 33};
  std::memcpy(&b[q], &len, 4);
  std::memcpy(&b[q + 4], dims, 16);
  // ...and point the 'big' tensor's dims field at it.
  kst::Tensor* t = mutable_value(b, "big")->mutable_constant();
  auto* field = reinterpret_cast<flatbuffers::Table*>(t)->GetAddressOf(kst::Tensor::VT_DIMS);
  ASSERT_NE(field, nullptr);
  auto* field_pos = reinterpret_cast<uint8_t*>(field);
  auto* target = reinterpret_cast<uint8_t*>(&b[q]);
  ASSERT_GT(target, field_pos);
  uint32_t off = static_cast<uint32_t>(target - field_pos);
  std::memcpy(field_pos, &off, 4);
  uint32_t fb_len;
  std::memcpy(&fb_len, b.data(), 4);
  flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t*>(b.data()), fb_len + 4);
  ASSERT_TRUE(kst::VerifySizePrefixedModelBuffer(verifier)) << "the FlatBuffers verifier itself accepts this";
  EXPECT_REFUSED_WITH(b, "misaligned");
}

TEST(KstCorrupt, DeeplyNestedSubgraphsAreRefused) {
  auto g = std::make_unique<ir::Graph>("main");
  ir::Graph* cur = g.get();
  for (int d = 0; d <= format::kKstMaxSubgraphDepth + 1; ++d) {
    ir::Node* n = cur->add_node("If", {}, {"o" + std::to_string(d)});
    auto sub = std::make_shared<ir::Graph>("g" + std::to_string(d), cur);
    n->set_attr("then_branch", ir::Attribute::GraphPtr(sub));
    cur = sub.get();
  }
  auto r = format::write_kst(*g);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("nested"), std::string::npos) << r.status().message();
}

// Nesting the writer would refuse, crafted directly: just past the subgraph limit the loader's
// own check refuses it; far past it the FlatBuffers verifier's depth limit does.
std::string nested_graphs(int depth) {
  flatbuffers::FlatBufferBuilder fbb;
  flatbuffers::Offset<kst::Graph> inner = kst::GraphBuilder(fbb).Finish();
  for (int d = 0; d < depth; ++d) {
    auto name = fbb.CreateString("then_branch");
    kst::AttributeBuilder ab(fbb);
    ab.add_name(name);
    ab.add_kind(kst::AttrKind::Graph);
    ab.add_g(inner);
    auto attr = ab.Finish();
    auto attrs = fbb.CreateVector(&attr, 1);
    auto op = fbb.CreateString("If");
    kst::NodeBuilder nb(fbb);
    nb.add_op_type(op);
    nb.add_attributes(attrs);
    auto node = nb.Finish();
    auto nodes = fbb.CreateVector(&node, 1);
    kst::GraphBuilder gb(fbb);
    gb.add_nodes(nodes);
    inner = gb.Finish();
  }
  kst::ModelBuilder mb(fbb);
  mb.add_format_version(format::kKstFormatVersion);
  mb.add_graph(inner);
  fbb.FinishSizePrefixed(mb.Finish(), format::kKstFileIdentifier);
  std::string b(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
  b.resize(core::align_up(b.size(), 64), '\0');
  return b;
}

TEST(KstCorrupt, CraftedDeepNestingIsRefused) {
  EXPECT_TRUE(try_load(nested_graphs(format::kKstMaxSubgraphDepth)));
  EXPECT_REFUSED_WITH(nested_graphs(format::kKstMaxSubgraphDepth + 1), "nested more than 32 deep");
  EXPECT_REFUSED_WITH(nested_graphs(200), "does not verify");
  EXPECT_REFUSED_WITH(nested_graphs(5000), "does not verify");
}

// A crafted FlatBuffer pointing thousands of nodes at one large string: valid to the FlatBuffers
// verifier, but materializing it would take gigabytes. The loader refuses it.
TEST(KstCorrupt, SharedDataAmplificationIsRefused) {
  flatbuffers::FlatBufferBuilder fbb;
  auto big = fbb.CreateString(std::string(64 * 1024, 'A'));
  std::vector<flatbuffers::Offset<kst::Node>> nodes;
  for (int i = 0; i < 20000; ++i) {
    kst::NodeBuilder nb(fbb);
    nb.add_op_type(big);
    nodes.push_back(nb.Finish());
  }
  auto nodes_off = fbb.CreateVector(nodes);
  kst::GraphBuilder gb(fbb);
  gb.add_nodes(nodes_off);
  auto graph = gb.Finish();
  kst::ModelBuilder mb(fbb);
  mb.add_format_version(format::kKstFormatVersion);
  mb.add_graph(graph);
  fbb.FinishSizePrefixed(mb.Finish(), format::kKstFileIdentifier);
  std::string b(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
  b.resize(core::align_up(b.size(), 64), '\0');
  EXPECT_REFUSED_WITH(b, "same data over and over");
}

}  // namespace
}  // namespace kestrel

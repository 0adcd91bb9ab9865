// Session: load, verify, infer, create kernels; validate inputs and run.
#include "runtime/session.h"

#include <fstream>
#include <sstream>

#include "core/str_util.h"
#include "core/thread_scratch.h"
#include "ir/op_schema.h"
#include "ir/verifier.h"
#include "runtime/lower_weight_int8.h"

namespace kestrel::runtime {

using core::str_cat;

Session::~Session() = default;

Status prepare_graph(ir::Graph& g) {
  KESTREL_RETURN_IF_ERROR(ir::verify_graph(g));
  ir::NodeEvaluator ev = [](const ir::Node& n, std::span<const Tensor* const> ins) { return evaluate_node(n, ins); };
  return ir::infer_graph(g, &ev);
}

Result<std::unique_ptr<Session>> Session::open(const std::string& path, const SessionOptions& opts) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return core::io_error(str_cat("cannot open model file '", path, "'"));
  // Detection needs only the first bytes; a loader that maps the file (.kst) then reads nothing
  // more through the stream, so its weights are never copied.
  std::string head(kDetectPrefixBytes, '\0');
  f.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(f.gcount()));
  const ModelLoader* loader = find_model_loader(head, path);
  if (!loader)
    return core::invalid_model(str_cat(path, ": not a model file this build can read (formats: ",
                                       model_loader_names(), ")"));
  LoadOptions lo;
  lo.opt_level = opts.opt_level;
  lo.source_path = path;
  if (loader->load_file) {
    KESTREL_ASSIGN_OR_RETURN(LoadedModel m, loader->load_file(path, lo));
    return from_model(std::move(m), opts);
  }
  f.clear();
  f.seekg(0);
  std::ostringstream ss;
  ss << f.rdbuf();
  if (!f) return core::io_error(str_cat("cannot read model file '", path, "'"));
  auto bytes = std::make_shared<const std::string>(ss.str());
  KESTREL_ASSIGN_OR_RETURN(LoadedModel m, loader->load(bytes, lo));
  return from_model(std::move(m), opts);
}

Result<std::unique_ptr<Session>> Session::open_memory(const void* data, size_t size, const SessionOptions& opts) {
  auto bytes = std::make_shared<const std::string>(static_cast<const char*>(data), size);
  const ModelLoader* loader = find_model_loader(*bytes, "");
  if (!loader)
    return core::invalid_model(str_cat("model bytes are not a format this build can read (formats: ",
                                       model_loader_names(), ")"));
  LoadOptions lo;
  lo.opt_level = opts.opt_level;
  KESTREL_ASSIGN_OR_RETURN(LoadedModel m, loader->load(bytes, lo));
  return from_model(std::move(m), opts);
}

Result<std::unique_ptr<Session>> Session::from_model(LoadedModel model, const SessionOptions& opts) {
  std::unique_ptr<Session> s(new Session());
  s->opts_ = opts;
  s->model_ = std::move(model);
  KESTREL_RETURN_IF_ERROR(s->init());
  return s;
}

Status Session::init() {
  if (!model_.graph) return core::invalid_argument("no graph");
  Status st = init_graph();
  if (st.is_ok()) return st;
  // Name the model and its opset: errors from deep inside say only the node.
  const auto& md = model_.graph->metadata();
  std::string where = md.count("source_path") ? md.at("source_path") : std::string("model");
  if (md.count("onnx_opset")) where += " (ONNX opset " + md.at("onnx_opset") + ")";
  return st.with_context(where);
}

Status Session::init_graph() {
  if (opts_.num_threads < 1 || opts_.num_threads > 256)
    return core::invalid_argument(str_cat("num_threads must be in [1, 256], got ", opts_.num_threads));
  KESTREL_RETURN_IF_ERROR(prepare_graph(*model_.graph));
  // Weight-only int8 MatMul / Gemm read their int8 weights directly (no f32 copy is folded); the
  // other dequantized constant weights become float constants, for the fast kernels to pack.
  KESTREL_RETURN_IF_ERROR(lower_weight_int8(*model_.graph).status());
  KESTREL_RETURN_IF_ERROR(fold_weight_dequantize(*model_.graph).status());
  for (const ir::Value* v : model_.graph->inputs()) inputs_.push_back({v->name(), v->type()});
  for (const ir::Value* v : model_.graph->outputs()) outputs_.push_back({v->name(), v->type()});
  pool_ = std::make_unique<core::ThreadPool>(opts_.num_threads);
  ExecutorOptions eo;
  eo.pool = pool_.get();
  eo.kernel.reference_only = opts_.reference_only;
  eo.kernel.threads = opts_.num_threads;
  eo.kernel.isa = core::active_isa();
  if (!opts_.isa.empty()) {
    core::Isa want;
    if (!core::parse_isa(opts_.isa, &want))
      return core::invalid_argument(str_cat("unknown isa '", opts_.isa, "' (scalar, avx2, avx512)"));
    if (want < eo.kernel.isa) eo.kernel.isa = want;
  }
  isa_ = eo.kernel.isa;
  const auto& md = model_.graph->metadata();
  const auto model_math = md.find(kFloatMathKey);
  const std::string& math = !opts_.float_math.empty() ? opts_.float_math
                            : model_math != md.end()  ? model_math->second
                                                      : "f32";
  if (math != "f32" && math != "bf16")
    return core::invalid_argument(str_cat("unknown float math '", math, "' (f32, bf16)",
                                          opts_.float_math.empty() ? str_cat(" in the model's ", kFloatMathKey) : ""));
  eo.kernel.bf16 = math == "bf16" && !opts_.reference_only;
  KESTREL_ASSIGN_OR_RETURN(executor_, Executor::create(*model_.graph, eo));
  return Status::ok();
}

Status Session::check_input(size_t i, const Tensor& t) const {
  const IoInfo& io = inputs_[i];
  if (!t.defined()) return core::invalid_argument(str_cat("input '", io.name, "' is empty"));
  for (int64_t d : t.dims())
    if (d < 0) return core::invalid_argument(str_cat("input '", io.name, "' has a negative dimension"));
  if (!core::checked_num_elements(t.dims()).is_ok())
    return core::invalid_argument(str_cat("input '", io.name, "' is too large"));
  if (io.type.dtype != core::DType::kUndefined && t.dtype() != io.type.dtype)
    return core::invalid_argument(str_cat("input '", io.name, "' must be ", core::dtype_name(io.type.dtype),
                                          io.type.shape.to_string(), ", got ", t.type_string()));
  const ir::Shape& s = io.type.shape;
  if (s.rank_known()) {
    bool ok = s.rank() == t.rank();
    for (int64_t d = 0; ok && d < s.rank(); ++d)
      if (s[d].known() && s[d].value != t.dims()[static_cast<size_t>(d)]) ok = false;
    if (!ok)
      return core::invalid_argument(str_cat("input '", io.name, "' must have shape ", s.to_string(), ", got ",
                                            core::dims_to_string(t.dims())));
  }
  return Status::ok();
}

Status Session::check_inputs(std::span<const Tensor* const> inputs) const {
  if (inputs.size() != inputs_.size())
    return core::invalid_argument(str_cat("model takes ", inputs_.size(), " inputs, got ", inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) return core::invalid_argument(str_cat("input '", inputs_[i].name, "' is missing"));
    KESTREL_RETURN_IF_ERROR(check_input(i, *inputs[i]));
  }
  return Status::ok();
}

Status Session::run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs) {
  KESTREL_RETURN_IF_ERROR(check_inputs(inputs));
  KESTREL_RETURN_IF_ERROR(executor_->run(inputs, outputs));
  sync_thread_scratch();
  return Status::ok();
}

// Which pool thread takes which task differs from run to run; after a run that grew some kernel's
// per-thread scratch, every pool thread grows its buffers to the largest size asked for, so later
// runs with the same shapes allocate nothing wherever their tasks land (core/thread_scratch.h).
void Session::sync_thread_scratch() {
  const uint64_t epoch = core::ScratchSlot::epoch();
  if (epoch == scratch_epoch_ || !pool_) return;
  scratch_epoch_ = epoch;
  if (pool_->num_threads() > 1) pool_->run_on_each_thread([] { core::ScratchSlot::reserve_high_water(); });
}

Status Session::prepare(std::span<const Tensor* const> inputs) {
  KESTREL_RETURN_IF_ERROR(check_inputs(inputs));
  return executor_->prepare(inputs);
}

Status Session::run(const std::vector<std::pair<std::string, Tensor>>& inputs, std::vector<Tensor>& outputs) {
  std::vector<const Tensor*> ordered(inputs_.size(), nullptr);
  for (const auto& [name, t] : inputs) {
    size_t i = 0;
    while (i < inputs_.size() && inputs_[i].name != name) ++i;
    if (i == inputs_.size()) {
      std::vector<std::string> names;
      for (const auto& io : inputs_) names.push_back("'" + io.name + "'");
      return core::invalid_argument(str_cat("model has no input named '", name, "' (inputs: ", core::join(names, ", "), ")"));
    }
    if (ordered[i]) return core::invalid_argument(str_cat("input '", name, "' given twice"));
    ordered[i] = &t;
  }
  for (size_t i = 0; i < ordered.size(); ++i)
    if (!ordered[i]) return core::invalid_argument(str_cat("input '", inputs_[i].name, "' is missing"));
  return run(std::span<const Tensor* const>(ordered), outputs);
}

}  // namespace kestrel::runtime

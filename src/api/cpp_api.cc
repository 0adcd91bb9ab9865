// Public C++ API over runtime::Session.
#include <cstring>

#include "api/convert.h"
#include "core/str_util.h"
#include "kestrel/kestrel.hpp"
#include "runtime/session.h"

namespace kestrel {

static_assert(static_cast<int>(DType::kString) == static_cast<int>(core::DType::kString));

const char* dtype_name(DType t) { return core::dtype_name(api::to_core(t)); }
size_t dtype_size(DType t) { return core::dtype_size(api::to_core(t)); }
const char* version() { return "0.1.0"; }

namespace api {

void throw_if_error(const core::Status& s) {
  if (!s.is_ok()) throw Error(static_cast<ErrorCode>(s.code()), s.message());
}

TensorInfo to_public(const std::string& name, const ir::ValueType& type) {
  TensorInfo info;
  info.name = name;
  info.dtype = to_public(type.dtype);
  info.rank_known = type.shape.rank_known();
  if (info.rank_known) {
    for (int64_t i = 0; i < type.shape.rank(); ++i) {
      info.shape.push_back(type.shape[i].known() ? type.shape[i].value : -1);
      info.dim_names.push_back(type.shape[i].symbol);
    }
  }
  return info;
}

}  // namespace api

// ---------------------------------------------------------------- Tensor

size_t Tensor::num_elements_of(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d < 0 ? 0 : d);
  return n;
}

Tensor Tensor::empty(DType dtype, std::vector<int64_t> shape) {
  auto t = core::Tensor::allocate(api::to_core(dtype), shape);
  api::throw_if_error(t.status());
  return api::to_public(*t);
}

Tensor Tensor::from_data(DType dtype, std::vector<int64_t> shape, const void* data) {
  if (dtype == DType::kString) throw Error(ErrorCode::kInvalidArgument, "from_data: use empty() for string tensors");
  Tensor t = empty(dtype, std::move(shape));
  if (t.nbytes()) std::memcpy(t.data(), data, t.nbytes());
  return t;
}

Tensor Tensor::view(DType dtype, std::vector<int64_t> shape, void* data) {
  // Caller-given dtype and dims go unchecked into the engine from here: refuse nonsense now.
  if (core::dtype_size(api::to_core(dtype)) == 0) throw Error(ErrorCode::kInvalidArgument, "view: invalid dtype");
  api::throw_if_error(core::checked_num_elements(shape).status());
  return Tensor(dtype, std::move(shape), data, nullptr);
}

Tensor Tensor::clone() const {
  auto t = api::to_core(*this).clone();
  api::throw_if_error(t.status());
  return api::to_public(*t);
}

std::string Tensor::type_string() const { return api::to_core(*this).type_string(); }

std::string TensorInfo::shape_string() const {
  if (!rank_known) return "[*]";
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    if (shape[i] >= 0) s += std::to_string(shape[i]);
    else s += (i < dim_names.size() && !dim_names[i].empty()) ? dim_names[i] : "?";
  }
  return s + "]";
}

// ---------------------------------------------------------------- Session

struct Session::Impl {
  std::unique_ptr<runtime::Session> session;
  std::vector<TensorInfo> inputs, outputs;
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

static runtime::SessionOptions to_runtime(const SessionOptions& o) {
  runtime::SessionOptions r;
  r.num_threads = o.num_threads;
  r.opt_level = o.optimization_level;
  r.reference_only = o.reference_kernels;
  r.isa = o.isa;
  r.float_math = o.float_math;
  return r;
}

static std::unique_ptr<Session::Impl> make_impl(core::Result<std::unique_ptr<runtime::Session>> r) {
  api::throw_if_error(r.status());
  auto impl = std::make_unique<Session::Impl>();
  impl->session = std::move(r).value();
  for (const auto& io : impl->session->inputs()) impl->inputs.push_back(api::to_public(io.name, io.type));
  for (const auto& io : impl->session->outputs()) impl->outputs.push_back(api::to_public(io.name, io.type));
  return impl;
}

Session Session::open(const std::string& path, const SessionOptions& options) {
  return Session(make_impl(runtime::Session::open(path, to_runtime(options))));
}

Session Session::from_memory(const void* data, size_t size, const SessionOptions& options) {
  return Session(make_impl(runtime::Session::open_memory(data, size, to_runtime(options))));
}

const std::vector<TensorInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Session::outputs() const { return impl_->outputs; }

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs) {
  std::vector<std::pair<std::string, core::Tensor>> ins;
  for (const auto& [name, t] : inputs) ins.emplace_back(name, api::to_core(t));
  std::vector<core::Tensor> outs;
  api::throw_if_error(impl_->session->run(ins, outs));
  std::map<std::string, Tensor> result;
  for (size_t i = 0; i < outs.size(); ++i) result[impl_->outputs[i].name] = api::to_public(outs[i]);
  return result;
}

void Session::run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  std::vector<core::Tensor> ins;
  ins.reserve(inputs.size());
  for (const auto& t : inputs) ins.push_back(api::to_core(t));
  std::vector<const core::Tensor*> ptrs;
  for (const auto& t : ins) ptrs.push_back(&t);
  std::vector<core::Tensor> outs;
  for (const auto& t : outputs) outs.push_back(api::to_core(t));
  api::throw_if_error(impl_->session->run(std::span<const core::Tensor* const>(ptrs), outs));
  outputs.resize(outs.size());
  for (size_t i = 0; i < outs.size(); ++i) outputs[i] = api::to_public(outs[i]);
}

RunStats Session::stats() const {
  const auto& p = impl_->session->plan_stats();
  return RunStats{p.arena_bytes, p.sum_activation_bytes};
}

}  // namespace kestrel

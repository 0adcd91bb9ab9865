// Node-test runner core: discovery, loading, input binding and output comparison.
#include "tools/onnx_test/conformance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "core/str_util.h"
#include "frontend/onnx/onnx_tensor.h"
#include "runtime/session.h"

namespace kestrel::conformance {

namespace fs = std::filesystem;
using core::DType;
using core::str_cat;
using core::Tensor;

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kPass: return "PASS";
    case Outcome::kFail: return "FAIL";
    case Outcome::kUnsupported: return "UNSUPPORTED";
  }
  return "?";
}

// Looser tolerances, only where a test's expected values carry error we cannot (and need not)
// reproduce bit for bit. Each entry says which tests need it and why; keep the table small.
const std::vector<ToleranceOverride>& tolerance_overrides() {
  static const std::vector<ToleranceOverride> table = {};
  return table;
}

Tolerance tolerance_for(const std::vector<std::string>& op_types) {
  Tolerance t;
  for (const auto& o : tolerance_overrides()) {
    if (std::find(op_types.begin(), op_types.end(), o.op_type) == op_types.end()) continue;
    t.rtol = std::max(t.rtol, o.tol.rtol);
    t.atol = std::max(t.atol, o.tol.atol);
  }
  return t;
}

std::string test_name(const std::string& dir) {
  fs::path p(dir);
  std::string name = p.filename().string();
  return name.empty() ? p.parent_path().filename().string() : name;
}

std::vector<std::string> find_tests(const std::vector<std::string>& dirs, std::vector<std::string>* errors) {
  std::vector<std::string> out;
  for (const auto& d : dirs) {
    std::error_code ec;
    if (fs::is_regular_file(fs::path(d) / "model.onnx", ec)) {
      out.push_back(d);
      continue;
    }
    if (!fs::is_directory(d, ec)) {
      errors->push_back(str_cat(d, ": not a directory"));
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(d, ec))
      if (e.is_directory(ec) && fs::is_regular_file(e.path() / "model.onnx", ec)) found.push_back(e.path().string());
    if (ec) errors->push_back(str_cat(d, ": ", ec.message()));
    if (found.empty() && !ec) errors->push_back(str_cat(d, ": holds no model.onnx and no test folders"));
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

namespace {

std::string multi_index(int64_t flat, const core::Dims& dims) {
  if (dims.empty()) return "[]";
  core::Dims idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    int64_t n = std::max<int64_t>(dims[d], 1);
    idx[d] = flat % n;
    flat /= n;
  }
  return "[" + core::join(idx) + "]";
}

std::string element_string(const Tensor& t, int64_t i) {
  std::string s;
  core::visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, std::string>) {
      s = "\"" + t.data<std::string>()[i] + "\"";
    } else if constexpr (std::is_same_v<T, bool>) {
      s = t.data<bool>()[i] ? "true" : "false";
    } else if constexpr (std::is_same_v<T, uint64_t>) {
      s = std::to_string(t.data<uint64_t>()[i]);
    } else if constexpr (std::is_integral_v<T>) {
      s = std::to_string(static_cast<int64_t>(t.data<T>()[i]));
    } else {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.9g", t.element_as_double(i));
      s = buf;
    }
  });
  return s;
}

bool element_bytes_equal(const Tensor& a, const Tensor& b, int64_t i) {
  if (a.dtype() == DType::kString) return a.data<std::string>()[i] == b.data<std::string>()[i];
  if (a.dtype() == DType::kBool) return a.data<bool>()[i] == b.data<bool>()[i];
  size_t es = core::dtype_size(a.dtype());
  return std::memcmp(static_cast<const char*>(a.raw_data()) + static_cast<size_t>(i) * es,
                     static_cast<const char*>(b.raw_data()) + static_cast<size_t>(i) * es, es) == 0;
}

}  // namespace

std::string compare_tensors(const Tensor& actual, const Tensor& expected, const Tolerance& tol) {
  if (!actual.defined()) return "output was not produced";
  if (actual.dtype() != expected.dtype())
    return str_cat("dtype ", core::dtype_name(actual.dtype()), ", expected ", core::dtype_name(expected.dtype()));
  if (actual.dims() != expected.dims())
    return str_cat("shape ", core::dims_to_string(actual.dims()), ", expected ", core::dims_to_string(expected.dims()));
  const int64_t n = expected.num_elements();
  const bool fuzzy = core::is_float(expected.dtype());
  int64_t first = -1, count = 0;
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool ok;
    if (fuzzy) {
      double a = actual.element_as_double(i), e = expected.element_as_double(i);
      if (std::isnan(a) || std::isnan(e)) {
        ok = std::isnan(a) && std::isnan(e);
      } else if (std::isinf(a) || std::isinf(e)) {
        ok = a == e;  // the relative bound would accept anything against an infinity
      } else {
        double diff = std::fabs(a - e);
        ok = diff <= tol.atol + tol.rtol * std::fabs(e);
        if (!ok) worst = std::max(worst, diff);
      }
    } else {
      ok = element_bytes_equal(actual, expected, i);
    }
    if (!ok) {
      if (first < 0) first = i;
      ++count;
    }
  }
  if (first < 0) return "";
  std::string r = str_cat(count, " of ", n, " values differ; first at ", multi_index(first, expected.dims()),
                          ": got ", element_string(actual, first), ", expected ", element_string(expected, first));
  if (fuzzy) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " (max abs diff %.3g; rtol %g, atol %g)", worst, tol.rtol, tol.atol);
    r += buf;
  }
  return r;
}

namespace {

core::Result<std::string> read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return core::io_error(str_cat("cannot open ", p.string()));
  std::ostringstream ss;
  ss << f.rdbuf();
  if (!f && !f.eof()) return core::io_error(str_cat("error reading ", p.string()));
  return ss.str();
}

core::Result<Tensor> read_tensor_pb(const fs::path& p) {
  KESTREL_ASSIGN_OR_RETURN(std::string bytes, read_file(p));
  onnx::TensorProto tp;
  if (!tp.ParseFromString(bytes))
    return core::invalid_argument(str_cat(p.filename().string(), ": not a TensorProto"));
  auto t = frontend::tensor_from_onnx(tp, p.parent_path().string());
  if (!t.is_ok()) return t.status().with_context(p.filename().string());
  return t;
}

// input_0.pb, input_1.pb, ... (stops at the first missing index).
core::Result<std::vector<Tensor>> read_numbered(const fs::path& dir, const char* prefix) {
  std::vector<Tensor> out;
  for (int i = 0;; ++i) {
    fs::path p = dir / str_cat(prefix, "_", i, ".pb");
    std::error_code ec;
    if (!fs::exists(p, ec)) break;
    KESTREL_ASSIGN_OR_RETURN(Tensor t, read_tensor_pb(p));
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<std::string> model_op_types(const std::string& bytes) {
  onnx::ModelProto m;
  std::set<std::string> ops;
  if (m.ParseFromString(bytes))
    for (const auto& n : m.graph().node()) ops.insert(n.domain().empty() ? n.op_type() : n.domain() + "." + n.op_type());
  return {ops.begin(), ops.end()};
}

// onnx 1.12's generator stores bfloat16 tensors as their uint16 bit patterns (numpy has no
// bfloat16): read such a tensor as bf16 when the other side of the comparison is bf16.
Tensor as_bfloat16_if(const Tensor& t, DType want) {
  if (want != DType::kBF16 || t.dtype() != DType::kU16) return t;
  return Tensor::wrap(DType::kBF16, t.dims(), const_cast<void*>(t.raw_data()), t.owner());
}

// Outcome and reason of one data set, or empty reason on pass.
std::string run_data_set(runtime::Session& s, const fs::path& set_dir, const Tolerance& tol) {
  auto ins = read_numbered(set_dir, "input");
  if (!ins.is_ok()) return ins.status().to_string();
  auto want = read_numbered(set_dir, "output");
  if (!want.is_ok()) return want.status().to_string();
  if (ins->size() != s.inputs().size())
    return str_cat("data set has ", ins->size(), " inputs, the model takes ", s.inputs().size());
  if (want->size() != s.outputs().size())
    return str_cat("data set has ", want->size(), " outputs, the model produces ", s.outputs().size());
  for (size_t i = 0; i < ins->size(); ++i) (*ins)[i] = as_bfloat16_if((*ins)[i], s.inputs()[i].type.dtype);
  std::vector<const Tensor*> in_ptrs;
  for (const auto& t : *ins) in_ptrs.push_back(&t);
  std::vector<Tensor> got;
  runtime::Status st = s.run(in_ptrs, got);
  if (!st.is_ok()) return "run failed: " + st.to_string();
  if (got.size() != want->size()) return str_cat("run returned ", got.size(), " outputs, expected ", want->size());
  for (size_t i = 0; i < got.size(); ++i) {
    std::string why = compare_tensors(got[i], as_bfloat16_if((*want)[i], got[i].dtype()), tol);
    if (!why.empty()) return str_cat("output ", i, " '", s.outputs()[i].name, "': ", why);
  }
  return "";
}

TestResult run_test_unguarded(const std::string& dir) {
  TestResult r;
  fs::path root(dir);
  r.name = test_name(dir);
  auto bytes = read_file(root / "model.onnx");
  if (!bytes.is_ok()) {
    r.reason = bytes.status().to_string();
    return r;
  }
  r.op_types = model_op_types(*bytes);
  auto session = runtime::Session::open((root / "model.onnx").string());
  if (!session.is_ok()) {
    r.outcome = session.status().code() == core::StatusCode::kUnsupported ? Outcome::kUnsupported : Outcome::kFail;
    r.reason = "load failed: " + session.status().to_string();
    return r;
  }
  std::vector<fs::path> sets;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.is_directory(ec) && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) {
    r.reason = "no test_data_set_* folder";
    return r;
  }
  const Tolerance tol = tolerance_for(r.op_types);
  for (const auto& set : sets) {
    std::string why = run_data_set(**session, set, tol);
    if (!why.empty()) {
      r.reason = sets.size() > 1 ? str_cat(set.filename().string(), ": ", why) : why;
      return r;
    }
  }
  r.outcome = Outcome::kPass;
  return r;
}

}  // namespace

TestResult run_test(const std::string& dir) {
  try {
    return run_test_unguarded(dir);
  } catch (const std::exception& e) {
    TestResult r;
    r.name = test_name(dir);
    r.reason = str_cat("exception: ", e.what());
    return r;
  } catch (...) {
    TestResult r;
    r.name = test_name(dir);
    r.reason = "unknown exception";
    return r;
  }
}

}  // namespace kestrel::conformance

// Reference elementwise kernels.
#include "kernels/reference/elementwise.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "core/str_util.h"
#include "kernels/reference/broadcast.h"

namespace kestrel::kernels::ref {

using core::DType;
using core::str_cat;

namespace {

template <class T>
constexpr bool is_half_v = std::is_same_v<T, core::Float16> || std::is_same_v<T, core::BFloat16>;

// Math type for T: float for f32/f16/bf16, double for f64, T itself for integers.
template <class T>
using MathT = std::conditional_t<is_half_v<T>, float, T>;

template <class T>
MathT<T> load(T v) {
  if constexpr (is_half_v<T>) return static_cast<float>(v);
  else return v;
}
template <class T, class M>
T store(M v) {
  if constexpr (is_half_v<T>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}

template <class F>
F unary_float(const UnaryParams& p, F x) {
  const F a = static_cast<F>(p.alpha), b = static_cast<F>(p.beta), g = static_cast<F>(p.gamma);
  switch (p.op) {
    case UnaryOp::kAbs: return std::fabs(x);
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kSqrt: return std::sqrt(x);
    case UnaryOp::kExp: return std::exp(x);
    case UnaryOp::kLog: return std::log(x);
    case UnaryOp::kErf: return std::erf(x);
    case UnaryOp::kTanh: return std::tanh(x);
    case UnaryOp::kSigmoid: return x >= 0 ? F(1) / (F(1) + std::exp(-x)) : std::exp(x) / (F(1) + std::exp(x));
    case UnaryOp::kRelu:
      return x > 0 || std::isnan(x) ? x : F(0);  // NaN in, NaN out (as max(0, x) in numpy)
    case UnaryOp::kFloor: return std::floor(x);
    case UnaryOp::kCeil: return std::ceil(x);
    case UnaryOp::kReciprocal: return F(1) / x;
    case UnaryOp::kSin: return std::sin(x);
    case UnaryOp::kCos: return std::cos(x);
    case UnaryOp::kTan: return std::tan(x);
    case UnaryOp::kAsin: return std::asin(x);
    case UnaryOp::kAcos: return std::acos(x);
    case UnaryOp::kAtan: return std::atan(x);
    case UnaryOp::kSinh: return std::sinh(x);
    case UnaryOp::kCosh: return std::cosh(x);
    case UnaryOp::kAsinh: return std::asinh(x);
    case UnaryOp::kAcosh: return std::acosh(x);
    case UnaryOp::kAtanh: return std::atanh(x);
    case UnaryOp::kSign: return x > 0 ? F(1) : (x < 0 ? F(-1) : F(0));
    case UnaryOp::kRound: return std::nearbyint(x);  // round half to even (default FP mode)
    case UnaryOp::kSoftplus: return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    case UnaryOp::kSoftsign: return x / (F(1) + std::fabs(x));
    case UnaryOp::kIdentity: return x;
    case UnaryOp::kLeakyRelu: return x >= 0 ? x : a * x;
    case UnaryOp::kElu: return x >= 0 ? x : a * (std::exp(x) - F(1));
    case UnaryOp::kSelu: return g * (x > 0 ? x : a * (std::exp(x) - F(1)));
    case UnaryOp::kCelu: return std::max(F(0), x) + std::min(F(0), a * (std::exp(x / a) - F(1)));
    case UnaryOp::kHardSigmoid:
      return std::min(std::max(a * x + b, F(0)), F(1));  // keeps NaN
    case UnaryOp::kHardSwish: return x * std::max(F(0), std::min(F(1), x / F(6) + F(0.5)));
    case UnaryOp::kThresholdedRelu: return x > a ? x : F(0);
    case UnaryOp::kMish: {
      F sp = x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
      return x * std::tanh(sp);
    }
    case UnaryOp::kGeluErf: return F(0.5) * x * (F(1) + std::erf(x / std::sqrt(F(2))));
    case UnaryOp::kGeluTanh: {
      const F k = std::sqrt(F(2) / F(3.14159265358979323846));
      return F(0.5) * x * (F(1) + std::tanh(k * (x + F(0.044715) * x * x * x)));
    }
    case UnaryOp::kSilu: return x * (x >= 0 ? F(1) / (F(1) + std::exp(-x)) : std::exp(x) / (F(1) + std::exp(x)));
    default: return x;
  }
}

bool is_predicate(UnaryOp op) {
  return op == UnaryOp::kIsNaN || op == UnaryOp::kIsInf || op == UnaryOp::kIsInfPos || op == UnaryOp::kIsInfNeg;
}

}  // namespace

float unary_scalar(const UnaryParams& p, float x) { return unary_float<float>(p, x); }
double unary_scalar(const UnaryParams& p, double x) { return unary_float<double>(p, x); }

Status unary(const UnaryParams& p, const Tensor& x, Tensor& y) {
  if (x.num_elements() != y.num_elements()) return core::invalid_argument("unary: size mismatch");
  const int64_t n = x.num_elements();
  if (is_predicate(p.op)) {
    if (y.dtype() != DType::kBool) return core::invalid_argument("IsNaN/IsInf output must be bool");
    bool ok = core::visit_numeric_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* in = x.data<T>();
      auto* out = y.data<bool>();
      for (int64_t i = 0; i < n; ++i) {
        double v = static_cast<double>(load(in[i]));
        bool r = false;
        if (p.op == UnaryOp::kIsNaN) r = std::isnan(v);
        else if (p.op == UnaryOp::kIsInf) r = std::isinf(v);
        else if (p.op == UnaryOp::kIsInfPos) r = std::isinf(v) && v > 0;
        else r = std::isinf(v) && v < 0;
        out[i] = r;
      }
    });
    return ok ? Status::ok() : core::invalid_argument("IsNaN/IsInf: bad dtype");
  }
  if (p.op == UnaryOp::kIdentity) return core::copy_tensor_data(x, y);  // any dtype, strings too
  if (p.op == UnaryOp::kNot) {
    if (x.dtype() != DType::kBool) return core::invalid_argument("Not takes bool");
    for (int64_t i = 0; i < n; ++i) y.data<bool>()[i] = !x.data<bool>()[i];
    return Status::ok();
  }
  if (x.dtype() != y.dtype()) return core::invalid_argument("unary: dtype mismatch");
  Status st = Status::ok();
  bool ok = core::visit_numeric_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* out = y.data<T>();
    if constexpr (std::is_same_v<T, bool>) {
      st = core::invalid_argument(str_cat("unary op does not take bool"));
    } else if constexpr (std::is_integral_v<T>) {
      for (int64_t i = 0; i < n; ++i) {
        T v = in[i];
        switch (p.op) {
          case UnaryOp::kAbs:
            if constexpr (std::is_signed_v<T>) out[i] = v < 0 ? static_cast<T>(0 - v) : v;
            else out[i] = v;
            break;
          case UnaryOp::kNeg: out[i] = static_cast<T>(0 - v); break;
          case UnaryOp::kSign: out[i] = static_cast<T>(v > 0 ? 1 : (v < 0 ? -1 : 0)); break;
          case UnaryOp::kRelu: out[i] = v > 0 ? v : T(0); break;
          case UnaryOp::kIdentity: out[i] = v; break;
          case UnaryOp::kBitwiseNot: out[i] = static_cast<T>(~v); break;
          default:
            st = core::invalid_argument("this unary op takes float tensors only");
            return;
        }
      }
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = store<T>(unary_float<MathT<T>>(p, load(in[i])));
    }
  });
  if (!ok) return core::invalid_argument(str_cat("unary: unsupported dtype ", core::dtype_name(x.dtype())));
  return st;
}

namespace {

bool is_comparison(BinaryOp op) {
  return op == BinaryOp::kEqual || op == BinaryOp::kLess || op == BinaryOp::kLessOrEqual ||
         op == BinaryOp::kGreater || op == BinaryOp::kGreaterOrEqual;
}

template <class M>
M int_div(M a, M b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<M>)
    if (b == -1) return static_cast<M>(0 - a);  // avoids INT_MIN / -1 trapping
  return a / b;
}

template <class M>
M int_mod(M a, M b, bool fmod) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<M>) {
    if (b == -1) return 0;
    M r = a % b;
    if (!fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  } else {
    return a % b;
  }
}

template <class M>
M int_pow(M base, double e) {
  if (e < 0) {
    if constexpr (std::is_signed_v<M>) {
      if (base == 1) return 1;
      if (base == -1) return (static_cast<int64_t>(e) % 2) ? M(-1) : M(1);
    } else {
      if (base == 1) return 1;
    }
    return 0;
  }
  // Wrapping multiplication in the unsigned type: defined behaviour for any input.
  using U = std::make_unsigned_t<M>;
  U r = 1, b = static_cast<U>(base);
  uint64_t k = e > 1e18 ? uint64_t{1} << 62 : static_cast<uint64_t>(e);
  while (k) {
    if (k & 1) r = static_cast<U>(r * b);
    b = static_cast<U>(b * b);
    k >>= 1;
  }
  return static_cast<M>(r);
}

template <class T>
Status binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& y, bool fmod_mode) {
  using M = MathT<T>;
  core::Dims sa = broadcast_strides(a.dims(), y.dims());
  core::Dims sb = broadcast_strides(b.dims(), y.dims());
  const T* pa = a.data<T>();
  if (is_comparison(op)) {
    const T* pb = b.data<T>();
    bool* out = y.data<bool>();
    for_each_broadcast<2>(y.dims(), {sa, sb}, [&](int64_t i, const std::array<int64_t, 2>& o) {
      M x = load(pa[o[0]]), z = load(pb[o[1]]);
      bool r = false;
      switch (op) {
        case BinaryOp::kEqual: r = x == z; break;
        case BinaryOp::kLess: r = x < z; break;
        case BinaryOp::kLessOrEqual: r = x <= z; break;
        case BinaryOp::kGreater: r = x > z; break;
        default: r = x >= z; break;
      }
      out[i] = r;
    });
    return Status::ok();
  }
  T* out = y.data<T>();
  if (op == BinaryOp::kPow) {
    // The exponent may have another dtype than the base.
    for_each_broadcast<2>(y.dims(), {sa, sb}, [&](int64_t i, const std::array<int64_t, 2>& o) {
      double e = b.element_as_double(o[1]);
      if constexpr (std::is_integral_v<M>) out[i] = int_pow<M>(load(pa[o[0]]), e);
      else out[i] = store<T>(static_cast<M>(std::pow(static_cast<double>(load(pa[o[0]])), e)));
    });
    return Status::ok();
  }
  const T* pb = b.data<T>();
  Status st = Status::ok();
  for_each_broadcast<2>(y.dims(), {sa, sb}, [&](int64_t i, const std::array<int64_t, 2>& o) {
    M x = load(pa[o[0]]), z = load(pb[o[1]]);
    M r{};
    switch (op) {
      case BinaryOp::kAdd: r = static_cast<M>(x + z); break;
      case BinaryOp::kSub: r = static_cast<M>(x - z); break;
      case BinaryOp::kMul: r = static_cast<M>(x * z); break;
      case BinaryOp::kDiv:
        if constexpr (std::is_integral_v<M>) r = int_div<M>(x, z);
        else r = x / z;
        break;
      case BinaryOp::kMax:
        if constexpr (std::is_floating_point_v<M>) r = (std::isnan(x) || std::isnan(z)) ? x + z : std::max(x, z);
        else r = std::max(x, z);
        break;
      case BinaryOp::kMin:
        if constexpr (std::is_floating_point_v<M>) r = (std::isnan(x) || std::isnan(z)) ? x + z : std::min(x, z);
        else r = std::min(x, z);
        break;
      case BinaryOp::kMod:
      case BinaryOp::kFMod:
        if constexpr (std::is_integral_v<M>) {
          r = int_mod<M>(x, z, fmod_mode || op == BinaryOp::kFMod);
        } else {
          r = std::fmod(x, z);
          if (!fmod_mode && op == BinaryOp::kMod && r != 0 && ((r < 0) != (z < 0))) r += z;
        }
        break;
      case BinaryOp::kPRelu: r = x < 0 ? static_cast<M>(z * x) : x; break;
      case BinaryOp::kBitShiftLeft:
      case BinaryOp::kBitShiftRight:
      case BinaryOp::kBitwiseAnd:
      case BinaryOp::kBitwiseOr:
      case BinaryOp::kBitwiseXor:
        if constexpr (std::is_integral_v<M> && !std::is_same_v<M, bool>) {
          using U = std::make_unsigned_t<M>;
          U ux = static_cast<U>(x), uz = static_cast<U>(z);
          if (op == BinaryOp::kBitShiftLeft) r = static_cast<M>(uz >= sizeof(U) * 8 ? U(0) : static_cast<U>(ux << uz));
          else if (op == BinaryOp::kBitShiftRight) r = static_cast<M>(uz >= sizeof(U) * 8 ? U(0) : static_cast<U>(ux >> uz));
          else if (op == BinaryOp::kBitwiseAnd) r = static_cast<M>(ux & uz);
          else if (op == BinaryOp::kBitwiseOr) r = static_cast<M>(ux | uz);
          else r = static_cast<M>(ux ^ uz);
        } else {
          st = core::invalid_argument("bit operations take integer tensors");
        }
        break;
      default: st = core::invalid_argument("binary: op not valid for this dtype"); break;
    }
    out[i] = store<T>(r);
  });
  return st;
}

}  // namespace

Status binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& y) {
  if (op == BinaryOp::kAnd || op == BinaryOp::kOr || op == BinaryOp::kXor) {
    if (a.dtype() != DType::kBool || b.dtype() != DType::kBool) return core::invalid_argument("logical ops take bool");
    core::Dims sa = broadcast_strides(a.dims(), y.dims()), sb = broadcast_strides(b.dims(), y.dims());
    const bool* pa = a.data<bool>();
    const bool* pb = b.data<bool>();
    bool* out = y.data<bool>();
    for_each_broadcast<2>(y.dims(), {sa, sb}, [&](int64_t i, const std::array<int64_t, 2>& o) {
      bool x = pa[o[0]], z = pb[o[1]];
      out[i] = op == BinaryOp::kAnd ? (x && z) : op == BinaryOp::kOr ? (x || z) : (x != z);
    });
    return Status::ok();
  }
  if (op != BinaryOp::kPow && a.dtype() != b.dtype())
    return core::invalid_argument(str_cat("binary op on ", core::dtype_name(a.dtype()), " and ", core::dtype_name(b.dtype())));
  Status st = Status::ok();
  bool fmod_mode = op == BinaryOp::kFMod;
  bool ok = core::visit_numeric_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      if (op == BinaryOp::kEqual) st = binary_typed<uint8_t>(op, a, b, y, false);
      else st = core::invalid_argument("arithmetic on bool tensors");
    } else {
      st = binary_typed<T>(op, a, b, y, fmod_mode);
    }
  });
  if (!ok) return core::invalid_argument(str_cat("binary: unsupported dtype ", core::dtype_name(a.dtype())));
  return st;
}

Status variadic(VariadicOp op, std::span<const Tensor* const> inputs, Tensor& y) {
  if (inputs.empty()) return core::invalid_argument("variadic op needs at least one input");
  // Fold pairwise into y (copying the first input broadcast to y's shape).
  BinaryOp bop = op == VariadicOp::kMax ? BinaryOp::kMax : op == VariadicOp::kMin ? BinaryOp::kMin : BinaryOp::kAdd;
  Status st = Status::ok();
  bool ok = core::visit_numeric_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      st = core::invalid_argument("variadic op on bool");
    } else {
      T* out = y.data<T>();
      core::Dims s0 = broadcast_strides(inputs[0]->dims(), y.dims());
      const T* p0 = inputs[0]->data<T>();
      for_each_broadcast<1>(y.dims(), {s0}, [&](int64_t i, const std::array<int64_t, 1>& o) { out[i] = p0[o[0]]; });
      for (size_t k = 1; k < inputs.size() && st.is_ok(); ++k) st = binary_typed<T>(bop, y, *inputs[k], y, false);
      if (st.is_ok() && op == VariadicOp::kMean) {
        for (int64_t i = 0; i < y.num_elements(); ++i)
          out[i] = store<T>(static_cast<MathT<T>>(load(out[i]) / static_cast<MathT<T>>(inputs.size())));
      }
    }
  });
  if (!ok) return core::invalid_argument("variadic: unsupported dtype");
  return st;
}

Status where(const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out) {
  if (cond.dtype() != DType::kBool) return core::invalid_argument("Where condition must be bool");
  if (x.dtype() != y.dtype() || x.dtype() != out.dtype()) return core::invalid_argument("Where: dtype mismatch");
  core::Dims sc = broadcast_strides(cond.dims(), out.dims());
  core::Dims sx = broadcast_strides(x.dims(), out.dims());
  core::Dims sy = broadcast_strides(y.dims(), out.dims());
  const bool* pc = cond.data<bool>();
  bool ok = core::visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* po = out.data<T>();
    for_each_broadcast<3>(out.dims(), {sc, sx, sy}, [&](int64_t i, const std::array<int64_t, 3>& o) {
      po[i] = pc[o[0]] ? px[o[1]] : py[o[2]];
    });
  });
  return ok ? Status::ok() : core::invalid_argument("Where: unsupported dtype");
}

Status clip(const Tensor& x, const Tensor* lo, const Tensor* hi, Tensor& y) {
  if (x.dtype() != y.dtype() || x.num_elements() != y.num_elements()) return core::invalid_argument("Clip: mismatch");
  for (const Tensor* b : {lo, hi})
    if (b && (b->num_elements() != 1 || b->dtype() != x.dtype()))
      return core::invalid_argument("Clip: min and max must be scalars of the input's dtype");
  Status st = Status::ok();
  bool ok = core::visit_numeric_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      st = core::invalid_argument("Clip on bool");
    } else {
      using M = MathT<T>;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      bool has_lo = lo != nullptr, has_hi = hi != nullptr;
      M l = has_lo ? load(lo->data<T>()[0]) : M{}, h = has_hi ? load(hi->data<T>()[0]) : M{};
      for (int64_t i = 0; i < x.num_elements(); ++i) {
        M v = load(in[i]);
        if (has_lo && v < l) v = l;
        if (has_hi && v > h) v = h;
        out[i] = store<T>(v);
      }
    }
  });
  if (!ok) return core::invalid_argument("Clip: unsupported dtype");
  return st;
}

namespace {

template <class D>
D convert_number(double v) {
  if constexpr (std::is_same_v<D, bool>) {
    return v != 0;
  } else if constexpr (is_half_v<D>) {
    return D(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<D>) {
    return static_cast<D>(v);
  } else {
    // Saturating: out-of-range and NaN are undefined in ONNX; we must not invoke UB.
    if (std::isnan(v)) return D(0);
    if (v <= static_cast<double>(std::numeric_limits<D>::lowest())) return std::numeric_limits<D>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(v);
  }
}

// True if decimal `r` reads back as the same value `v` of the source float type.
bool reads_back(double r, double v, DType from) {
  switch (from) {
    case DType::kF64: return r == v;
    case DType::kF16: return core::Float16(static_cast<float>(r)).bits == core::Float16(static_cast<float>(v)).bits;
    case DType::kBF16: return core::BFloat16(static_cast<float>(r)).bits == core::BFloat16(static_cast<float>(v)).bits;
    default: return static_cast<float>(r) == static_cast<float>(v);
  }
}

// The shortest decimal that reads back to the same value in its own type, laid out as numpy's
// str() does (the ONNX reference): positional for 1e-4 <= |v| < 1e16 with at least one fractional
// digit ("1.0", "0.9767611"), else scientific with a two-digit exponent ("1e-05", "1.5e+16").
std::string float_to_string(double v, DType from) {
  char buf[64];
  for (int p = 0; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*e", p, v);
    if (reads_back(std::strtod(buf, nullptr), v, from)) break;
  }
  // buf is "[-]d[.ddd]e(+|-)xx".
  std::string s(buf);
  bool negative = s[0] == '-';
  size_t e = s.find('e');
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i)
    if (s[i] != '.') digits += s[i];
  int exp = std::atoi(s.c_str() + e + 1);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = negative ? "-" : "";
  double a = std::fabs(v);
  if (a == 0 || (a >= 1e-4 && a < 1e16)) {
    if (exp >= 0) {
      std::string int_part = digits.substr(0, std::min(digits.size(), static_cast<size_t>(exp) + 1));
      int_part.resize(static_cast<size_t>(exp) + 1, '0');
      std::string frac = digits.size() > static_cast<size_t>(exp) + 1 ? digits.substr(static_cast<size_t>(exp) + 1) : "0";
      out += int_part + "." + frac;
    } else {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    std::snprintf(buf, sizeof buf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += buf;
  }
  return out;
}

std::string number_to_string(double v, DType from) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  if (core::is_float(from)) return float_to_string(v, from);
  if (from == DType::kBool) return v != 0 ? "1" : "0";
  return std::to_string(static_cast<long long>(v));
}

}  // namespace

Status cast(const Tensor& x, Tensor& y) {
  if (x.num_elements() != y.num_elements()) return core::invalid_argument("Cast: size mismatch");
  const int64_t n = x.num_elements();
  if (x.dtype() == y.dtype()) return core::copy_tensor_data(x, y);
  if (y.dtype() == DType::kString) {
    auto* out = y.data<std::string>();
    // 64-bit integers go straight to text: through double they would lose digits.
    if (x.dtype() == DType::kI64) {
      for (int64_t i = 0; i < n; ++i) out[i] = std::to_string(x.data<int64_t>()[i]);
    } else if (x.dtype() == DType::kU64) {
      for (int64_t i = 0; i < n; ++i) out[i] = std::to_string(x.data<uint64_t>()[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = number_to_string(x.element_as_double(i), x.dtype());
    }
    return Status::ok();
  }
  if (x.dtype() == DType::kString) {
    const auto* in = x.data<std::string>();
    bool ok = core::visit_numeric_dtype(y.dtype(), [&](auto tag) {
      using D = decltype(tag);
      D* out = y.data<D>();
      for (int64_t i = 0; i < n; ++i) {
        const char* str = in[i].c_str();
        if constexpr (std::is_same_v<D, int64_t> || std::is_same_v<D, uint64_t>) {
          // Exact for integer text; anything else ("1e3", "2.5") goes through double.
          char* end = nullptr;
          errno = 0;
          auto v = std::is_same_v<D, int64_t> ? static_cast<D>(std::strtoll(str, &end, 10))
                                              : static_cast<D>(std::strtoull(str, &end, 10));
          bool negative_to_unsigned = std::is_same_v<D, uint64_t> && std::strchr(str, '-') != nullptr;
          if (end != str && *end == '\0' && errno == 0 && !negative_to_unsigned) {
            out[i] = v;
            continue;
          }
        }
        out[i] = convert_number<D>(std::strtod(str, nullptr));
      }
    });
    return ok ? Status::ok() : core::invalid_argument("Cast: unsupported dtype");
  }
  bool ok = core::visit_numeric_dtype(x.dtype(), [&](auto stag) {
    using S = decltype(stag);
    const S* in = x.data<S>();
    core::visit_numeric_dtype(y.dtype(), [&](auto dtag) {
      using D = decltype(dtag);
      D* out = y.data<D>();
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_integral_v<S> && std::is_integral_v<D> && !std::is_same_v<D, bool>) {
          out[i] = static_cast<D>(in[i]);  // integer -> integer wraps, as in C and numpy
        } else if constexpr (std::is_same_v<S, float> && is_half_v<D>) {
          out[i] = D(in[i]);
        } else {
          out[i] = convert_number<D>(static_cast<double>(load(in[i])));
        }
      }
    });
  });
  return ok ? Status::ok() : core::invalid_argument("Cast: unsupported dtype");
}

}  // namespace kestrel::kernels::ref

// Status and Result<T>: the error channel used everywhere inside Kestrel (no exceptions in kernels).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <variant>

namespace kestrel::core {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // caller passed something wrong (input name, shape, dtype)
  kInvalidModel,     // the model file or graph is malformed
  kUnsupported,      // valid but not implemented (unknown op, unsupported attribute value)
  kOutOfRange,       // sizes, indices or offsets outside what is allowed
  kIoError,          // file system
  kOutOfMemory,
  kInternal,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : rep_(code == StatusCode::kOk ? nullptr
                                     : std::make_shared<Rep>(Rep{code, std::move(message)})) {}

  static Status ok() { return {}; }
  bool is_ok() const { return rep_ == nullptr; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  const std::string& message() const;
  // "InvalidModel: message"
  std::string to_string() const;
  // Returns a copy whose message is "prefix: message"; used to add context (file, node) on the way up.
  Status with_context(const std::string& prefix) const;

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const Rep> rep_;  // null when ok: an ok Status costs one pointer
};

inline Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status invalid_model(std::string m) { return {StatusCode::kInvalidModel, std::move(m)}; }
inline Status unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status out_of_range(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status io_error(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).is_ok()) v_ = Status(StatusCode::kInternal, "Result built from ok Status");
  }
  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace kestrel::core

#define KESTREL_CONCAT_INNER(a, b) a##b
#define KESTREL_CONCAT(a, b) KESTREL_CONCAT_INNER(a, b)

#define KESTREL_RETURN_IF_ERROR(expr)                 \
  do {                                                \
    ::kestrel::core::Status _kst_status = (expr);     \
    if (!_kst_status.is_ok()) return _kst_status;     \
  } while (0)

#define KESTREL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.is_ok()) return tmp.status();              \
  lhs = std::move(tmp).value()

#define KESTREL_ASSIGN_OR_RETURN(lhs, expr) \
  KESTREL_ASSIGN_OR_RETURN_IMPL(KESTREL_CONCAT(_kst_result_, __LINE__), lhs, expr)

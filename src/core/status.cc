// Status implementation: names and context chaining.
#include "core/status.h"

namespace kestrel::core {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "Ok";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kInvalidModel: return "InvalidModel";
    case StatusCode::kUnsupported: return "Unsupported";
    case StatusCode::kOutOfRange: return "OutOfRange";
    case StatusCode::kIoError: return "IoError";
    case StatusCode::kOutOfMemory: return "OutOfMemory";
    case StatusCode::kInternal: return "Internal";
  }
  return "Unknown";
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return rep_ ? rep_->message : kEmpty;
}

std::string Status::to_string() const {
  if (is_ok()) return "Ok";
  return std::string(status_code_name(rep_->code)) + ": " + rep_->message;
}

Status Status::with_context(const std::string& prefix) const {
  if (is_ok()) return *this;
  return Status(rep_->code, prefix + ": " + rep_->message);
}

}  // namespace kestrel::core

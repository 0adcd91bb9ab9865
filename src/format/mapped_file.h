// A whole file mapped read-only into memory (MAP_PRIVATE); unmapped when the last owner goes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace kestrel::format {

class MappedFile {
 public:
  // Fails with a message naming the path for missing files, directories and mmap errors.
  static core::Result<std::shared_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Page aligned; null for an empty file.
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kestrel::format

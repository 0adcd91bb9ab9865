// POSIX mmap of a whole file.
#include "format/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/str_util.h"

namespace kestrel::format {

using core::str_cat;

core::Result<std::shared_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return core::io_error(str_cat("cannot open '", path, "': ", std::strerror(errno)));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return core::io_error(str_cat("cannot stat '", path, "': ", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return core::io_error(str_cat("'", path, "' is not a regular file"));
  }
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) > SIZE_MAX / 2) {
    ::close(fd);
    return core::io_error(str_cat("'", path, "' is too large to map"));
  }
  std::shared_ptr<MappedFile> m(new MappedFile());
  m->size_ = static_cast<size_t>(st.st_size);
  if (m->size_ > 0) {
    void* p = ::mmap(nullptr, m->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return core::io_error(str_cat("cannot map '", path, "': ", std::strerror(err)));
    }
    m->data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  return m;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace kestrel::format

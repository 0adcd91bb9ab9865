// TempDir: a fresh folder under the system temp dir for one test (named after the test and the
// process), removed when the test ends. Tests write only there.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/npy.h"
#include "core/tensor.h"

namespace kestrel::testing {

class TempDir {
 public:
  TempDir() {
    const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "kestrel_" + std::to_string(::getpid());
    if (t) name += std::string("_") + t->test_suite_name() + "_" + t->name();
    for (char& c : name)
      if (c == '/') c = '_';  // parameterized test names
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Writes bytes to the file `name` and returns its path.
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream f(file(name), std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return file(name);
  }
  std::string write_npy(const std::string& name, const core::Tensor& t) const {
    EXPECT_TRUE(core::write_npy(file(name), t).is_ok());
    return file(name);
  }

 private:
  std::filesystem::path path_;
};

}  // namespace kestrel::testing

// Test helper: where the shared data folder is ($KESTREL_DATA, default ../shared next to the tree).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace kestrel::testing {

inline std::string data_dir() {
  if (const char* env = std::getenv("KESTREL_DATA"); env && *env) return env;
#ifdef KESTREL_SOURCE_DIR
  return std::string(KESTREL_SOURCE_DIR) + "/../shared";
#else
  return "../shared";
#endif
}

inline bool data_available(const std::string& sub) { return std::filesystem::exists(data_dir() + "/" + sub); }

}  // namespace kestrel::testing

// core::allocate_arena: alignment (64 bytes, 2 MiB from 2 MiB up), every byte writable.
#include "core/buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace kestrel::core {
namespace {

TEST(Buffer, ArenaIsAlignedAndWritable) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, size_t{4096}, (size_t{2} << 20) - 1, size_t{2} << 20,
                       (size_t{5} << 20) + 3}) {
    auto r = allocate_arena(bytes);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    void* p = r->get();
    ASSERT_NE(p, nullptr);
    const auto addr = reinterpret_cast<uintptr_t>(p);
    EXPECT_EQ(addr % kAlignment, 0u) << bytes;
    if (bytes >= (size_t{2} << 20)) {
      EXPECT_EQ(addr % (size_t{2} << 20), 0u) << bytes;
    }
    std::memset(p, 0xab, bytes);
    if (bytes) {
      EXPECT_EQ(static_cast<unsigned char*>(p)[bytes - 1], 0xab);
    }
  }
}

TEST(Buffer, HostileArenaSizeFails) {
  EXPECT_FALSE(allocate_arena(SIZE_MAX - 10).is_ok());
}

}  // namespace
}  // namespace kestrel::core

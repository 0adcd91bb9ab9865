// Heap-allocation counting for tests and measuring tools: linking the kestrel_alloc_counter
// object library into an executable replaces the global operator new/delete and wraps the C
// allocation functions of the statically linked code (-Wl,--wrap), so every heap allocation made
// by Kestrel, on any thread, is counted. Never part of the libraries.
#pragma once

#include <cstdint>

namespace kestrel::testing {

// Heap allocations (operator new, malloc, calloc, realloc, aligned_alloc, posix_memalign) made
// so far by this process. Relaxed atomics: cheap, and exact once the threads are quiet.
uint64_t alloc_count();
uint64_t alloc_bytes();

}  // namespace kestrel::testing

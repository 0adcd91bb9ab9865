// What a cache line costs when the other core touched it last: one core writes or reads a buffer
// after the other core wrote or read it (threads pinned to CPUs 0 and 1, taking turns), median
// of 30 turns. The measurement behind the 2-thread notes in docs/architecture.md: writing lines
// the other core has *read* (shared in both caches) was the slow case on the 2-vCPU VMs here.
//
//   kestrel_cross_core_lines [KiB=1600]
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

void pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

enum Action { kIdle, kWrite, kRead };

// Plain loops over 64-byte lines: the compiler vectorizes them; one store / load per line matters.
void write_buf(float* a, size_t n, float v) {
  for (size_t i = 0; i < n; ++i) a[i] = v;
}
float read_buf(const float* a, size_t n) {
  float s = 0;
  for (size_t i = 0; i < n; i += 16) s += a[i];
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t kib = argc > 1 ? static_cast<size_t>(std::atol(argv[1])) : 1600;
  const size_t n = kib * 1024 / sizeof(float);
  std::vector<float> buf(n + 16);
  float* a = buf.data();
  if (std::thread::hardware_concurrency() < 2) {
    std::printf("needs 2 CPUs\n");
    return 1;
  }
  struct Case {
    const char* name;
    Action other, self;
  };
  const Case cases[] = {{"write, other core idle", kIdle, kWrite},   {"write after other core wrote", kWrite, kWrite},
                        {"write after other core read", kRead, kWrite}, {"read after other core wrote", kWrite, kRead},
                        {"read, other core idle", kIdle, kRead}};
  std::printf("%zu KiB buffer, CPU 0 timed, CPU 1 touches it between turns (median of 30)\n", kib);
  volatile float sink = 0;
  for (const Case& c : cases) {
    std::atomic<int> turn{0};
    std::vector<double> t;
    std::thread other([&] {
      pin(1);
      for (int r = 0; r < 30; ++r) {
        while (turn.load() != 1) {
        }
        if (c.other == kWrite) write_buf(a, n, static_cast<float>(r));
        if (c.other == kRead) sink = sink + read_buf(a, n);
        turn.store(0);
      }
    });
    pin(0);
    for (int r = 0; r < 30; ++r) {
      while (turn.load() != 0) {
      }
      const double t0 = now_us();
      if (c.self == kWrite) write_buf(a, n, static_cast<float>(r));
      if (c.self == kRead) sink = sink + read_buf(a, n);
      t.push_back(now_us() - t0);
      turn.store(1);
    }
    other.join();
    std::sort(t.begin(), t.end());
    std::printf("  %-30s %8.1f us  (%.2f ns per 64-byte line)\n", c.name, t[15], t[15] * 1000.0 / (n / 16.0));
  }
  return 0;
}

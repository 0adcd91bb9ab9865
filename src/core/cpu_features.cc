// cpuid-based feature detection (x86-64); other architectures report scalar (NEON comes later).
#include "core/cpu_features.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#define KESTREL_X86 1
#endif

namespace kestrel::core {

namespace {

#ifdef KESTREL_X86
unsigned long long xgetbv0() {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#ifdef KESTREL_X86
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  bool osxsave = (c >> 27) & 1;
  bool avx = (c >> 28) & 1;
  f.fma = (c >> 12) & 1;
  f.f16c = (c >> 29) & 1;
  unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
  bool os_ymm = (xcr0 & 0x6) == 0x6;
  bool os_zmm = (xcr0 & 0xe6) == 0xe6;
  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    f.avx2 = avx && os_ymm && ((b >> 5) & 1);
    f.avx512f = os_zmm && ((b >> 16) & 1);
    f.avx512dq = os_zmm && ((b >> 17) & 1);
    f.avx512bw = os_zmm && ((b >> 30) & 1);
    f.avx512vl = os_zmm && ((b >> 31) & 1);
    f.avx512_vnni = os_zmm && ((c >> 11) & 1);
    f.avx512_vbmi = os_zmm && ((c >> 1) & 1);
    unsigned a1, b1, c1, d1;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    f.avx_vnni = os_ymm && ((a1 >> 4) & 1);
    f.avx512_bf16 = os_zmm && ((a1 >> 5) & 1);
  }
  f.fma = f.fma && os_ymm;
  f.f16c = f.f16c && os_ymm;
  // Brand string.
  char brand[49] = {0};
  if (__get_cpuid_max(0x80000000, nullptr) >= 0x80000004) {
    for (unsigned i = 0; i < 3; ++i) {
      __cpuid(0x80000002 + i, a, b, c, d);
      std::memcpy(brand + 16 * i, &a, 4);
      std::memcpy(brand + 16 * i + 4, &b, 4);
      std::memcpy(brand + 16 * i + 8, &c, 4);
      std::memcpy(brand + 16 * i + 12, &d, 4);
    }
  }
  f.brand = brand;
  // Cache sizes: deterministic cache parameters leaf (Intel 4, AMD 0x8000001D).
  unsigned leaf = 4;
  if (__get_cpuid_max(0x80000000, nullptr) >= 0x8000001D) {
    __cpuid(0, a, b, c, d);
    if (b == 0x68747541) leaf = 0x8000001D;  // "Auth"enticAMD
  }
  for (unsigned i = 0; i < 8; ++i) {
    __cpuid_count(leaf, i, a, b, c, d);
    unsigned type = a & 0x1f;
    if (type == 0) break;
    unsigned level = (a >> 5) & 7;
    long size = static_cast<long>(((b >> 22) + 1) * (((b >> 12) & 0x3ff) + 1) * ((b & 0xfff) + 1) * (c + 1));
    if (type == 1 && level == 1) f.l1d_bytes = static_cast<int>(size);
    if ((type == 3 || type == 2) && level == 2) f.l2_bytes = static_cast<int>(size);
    if (type == 3 && level == 3) f.l3_bytes = static_cast<int>(size);
  }
  // Some hypervisors zero the AMD cache-topology leaf; the legacy leaves still give the sizes
  // (0x80000005 ECX[31:24] L1d KiB, 0x80000006 ECX[31:16] L2 KiB, EDX[31:18] L3 in 512 KiB).
  __cpuid_count(leaf, 0, a, b, c, d);
  if (leaf == 0x8000001D && (a & 0x1f) == 0 && __get_cpuid_max(0x80000000, nullptr) >= 0x80000006) {
    __cpuid(0x80000005, a, b, c, d);
    if (c >> 24) f.l1d_bytes = static_cast<int>((c >> 24) << 10);
    __cpuid(0x80000006, a, b, c, d);
    if (c >> 16) f.l2_bytes = static_cast<int>((c >> 16) << 10);
    long l3 = static_cast<long>(d >> 18) * (512 << 10);
    if (l3 > 0 && l3 < (1l << 31)) f.l3_bytes = static_cast<int>(l3);
  }
#endif
#if defined(__aarch64__)
  f.neon = true;
#endif
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

Isa detected_isa() {
  const auto& f = cpu_features();
  if (f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl && f.fma) return Isa::kAvx512;
  if (f.avx2 && f.fma && f.f16c) return Isa::kAvx2;
  return Isa::kScalar;
}

Isa active_isa() {
  static const Isa isa = [] {
    Isa best = detected_isa();
    const char* env = std::getenv("KESTREL_ISA");
    Isa want;
    if (env && *env && parse_isa(env, &want) && want < best) return want;
    return best;
  }();
  return isa;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "?";
}

bool parse_isa(const std::string& s, Isa* out) {
  if (s == "scalar") *out = Isa::kScalar;
  else if (s == "avx2") *out = Isa::kAvx2;
  else if (s == "avx512") *out = Isa::kAvx512;
  else return false;
  return true;
}

}  // namespace kestrel::core

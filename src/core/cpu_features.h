// CPU feature detection and the instruction-set level the kernels may use (KESTREL_ISA overrides).
#pragma once

#include <string>

namespace kestrel::core {

// Ordered: a higher level implies the lower ones are usable.
enum class Isa : int {
  kScalar = 0,
  kAvx2 = 1,    // AVX2 + FMA + F16C
  kAvx512 = 2,  // AVX-512 F/BW/DQ/VL
};

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512_vnni = false, avx_vnni = false, avx512_bf16 = false;
  bool avx512_vbmi = false;  // vpermb / vpermi2b: byte permutes (256-entry u8 table lookups)
  bool neon = false, neon_dotprod = false;
  int l1d_bytes = 32 * 1024, l2_bytes = 1024 * 1024, l3_bytes = 8 * 1024 * 1024;
  std::string brand;
};

// Detected once (cpuid + xgetbv, so OS support for the wider registers is checked).
const CpuFeatures& cpu_features();
// Best level the hardware supports.
Isa detected_isa();
// The level to use: detected_isa(), lowered by the KESTREL_ISA environment variable
// (scalar|avx2|avx512). Asking for more than the CPU has is clamped to what it has.
Isa active_isa();
const char* isa_name(Isa isa);
// Parses "scalar", "avx2", "avx512"; returns false if unknown.
bool parse_isa(const std::string& s, Isa* out);

}  // namespace kestrel::core

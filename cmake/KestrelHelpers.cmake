# Helpers: per-ISA compile flags for kernel translation units.

# kestrel_isa_sources(<target> <isa> <files...>): adds files compiled for one instruction set.
# The library itself is never built with -march=native; run-time dispatch picks the variant.
function(kestrel_isa_sources target isa)
  if(isa STREQUAL "avx2")
    set(flags -mavx2 -mfma -mf16c)
  elseif(isa STREQUAL "avx512")
    set(flags -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mfma -mf16c)
  elseif(isa STREQUAL "avx512bf16")
    set(flags -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512bf16 -mavx2 -mfma -mf16c)
  elseif(isa STREQUAL "avx512vnni")
    set(flags -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni -mavx2 -mfma -mf16c)
  elseif(isa STREQUAL "avxvnni")
    set(flags -mavxvnni -mavx2 -mfma -mf16c)
  else()
    message(FATAL_ERROR "unknown isa ${isa}")
  endif()
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    target_sources(${target} PRIVATE ${ARGN})
    set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS "${flags}")
  endif()
endfunction()

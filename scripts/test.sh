#!/usr/bin/env bash
# Builds and runs every test, as CI does:
#   1. Release build with warnings as errors; all tests (ctest labels: unit, badinput, install,
#      demo, models, ...). Model tests read $KESTREL_DATA (default ../shared) and skip visibly
#      when it is absent.
#   2. A second build with AddressSanitizer + UndefinedBehaviorSanitizer; the unit and bad-input
#      tests run there.
#   3. The .kst loader fuzzer (clang, libFuzzer + ASan/UBSan) for KESTREL_FUZZ_SECONDS (default
#      60; 0 skips it), seeded with the shared models converted to .kst in a temporary folder.
# Build folders: build-ci/release, build-ci/asan and build-ci/fuzz (override with
# KESTREL_CI_BUILD_ROOT).
source "$(dirname "$0")/common.sh"
OUT=${KESTREL_CI_BUILD_ROOT:-$ROOT/build-ci}
START=$SECONDS
FAILED=()

phase "release build ($OUT/release)"
configure "$OUT/release" -DCMAKE_BUILD_TYPE=Release -DKESTREL_WERROR=ON
cmake --build "$OUT/release" -j "$JOBS"
phase_done

phase "release tests (all)"
# A failing test does not stop the run: the sanitizer phase still runs, the exit code tells.
ctest --test-dir "$OUT/release" --output-on-failure -j "$JOBS" || FAILED+=("release tests")
phase_done

phase "ASan+UBSan build ($OUT/asan)"
# -O1 -g1: half the compile time of -O2 -g under the sanitizers, line numbers in reports, asserts on.
configure "$OUT/asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKESTREL_WERROR=ON -DKESTREL_SANITIZE=ON \
  -DKESTREL_BUILD_DEMO=OFF -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1"
# Only the executables of the labels run below (each depends on the kestrel CLI it calls), not the
# model tests, conformance runner and other tools. A new executable with tests labelled unit or
# badinput must be added to this list: otherwise this phase skips it (the release phase runs it).
cmake --build "$OUT/asan" -j "$JOBS" --target kestrel_unit_tests kestrel_bad_input_tests kestrel_alloc_tests \
  kestrel_bench_cli_tests kestrel_quant_cli_tests
phase_done

phase "ASan+UBSan tests (labels unit, badinput)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$OUT/asan" -L 'unit|badinput' --output-on-failure -j "$JOBS" || FAILED+=("ASan+UBSan tests")
phase_done

FUZZ_SECONDS=${KESTREL_FUZZ_SECONDS:-60}
if ((FUZZ_SECONDS > 0)); then
  phase "fuzz build ($OUT/fuzz: clang, libFuzzer + ASan/UBSan; fuzz targets only)"
  CC=clang CXX=clang++ configure "$OUT/fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKESTREL_FUZZ=ON \
    -DKESTREL_SANITIZE=ON -DKESTREL_BUILD_DEMO=OFF -DKESTREL_BUILD_TOOLS=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1"
  cmake --build "$OUT/fuzz" -j "$JOBS" --target kst_loader_fuzz
  phase_done

  phase "fuzz: .kst loader for ${FUZZ_SECONDS}s"
  KST_CORPUS_MAKER="$OUT/release/tests/fuzz/kst_fuzz_corpus" sh "$ROOT/tests/fuzz/run_kst_fuzz.sh" "$OUT/fuzz" "$FUZZ_SECONDS" || FAILED+=(".kst loader fuzzing")
  phase_done
fi

t=$((SECONDS - START))
cpu_now
cpu=$(printf '%.0f' "$CPU_NOW")
echo "total: wall $((t / 60))m$((t % 60))s, CPU $((cpu / 60))m$((cpu % 60))s on $(nproc) cores"
if ((${#FAILED[@]})); then
  printf '\nFAILED: %s (after %dm%02ds)\n' "${FAILED[*]}" $((t / 60)) $((t % 60))
  exit 1
fi
printf '\nall tests passed in %dm%02ds\n' $((t / 60)) $((t % 60))

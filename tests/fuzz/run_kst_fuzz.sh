#!/bin/sh
# Runs the .kst loader fuzzer for a bounded time on a seed corpus generated into a temporary
# folder (removed afterwards) from converted models: the sample graphs and the shared models,
# imported and converted at -O2. Needs a build configured with clang and -DKESTREL_FUZZ=ON (add
# -DKESTREL_SANITIZE=ON for ASan+UBSan). Exits non-zero if the fuzzer finds a crash; the crashing
# input is then in BUILD_DIR/fuzz/kst/artifacts/ (the corpus the fuzzer grows stays in
# BUILD_DIR/fuzz/kst/corpus for the next run).
#
# usage: tests/fuzz/run_kst_fuzz.sh BUILD_DIR [SECONDS=60] [extra libFuzzer flags...]
# Shared models whose .onnx is over KST_SEED_MAX_BYTES (default 4 MiB) are left out of the seeds:
# every fuzz iteration copies and verifies its input, so big seeds slow the search down.
set -eu
if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [SECONDS] [libFuzzer flags...]" >&2
  exit 2
fi
build=$1
secs=${2:-60}
shift
[ $# -gt 0 ] && shift
fuzz=$build/tests/fuzz/kst_loader_fuzz
# The seed maker may come from another build (KST_CORPUS_MAKER; CI uses the release tree's).
maker=${KST_CORPUS_MAKER:-$build/tests/fuzz/kst_fuzz_corpus}
if [ ! -x "$fuzz" ] || [ ! -x "$maker" ]; then
  echo "$0: $fuzz or $maker not built (configure with CXX=clang++ -DKESTREL_FUZZ=ON)" >&2
  exit 2
fi
work=$build/fuzz/kst
mkdir -p "$work/corpus" "$work/artifacts"
seeds=$(mktemp -d "${TMPDIR:-/tmp}/kst_fuzz_seeds.XXXXXX")
trap 'rm -rf "$seeds"' EXIT INT TERM
"$maker" "$seeds" ${KST_SEED_MAX_BYTES:-4194304}
rc=0
"$fuzz" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$@" "$work/corpus" "$seeds" || rc=$?
exit $rc

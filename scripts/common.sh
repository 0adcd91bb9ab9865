# Shared by the build scripts (sourced): repo root, job count, optional ccache, timing.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JOBS=${KESTREL_JOBS:-$(nproc)}
LAUNCHER=()
if command -v ccache >/dev/null; then
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
fi

# configure BUILD_DIR [cmake args...]
configure() {
  local dir=$1
  shift
  cmake -S "$ROOT" -B "$dir" -G Ninja "${LAUNCHER[@]}" "$@"
}

# phase NAME: prints a banner; phase_done prints how long the phase took.
phase() {
  PHASE_NAME=$1
  PHASE_START=$SECONDS
  echo
  echo "=== $PHASE_NAME"
}
phase_done() {
  local t=$((SECONDS - PHASE_START))
  printf '=== %s: done in %dm%02ds\n' "$PHASE_NAME" $((t / 60)) $((t % 60))
}

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

# Sets CPU_NOW to the CPU seconds (user + system) used so far by the commands this script ran;
# with other jobs on the machine this says more about a phase's cost than the wall time does.
# Not a $(function): `times` must run in this shell, not in a subshell, to see its children.
CPU_FILE=$(mktemp)
trap 'rm -f "$CPU_FILE"' EXIT
cpu_now() {
  times >"$CPU_FILE"
  CPU_NOW=$(awk 'END { n = split($0, t, /[ ms]+/); print t[n-4] * 60 + t[n-3] + t[n-2] * 60 + t[n-1] }' "$CPU_FILE")
}

# phase NAME: prints a banner; phase_done prints how long the phase took (wall and CPU).
phase() {
  PHASE_NAME=$1
  PHASE_START=$SECONDS
  cpu_now
  PHASE_CPU=$CPU_NOW
  echo
  echo "=== $PHASE_NAME"
}
phase_done() {
  local t=$((SECONDS - PHASE_START)) cpu
  cpu_now
  cpu=$(awk -v a="$CPU_NOW" -v b="$PHASE_CPU" 'BEGIN { printf "%.0f", a - b }')
  printf '=== %s: done in %dm%02ds (CPU %dm%02ds)\n' "$PHASE_NAME" $((t / 60)) $((t % 60)) $((cpu / 60)) $((cpu % 60))
}

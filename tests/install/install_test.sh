#!/usr/bin/env bash
# Install test: `cmake --install` into a fresh prefix, then build and run small consumers of the
# installed Kestrel with find_package(kestrel) and with pkg-config (C++, C, and runtime-only C).
# usage: install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR MODEL_WRITER GENERATOR CXX CC [EXTRA_FLAGS]
set -euo pipefail
build_dir=$1 src_dir=$2 work=$3 writer=$4 generator=$5 cxx=$6 cc=$7 extra=${8:-}

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
step() { echo "== $*"; }

step "install into $prefix"
cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log"
headers=$(cd "$prefix/include" && find . -type f | sort | tr '\n' ' ')
[[ "$headers" == "./kestrel/kestrel.h ./kestrel/kestrel.hpp " ]] || { echo "unexpected installed headers: $headers"; exit 1; }
pcdir=$(dirname "$(find "$prefix" -name kestrel.pc | head -n1)")
[[ -f "$pcdir/kestrel-convert.pc" ]] || { echo "kestrel-convert.pc not installed"; exit 1; }

"$writer" "$work/model.onnx"

step "find_package(kestrel)"
cmake -S "$src_dir/consumer" -B "$work/cmake" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_C_FLAGS="$extra" -DCMAKE_CXX_FLAGS="$extra" -DCMAKE_EXE_LINKER_FLAGS="$extra" >"$work/cmake-configure.log"
cmake --build "$work/cmake" >"$work/cmake-build.log" || { cat "$work/cmake-build.log"; exit 1; }
"$work/cmake/consumer_cpp" "$work/model.onnx"
"$work/cmake/consumer_c" "$work/model.onnx"
"$work/cmake/consumer_runtime_only" "$work/model.onnx"

step "pkg-config (PKG_CONFIG_PATH=$pcdir)"
export PKG_CONFIG_PATH=$pcdir
echo "kestrel-convert: $(pkg-config --libs kestrel-convert)"
mkdir -p "$work/pc"
# shellcheck disable=SC2046,SC2086
"$cxx" -std=c++17 $extra "$src_dir/consumer/consumer.cc" -o "$work/pc/consumer_cpp" $(pkg-config --cflags --libs kestrel-convert)
# shellcheck disable=SC2046,SC2086
"$cc" $extra "$src_dir/consumer/consumer.c" -o "$work/pc/consumer_c" $(pkg-config --cflags --libs kestrel-convert)
# shellcheck disable=SC2046,SC2086
"$cc" $extra -DRUNTIME_ONLY "$src_dir/consumer/consumer.c" -o "$work/pc/consumer_runtime_only" $(pkg-config --cflags --libs kestrel)
"$work/pc/consumer_cpp" "$work/model.onnx"
"$work/pc/consumer_c" "$work/model.onnx"
"$work/pc/consumer_runtime_only" "$work/model.onnx"
if nm "$work/pc/consumer_runtime_only" | grep -q -i protobuf; then
  echo "the runtime-only consumer pulled in protobuf"
  exit 1
fi

step "installed CLI"
"$prefix/bin/kestrel" run "$work/model.onnx"
echo "install test passed"

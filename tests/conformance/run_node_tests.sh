#!/bin/sh
# CTest driver: runs kestrel-onnx-test on $KESTREL_DATA/onnx-node-tests (default ../shared next to
# the source tree) against the checked-in expected-pass list; exits 77 (skipped) without the data.
# Usage: run_node_tests.sh RUNNER EXPECTED_LIST SOURCE_DIR
runner=$1
expected=$2
source_dir=$3
data=${KESTREL_DATA:-$source_dir/../shared}
tests=$data/onnx-node-tests
if [ ! -d "$tests" ]; then
  echo "SKIPPED: ONNX node tests not found at $tests (set KESTREL_DATA to the shared data folder)"
  exit 77
fi
exec "$runner" --expected "$expected" "$tests"

#!/usr/bin/env bash
# Builds Kestrel (Release) and runs the demo: a small CNN trained on handwritten digits
# (demo/train_digits.py) classifies 32 held-out images through the C++ API, then the same model
# goes through the `kestrel` command line.
source "$(dirname "$0")/common.sh"
BUILD=${KESTREL_DEMO_BUILD_DIR:-$ROOT/build-ci/demo}

phase "build ($BUILD)"
configure "$BUILD" -DCMAKE_BUILD_TYPE=Release -DKESTREL_BUILD_TESTS=OFF
cmake --build "$BUILD" -j "$JOBS" --target digits_demo kestrel_cli
phase_done

phase "digits demo (demo/digits_demo.cc, public C++ API)"
"$BUILD/demo/digits_demo" "$ROOT/demo"

phase "kestrel inspect demo/digits.onnx"
"$BUILD/tools/kestrel/kestrel" inspect "$ROOT/demo/digits.onnx"

phase "kestrel run demo/digits.onnx --input image=demo/digits_samples.npy"
"$BUILD/tools/kestrel/kestrel" run "$ROOT/demo/digits.onnx" --input "image=$ROOT/demo/digits_samples.npy" \
  --output-dir "$BUILD/demo/outputs"

phase "kestrel quantize demo/digits.onnx (int8: calibrated on the first 16 samples, 16 held out)"
"$BUILD/tools/kestrel/kestrel" quantize "$ROOT/demo/digits.onnx" --calib "$ROOT/demo/digits_samples.npy" \
  --holdout 0.5 --labels "$ROOT/demo/digits_labels.txt" -o "$BUILD/demo/digits_int8.kst"

phase "digits demo with the int8 model (all 32 samples; the last 16 were never seen by calibration)"
"$BUILD/demo/digits_demo" --model "$BUILD/demo/digits_int8.kst" "$ROOT/demo"

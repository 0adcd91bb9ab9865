#!/usr/bin/env python3
"""Int8 against float, per shared CNN, in one run: quantize with `kestrel quantize`, then time the
float and int8 .kst files with `kestrel bench --against` (runs alternated, same thread count) and print a table
of held-out cosine, file sizes and latency ratio. A measuring script, never a build or test
dependency; needs numpy (for the seeded N(0,1) calibration samples).

  /usr/bin/python3 bench/int8_table.py build/tools/kestrel/kestrel [--target-cosine 0.99] [--reps 3]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kestrel")
    ap.add_argument("--data", default=os.environ.get("KESTREL_DATA", os.path.join(os.path.dirname(__file__), "../../shared")))
    ap.add_argument("--models", help="comma-separated (default: every CNN of the manifest)")
    ap.add_argument("--samples", type=int, default=24, help="calibration + held-out samples")
    ap.add_argument("--holdout", type=float, default=0.33)
    ap.add_argument("--method", default="percentile")
    ap.add_argument("--target-cosine", type=float, help="passed to kestrel quantize")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3, help="interleaved float/int8 measurements")
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--work", help="folder for the samples and .kst files (default: a temp folder)")
    a = ap.parse_args()

    models_dir = os.path.join(a.data, "models")
    manifest = json.load(open(os.path.join(models_dir, "manifest.json")))["models"]
    names = a.models.split(",") if a.models else [
        n for n, e in manifest.items()
        if len(e["inputs"]) == 1 and n not in ("bert_tiny", "vit_tiny", "mlp_mixer_tiny")]
    work = a.work or tempfile.mkdtemp(prefix="kestrel_int8_")
    os.makedirs(work, exist_ok=True)
    rows = []
    for name in names:
        onnx_path = os.path.join(models_dir, manifest[name]["file"])
        x = np.load(os.path.join(models_dir, manifest[name]["inputs"][0]["file"]))
        calib = os.path.join(work, f"{name}.calib.npy")
        rng = np.random.default_rng(7)
        np.save(calib, rng.standard_normal((a.samples,) + x.shape).astype(np.float32))
        f32 = os.path.join(work, f"{name}.kst")
        i8 = os.path.join(work, f"{name}.int8.kst")
        subprocess.run([a.kestrel, "convert", onnx_path, "-o", f32], check=True, capture_output=True)
        cmd = [a.kestrel, "quantize", onnx_path, "--calib", calib, "--holdout", str(a.holdout), "--method", a.method,
               "-o", i8]
        if a.target_cosine:
            cmd += ["--target-cosine", str(a.target_cosine)]
        q = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        m = re.search(r"cosine ([0-9.]+) \(worst sample ([0-9.]+)\)", q)
        cos, worst = (float(m.group(1)), float(m.group(2))) if m else (float("nan"), float("nan"))
        kept = re.search(r"(\d+) layers kept in float", q)
        rows.append([name, cos, worst, kept.group(1) if kept else "0", os.path.getsize(f32), os.path.getsize(i8), f32,
                     i8])
        print(f"[int8_table] {name}: cosine {cos} (worst {worst})"
              + (f", {kept.group(1)} layers kept in float" if kept else ""), file=sys.stderr, flush=True)

    # Latency in rounds over every model, each round one `kestrel bench FLOAT --against INT8`: the two files' runs
    # alternate, so a burst of this host's load lands on both runs of a pair; the rounds spread each model's samples
    # over the whole run.
    lat = {r[6]: [] for r in rows} | {r[7]: [] for r in rows}
    ratios = {r[7]: [] for r in rows}
    for rep in range(a.reps):
        for r in rows:
            out = subprocess.run([a.kestrel, "bench", r[6], "--against", r[7], "--threads", str(a.threads), "--iters",
                                  str(a.iters), "--json"], check=True, capture_output=True, text=True).stdout
            j = json.loads(out.strip().splitlines()[-1])
            lat[r[6]].append(j["median_ms"])
            lat[r[7]].append(j["against"]["median_ms"])
            ratios[r[7]].append(j["against"]["ratio"])
        print(f"[int8_table] latency round {rep + 1}/{a.reps}", file=sys.stderr, flush=True)

    print("| model | held-out cosine (worst sample) | layers kept float | float .kst | int8 .kst | size | float ms | "
          "int8 ms | int8 / float | per run |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, cos, worst, nkept, sf, si, f32, i8 in rows:
        lf, li = statistics.median(lat[f32]), statistics.median(lat[i8])
        per_run = statistics.median(ratios[i8])
        print(f"| {name} | {cos:.5f} ({worst:.5f}) | {nkept} | {sf / 2**20:.1f} MiB | {si / 2**20:.1f} MiB | "
              f"{100 * si / sf:.1f} % | {lf:.3f} | {li:.3f} | {li / lf:.2f} | {per_run:.2f} |")
    print(f"\nCommand: {' '.join(sys.argv)}\nkestrel quantize --method {a.method}, {a.samples} seeded N(0,1) samples, "
          f"last {a.holdout:.0%} held out (the cosine is over them); latency: median of {a.reps} rounds over all models "
          f"of `kestrel bench FLOAT --against INT8 --threads {a.threads} --iters {a.iters}` medians (runs of the two "
          f"files alternate); per run: the median over the rounds of the median of the per-run int8 / float; "
          f"files in {work}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Runs the SGEMM benchmarks (Kestrel and dnnl_sgemm in one binary, repetitions interleaved at
random so both see the same machine load) and prints medians side by side.

    bench/sgemm_table.py build/bench/kestrel_kernel_bench [--reps 7] [--filter REGEX] [--json out.json]
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--filter", default="")
    ap.add_argument("--min-time", default="0.2")
    ap.add_argument("--json", help="keep the raw Google Benchmark JSON here")
    ap.add_argument("--peak", type=float, default=0.0, help="single-core peak GFLOP/s (default: measure)")
    ap.add_argument("--from-json", help="only format an earlier --json output")
    args = ap.parse_args()

    out = args.json or tempfile.mktemp(suffix=".json")
    filt = "fma_peak|sgemm/(kestrel|kestrel_packedA|dnnl)/" + (f".*({args.filter})" if args.filter else "")
    cmd = [args.binary, f"--benchmark_filter={filt}", f"--benchmark_repetitions={args.reps}",
           "--benchmark_enable_random_interleaving=true", f"--benchmark_min_time={args.min_time}",
           f"--benchmark_out={out}", "--benchmark_out_format=json"]
    print("$ " + " ".join(cmd), file=sys.stderr)
    if not args.from_json:
        with open(os.devnull, "w") as devnull:
            subprocess.run(cmd, check=True, stdout=devnull)
    with open(args.from_json or out) as f:
        data = json.load(f)

    runs = collections.defaultdict(list)
    cpu_runs = collections.defaultdict(list)
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" or "GFLOPS" not in b:
            continue
        name = b["run_name"].replace("/real_time", "").replace("/min_time:0.300", "")
        runs[name].append(b["GFLOPS"])
        if "GFLOPS_cpu" in b:
            cpu_runs[name].append(b["GFLOPS_cpu"])
    med = {k: statistics.median(v) for k, v in runs.items()}
    cmed = {k: statistics.median(v) for k, v in cpu_runs.items()}
    # The widest FMA the CPU has: the AVX-512 probe is skipped (no result) on AVX2-only hosts.
    isa = "avx512" if med.get("fma_peak/avx512/t1") else "avx2"
    peak = args.peak or med.get(f"fma_peak/{isa}/t1", 0.0)
    cpu_peak = cmed.get(f"fma_peak/{isa}/t1", 0.0)
    ctx = data["context"]
    print(f"host: {ctx.get('host_name')}  cpus: {ctx.get('num_cpus')}  load avg: {ctx.get('load_avg')}")
    print(f"single-core {isa.upper()} FMA peak (median of {args.reps}): {peak:.1f} GFLOP/s wall, {cpu_peak:.1f} by CPU time")
    print()
    print("GFLOP/s, medians by wall time; 'cpu:' columns (t1 only) divide by the thread's CPU time,")
    print("which discounts time the thread was descheduled on a loaded machine.")
    hdr = (f"{'shape':28s} {'thr':>3s} {'kestrel':>8s} {'packedA':>8s} {'dnnl':>8s} {'k/dnnl':>7s} {'pA/dnnl':>7s}"
           f" {'k %peak':>8s} | {'cpu:kes':>8s} {'cpu:pA':>8s} {'cpu:dnnl':>8s} {'k/dnnl':>7s} {'pA/dnnl':>7s}")
    print(hdr)
    print("-" * len(hdr))
    # Registration order (the order of the shape list in the benchmark), not the shuffled run order.
    order = {}
    for b in data["benchmarks"]:
        name = b["run_name"].replace("/real_time", "")
        order.setdefault(name, b.get("family_index", len(order)))
    shapes = []
    for k in sorted(runs, key=lambda k: order.get(k, 0)):
        parts = k.split("/")
        if parts[0] == "sgemm" and (parts[2], parts[3]) not in shapes:
            shapes.append((parts[2], parts[3]))
    for shape, thr in shapes:
        kk = med.get(f"sgemm/kestrel/{shape}/{thr}")
        kp = med.get(f"sgemm/kestrel_packedA/{shape}/{thr}")
        dn = med.get(f"sgemm/dnnl/{shape}/{thr}")
        nthr = int(thr[1:])
        rat = lambda x, y: f"{x / y:7.2f}" if x and y else f"{'-':>7s}"
        pct = f"{100 * kk / (peak * nthr):7.1f}%" if kk and peak else f"{'-':>8s}"
        fmt = lambda x: f"{x:8.1f}" if x else f"{'-':>8s}"
        line = f"{shape:28s} {nthr:3d} {fmt(kk)} {fmt(kp)} {fmt(dn)} {rat(kk, dn)} {rat(kp, dn)} {pct}"
        if nthr == 1:
            ck = cmed.get(f"sgemm/kestrel/{shape}/{thr}")
            cp = cmed.get(f"sgemm/kestrel_packedA/{shape}/{thr}")
            cd = cmed.get(f"sgemm/dnnl/{shape}/{thr}")
            line += f" | {fmt(ck)} {fmt(cp)} {fmt(cd)} {rat(ck, cd)} {rat(cp, cd)}"
        print(line)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Kestrel vs ONNX Runtime on every shared model, in one run: a measuring script, never a build or
test dependency.

For each model in $KESTREL_DATA/models/manifest.json, at each thread count, for several
repetitions, runs `kestrel bench --json` and ONNX Runtime (../shared/tools/peers/ort_bench.js,
npm onnxruntime-node) back to back on the model's reference inputs, alternating which engine goes
first, so that both see the same machine noise. Each engine's figure is the median of its
per-repetition medians. Prints a markdown table (model, threads, medians, ratio Kestrel/ORT, the
paired ratio (median and range over repetitions of the two back-to-back runs' ratio), peak RSS,
arena bytes and allocations per run) and writes the raw JSON lines.

  /usr/bin/python3 bench/run_peers.py [--threads 1 2] [--reps 3] [--warmup 5] [--iters 30]
                                       [--models a,b] [--kestrel PATH] [--out results.jsonl]

Environment: KESTREL_DATA (default: ../shared beside the source tree), ORT_NODE_DIR (the folder
holding node_modules/onnxruntime-node, default ~/.cache/kestrel-peers/ort), KESTREL_BIN.
See bench/README.md.
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def log(msg):
    print(f"[run_peers] {msg}", file=sys.stderr, flush=True)


def data_dir():
    d = os.environ.get("KESTREL_DATA")
    return d if d else os.path.normpath(os.path.join(ROOT, "..", "shared"))


def load_models(models_dir, only):
    with open(os.path.join(models_dir, "manifest.json")) as f:
        manifest = json.load(f)
    models = []
    for name, m in manifest["models"].items():
        if only and name not in only:
            continue
        path = os.path.join(models_dir, m.get("file", name + ".onnx"))
        inputs = [(i["name"], os.path.join(models_dir, i["file"])) for i in m.get("inputs", []) if "file" in i]
        models.append({"name": name, "path": path, "inputs": inputs, "ops": m.get("op_types", {})})
    missing = sorted(set(only or []) - {m["name"] for m in models})
    if missing:
        sys.exit(f"run_peers: not in the manifest: {', '.join(missing)}")
    return models


def run_json(cmd, timeout, engine, model, threads):
    """Runs cmd; returns the last JSON line of its stdout, or a record with an error."""
    # os.wait4 gives this child's own peak RSS (ru_maxrss), whatever the engine reports.
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        deadline = time.time() + timeout
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.time() > deadline:
                p.kill()
                os.wait4(p.pid, 0)
                return {"engine": engine, "model": model, "threads": threads, "error": f"timeout {timeout}s"}
            time.sleep(0.05)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        p.stdout, p.stderr = out.read(), err.read()
    max_rss = usage.ru_maxrss * 1024  # KiB on Linux
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    rec = None
    if lines:
        try:
            rec = json.loads(lines[-1])
        except json.JSONDecodeError:
            rec = None
    if p.returncode != 0 or rec is None or "error" in (rec or {}):
        why = (rec or {}).get("error") or p.stderr.strip().splitlines()[-1:] or [f"exit {p.returncode}"]
        if isinstance(why, list):
            why = why[0] if why else f"exit {p.returncode}"
        if p.returncode < 0:
            why = f"crashed (signal {-p.returncode})"
        return {"engine": engine, "model": model, "threads": threads, "error": str(why)[:300]}
    rec["engine"] = engine
    rec["process_peak_rss_bytes"] = max_rss
    return rec


def fmt_ms(v):
    return "-" if v is None else (f"{v:.2f}" if v >= 1 else f"{v:.3f}")


def fmt_bytes(n):
    if n is None:
        return "-"
    v, units = float(n), ["B", "KiB", "MiB", "GiB"]
    u = 0
    while v >= 1024 and u < len(units) - 1:
        v /= 1024
        u += 1
    return f"{int(v)} B" if u == 0 else f"{v:.1f} {units[u]}"


def short_error(e):
    e = " ".join(str(e).split()).replace("|", "/")
    return e if len(e) <= 90 else e[:87] + "..."


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--reps", type=int, default=3, help="repetitions per model and thread count (default 3)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--max-time", type=float, default=20.0,
                    help="seconds of timed runs per Kestrel measurement before it stops early (0: none); "
                         "keeps slow reference kernels from taking hours")
    ap.add_argument("--models", default="", help="comma-separated model names (default: all in the manifest)")
    ap.add_argument("--kestrel", default=os.environ.get("KESTREL_BIN", os.path.join(ROOT, "build/tools/kestrel/kestrel")))
    ap.add_argument("--kestrel-args", default="", help="extra arguments for kestrel bench (e.g. '--isa avx2')")
    ap.add_argument("--ort-bench", default=None, help="ort_bench.js (default: $KESTREL_DATA/tools/peers/ort_bench.js)")
    ap.add_argument("--no-ort", action="store_true", help="Kestrel only")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per engine run (default 900)")
    ap.add_argument("--out", default=None, help="raw JSON lines (default: a new file in the temp folder)")
    args = ap.parse_args()

    data = data_dir()
    models_dir = os.path.join(data, "models")
    if not os.path.isfile(os.path.join(models_dir, "manifest.json")):
        sys.exit(f"run_peers: no {models_dir}/manifest.json (set KESTREL_DATA)")
    only = [m for m in args.models.split(",") if m]
    models = load_models(models_dir, only)
    if not os.access(args.kestrel, os.X_OK):
        sys.exit(f"run_peers: no kestrel binary at {args.kestrel} (build it, or pass --kestrel)")
    ort_js = args.ort_bench or os.path.join(data, "tools", "peers", "ort_bench.js")
    ort_env = dict(os.environ)
    ort_env.setdefault("ORT_NODE_DIR", os.path.expanduser("~/.cache/kestrel-peers/ort"))
    use_ort = not args.no_ort
    if use_ort and not os.path.isfile(ort_js):
        log(f"no {ort_js}: ONNX Runtime columns will be empty")
        use_ort = False
    if use_ort:
        probe = subprocess.run(["node", "-e", "require(process.env.ORT_NODE_DIR + '/node_modules/onnxruntime-node')"],
                               env=ort_env, capture_output=True, text=True)
        if probe.returncode != 0:
            log(f"onnxruntime-node not found under ORT_NODE_DIR={ort_env['ORT_NODE_DIR']}: ONNX Runtime columns "
                "will be empty (see ../shared/tools/peers/README.md)")
            use_ort = False
    os.environ.update({"ORT_NODE_DIR": ort_env["ORT_NODE_DIR"]})

    out = args.out or os.path.join(tempfile.gettempdir(),
                                   f"kestrel-peers-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}.jsonl")
    raw = open(out, "w")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    log(f"{len(models)} models, threads {args.threads}, {args.reps} reps, warmup {args.warmup}, iters {args.iters}; "
        f"{cpu}, {os.cpu_count()} cpus, load {open('/proc/loadavg').read().split()[:3]}; raw: {out}")

    results = {}  # (model, threads, engine) -> list of records
    start = time.time()
    for m in models:
        for rep in range(args.reps):
            for t in args.threads:
                k_cmd = [args.kestrel, "bench", m["path"], "--json", "--threads", str(t), "--warmup", str(args.warmup),
                         "--iters", str(args.iters)]
                if args.max_time > 0:
                    k_cmd += ["--max-time", str(args.max_time)]
                for name, f in m["inputs"]:
                    k_cmd += ["--input", f"{name}={f}"]
                k_cmd += shlex.split(args.kestrel_args)
                o_cmd = ["node", ort_js, m["path"], "--threads", str(t), "--warmup", str(args.warmup),
                         "--iters", str(args.iters)]
                runs = [("kestrel", k_cmd)] + ([("onnxruntime", o_cmd)] if use_ort else [])
                if rep % 2 == 1:
                    runs.reverse()  # alternate who goes first
                for engine, cmd in runs:
                    prev = results.get((m["name"], t, engine), [])
                    if prev and "error" in prev[-1]:
                        continue  # a model that fails once fails every time: don't wait for it again
                    rec = run_json(cmd, args.timeout, engine, m["name"], t)
                    rec.update({"rep": rep, "model": m["name"], "threads": t})
                    raw.write(json.dumps(rec) + "\n")
                    raw.flush()
                    results.setdefault((m["name"], t, engine), []).append(rec)
                    status = rec.get("error") or f"median {rec.get('median_ms')} ms"
                    log(f"{m['name']} {t}t rep {rep + 1}/{args.reps} {engine}: {status}")
    raw.close()

    def summary(model, t, engine):
        recs = results.get((model, t, engine), [])
        ok = [r for r in recs if "error" not in r]
        if not ok:
            return None, (recs[0]["error"] if recs else None)
        return ok, None

    lines = []
    lines.append("| model | threads | Kestrel median ms | ORT median ms | Kestrel / ORT | paired (range) | "
                 "Kestrel peak RSS | ORT peak RSS | Kestrel arena (no reuse) | allocs/run |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    errors = {}
    for m in models:
        for t in args.threads:
            k, k_err = summary(m["name"], t, "kestrel")
            o, o_err = summary(m["name"], t, "onnxruntime")
            k_ms = statistics.median(r["median_ms"] for r in k) if k else None
            o_ms = statistics.median(r["median_ms"] for r in o) if o else None
            ratio = f"{k_ms / o_ms:.2f}" if k_ms and o_ms else "-"
            # The same repetition's two runs, adjacent in time: their ratio cancels what the host does to both.
            o_by_rep = {r["rep"]: r["median_ms"] for r in o or []}
            pairs = [r["median_ms"] / o_by_rep[r["rep"]] for r in k or [] if o_by_rep.get(r["rep"])]
            paired = (f"{statistics.median(pairs):.2f} ({min(pairs):.2f}-{max(pairs):.2f})" if pairs else "-")
            rss = max(r["peak_rss_bytes"] for r in k) if k else None
            o_rss = max(r["process_peak_rss_bytes"] for r in o) if o else None
            arena = f"{fmt_bytes(k[0]['arena_bytes'])} ({fmt_bytes(k[0]['sum_activation_bytes'])})" if k else "-"
            allocs = str(max(r["allocs_per_run"] for r in k)) if k else "-"
            k_cell = fmt_ms(k_ms) if k else ("ERR" if k_err else "-")
            o_cell = fmt_ms(o_ms) if o else ("ERR" if o_err else "-")
            if k_err:
                errors.setdefault(("Kestrel", m["name"]), k_err)
            if o_err:
                errors.setdefault(("ORT", m["name"]), o_err)
            lines.append(f"| {m['name']} | {t} | {k_cell} | {o_cell} | {ratio} | {paired} | {fmt_bytes(rss)} | "
                         f"{fmt_bytes(o_rss)} | {arena} | {allocs} |")
    print("\n".join(lines))
    print()
    print(f"Command: {' '.join(shlex.quote(a) for a in [sys.executable] + sys.argv)}")
    print(f"Medians of {args.reps} repetitions, each the median of up to {args.iters} timed runs after {args.warmup} "
          f"warm-up runs (Kestrel stops a measurement after {args.max_time:g} s of timed runs), on the reference "
          f"inputs; engines interleaved per model. Paired: the median (and range) over repetitions of Kestrel's "
          f"median over ORT's in the same repetition, run back to back. {cpu}, {os.cpu_count()} cpus; "
          f"{(time.time() - start) / 60:.1f} min; raw: {out}")
    print("Peak RSS: the process's high-water mark (Kestrel: VmHWM reported by kestrel bench; ORT: ru_maxrss of the "
          "node process, which includes the Node.js runtime, about 40 MiB).")
    print("Kestrel arena: activation arena bytes (in parentheses: the sum of all activation sizes, i.e. without "
          "reuse); allocs/run: heap allocations per Session::run, counted by `kestrel bench`.")
    for (engine, model), e in sorted(errors.items()):
        print(f"- {engine} {model}: {short_error(e)}")


if __name__ == "__main__":
    main()

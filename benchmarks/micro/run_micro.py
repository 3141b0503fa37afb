#!/usr/bin/env python3
"""Runs every Google Benchmark micro-benchmark binary of a build and writes the results with the
machine's description to benchmarks/results/micro.json and benchmarks/results/micro.md.

  python3 benchmarks/micro/run_micro.py                       # build/, every binary, 3 repetitions
  python3 benchmarks/micro/run_micro.py --only micro_ipu_plan --filter stem
  python3 benchmarks/micro/run_micro.py --build other-build --repetitions 5

Builds nothing: build the binaries first (scripts/build.sh, or `cmake --build build --target
micro_kernels micro_tpu_model micro_ipu_model micro_ipu_plan trace_micro_bench`). A binary is a
micro-benchmark when it links Google Benchmark (its symbols name benchmark::Initialize); the other
benches in build/benchmarks and build/bin (end-to-end ones writing their own results) are skipped.
Each binary runs as its own process (the SystemC models allow one simulation per process), with
--benchmark_repetitions and aggregates only; the tables show the median of the repetitions and the
coefficient of variation of the time (the machine may be shared: the load average is recorded).
Binaries that use OpenMP (the cpu backend's kernels) run once per --omp-threads setting: by default
with OpenMP's own choice (every core) and with OMP_NUM_THREADS=1, since on a loaded machine a
thread descheduled at a barrier can cost more than the parallelism gains.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import machine  # noqa: E402

MARKER = b"_ZN9benchmark10Initialize"  # benchmark::Initialize(int*, char**, ...), static or shared
OPENMP_MARKER = b"GOMP_"  # libgomp entry points the compiler emits for parallel regions
# What the known binaries measure (one line under their table's title).
DESCRIPTIONS = {
    "micro_kernels": "cpu backend kernels (benchmarks/micro/kernels_bench.cpp): the f32 GEMM, MatMul nodes "
                     "per dtype on the same shapes (GFLOP/s), a ResNet-50 3x3 conv, bf16/fp16 rounding.",
    "micro_tpu_model": "SystemC TPU chip model, preset v4 (benchmarks/micro/tpu_model_bench.cpp): a hand-built "
                       "program of ResNet-50 GEMM layers at batch 8, rerun on one elaboration; rates per CPU second.",
    "micro_ipu_model": "SystemC IPU model, gc200 x1 (benchmarks/micro/ipu_model_bench.cpp): a hand-built BSP "
                       "program of the same layers, rerun on one elaboration; rates per CPU second.",
    "micro_ipu_plan": "ipu-emu planner (benchmarks/micro/ipu_plan_bench.cpp): lowering one ResNet-50 layer "
                      "(batch 8, float32) onto a GC200's tiles; time per plan, and the plan chosen.",
    "trace_micro_bench": "trace writer (benchmarks/traces/trace_micro_bench.cpp): caller cost of one event, "
                         "and events committed to SQLite per second.",
}
# Fields of a Google Benchmark JSON entry that are not user counters.
STANDARD = {"name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
            "threads", "aggregate_name", "aggregate_unit", "iterations", "real_time", "cpu_time",
            "time_unit", "label", "error_occurred", "error_message", "repetition_index", "skipped",
            "skip_message"}


def find_binaries(build):
    found = []
    for sub in ("benchmarks", "bin"):
        d = os.path.join(build, sub)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                continue
            with open(path, "rb") as f:
                data = f.read()
            if MARKER in data:
                found.append((path, OPENMP_MARKER in data))
    return found


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def run_binary(path, repetitions, filt, min_time, omp_threads):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as t:
        out = t.name
    cmd = [path, f"--benchmark_out={out}", "--benchmark_out_format=json",
           f"--benchmark_repetitions={repetitions}", "--benchmark_report_aggregates_only=true"]
    if filt:
        cmd.append(f"--benchmark_filter={filt}")
    if min_time:
        cmd.append(f"--benchmark_min_time={min_time}")
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    env.pop("OMP_NUM_THREADS", None)
    if omp_threads != "default":
        env["OMP_NUM_THREADS"] = omp_threads
    prefix = f"OMP_NUM_THREADS={omp_threads} " if omp_threads != "default" else ""
    print(f"run_micro: {prefix}{' '.join(cmd)}", file=sys.stderr, flush=True)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with open(out) as f:
            data = json.load(f)
    except (OSError, ValueError):
        data = None
    finally:
        if os.path.exists(out):
            os.remove(out)
    head = {"binary": os.path.basename(path), "omp_threads": omp_threads, "command": cmd}
    if p.returncode != 0 or data is None:
        return dict(head, error=f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[-2000:]}")
    return dict(head, context=data.get("context", {}), benchmarks=data.get("benchmarks", []))


def si(v):
    if float(v).is_integer() and abs(v) < 1e6:
        return str(int(v))
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:.3g}"


def fmt_time(value, unit):
    ns = value * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]
    for div, name in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if ns >= div:
            return f"{ns / div:.4g} {name}"
    return f"{ns:.4g} ns"


def table(result):
    rows = {}
    order = []
    for b in result["benchmarks"]:
        name = b.get("run_name", b["name"])
        if name not in rows:
            rows[name] = {}
            order.append(name)
        rows[name][b.get("aggregate_name", "")] = b
    counters = []
    for name in order:
        for k in rows[name].get("median", {}):
            if k not in STANDARD and k not in counters:
                counters.append(k)
    head = ["benchmark", "label", "median time", "median CPU time", "cv"] + counters
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in order:
        agg = rows[name]
        med = agg.get("median")
        if med is None:
            err = next(iter(agg.values())).get("error_message", "no median")
            lines.append(f"| {name} | error: {err} |" + " |" * (len(head) - 2))
            continue
        mean, sd = agg.get("mean", {}).get("real_time"), agg.get("stddev", {}).get("real_time")
        cv = f"{100 * sd / mean:.1f}%" if mean and sd is not None else ""
        cells = [f"`{name}`", med.get("label", ""), fmt_time(med["real_time"], med["time_unit"]),
                 fmt_time(med["cpu_time"], med["time_unit"]), cv]
        cells += [si(med[c]) if c in med else "" for c in counters]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(doc):
    m = doc["machine"]
    out = ["# Micro-benchmarks", "",
           "Written by `benchmarks/micro/run_micro.py` (Google Benchmark; median of "
           f"{doc['repetitions']} repetitions; cv = stddev/mean of the measured time). Rates are per "
           "second of the time the benchmark measures: wall time for names ending in `/real_time` "
           "(multi-threaded kernels), else CPU time of the benchmark thread (single-threaded "
           "simulation and planning).", "",
           "## Machine", "", machine.markdown(m), "",
           f"- date: {doc['date']}",
           f"- load average (1, 5, 15 min) at start: {doc['loadavg_start']}, at end: {doc['loadavg_end']}"]
    ctx = next((r["context"] for r in doc["results"] if "context" in r), None)
    if ctx:
        out.append(f"- Google Benchmark: {ctx.get('num_cpus')} CPUs at {ctx.get('mhz_per_cpu')} MHz, "
                   f"Debian's libbenchmark reports itself built as {ctx.get('library_build_type')} "
                   "(the harness; mimic's code is the Release build above); CPU scaling "
                   f"{'on' if ctx.get('cpu_scaling_enabled') else 'off'}")
        caches = ", ".join(f"L{c['level']} {c['type']} {c['size'] // 1024} KiB x{c.get('num_sharing', 1)} sharing"
                           for c in ctx.get("caches", []))
        if caches:
            out.append(f"- caches: {caches}")
    for r in doc["results"]:
        title = r["binary"] + (f" (OMP_NUM_THREADS={r['omp_threads']})" if r["omp_threads"] != "default" else "")
        out += ["", f"## {title}", ""]
        if r["binary"] in DESCRIPTIONS:
            out += [DESCRIPTIONS[r["binary"]], ""]
        if "error" in r:
            out.append(f"Failed: {r['error']}")
        else:
            out.append(table(r))
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build directory (default build/)")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results"), help="results directory")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--only", nargs="*", help="binary names to run (default: every micro-benchmark)")
    ap.add_argument("--filter", help="passed as --benchmark_filter to every binary")
    ap.add_argument("--min-time", help="passed as --benchmark_min_time (seconds) to every binary")
    ap.add_argument("--omp-threads", default="default,1",
                    help="comma-separated OMP_NUM_THREADS settings for OpenMP binaries ('default': unset)")
    a = ap.parse_args()
    binaries = find_binaries(a.build)
    if a.only:
        binaries = [b for b in binaries if os.path.basename(b[0]) in a.only]
        missing = set(a.only) - {os.path.basename(b[0]) for b in binaries}
        if missing:
            sys.exit(f"run_micro: error: not built or not a micro-benchmark: {', '.join(sorted(missing))} "
                     f"(looked in {a.build}/benchmarks and {a.build}/bin)")
    if not binaries:
        sys.exit(f"run_micro: error: no Google Benchmark binaries in {a.build}/benchmarks or {a.build}/bin; "
                 "build them first")
    doc = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "repetitions": a.repetitions,
           "machine": machine.describe(a.build), "loadavg_start": loadavg()}
    settings = [t.strip() for t in a.omp_threads.split(",") if t.strip()]
    for t in settings:
        if t != "default" and not (t.isdigit() and int(t) > 0):
            sys.exit(f"run_micro: error: --omp-threads takes 'default' or positive integers, got '{t}'")
    doc["results"] = [run_binary(path, a.repetitions, a.filter, a.min_time, t)
                      for path, openmp in binaries for t in (settings if openmp else ["default"])]
    doc["loadavg_end"] = loadavg()
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "micro.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(a.out, "micro.md"), "w") as f:
        f.write(markdown(doc))
    failed = [r["binary"] for r in doc["results"] if "error" in r]
    print(f"run_micro: {len(doc['results']) - len(failed)} of {len(doc['results'])} runs succeeded; wrote "
          f"{os.path.join(a.out, 'micro.json')} and micro.md", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

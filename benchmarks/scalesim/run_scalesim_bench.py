#!/usr/bin/env python3
"""Speed of `mimic scalesim` (the SCALE-Sim v2 drop-in) on a 1024x1024x1024 GEMM on a 32x32 array,
one run per dataflow and interface-bandwidth mode (CALC; USER at 10 words per cycle, SCALE-Sim's
stalling read buffers): host wall time (min and median of --runs runs) and peak RSS of the process.
With --scalesim DIR (a checkout of scale-sim-v2), also times SCALE-Sim v2 itself once per
--scalesim-sizes GEMM (ws, CALC) and --scalesim-user-sizes GEMM (ws, USER), on Debian's python3,
and records its peak RSS. Writes benchmarks/results/scalesim.{json,md}.

  python3 benchmarks/scalesim/run_scalesim_bench.py --build build
  python3 benchmarks/scalesim/run_scalesim_bench.py --build build --scalesim /tmp/scalesim --scalesim-sizes 256 \
      --scalesim-user-sizes 64
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import machine  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))

CONFIG = """[general]
run_name = {name}

[architecture_presets]
ArrayHeight:    32
ArrayWidth:     32
IfmapSramSzkB:   64
FilterSramSzkB:  64
OfmapSramSzkB:   64
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Bandwidth : 10
Dataflow : {df}
MemoryBanks:   1

[run_presets]
InterfaceBandwidth: {mode}
"""

MODES = ("CALC", "USER")


def write_inputs(tmp, df, size, mode):
    cfg = os.path.join(tmp, f"s32_{df}_{mode}.cfg")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(name=f"gemm{size}_{df}", df=df, mode=mode))
    topo = os.path.join(tmp, f"gemm{size}.csv")
    with open(topo, "w") as f:
        f.write(f"Layer, M, N, K,\ngemm{size}, {size}, {size}, {size},\n")
    return cfg, topo


def timed(cmd, cwd=None, env=None):
    """Wall seconds and peak RSS (KiB) of one child process (wait4's rusage)."""
    with tempfile.TemporaryFile() as err_file:  # not a pipe: SCALE-Sim's progress bars would fill it
        start = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err_file)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - start
        p.returncode = os.waitstatus_to_exitcode(status)
        err_file.seek(0)
        err = err_file.read().decode(errors="replace")
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {err.strip().splitlines()[-1:]}")
    return wall, usage.ru_maxrss


def total_cycles(report_dir):
    with open(os.path.join(report_dir, "COMPUTE_REPORT.csv")) as f:
        return int(f.read().splitlines()[1].split(",")[1])


def bench_mimic(build, tmp, runs, extra=()):
    """Every dataflow and mode at 1024, then `extra` (mode, size) pairs in ws (SCALE-Sim's sizes)."""
    rows = []
    cases = [(mode, df, 1024) for mode in MODES for df in ("os", "ws", "is")]
    cases += [(mode, "ws", size) for mode, size in extra if size != 1024]
    for mode, df, size in cases:
        cfg, topo = write_inputs(tmp, df, size, mode)
        out = os.path.join(tmp, "mimic_out")
        cmd = [os.path.join(build, "bin", "mimic"), "scalesim", "-c", cfg, "-t", topo, "-i", "gemm", "-p", out]
        samples = [timed(cmd) for _ in range(runs)]
        walls = [w for w, _ in samples]
        rows.append({"tool": "mimic scalesim", "mode": mode, "dataflow": df, "gemm": size, "wall_min": min(walls),
                     "wall_median": statistics.median(walls), "runs": runs,
                     "max_rss_kib": max(r for _, r in samples),
                     "total_cycles": total_cycles(os.path.join(out, f"gemm{size}_{df}"))})
    return rows


def bench_scalesim(checkout, tmp, sizes):
    """`sizes`: (mode, GEMM size) pairs."""
    rows = []
    env = dict(os.environ, PYTHONPATH=checkout)
    for mode, size in sizes:
        cfg, topo = write_inputs(tmp, "ws", size, mode)
        out = os.path.join(tmp, "scalesim_out")
        cmd = ["/usr/bin/python3", os.path.join(checkout, "scalesim", "scale.py"), "-c", cfg, "-t", topo, "-i", "gemm",
               "-p", out]
        wall, rss = timed(cmd, cwd=checkout, env=env)
        rows.append({"tool": "SCALE-Sim v2", "mode": mode, "dataflow": "ws", "gemm": size, "wall_min": wall, "wall_median": wall,
                     "runs": 1, "max_rss_kib": rss, "total_cycles": total_cycles(os.path.join(out, f"gemm{size}_ws"))})
    return rows


def markdown(result):
    lines = ["# `mimic scalesim` speed", "",
             "Written by `benchmarks/scalesim/run_scalesim_bench.py`: the SCALE-Sim v2 drop-in on a GEMM M=N=K "
             "on a 32x32 array (64 kB SRAMs; CALC mode, and USER mode at 10 words per cycle: SCALE-Sim's "
             "stalling read buffers), all three reports written; host wall time of the whole "
             "process and its peak RSS. SCALE-Sim v2 rows: the upstream Python simulator on the same kind of "
             "input, one run (see the size column).", "",
             "## Machine", "", machine.markdown(result["machine"]), "",
             f"- date: {result['date']}", "",
             "| tool | mode | dataflow | GEMM M=N=K | wall min | wall median | runs | peak RSS | Total Cycles |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['tool']} | {r.get('mode', 'CALC')} | {r['dataflow']} | {r['gemm']} | {r['wall_min']:.3f} s | "
                     f"{r['wall_median']:.3f} s | {r['runs']} | {r['max_rss_kib'] / 1024:.1f} MiB | "
                     f"{r['total_cycles']} |")
    for note in result.get("notes", []):
        lines += ["", note]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--scalesim", help="scale-sim-v2 checkout to time as well")
    ap.add_argument("--scalesim-sizes", default="256", help="comma-separated GEMM sizes for SCALE-Sim, CALC mode")
    ap.add_argument("--scalesim-user-sizes", default="", help="comma-separated GEMM sizes for SCALE-Sim, USER mode")
    ap.add_argument("--note", action="append", default=[], help="a line added under the table")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "scalesim"))
    args = ap.parse_args()
    result = {"machine": machine.describe(args.build), "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "rows": [],
              "notes": args.note}
    with tempfile.TemporaryDirectory() as tmp:
        sizes = [("CALC", int(s)) for s in args.scalesim_sizes.split(",") if s]
        sizes += [("USER", int(s)) for s in args.scalesim_user_sizes.split(",") if s]
        result["rows"] += bench_mimic(args.build, tmp, args.runs, sizes if args.scalesim else ())
        if args.scalesim:
            result["rows"] += bench_scalesim(args.scalesim, tmp, sizes)
    with open(args.out + ".json", "w") as f:
        json.dump(result, f, indent=1)
    with open(args.out + ".md", "w") as f:
        f.write(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()

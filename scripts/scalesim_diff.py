#!/usr/bin/env python3
"""Differential test of `mimic scalesim` against SCALE-Sim v2 itself: random small configs (array
shapes, SRAM sizes, offsets, dataflows) and topologies (conv layers with strides, GEMMs) run through
both, in SCALE-Sim's CALC and USER interface-bandwidth modes; the three reports must be equal
byte for byte. Needs a scale-sim-v2 checkout and its Python
dependencies (Debian: python3-numpy python3-tqdm); it is a verification tool, not a test dependency.

  python3 scripts/scalesim_diff.py --scalesim /tmp/scale-sim-v2 --cases 100 --seed 1

SCALE-Sim's fold averages use Python's sum(); on Python < 3.12 this script swaps in CPython 3.12's
compensated float sum, which mimic reproduces (upstream's golden trace was made on Python >= 3.12).
"""
import argparse
import filecmp
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPORTS = ("COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv", "DETAILED_ACCESS_REPORT.csv")

# Runs scale.py with CPython 3.12's sum() for floats (Neumaier compensation).
RUNNER = r'''
import builtins, math, os, runpy, sys
_sum = builtins.sum
def sum312(iterable, start=0):
    items = list(iterable)
    if start != 0 or not items or not all(type(x) is float for x in items):
        return _sum(items, start)
    f, c = items[0], 0.0
    for x in items[1:]:
        t = f + x
        c += (f - t) + x if abs(f) >= abs(x) else (x - t) + f
        f = t
    return f + c if c and math.isfinite(c) else f
builtins.sum = sum312
script = os.path.join(sys.argv[1], "scalesim", "scale.py")
sys.argv = ["scale.py"] + sys.argv[2:]
runpy.run_path(script, run_name="__main__")
'''

CONFIG = """[general]
run_name = r

[architecture_presets]
ArrayHeight: {rows}
ArrayWidth: {cols}
IfmapSramSzkB: {kb[0]}
FilterSramSzkB: {kb[1]}
OfmapSramSzkB: {kb[2]}
IfmapOffset: {offset}
FilterOffset: 10000000
OfmapOffset: 20000000
Bandwidth : {bw}
Dataflow : {df}

[run_presets]
InterfaceBandwidth: {mode}
"""


def random_case(rng, modes):
    arch = dict(rows=rng.choice([1, 2, 3, 4, 5, 8, 16, 32]), cols=rng.choice([1, 2, 3, 4, 7, 8, 16, 32]),
                kb=[rng.choice([1, 1, 2, 3, 8, 64]) for _ in range(3)], offset=rng.choice([0, 5, 1000]),
                df=rng.choice(["os", "ws", "is"]))
    gemm = rng.random() < 0.3
    rows = ["header,"]
    for j in range(rng.randint(1, 2)):
        if gemm:
            rows.append(f"g{j}, {rng.randint(1, 70)}, {rng.randint(1, 70)}, {rng.randint(1, 70)},")
        else:
            h, w = rng.randint(1, 20), rng.randint(1, 20)
            rows.append(f"l{j}, {h}, {w}, {rng.randint(1, h)}, {rng.randint(1, w)}, {rng.randint(1, 6)}, "
                        f"{rng.randint(1, 40)}, {rng.randint(1, 4)}, {rng.randint(1, 4)},")
    # Drawn last, so that a CALC-only run draws the same cases as before USER mode was added.
    mode = modes[0] if len(modes) == 1 else rng.choice(modes)
    bw = rng.choice([1, 2, 3, 8, 10, 64]) if mode == "USER" else 10
    return CONFIG.format(mode=mode, bw=bw, **arch), "\n".join(rows) + "\n", gemm


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scalesim", required=True, help="scale-sim-v2 checkout")
    ap.add_argument("--mimic", default=os.path.join(ROOT, "build", "bin", "mimic"))
    ap.add_argument("--cases", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mode", choices=["calc", "user", "both"], default="both",
                    help="SCALE-Sim's InterfaceBandwidth: CALC, USER (stalling read buffers) or a random mix")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    env = dict(os.environ, PYTHONPATH=args.scalesim)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        runner = os.path.join(tmp, "run_scalesim.py")
        with open(runner, "w") as f:
            f.write(RUNNER)
        for i in range(args.cases):
            d = os.path.join(tmp, str(i))
            os.makedirs(d)
            cfg, topo, gemm = random_case(rng, {"calc": ["CALC"], "user": ["USER"]}.get(args.mode, ["CALC", "USER"]))
            for name, text in (("c.cfg", cfg), ("t.csv", topo)):
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            common = ["-c", os.path.join(d, "c.cfg"), "-t", os.path.join(d, "t.csv")] + (["-i", "gemm"] if gemm else [])
            ref = subprocess.run([sys.executable, runner, args.scalesim] + common + ["-p", os.path.join(d, "ref")],
                                 cwd=args.scalesim, env=env, capture_output=True, text=True)
            got = subprocess.run([args.mimic, "scalesim"] + common + ["-p", os.path.join(d, "mimic")],
                                 capture_output=True, text=True)
            if ref.returncode != 0:
                print(f"case {i}: SCALE-Sim failed ({ref.stderr.strip().splitlines()[-1:]}); mimic: {got.stderr.strip()}")
                continue
            same = got.returncode == 0 and all(
                filecmp.cmp(os.path.join(d, "ref", "r", r), os.path.join(d, "mimic", "r", r), shallow=False)
                for r in REPORTS)
            if not same:
                failures += 1
                print(f"case {i}: reports differ\n{cfg}{topo}{got.stderr}")
    print(f"{args.cases} cases, {failures} different")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

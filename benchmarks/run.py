#!/usr/bin/env python3
"""mimic's benchmark suite, one command: every zoo model on every available device at batch 1 and 8,
beside PyTorch CPU on the same models in the same invocation, then the emulators' scaling with batch
and model size, then the trace benchmark (ingest rate, tracing overhead). Writes
benchmarks/results/e2e.{json,md} and benchmarks/results/scaling_{batch,size}.svg.

  python3 benchmarks/run.py                      # everything (about 15 minutes on 2 cores)
  python3 benchmarks/run.py --models resnet50 --batches 8 --devices cpu --no-scaling --no-trace-bench

Timings are host wall time of one forward pass: the minimum and the median of --runs runs after
--warmup runs. mimic runs as a subprocess (`mimic run --json`); PyTorch runs in this process with
torch.set_num_threads(cores), so both use every core. Each configuration is measured with numerics,
timing-only (emulators: cycles without computing values) and traced (`--trace`); the ratios in one
row come from runs made back to back, so noise from other work on the machine hits them alike.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine  # noqa: E402
import plots  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMULATORS = ("tpu-emu", "ipu-emu")
# Targets from the issues (ratios of host wall time; lower is better except where noted).
TARGETS = {"cpu_vs_pytorch": 1.5, "tpu-emu:v4_vs_cpu": 1.3, "ipu-emu:gc200_vs_cpu": 1.5,
           "timing_only_speedup": 20.0, "trace_events_per_s": 1e6, "trace_overhead": 0.05}


def mimic_run(build, model, device, batch, runs, warmup, extra=()):
    """One `mimic run --json` invocation; returns wall min/median, cycles and device seconds."""
    cmd = [os.path.join(build, "bin", "mimic"), "run", "--model", model, "--device", device, "--batch", str(batch),
           "--repeat", str(runs), "--warmup", str(warmup), "--json", "--no-compare", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        message = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1].replace("mimic: error: ", "")
        if message.startswith("Out of memory"):  # the IPU compiler's error: a result, not a failure
            message = "does not fit: " + message.split(" (")[0]
        return {"error": message}
    j = json.loads(p.stdout)
    r = j["report"]
    return {"wall_min": j["wall_seconds"]["min"], "wall_median": j["wall_seconds"]["median"],
            "cycles": r.get("cycles", 0), "device_seconds": r.get("device_seconds", 0),
            "compile_seconds": j["compile_seconds"]}


def torch_run(model, batch, runs, warmup):
    try:
        import torch
        import torch_models
    except ImportError as e:
        return {"error": f"PyTorch not installed ({e})"}
    torch.set_num_threads(os.cpu_count())
    module, shape, dtype = torch_models.build(model)
    module.eval()
    x = torch_models.example_input(shape, dtype, batch)
    times = []
    with torch.no_grad():
        for _ in range(warmup):
            module(x)
        for _ in range(runs):
            t = time.perf_counter()
            module(x)
            times.append(time.perf_counter() - t)
    return {"wall_min": min(times), "wall_median": statistics.median(times)}


def available_devices(build):
    p = subprocess.run([os.path.join(build, "bin", "mimic"), "devices", "--json"], capture_output=True, text=True)
    return [d["name"] for d in json.loads(p.stdout) if d["available"] and d["name"] in
            ("cpu", "tpu-emu:v4", "ipu-emu:gc200", "cuda:0")]


def is_emulator(device):
    return device.split(":")[0] in EMULATORS


def measure(a, model, device, batch, ref, cpu_min):
    """A device row: numerics, timing-only (emulators) and traced runs, back to back."""
    row = {"model": model, "batch": batch, "device": device, **mimic_run(a.build, model, device, batch, a.runs, a.warmup)}
    if "error" in row:
        return row
    row["vs_cpu"] = row["wall_min"] / cpu_min if cpu_min else None
    row["vs_pytorch"] = row["wall_min"] / ref["wall_min"] if ref and "error" not in ref else None
    if is_emulator(device):
        t = mimic_run(a.build, model, device, batch, a.runs, a.warmup, ["--timing-only"])
        if "error" not in t:
            row["timing_only_min"] = t["wall_min"]
            row["timing_only_speedup"] = row["wall_min"] / t["wall_min"]
    with tempfile.TemporaryDirectory() as tmp:
        t = mimic_run(a.build, model, device, batch, a.runs, a.warmup, ["--trace", os.path.join(tmp, "t.db")])
        if "error" not in t:
            row["traced_min"] = t["wall_min"]
            row["traced_ratio"] = t["wall_min"] / row["wall_min"]
    return row


def fmt_s(s):
    if s is None:
        return ""
    return f"{s * 1e6:.0f} us" if s < 1e-3 else f"{s * 1e3:.1f} ms" if s < 10 else f"{s:.2f} s"


def fmt_x(v):
    return f"{v:.2f}x" if v else ""


def e2e_table(results):
    lines = ["| model | batch | device | wall min | wall median | vs cpu | vs PyTorch | timing-only | numerics / timing-only "
             "| traced / untraced | sim cycles | device time | sim cycles per host s |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in results:
        head = f"| {row['model']} | {row['batch']} | {row['device']} "
        if "error" in row:
            lines.append(head + f"| {row['error']} |" + " |" * 10)
            continue
        cyc = row.get("cycles") or 0
        lines.append(head + "| " + " | ".join([
            fmt_s(row["wall_min"]), fmt_s(row["wall_median"]), fmt_x(row.get("vs_cpu")), fmt_x(row.get("vs_pytorch")),
            fmt_s(row.get("timing_only_min")), fmt_x(row.get("timing_only_speedup")), fmt_x(row.get("traced_ratio")),
            f"{cyc:,}" if cyc else "", fmt_s(row.get("device_seconds")) if cyc else "",
            f"{cyc / row['wall_min']:.3g}" if cyc else ""]) + " |")
    return lines


def scaling(a, devices):
    """Host seconds of emulation against batch (ResNet-50) and model size (MLP hidden width)."""
    out = {"batch": [], "size": []}
    emus = [d for d in devices if is_emulator(d)]
    # The IPU model runs past one chip's memory with allow_out_of_memory so that time is still measured.
    oom = {"ipu-emu:gc200": ["--option", "allow_out_of_memory=true"]}
    for device in emus:
        for batch in (1, 2, 4, 8, 16, 32, 64, 128, 256):
            for mode in ("timing-only", "numerics"):
                if mode == "numerics" and batch > a.scaling_numerics_max_batch:
                    continue
                extra = oom.get(device, []) + (["--timing-only"] if mode == "timing-only" else [])
                r = mimic_run(a.build, "resnet50", device, batch, 1, 1, extra)
                out["batch"].append({"device": device, "mode": mode, "batch": batch, **r})
                print(json.dumps(out["batch"][-1]), flush=True)
        for hidden in (256, 512, 1024, 2048, 4096):
            params = ["--model-arg", "layers=4", "--model-arg", f"hidden={hidden}", "--model-arg", f"in_features={hidden}"]
            for mode in ("timing-only", "numerics"):
                extra = params + (["--timing-only"] if mode == "timing-only" else [])
                r = mimic_run(a.build, "mlp", device, 8, 2, 1, extra)
                out["size"].append({"device": device, "mode": mode, "hidden": hidden,
                                    "parameters": 4 * hidden * hidden + 3 * hidden + 10 * hidden, **r})
                print(json.dumps(out["size"][-1]), flush=True)
    return out


def scaling_tables(sc):
    lines = ["### Emulation time against batch (ResNet-50, one run after one warm-up; timing-only and with numerics)", "",
             "| device | mode | batch | host time | sim cycles | device time | sim cycles per host s |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in sc["batch"]:
        if "error" in r:
            lines.append(f"| {r['device']} | {r['mode']} | {r['batch']} | {r['error']} | | | |")
            continue
        lines.append(f"| {r['device']} | {r['mode']} | {r['batch']} | {fmt_s(r['wall_min'])} | {r['cycles']:,} | "
                     f"{fmt_s(r['device_seconds'])} | {r['cycles'] / r['wall_min']:.3g} |")
    lines += ["", "![emulation time against batch](scaling_batch.svg)", "",
              "### Emulation time against model size (4-layer MLP, batch 8, hidden width 256..4096)", "",
              "| device | mode | hidden | parameters | host time | sim cycles | device time |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for r in sc["size"]:
        if "error" in r:
            lines.append(f"| {r['device']} | {r['mode']} | {r['hidden']} | {r['parameters']:,} | {r['error']} | | |")
            continue
        lines.append(f"| {r['device']} | {r['mode']} | {r['hidden']} | {r['parameters']:,} | {fmt_s(r['wall_min'])} | "
                     f"{r['cycles']:,} | {fmt_s(r['device_seconds'])} |")
    lines += ["", "![emulation time against model size](scaling_size.svg)", ""]
    return lines


def scaling_plots(sc, out_dir):
    for key, x_key, x_label, title in (("batch", "batch", "batch", "ResNet-50: host time of one emulated run"),
                                       ("size", "parameters", "MLP parameters", "4-layer MLP, batch 8: host time")):
        series = {}
        for r in sc[key]:
            if "error" not in r:
                series.setdefault(f"{r['device']} {r['mode']}", []).append((r[x_key], r["wall_min"]))
        with open(os.path.join(out_dir, f"scaling_{key}.svg"), "w") as f:
            f.write(plots.log_log_lines(series, x_label, "host seconds", title))


def sweep_bench(a, repeats=3):
    """A 20-point timing-only sweep of ResNet-50 (10 batches x tpu-emu:v4, ipu-emu:gc200) at -j 1 and
    -j 2, alternated; wall time of the whole `mimic sweep` command."""
    cmd = [os.path.join(a.build, "bin", "mimic"), "sweep", "--model", "resnet50", "--device",
           "tpu-emu:v4,ipu-emu:gc200", "--batch", "1,2,...,512", "--timing-only"]
    times = {1: [], 2: []}
    for _ in range(repeats):
        for jobs in (1, 2):
            t = time.perf_counter()
            p = subprocess.run(cmd + ["-j", str(jobs)], capture_output=True, text=True)
            if p.returncode != 0:
                return {"error": p.stderr.strip()[-300:]}
            times[jobs].append(time.perf_counter() - t)
    points = sum(1 for line in p.stdout.splitlines() if line.startswith(("tpu-emu", "ipu-emu")))
    j1, j2 = statistics.median(times[1]), statistics.median(times[2])
    return {"command": " ".join(cmd[1:]), "points": points, "j1_s": times[1], "j2_s": times[2],
            "j1_median_s": j1, "j2_median_s": j2, "speedup_j2": j1 / j2}


def run_trace_bench(a):
    """The trace benchmark (sustained ingest, tracing overhead); its own results file is read back."""
    exe = os.path.join(a.build, "benchmarks", "trace_bench")
    if not os.path.exists(exe):
        return {"error": f"{exe} not built"}
    p = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": p.stderr.strip()[-500:]}
    with open(os.path.join(ROOT, "benchmarks", "results", "traces.json")) as f:
        return json.load(f)


def trace_summary(tr):
    """(median sustained events per second, tracing time / untraced run time) from trace_bench's JSON."""
    return tr["ingest"]["fresh_file_events_per_s_median"], tr["overhead"]["tracing_fraction"]


def targets_table(results, trace_stats):
    def row_of(model, batch, device):
        return next((r for r in results if r["model"] == model and r["batch"] == batch and r["device"] == device
                     and "error" not in r), None)
    cpu, tpu, ipu = (row_of("resnet50", 8, d) for d in ("cpu", "tpu-emu:v4", "ipu-emu:gc200"))
    ev, overhead = trace_stats
    checks = [("cpu vs PyTorch CPU, ResNet-50 b8", cpu and cpu.get("vs_pytorch"), "<= 1.5x", lambda v: v <= 1.5, fmt_x),
              ("tpu-emu:v4 vs cpu, ResNet-50 b8", tpu and tpu.get("vs_cpu"), "<= 1.3x", lambda v: v <= 1.3, fmt_x),
              ("ipu-emu:gc200 vs cpu, ResNet-50 b8", ipu and ipu.get("vs_cpu"), "<= 1.5x", lambda v: v <= 1.5, fmt_x),
              ("timing-only speedup, tpu-emu:v4 ResNet-50 b8", tpu and tpu.get("timing_only_speedup"), ">= 20x",
               lambda v: v >= 20, fmt_x),
              ("timing-only speedup, ipu-emu:gc200 ResNet-50 b8", ipu and ipu.get("timing_only_speedup"), ">= 20x",
               lambda v: v >= 20, fmt_x),
              ("trace ingest (trace_bench median)", ev, ">= 1,000,000 events/s", lambda v: v >= 1e6,
               lambda v: f"{v:,.0f} events/s"),
              ("tracing overhead (trace_bench, ResNet-50 b8 cpu)", overhead, "<= 5%", lambda v: v <= 0.05,
               lambda v: f"{100 * v:.2f}%")]
    lines = ["| target | measured | goal | met |", "|---|---:|---|---|"]
    for name, v, goal, ok, fmt in checks:
        lines.append(f"| {name} | {fmt(v) if v is not None else 'not measured'} | {goal} | "
                     f"{'' if v is None else 'yes' if ok(v) else '**no**'} |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default="mlp,resnet50,mobilenet_v2,bert")
    ap.add_argument("--devices", default="", help="comma list; default: cpu, tpu-emu:v4, ipu-emu:gc200, cuda:0 if available")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-scaling", action="store_true")
    ap.add_argument("--scaling-numerics-max-batch", type=int, default=32)
    ap.add_argument("--no-trace-bench", action="store_true")
    ap.add_argument("--no-sweep-bench", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "e2e"))
    a = ap.parse_args()
    devices = a.devices.split(",") if a.devices else available_devices(a.build)
    info = machine.describe(a.build)
    results = []
    for model in a.models.split(","):
        for batch in (int(b) for b in a.batches.split(",")):
            ref = None if a.no_torch else torch_run(model, batch, a.runs, a.warmup)
            if ref is not None:
                results.append({"model": model, "batch": batch, "device": "pytorch-cpu", **ref})
            cpu_min = None
            for device in devices:
                row = measure(a, model, device, batch, ref, cpu_min)
                if device == "cpu" and "error" not in row:
                    cpu_min = row["wall_min"]
                    row["vs_cpu"] = 1.0
                results.append(row)
                print(json.dumps(row), flush=True)
    out_dir = os.path.dirname(a.out)
    os.makedirs(out_dir, exist_ok=True)
    sc = None if a.no_scaling else scaling(a, devices)
    sw = None if a.no_sweep_bench else sweep_bench(a)
    tr = None if a.no_trace_bench else run_trace_bench(a)
    trace_stats = trace_summary(tr) if tr and "error" not in tr else (None, None)
    with open(a.out + ".json", "w") as f:
        json.dump({"machine": info, "results": results, "scaling": sc, "sweep": sw, "traces": tr}, f, indent=2)
    md = ["# End-to-end benchmarks", "", "Written by `python3 benchmarks/run.py`.", "", machine.markdown(info), "",
          "## Targets", "", *targets_table(results, trace_stats), "",
          "## Models x devices (host wall time of one forward pass)", "", *e2e_table(results), ""]
    if sc:
        scaling_plots(sc, out_dir)
        md += ["## Scaling of the emulators", "", *scaling_tables(sc)]
    if sw and "error" in sw:
        md += ["## Sweep speed", "", f"sweep failed: {sw['error']}", ""]
    elif sw:
        md += ["## Sweep speed", "", f"`mimic {sw['command']}` ({sw['points']} points, each its own process), "
               "whole command, median of 3 alternated runs:", "",
               "| jobs | wall time | speedup |", "|---:|---:|---:|",
               f"| 1 | {sw['j1_median_s']:.2f} s | |", f"| 2 | {sw['j2_median_s']:.2f} s | {sw['speedup_j2']:.2f}x |", ""]
    if tr and "error" in tr:
        md += ["## Traces", "", f"trace_bench failed: {tr['error']}", ""]
    elif tr:
        md += ["## Traces", "", "From `build/benchmarks/trace_bench` (details in [traces.md](traces.md)).", ""]
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()

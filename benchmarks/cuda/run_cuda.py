#!/usr/bin/env python3
"""mimic on an NVIDIA GPU: ResNet-50 and the BERT-like encoder (zoo "bert", BERT-base sized: 12 layers,
hidden 768, 12 heads, sequence 128) at batch 1, 8 and 64 on cuda:0 under both precision modes, each with
kernels launched one by one and as one replayed CUDA graph (`--option graph=on`); where launch time goes;
cuBLAS GEMM throughput against the GPU's peak; PyTorch on the same GPU when its timings are given.
Writes benchmarks/results/cuda.{json,md} with the GPU model.

  python3 benchmarks/cuda/torch_reference.py --out /tmp/torch_cuda.json   # PyTorch with CUDA
  python3 benchmarks/cuda/run_cuda.py --torch /tmp/torch_cuda.json        # everything
  python3 benchmarks/cuda/run_cuda.py --batches 8 --models resnet50 --precisions default

Model rows: `mimic run --json --option timing=run` (one process per configuration) after --warmup
untimed runs; wall is host time of a whole run (input copy, launches, output copy), GPU is the median
CUDA-event time of the compute over --runs runs (input and output copies excluded, as in PyTorch's
column), throughput is batch / GPU time. Launch gaps, per model and batch at the default precision: GPU
time with kernels launched one by one and as a graph (the difference is the GPU idling between
launches), and the host time spent enqueueing the kernels (per-op host timings, `timing=ops`). GEMM
rows: cuda_gemm_bench (square GEMMs, median of CUDA-event timings). Peaks: NVIDIA's datasheet dense
figures where the GPU is in DATASHEET_PEAKS, and the peak at the maximum SM clock computed from the
device's SM count (device_runtime.h) otherwise. Without a usable GPU the script prints the reason and
exits with status 2, writing nothing.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import machine  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Dense (non-sparse) peak TFLOP/s from NVIDIA's H100/H200/A100 datasheets: the datasheets give the
# tensor-core figures with sparsity (marked *), dense is half of those. Keys are substrings of the
# CUDA device name, most specific first ("NVIDIA H100 80GB HBM3" is the SXM5 part). Figures as
# published at launch; check the current datasheet of the exact part before quoting a percentage.
DATASHEET_PEAKS = {
    "H100 80GB HBM3": {"fp32": 67.0, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "source": "H100 SXM5 datasheet"},
    "H100 PCIe": {"fp32": 51.2, "tf32": 378.0, "bf16": 756.0, "fp16": 756.0, "source": "H100 PCIe datasheet"},
    "H100 NVL": {"fp32": 60.0, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5, "source": "H100 NVL datasheet"},
    "H200 NVL": {"fp32": 60.0, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5, "source": "H200 NVL datasheet"},
    "H200": {"fp32": 67.0, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "source": "H200 SXM datasheet"},
    "A100": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0, "source": "A100 datasheet"},
}


def datasheet_peak(name):
    for key, peaks in DATASHEET_PEAKS.items():
        if key in name:
            return peaks
    return None


def cuda_device(build):
    out = subprocess.run([os.path.join(build, "bin", "mimic"), "devices", "--json"], capture_output=True, text=True)
    for d in json.loads(out.stdout):
        if d["name"] == "cuda:0":
            return d
    return {"available": False, "reason": "this build has no cuda backend"}


def model_run(build, model, batch, precision, runs, warmup, options):
    cmd = [os.path.join(build, "bin", "mimic"), "run", "--model", model, "--device", "cuda:0", "--batch", str(batch),
           "--precision", precision, "--repeat", str(runs), "--warmup", str(warmup), "--json", "--no-compare"]
    for o in options:
        cmd += ["--option", o]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": p.stderr.strip()}
    j = json.loads(p.stdout)
    r = j["report"]
    gpu = j["device_seconds"]["median"]
    return {"wall_min": j["wall_seconds"]["min"], "wall_median": j["wall_seconds"]["median"], "gpu_seconds": gpu,
            "gpu_min": j["device_seconds"]["min"], "throughput_per_s": batch / gpu if gpu > 0 else None,
            "tflops": sum(op["flops"] for op in r["ops"]) / gpu / 1e12 if gpu > 0 else 0.0,
            "report_precision": r["precision"], "compile_seconds": j["compile_seconds"],
            "fallback_ops": sum(1 for op in r["ops"] if op["fallback"]),
            "launch_seconds": sum(op["wall_ns"] for op in r["ops"]) * 1e-9,
            "h2d_seconds": r["metrics"].get("h2d_seconds"), "d2h_seconds": r["metrics"].get("d2h_seconds")}


def gemm_runs(build, sizes, iterations):
    p = subprocess.run([os.path.join(build, "bin", "cuda_gemm_bench"), "--sizes", sizes, "--iterations", str(iterations)],
                       capture_output=True, text=True)
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"error": (p.stderr or p.stdout).strip()}


def ms(s):
    return "" if s is None else f"{s * 1e3:.2f} ms"


def torch_lookup(torch_rows, model, batch, precision):
    for t in torch_rows:
        if (t["model"], t["batch"], t["precision"]) == (model, batch, precision):
            return t["gpu_seconds"]
    return None


def model_table(models, torch_rows):
    lines = ["| model | batch | precision | graph | wall min | wall median | GPU time | throughput/s | TFLOP/s "
             "| PyTorch GPU time | mimic / PyTorch | fallbacks |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in models:
        head = f"| {r['model']} | {r['batch']} | {r['precision']} | {r['graph']} "
        if "error" in r:
            lines.append(head + f"| error: {r['error'][:200]} | | | | | | | |")
            continue
        tp = "{:.1f}".format(r["throughput_per_s"]) if r["throughput_per_s"] else ""
        ref = torch_lookup(torch_rows, r["model"], r["batch"], r["precision"])
        ratio = f"{r['gpu_seconds'] / ref:.2f}x" if ref else ""
        lines.append(head + f"| {ms(r['wall_min'])} | {ms(r['wall_median'])} | {ms(r['gpu_seconds'])} | {tp} "
                     f"| {r['tflops']:.1f} | {ms(ref)} | {ratio} | {r['fallback_ops']} |")
    return lines


def gap_table(gaps):
    lines = ["| model | batch | GPU time, launched | GPU time, graph | launch gaps (difference) | share of launched "
             "| host enqueue time |", "|---|---|---|---|---|---|---|"]
    for g in gaps:
        if "error" in g:
            lines.append(f"| {g['model']} | {g['batch']} | error: {g['error'][:200]} | | | | |")
            continue
        gap = g["launched_seconds"] - g["graph_seconds"]
        share = gap / g["launched_seconds"] if g["launched_seconds"] > 0 else 0
        lines.append(f"| {g['model']} | {g['batch']} | {ms(g['launched_seconds'])} | {ms(g['graph_seconds'])} "
                     f"| {ms(gap)} | {100 * share:.0f}% | {ms(g['launch_seconds'])} |")
    return lines


def markdown(info, gpu, models, gaps, gemm, torch_ref, date):
    lines = ["# mimic on cuda:0: zoo models, launch gaps, cuBLAS GEMM", "",
             f"Written by `benchmarks/cuda/run_cuda.py` on {date} UTC (model rows: median GPU time of the runs).", "",
             machine.markdown(info), "", f"GPU: {gpu.get('name')} (sm_{gpu.get('compute_capability', '').replace('.', '')}, "
             f"{gpu.get('sm_count')} SMs, driver {gpu.get('driver')}, runtime {gpu.get('runtime')})", ""]
    if torch_ref:
        lines += [f"PyTorch {torch_ref['torch']} (CUDA {torch_ref['cuda']}, cuDNN {torch_ref['cudnn']}) on "
                  f"{torch_ref['gpu']}: benchmarks/cuda/torch_reference.py on the same GPU, run just before.", ""]
    else:
        lines += ["PyTorch: not measured in this run (no --torch file).", ""]
    lines += model_table(models, torch_ref["rows"] if torch_ref else [])
    lines += ["", "Launch gaps (default precision):", ""] + gap_table(gaps)
    lines += ["", "| GEMM | n | median | TFLOP/s | datasheet peak | % of datasheet | peak at max clock | % of that |",
              "|---|---|---|---|---|---|---|---|"]
    sheet = datasheet_peak(gpu.get("name", "")) or {}
    for r in gemm.get("results", []):
        dp = sheet.get(r["type"])
        of_sheet = "{:.0f}%".format(100 * r["tflops"] / dp) if dp else ""
        lines.append(f"| {r['type']} | {r['n']} | {ms(r['median_seconds'])} | {r['tflops']:.1f} | "
                     f"{dp if dp else 'unknown'} | {of_sheet} | "
                     f"{r['peak_tflops_at_max_clock']:.1f} | {100 * r['fraction_of_peak']:.0f}% |")
    if "error" in gemm:
        lines.append(f"| error: {gemm['error']} | | | | | | | |")
    if sheet:
        lines += ["", f"Datasheet peaks: {sheet['source']} (dense)."]
    return "\n".join(lines) + "\n"


def launch_gaps(a, model, batch, launched, graph):
    """GPU time lost between kernels: the same compute launched kernel by kernel and as one graph."""
    enqueue = model_run(a.build, model, batch, "default", a.runs, a.warmup, ["timing=ops"])
    for r in (launched, graph, enqueue):
        if "error" in r:
            return {"model": model, "batch": batch, "error": r["error"]}
    return {"model": model, "batch": batch, "launched_seconds": launched["gpu_seconds"],
            "graph_seconds": graph["gpu_seconds"], "launch_seconds": enqueue["launch_seconds"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default="resnet50,bert")
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--precisions", default="default,highest")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--gemm-sizes", default="1024,2048,4096,8192")
    ap.add_argument("--gemm-iterations", type=int, default=20)
    ap.add_argument("--torch", help="torch_reference.py's JSON (PyTorch on the same GPU)")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "cuda"))
    a = ap.parse_args()
    dev = cuda_device(a.build)
    if not dev.get("available"):
        print(f"run_cuda.py: cuda:0 is unavailable: {dev.get('reason')}; nothing measured, nothing written", file=sys.stderr)
        return 2
    torch_ref = None
    if a.torch:
        with open(a.torch) as f:
            torch_ref = json.load(f)
    gemm = gemm_runs(a.build, a.gemm_sizes, a.gemm_iterations)
    gpu = gemm.get("gpu", {"name": dev.get("description", "")})
    models, gaps = [], []
    for model in a.models.split(","):
        for batch in (int(b) for b in a.batches.split(",")):
            for precision in a.precisions.split(","):
                for graph in ("off", "on"):
                    row = {"model": model, "batch": batch, "precision": precision, "graph": graph,
                           **model_run(a.build, model, batch, precision, a.runs, a.warmup,
                                       ["timing=run", f"graph={graph}"])}
                    models.append(row)
                    print(json.dumps(row), flush=True)
                    if precision == "default" and graph == "on":
                        gaps.append(launch_gaps(a, model, batch, models[-2], row))
                        print(json.dumps(gaps[-1]), flush=True)
    info = machine.describe(a.build)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump({"machine": info, "gpu": gpu, "datasheet_peaks": datasheet_peak(gpu.get("name", "")),
                   "models": models, "launch_gaps": gaps, "gemm": gemm, "torch": torch_ref, "date": date}, f, indent=2)
    text = markdown(info, gpu, models, gaps, gemm, torch_ref, date)
    with open(a.out + ".md", "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

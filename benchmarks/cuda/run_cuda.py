#!/usr/bin/env python3
"""mimic on an NVIDIA GPU: ResNet-50 and the BERT-like encoder (zoo "bert", BERT-base sized: 12 layers,
hidden 768, 12 heads, sequence 128) at batch 1, 8 and 64 on cuda:0 under both precision modes, and cuBLAS
GEMM throughput against the GPU's peak. Writes benchmarks/results/cuda.{json,md} with the GPU model.

  python3 benchmarks/cuda/run_cuda.py                      # everything (a few minutes on an H100)
  python3 benchmarks/cuda/run_cuda.py --batches 8 --models resnet50 --precisions default

Model rows: `mimic run --json` (one process per configuration) after --warmup untimed runs; wall is host
time of a whole run (input copy, launches, output copy), GPU is the CUDA-event time of the compute
(report.device_seconds), throughput is batch / GPU time. GEMM rows: cuda_gemm_bench (square GEMMs, median
of CUDA-event timings). Peaks: NVIDIA's datasheet dense figures where the GPU is in DATASHEET_PEAKS, and the
peak at the maximum SM clock computed from the device's SM count (device_runtime.h) otherwise. Without a
usable GPU the script prints the reason and exits with status 2, writing nothing.
"""
import argparse
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


def model_run(build, model, batch, precision, runs, warmup):
    cmd = [os.path.join(build, "bin", "mimic"), "run", "--model", model, "--device", "cuda:0", "--batch", str(batch),
           "--precision", precision, "--repeat", str(runs), "--warmup", str(warmup), "--json", "--no-compare"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": p.stderr.strip()}
    j = json.loads(p.stdout)
    r = j["report"]
    gpu = r["device_seconds"]
    return {"wall_min": j["wall_seconds"]["min"], "wall_median": j["wall_seconds"]["median"], "gpu_seconds": gpu,
            "throughput_per_s": batch / gpu if gpu > 0 else None, "tflops": r["achieved_flops_per_s"] / 1e12,
            "report_precision": r["precision"], "compile_seconds": j["compile_seconds"],
            "fallback_ops": sum(1 for op in r["ops"] if op["fallback"]),
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


def markdown(info, gpu, models, gemm):
    lines = [machine.markdown(info), "", f"GPU: {gpu.get('name')} (sm_{gpu.get('compute_capability', '').replace('.', '')}, "
             f"{gpu.get('sm_count')} SMs, driver {gpu.get('driver')}, runtime {gpu.get('runtime')})", "",
             "| model | batch | precision | wall min | wall median | GPU time | throughput/s | TFLOP/s | fallbacks |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in models:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['batch']} | {r['precision']} | error: {r['error']} | | | | | |")
            continue
        tp = "{:.1f}".format(r["throughput_per_s"]) if r["throughput_per_s"] else ""
        lines.append(f"| {r['model']} | {r['batch']} | {r['report_precision']} | {ms(r['wall_min'])} | {ms(r['wall_median'])} "
                     f"| {ms(r['gpu_seconds'])} | {tp} | {r['tflops']:.1f} | {r['fallback_ops']} |")
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
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "cuda"))
    a = ap.parse_args()
    dev = cuda_device(a.build)
    if not dev.get("available"):
        print(f"run_cuda.py: cuda:0 is unavailable: {dev.get('reason')}; nothing measured, nothing written", file=sys.stderr)
        return 2
    gemm = gemm_runs(a.build, a.gemm_sizes, a.gemm_iterations)
    gpu = gemm.get("gpu", {"name": dev.get("description", "")})
    models = []
    for model in a.models.split(","):
        for batch in (int(b) for b in a.batches.split(",")):
            for precision in a.precisions.split(","):
                row = {"model": model, "batch": batch, "precision": precision,
                       **model_run(a.build, model, batch, precision, a.runs, a.warmup)}
                models.append(row)
                print(json.dumps(row), flush=True)
    info = machine.describe(a.build)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump({"machine": info, "gpu": gpu, "datasheet_peaks": datasheet_peak(gpu.get("name", "")),
                   "models": models, "gemm": gemm}, f, indent=2)
    text = markdown(info, gpu, models, gemm)
    with open(a.out + ".md", "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

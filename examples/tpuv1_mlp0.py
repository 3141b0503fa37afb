#!/usr/bin/env python3
"""The TPUv1 paper's latency-bound batch analysis for MLP0 (Jouppi et al., ISCA 2017, Table 4),
on mimic's emulated TPUv1.

MLP0 (RankBrain): 5 fully connected layers, 20M weights, ReLU. Its shapes are not published; five
2000x2000 layers give the 20M weights. The application's latency limit is 7 ms (99th percentile).
This runs `mimic sweep` over batch 1..16384 (and the paper's 200 and 250) on tpu-emu:v1 (timing only), then writes the latency and
throughput curves as SVG figures and a markdown table beside the paper's published figures.

    python3 examples/tpuv1_mlp0.py [--mimic build/bin/mimic] [--out docs/figures]
"""
import argparse
import json
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = ["--model", "mlp", "--model-arg", "layers=5", "--model-arg", "hidden=2000",
         "--model-arg", "in_features=2000", "--model-arg", "classes=2000"]
BUDGET_S = 7e-3
# Table 4 of the paper: 99th-percentile response time and inferences per second per die for MLP0.
PAPER = [("CPU (Haswell)", 16, 7.2e-3, 5482), ("CPU (Haswell)", 64, 21.3e-3, 13194),
         ("GPU (K80)", 16, 6.7e-3, 13461), ("GPU (K80)", 64, 8.3e-3, 36465),
         ("TPU", 200, 7.0e-3, 225000), ("TPU", 250, 10.0e-3, 280000)]


def sweep(mimic):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "mlp0.json")
        subprocess.run([mimic, "sweep", *MODEL, "--device", "tpu-emu:v1", "--batch", "1,2,...,16384,200,250",
                        "--latency-budget", "7ms", "--timing-only", "-j", str(os.cpu_count() or 1), "--json", out],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def svg_curve(points, y_key, y_label, title, budget=None, log_y=True):
    """A small log-log line chart: batch on x, `y_key` on y."""
    import math
    w, h, left, right, top, bottom = 560, 320, 70, 20, 30, 45
    xs = [p["batch"] for p in points]
    ys = [p[y_key] for p in points]
    y_all = ys + ([budget] if budget else [])
    lx0, lx1 = math.log10(min(xs)), math.log10(max(xs))
    ly0, ly1 = math.floor(math.log10(min(y_all))), math.ceil(math.log10(max(y_all)))
    fx = lambda x: left + (math.log10(x) - lx0) / (lx1 - lx0) * (w - left - right)
    fy = lambda y: h - bottom - (math.log10(y) - ly0) / (ly1 - ly0) * (h - top - bottom)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
             f'<rect width="{w}" height="{h}" fill="white"/><text x="{left}" y="18" font-size="13" font-weight="bold">{title}</text>',
             f'<rect x="{left}" y="{top}" width="{w - left - right}" height="{h - top - bottom}" fill="none" stroke="#999"/>']
    for b in xs:
        if b & (b - 1) == 0:  # powers of two only: the paper's 200 and 250 would overlap 256
            parts.append(f'<text x="{fx(b):.1f}" y="{h - bottom + 14}" text-anchor="middle">{b}</text>')
    for e in range(ly0, ly1 + 1):
        y = fy(10 ** e)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{w - right}" y2="{y:.1f}" stroke="#eee"/>'
                     f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">1e{e}</text>')
    if budget:
        y = fy(budget)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{w - right}" y2="{y:.1f}" stroke="#c62828" stroke-dasharray="6,4"/>'
                     f'<text x="{w - right - 4}" y="{y - 4:.1f}" fill="#c62828" text-anchor="end">7 ms budget</text>')
    path = " L".join(f"{fx(x):.1f},{fy(y):.1f}" for x, y in zip(xs, ys))
    parts.append(f'<path d="M{path}" fill="none" stroke="#1565c0" stroke-width="2"/>')
    parts += [f'<circle cx="{fx(x):.1f}" cy="{fy(y):.1f}" r="3" fill="#1565c0"/>' for x, y in zip(xs, ys)]
    parts.append(f'<text x="{(left + w - right) / 2}" y="{h - 8}" text-anchor="middle">batch (log)</text>'
                 f'<text transform="translate(14,{(top + h - bottom) / 2}) rotate(-90)" text-anchor="middle">{y_label} (log)</text></svg>')
    return "\n".join(parts)


def markdown(result):
    pts = sorted(result["points"], key=lambda p: p["batch"])
    rec = result["recommendations"][0]
    lines = ["| batch | latency (emulated) | inferences/s | % of peak | bound |", "|---:|---:|---:|---:|---|"]
    for p in pts:
        if p["status"] != "ok":
            lines.append(f"| {p['batch']} | {p['status']}: {p['reason']} | | | |")
            continue
        mark = " **(chosen)**" if rec["found"] and p["batch"] == rec["point"]["batch"] else ""
        lines.append(f"| {p['batch']}{mark} | {p['latency_s'] * 1e3:.3f} ms | {p['throughput']:,.0f} | "
                     f"{100 * p['utilization']:.1f}% | {p['bound']} |")
    lines += ["", "Paper, Table 4 (99th-percentile response time of the whole application, per die):", "",
              "| platform | batch | latency | inferences/s |", "|---|---:|---:|---:|"]
    lines += [f"| {n} | {b} | {t * 1e3:.1f} ms | {ips:,} |" for n, b, t, ips in PAPER]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mimic", default=os.path.join(ROOT, "build", "bin", "mimic"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "figures"))
    a = ap.parse_args()
    result = sweep(a.mimic)
    pts = sorted((p for p in result["points"] if p["status"] == "ok"), key=lambda p: p["batch"])
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "tpuv1_mlp0_latency.svg"), "w") as f:
        f.write(svg_curve(pts, "latency_s", "latency per batch (s)", "MLP0 on tpu-emu:v1: latency", BUDGET_S))
    with open(os.path.join(a.out, "tpuv1_mlp0_throughput.svg"), "w") as f:
        f.write(svg_curve(pts, "throughput", "inferences per second", "MLP0 on tpu-emu:v1: throughput"))
    table = markdown(result)
    with open(os.path.join(a.out, "tpuv1_mlp0.md"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(a.out, "tpuv1_mlp0.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(table)


if __name__ == "__main__":
    main()

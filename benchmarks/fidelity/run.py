#!/usr/bin/env python3
"""mimic's fidelity suite: every published measurement of figures.py, run on the matching emulated
chip, predicted against published, with the error. One command:

  python3 benchmarks/fidelity/run.py [--mimic build/bin/mimic] [--only REGEX] [--no-write]

Writes benchmarks/results/fidelity.{md,json}. Each workload runs once per (device, batch) with
`mimic run --timing-only --json` (cycles only: values do not change timing); ONNX workloads are
built by paper_models.py into a temporary folder. A row that cannot run (an op mimic lacks, a model
that does not fit) is listed with the reason, never dropped. The goal (the fidelity issue): median
absolute error <= 15%, none above 30%.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import figures  # noqa: E402
import machine  # noqa: E402
import paper_models  # noqa: E402

IMAGENET = figures.IMAGENET_TRAIN_IMAGES


def run_workload(mimic, workload, device, batch, tmp, options=(), precision=None):
    """One timing-only run with the row's compile options ((key, value) pairs) and precision; returns
    the report dict or {"error": message}."""
    if workload.startswith("zoo:"):
        model = ["--model", workload[4:], "--model-arg", "image_size=224"]
    else:
        path = os.path.join(tmp, workload + ".onnx")
        if not os.path.exists(path):
            paper_models.write(workload, path)
        model = ["--onnx", path]
    cmd = [mimic, "run", *model, "--device", device, "--batch", str(batch), "--timing-only", "--json", "--no-compare"]
    for k, v in options:
        cmd += ["--option", f"{k}={v}"]
    if precision:
        cmd += ["--precision", precision]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        lines = p.stderr.strip().splitlines() or [f"exit status {p.returncode}"]
        return {"error": lines[-1].replace("mimic: error: ", "").replace(tmp + os.sep, "")}
    return json.loads(p.stdout)["report"]


def train_step(mimic, row, micro, fit=False):
    """One timing-only train step of the row's workload at `micro` samples per micro-batch, set up as
    the row's `train` says (figures.py); fit=True drops allow_out_of_memory, so that a step whose
    tile-memory plan does not fit fails. Returns the `mimic train --json` dict or {"error": message}."""
    t = row["train"]
    accumulation = t["accumulation"] or 1
    # The whole system's batch: every replica's micro-batches (the host-memory guard on tensors
    # does not apply: a timing-only step allocates none).
    batch = micro * accumulation * replicas_of(row)
    cmd = [mimic, "train", "--model", row["workload"][4:], "--model-arg", "image_size=224",
           "--device", row["device"], "--precision", t["precision"], "--recompute", t["recompute"],
           "--batch", str(batch), "--optimizer", "sgd", "--momentum", "0.9",
           "--steps", "1", "--timing-only", "--json", "--max-tensor-bytes", "1TiB"]
    if t["accumulation"]:
        cmd += ["--option", f"gradient_accumulation={accumulation}"]
    if t.get("layout"):
        cmd += ["--layout", t["layout"]]
    if t.get("recompute_checkpoints"):
        cmd += ["--recompute-checkpoints", ",".join(t["recompute_checkpoints"])]
    for k, v in t["options"].items():
        if not (fit and k == "allow_out_of_memory"):
            cmd += ["--option", f"{k}={v}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        return {"error": last.replace("mimic: error: ", "")}
    return json.loads(p.stdout)


def replicas_of(row):
    """ipu-emu replicas (one IPU each) a training row emulates; 1 for the others (tpu-emu's
    "replicas" are the cores of the one chip its figures are per)."""
    return int(row["train"]["options"].get("replication_factor", 1))


def run_training(mimic, row, tmp):
    """The row's training step at the first micro-batch of its list that runs (`train` in
    figures.py): {"samples_per_s", "micro_batch", "memory_fraction"} or {"error": message}.
    A row whose options allow out-of-memory plans runs its first micro-batch whatever its plan
    needs; "memory_fraction" is the fullest tile's share of its memory (IPU) where reported."""
    last = None
    for micro in row["train"]["micro_batches"]:
        out = train_step(mimic, row, micro)
        if "error" not in out:
            metrics = out["report"].get("metrics") or {}
            return {"samples_per_s": out["train"]["samples_per_s"] / replicas_of(row), "micro_batch": micro,
                    "memory_fraction": metrics.get("memory_used_fraction")}
        last = out["error"]
    return {"error": last}


def largest_fitting_micro_batch(mimic, row):
    """The largest micro-batch up to the row's published one whose step's memory plan fits, by
    bisection (a plan's peak grows with the micro-batch): {"micro_batch_fit"} or {"error"}."""
    low, high, last = 0, int(row["published"]), None
    while low < high:
        mid = (low + high + 1) // 2
        out = train_step(mimic, row, mid, fit=True)
        if "error" in out:
            last, high = out["error"], mid - 1
        else:
            low = mid
    return {"micro_batch_fit": low} if low else {"error": last}


def predicted(metric, report, batch, row=None):
    """The metric a row compares, from a run report; None with a reason when it has no counterpart."""
    if metric == "train_sps":
        return report["samples_per_s"], None
    if metric == "micro_batch_fit":
        return report["micro_batch_fit"], None
    if metric == "minutes":
        return row["epochs"] * IMAGENET / (row["chips"] * report["samples_per_s"]) / 60, None
    seconds = report.get("device_seconds") or 0
    if metric == "tops":
        return report["total_flops"] / seconds / 1e12, None
    if metric == "ips":
        return batch / seconds, None
    if metric == "latency_ms":
        return seconds * 1e3, None
    if metric == "tile_tflops":
        return tile_tflops(report)
    if metric == "link_GBps":
        return link_gbps(report)
    if metric == "useful_pct" and report.get("peak_flops_per_s") and seconds:
        return 100.0 * report["total_flops"] / seconds / report["peak_flops_per_s"], None
    metrics = report.get("metrics") or {}
    if metric == "busy_pct" and "mxu_busy_fraction" in metrics:
        return 100.0 * metrics["mxu_busy_fraction"], None
    if metric == "stall_pct" and "mxu_weight_stall_cycles" in metrics and report.get("cycles"):
        mxus = sum(1 for u in report.get("units", []) if u["kind"] == "matrix") or 1
        return 100.0 * metrics["mxu_weight_stall_cycles"] / (mxus * report["cycles"]), None
    return None, f"the run report has no counterpart of '{metric}'"


def tile_tflops(report):
    """TFLOPS of the compute phase of an IPU run's busiest computing superstep (the matrix product's),
    without its exchange and sync: what cycle counters around one vertex per tile measure."""
    table = (report.get("tables") or {}).get("ipu_supersteps")
    if not table or not report.get("cycles"):
        return None, "the run report has no ipu_supersteps table"
    compute = max(row[table["columns"].index("compute")] for row in table["rows"])
    seconds = compute * report["device_seconds"] / report["cycles"]
    return report["total_flops"] / seconds / 1e12, None


def link_gbps(report):
    """GB/s of an IPU run's IPU-Link transfers: the bytes they moved over the time the links were
    busy (one direction of one hop, latency included)."""
    links = [u for u in report.get("units", []) if u["kind"] == "link"]
    moved = (report.get("bytes_moved") or {}).get("ipu_link", 0)
    if not links or not links[0]["busy_cycles"] or not moved:
        return None, "the run moved nothing over the IPU-Links"
    return moved / (links[0]["busy_cycles"] / report["clock_hz"]) / 1e9, None


def is_counter(row):
    return row["metric"].endswith("_pct")


def evaluate(mimic, rows):
    cache, results = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for row in rows:
            if row.get("not_modeled"):
                results.append(dict(row, status="not modeled", reason=row["not_modeled"]))
                continue
            key = (row["workload"], row["device"], row["batch"], "train" in row,
                   tuple(sorted(row.get("options", {}).items())), row.get("precision"),
                   row["metric"] == "micro_batch_fit", json.dumps(row.get("train"), sort_keys=True))
            if key not in cache:
                print(f"running {row['workload']} on {row['device']} at batch {row['batch']}"
                      f"{' (training step)' if 'train' in row else ''}", file=sys.stderr)
                if row["metric"] == "micro_batch_fit":
                    cache[key] = largest_fitting_micro_batch(mimic, row)
                elif "train" in row:
                    cache[key] = run_training(mimic, row, tmp)
                else:
                    cache[key] = run_workload(mimic, *key[:3], tmp, key[4], key[5])
            report = cache[key]
            out = dict(row)
            if "error" in report:
                out.update(status="not modeled", reason=report["error"])
            else:
                value, reason = predicted(row["metric"], report, row["batch"], row)
                if "micro_batch" in report:
                    accumulation = row["train"]["accumulation"]
                    out["batch"] = (f"{report['micro_batch']} x {accumulation}" if accumulation
                                    else f"{report['micro_batch']} per replica")
                    if replicas_of(row) > 1:
                        out["batch"] += f" x {replicas_of(row)} replicas"
                if report.get("memory_fraction"):
                    out["memory_fraction"] = report["memory_fraction"]
                if value is None:
                    out.update(status="not modeled", reason=reason)
                else:
                    out.update(status="ok", predicted=value)
                    if is_counter(row):
                        out["points"] = value - row["published"]
                    else:
                        out["error"] = (value - row["published"]) / row["published"]
            results.append(out)
    return results


def fmt(v):
    return f"{v:,.3g}" if abs(v) < 100 else f"{v:,.0f}"


def summary(results):
    """Error statistics of the performance figures, per scope (device alone, end to end, one tile's
    compute phase, IPU-Link transfers, the micro-batch that fits)."""
    out = {}
    for scope in ("device", "end_to_end", "tile", "link", "memory"):
        rows = [r for r in results if not is_counter(r) and r["scope"] == scope]
        errors = [abs(r["error"]) for r in rows if r["status"] == "ok"]
        s = {"rows": len(rows), "compared": len(errors)}
        if errors:
            s.update(median_abs_error=statistics.median(errors), max_abs_error=max(errors),
                     within_15pct=sum(e <= 0.15 for e in errors), above_30pct=sum(e > 0.30 for e in errors))
        out[scope] = s
    return out


def markdown(results, s, host):
    lines = ["# Fidelity: emulated chips against published measurements", "",
             "Written by `python3 benchmarks/fidelity/run.py` (timing-only runs; device time, no host model).",
             "Predicted figures are emulated device time and do not depend on the host; "
             + machine.markdown(host), ""]
    for scope, what in [("device", "Device figures (the chip alone)"),
                        ("end_to_end", "End-to-end figures (host, link and queuing included; device time "
                                       "undercounts them)"),
                        ("tile", "Tile microbenchmarks (one compute phase on every tile, no exchange)"),
                        ("link", "Link microbenchmarks (transfers between two IPUs)"),
                        ("memory", "Memory figures (the largest micro-batch whose step fits the tiles)")]:
        t = s[scope]
        if t["compared"]:
            lines.append(f"- {what}: {t['compared']} of {t['rows']} compared, median absolute error "
                         f"{t['median_abs_error'] * 100:.1f}%, largest {t['max_abs_error'] * 100:.1f}%, "
                         f"{t['within_15pct']} within 15%, {t['above_30pct']} above 30%.")
    lines += ["", "Goal: median absolute error <= 15% and none above 30%.", ""]
    for title, counters in [("Performance", False), ("Hardware counters (percentage points)", True)]:
        lines += [f"## {title}", "",
                  "| figure | chip | workload | batch | metric | scope | published | predicted | error | tag | conditions |",
                  "|---|---|---|---:|---|---|---:|---:|---:|---|---|"]
        for r in (r for r in results if is_counter(r) == counters):
            if r["status"] != "ok":
                pred, err = f"not modeled: {r['reason']}", ""
            elif counters:
                pred, err = f"{r['predicted']:.1f}", f"{r['points']:+.1f} pp"
            else:
                pred, err = fmt(r["predicted"]), f"{r['error'] * 100:+.1f}%"
            batch = r["batch"] or "-"
            conditions = r["conditions"]
            if r.get("memory_fraction", 0) > 1:
                conditions += (f"; the emulated step's plan does not fit (fullest tile at "
                               f"{r['memory_fraction'] * 100:.0f}% of its memory): timed as if it did")
            lines.append(f"| {r['id']} | {r['chip']} | {r['workload']} | {batch} | {r['metric']} | "
                         f"{r['scope']} | {fmt(r['published'])} | {pred} | {err} | [{r['tag']}] | {conditions} |")
        lines.append("")
    lines += ["Sources:", ""] + [f"- {s}" for s in sorted({r["source"] for r in results})]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mimic", default=os.path.join(ROOT, "build", "bin", "mimic"))
    ap.add_argument("--only", help="regular expression on figure ids")
    ap.add_argument("--no-write", action="store_true", help="print only; do not write benchmarks/results")
    a = ap.parse_args()
    rows = [r for r in figures.FIGURES if not a.only or re.search(a.only, r["id"])]
    results = evaluate(a.mimic, rows)
    s = summary(results)
    host = machine.describe(os.path.dirname(os.path.dirname(os.path.abspath(a.mimic))))
    md = markdown(results, s, host)
    print(md)
    if not a.no_write:
        out = os.path.join(ROOT, "benchmarks", "results")
        with open(os.path.join(out, "fidelity.md"), "w") as f:
            f.write(md)
        with open(os.path.join(out, "fidelity.json"), "w") as f:
            json.dump({"machine": host, "summary": s, "figures": results}, f, indent=1)


if __name__ == "__main__":
    main()

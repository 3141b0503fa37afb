"""Design-space sweeps from Python, on any concurrent.futures executor.

    import mimic
    points = mimic.sweep(model="mlp", device="tpu-emu:v1,tpu-emu:v4", batch="1,...,64", timing_only=True)
    with concurrent.futures.ProcessPoolExecutor(4) as ex:
        points = mimic.sweep(model="mlp", device="tpu-emu:v4", batch=[1, 8, 64], executor=ex)
    client = dask.distributed.Client("scheduler:8786")
    df = mimic.sweep(model="resnet50", device="tpu-emu:v4", set={"mxu.rows": [64, 128]},
                     executor=client.get_executor(), as_frame=True)

Takes the options of `mimic sweep`. Each point is one `mimic run` process: the executor receives the
`mimic` executable's path and the point's argument list and hands back the process's exit status and
output, so nothing but strings is pickled. The `mimic` command plans the grid (`--plan`) and records
and analyzes the results (`--results`), so a point is the same record whichever executor ran it.
Without `executor`, the points run as `mimic sweep -j jobs` runs them, each run recorded in `trace`;
with one, the workers may not share this machine's files, so `trace` receives the sweep's points
(sweep_point rows) but not each run's events.
"""
import json as _json
import os
import subprocess
import tempfile
import time
from concurrent.futures import as_completed

from . import _mimic
from .errors import (CompileError, DeviceUnavailableError, ExecutionError, InvalidArgument, IoError,
                     UnsupportedOpError)


def _cli():
    return os.environ.get("MIMIC_CLI") or _mimic._cli_path


def _list(value):
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _arguments(model, onnx, model_args, device, batch, layout, precision, set, latency_budget, timing_only, seed,
               trace, resume, report, csv, json_path, jobs, training):
    args = ["sweep"]
    if model is not None:
        args += ["--model", model]
    if onnx is not None:
        args += ["--onnx", os.fspath(onnx)]
    items = model_args.items() if isinstance(model_args, dict) else [tuple(a.split("=", 1)) for a in model_args or []]
    for k, v in items:
        args += ["--model-arg", f"{k}={v}"]
    args += ["--device", _list(device), "--batch", _list(batch), "--layout", _list(layout),
             "--precision", _list(precision), "--seed", str(seed), "-j", str(jobs)]
    for flag, lists in (("--set", set), ("--option", training["option"])):
        fields = lists.items() if isinstance(lists, dict) else [tuple(s.split("=", 1)) for s in lists or []]
        for field, values in fields:
            args += [flag, f"{field}={_list(values)}"]
    if training["train"]:
        args += ["--train", "--recompute", _list(training["recompute"]), "--optimizer", training["optimizer"]]
    if latency_budget is not None:
        args += ["--latency-budget", latency_budget if isinstance(latency_budget, str) else f"{latency_budget!r}s"]
    if timing_only:
        args.append("--timing-only")
    for flag, value in (("--trace", trace), ("-o", report), ("--csv", csv), ("--json", json_path)):
        if value is not None:
            args += [flag, os.fspath(value)]
    if resume:
        args.append("--resume")
    return args


def _mimic_command(args):
    """Runs `mimic ARGS`; raises the error it printed (one line) when it fails."""
    r = subprocess.run([_cli()] + args, capture_output=True, text=True)
    if r.returncode != 0:
        message = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
        message = message.removeprefix("mimic: error: ")
        kinds = {2: InvalidArgument, 3: UnsupportedOpError, 4: CompileError, 5: DeviceUnavailableError, 6: IoError}
        raise kinds.get(r.returncode, ExecutionError)(message)
    return r.stdout


def run_point(executable, args):
    """Runs one point's `mimic run` (on an executor's worker): strings in, strings out."""
    start = time.monotonic()
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    r = subprocess.run([executable] + list(args), capture_output=True, text=True, env=env)
    return {"exit_code": max(r.returncode, 0), "signal": max(-r.returncode, 0), "out": r.stdout, "err": r.stderr,
            "wall_seconds": time.monotonic() - start}


def _run_on(executor, points):
    """Submits every point; yields one outcome line per point as it finishes."""
    futures = {executor.submit(run_point, _cli(), p["args"]): p["key"] for p in points}
    for future in as_completed(futures):
        key = futures[future]
        try:
            outcome = dict(future.result(), key=key)
        except Exception as e:  # the executor lost the point (a worker died): recorded as failed, with why
            outcome = {"key": key, "failure": f"executor: {type(e).__name__}: {e}"}
        yield _json.dumps(outcome) + "\n"


def sweep(model=None, onnx=None, *, model_args=None, device="cpu", batch="1,2,4,8", layout="nchw",
          precision="default", set=None, latency_budget=None, timing_only=False, seed=0, trace=None, resume=False,
          report=None, csv=None, json=None, jobs=1, executor=None, as_frame=False, option=None, train=False,
          recompute="none", optimizer="sgd"):
    """Runs a sweep; returns its points as records (dicts), or a pandas DataFrame with as_frame=True
    when pandas is installed. Options as `mimic sweep`'s (lists or "a,b" strings for the grid's
    axes; model_args, set and option as dicts). executor: any concurrent.futures.Executor.
    train=True sweeps training steps: each record has the step time (latency_s), samples/s
    (throughput), seconds by phase (phases) and bytes by category at the memory peak (memory);
    recompute lists the recomputation modes to try."""
    json_path = json  # the option's name, as the command's; the module is _json
    with tempfile.TemporaryDirectory(prefix="mimic-sweep-") as tmp:
        out_json = json_path if json_path is not None else os.path.join(tmp, "sweep.json")
        args = _arguments(model, onnx, model_args, device, batch, layout, precision, set, latency_budget,
                          timing_only, seed, trace, resume, report, csv, out_json, jobs,
                          {"train": train, "recompute": recompute, "optimizer": optimizer, "option": option})
        if executor is None:
            _mimic_command(args)
        else:
            plan = _json.loads(_mimic_command(args + ["--plan"]))
            results = os.path.join(tmp, "results.jsonl")
            with open(results, "w") as f:
                for line in _run_on(executor, plan["points"]):
                    f.write(line)
            _mimic_command(args + ["--results", results])
        with open(out_json) as f:
            records = _json.load(f)["points"]
    if not as_frame:
        return records
    try:
        import pandas
    except ImportError:
        return records
    return pandas.DataFrame(records)

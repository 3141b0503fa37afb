#!/usr/bin/env python3
"""Which batch fits a TPU for training, with which recomputation, and how fast does it run?

Compiles the training step (forward, loss, backward, Adam update) of a model for an emulated TPU
at several batch sizes and recomputation modes, and prints for each:
  - the HBM plan at the step's peak, by category (weights, gradients, optimizer state, saved
    activations, other activations, inputs, workspace), against the chip's HBM;
  - the first batch that no longer fits (XLA's "Ran out of memory in memory space hbm");
  - for configurations that fit (with --time): cycles per phase (forward, loss, backward,
    all-reduce, update) of one timing-only step and the samples per second of the slice.

    PYTHONPATH=build/python python3 examples/tpu_training_memory.py                  # BERT-base on v4
    PYTHONPATH=build/python python3 examples/tpu_training_memory.py --size tiny --time
    PYTHONPATH=build/python python3 examples/tpu_training_memory.py --model resnet50 --batches 32,64,128

BERT is the encoder (embeddings, 12 layers of hidden 768, sequence 128) trained against an MSE
target on its output (no masked-LM head); sizes: base (BERT-base), tiny (2 layers of 128, for tests).
"""
import argparse
import json

import numpy as np

import mimic

SIZES = {
    "bert": {"base": dict(layers=12, hidden=768, heads=12, seq=128, vocab=30522),
             "tiny": dict(layers=2, hidden=128, heads=2, seq=32, vocab=512)},
    "resnet50": {"base": dict(image_size=224, classes=1000), "tiny": dict(image_size=32, classes=10)},
}
CATEGORIES = ["weights", "gradients", "optimizer_state", "saved_activations", "activations", "inputs",
              "buffers", "workspace"]
PHASES = ["forward", "loss", "backward", "allreduce", "update"]
GiB = float(1 << 30)


def model_step(args, batch, recompute, **options):
    zoo = mimic.zoo.ZooModel(args.model, batch, **SIZES[args.model][args.size])
    x = np.asarray(zoo.example_inputs()[0])
    overrides = {"offchip.bytes": args.hbm_bytes} if args.hbm_bytes else None
    if args.chips > 1:
        overrides = dict(overrides or {}, chips=args.chips)
    loss = "mse" if args.model == "bert" else "cross_entropy"
    return mimic.compile_train(zoo.module, loss, mimic.optim.Adam(zoo.module.named_parameters(), lr=1e-4),
                               args.device, example_inputs=x, recompute=recompute, overrides=overrides,
                               replicas=args.replicas, **options)


def plan(args, batch, recompute):
    """The compile-time HBM plan (compiled over capacity too, to show by how much)."""
    step = model_step(args, batch, recompute, compile_only=True, allow_out_of_memory=True)
    if step.compile_report["fallback_nodes"]:
        print(f"note: {len(step.compile_report['fallback_nodes'])} ops run on cpu (tpu-emu has no lowering): "
              "the plan is that of the largest device segment")
    m = step.compile_report["metrics"]
    return {k[len("memory."):-len("_bytes")]: v for k, v in m.items() if k.startswith("memory.")}


def timed(args, batch, recompute):
    step = model_step(args, batch, recompute, timing_only=True)
    zoo = mimic.zoo.ZooModel(args.model, batch, **SIZES[args.model][args.size])
    x = np.asarray(zoo.example_inputs()[0])
    if args.model == "bert":
        y = np.zeros((batch, SIZES["bert"][args.size]["seq"], SIZES["bert"][args.size]["hidden"]), np.float32)
    else:
        y = np.zeros((batch,), np.int64)
    step(x, y)
    return step.report


def main(argv=None):
    """Prints the table; returns the points (dicts of batch, recompute, fits, memory, and with
    --time cycles, phases, samples_per_s)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=sorted(SIZES), default="bert")
    ap.add_argument("--size", choices=["base", "tiny"], default="base")
    ap.add_argument("--device", default="tpu-emu:v4")
    ap.add_argument("--batches", default="32,64,128,256,512")
    ap.add_argument("--recompute", default="none,checkpoints,full")
    ap.add_argument("--replicas", type=int, default=1, help="data-parallel replicas (tpu-emu option)")
    ap.add_argument("--chips", type=int, default=1, help="chips in the slice (--set chips)")
    ap.add_argument("--hbm-bytes", type=int, default=0, help="override the preset's HBM capacity")
    ap.add_argument("--time", action="store_true", help="also run one timing-only step per fitting point")
    ap.add_argument("--json", help="write every point to this file")
    args = ap.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",")]
    modes = args.recompute.split(",")
    points = []
    print(f"{args.model} ({args.size}) training step (Adam) on {args.device}, {args.replicas} replica(s); GiB at the HBM peak")
    print(f"{'batch':>6} {'recompute':>11} {'peak':>7} {'of':>6} {'fits':>4}  " +
          " ".join(f"{c[:10]:>10}" for c in CATEGORIES) + ("   cycles/phase (M)           samples/s" if args.time else ""))
    first_oom = {}
    for batch in batches:
        for mode in modes:
            p = plan(args, batch, mode)
            fits = p["peak"] <= p["capacity"]
            if not fits:
                first_oom.setdefault(mode, batch)
            point = {"batch": batch, "recompute": mode, "fits": fits, "memory": p}
            line = (f"{batch:>6} {mode:>11} {p['peak'] / GiB:>7.2f} {p['capacity'] / GiB:>6.1f} "
                    f"{'yes' if fits else 'no':>4}  " + " ".join(f"{p.get(c, 0) / GiB:>10.3f}" for c in CATEGORIES))
            if args.time and fits:
                r = timed(args, batch, mode)
                phases = {ph: r["metrics"][f"phase.{ph}_cycles"] for ph in PHASES}
                samples_per_s = batch * args.replicas / r["device_seconds"]
                point.update(cycles=r["cycles"], phases=phases, samples_per_s=samples_per_s)
                line += "   " + "/".join(f"{phases[ph] / 1e6:.2f}" for ph in PHASES) + f"  {samples_per_s:>9.1f}"
            points.append(point)
            print(line, flush=True)
    for mode in modes:
        if mode in first_oom:
            print(f"recompute={mode}: batch {first_oom[mode]} is the first that does not fit")
        else:
            print(f"recompute={mode}: every batch fits")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "size": args.size, "device": args.device, "points": points}, f, indent=1)
    return points


if __name__ == "__main__":
    main()

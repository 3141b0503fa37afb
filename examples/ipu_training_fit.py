#!/usr/bin/env python3
"""The questions before renting an IPU-POD for training, answered on the emulated IPU:

1. the largest micro-batch whose training step fits one IPU's tiles, without and with
   recomputation (compile only: Poplar's "Out of memory on tile" decides, as mimic.OutOfMemoryError);
2. the throughput of that micro-batch with gradient accumulation, on one IPU and on 4 replicas
   (an IPU-M2000: 4 GC200s, gradients all-reduced over the IPU-Links once per step), timed on the
   SystemC model (timing only: no numerics).

    examples/ipu_training_fit.py                      # ResNet-50 on a GC200 (minutes)
    examples/ipu_training_fit.py mlp --hidden 256 --micro-batches 8,16,32 --accumulation 4

Defaults follow Graphcore's ResNet-50 training recipe in spirit: float16 storage and optimizer
state in streaming memory (--precision float32 / --no-offload-optimizer-state to change them).
"""
import argparse

import numpy as np

import mimic


def step_for(args, micro, accumulation=1, replicas=1, recomputation="none", compile_only=True):
    """The training step of one micro-batch size (the step's batch: micro x accumulation x
    replicas) and the batch's input shape."""
    params = {"hidden": args.hidden} if args.hidden else {}
    zoo = getattr(mimic.zoo, args.model)(batch=micro * accumulation * replicas, **params)
    model = zoo.module
    opt = mimic.optim.SGD([t for _, t in model.named_parameters()], lr=0.01, momentum=0.9)
    with mimic.ipu.Manager(num_ipus=replicas, preset=args.preset, precision=args.precision,
                           compile_only=compile_only, timing_only=not compile_only) as ipu:
        step = ipu.training_model(model, "cross_entropy", opt, example_inputs=np.zeros(zoo.input_shape, np.float32),
                                  gradient_accumulation=accumulation, replication_factor=replicas,
                                  recomputation=recomputation,
                                  offload_optimizer_state=args.offload_optimizer_state)
    return step, zoo.input_shape


def largest_fit(args, recomputation):
    largest = None
    for micro in args.micro_batches:
        try:
            step, _ = step_for(args, micro, recomputation=recomputation)
        except mimic.OutOfMemoryError as e:
            print(f"  micro-batch {micro:3d}: does not fit: {e}")
            break
        m = step.compile_report["metrics"]
        print(f"  micro-batch {micro:3d}: fits, fullest tile {m['memory.peak_bytes']:,.0f} of "
              f"{m['memory.capacity_bytes']:,.0f} bytes (saved activations {m['memory.saved_activations_bytes']:,.0f}, "
              f"weights {m['memory.weight_bytes']:,.0f}, optimizer state {m['memory.optimizer_state_bytes']:,.0f})")
        largest = micro
    return largest


def throughput(args, micro, accumulation, replicas, recomputation):
    """Samples per second of one timed step (timing only: zero inputs, no numerics); the
    accumulators take tile memory too, so a micro-batch that no longer fits is halved."""
    while True:
        try:
            step, shape = step_for(args, micro, accumulation, replicas, recomputation, compile_only=False)
            break
        except mimic.OutOfMemoryError as e:
            if micro == 1:
                raise
            print(f"  micro-batch {micro} x accumulation {accumulation}: does not fit ({e.bytes_used:,} bytes on "
                  f"tile {e.tile}: the gradient accumulators take their share), trying {micro // 2}")
            micro //= 2
    step(np.zeros(shape, np.float32), np.zeros(shape[0], np.int64))
    r = step.report
    m = r["metrics"]
    print(f"  micro-batch {micro} x accumulation {accumulation} x {replicas} replica(s) = batch {shape[0]}: "
          f"{r['cycles']:,} cycles, {m['samples_per_second']:,.0f} samples/s "
          f"(forward {m['phase.forward_cycles']:,.0f}, backward {m['phase.backward_cycles']:,.0f}, "
          f"all-reduce {m['phase.allreduce_cycles']:,.0f}, update {m['phase.update_cycles']:,.0f} cycles)")
    return m["samples_per_second"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", nargs="?", default="resnet50", help="a mimic.zoo model (default resnet50)")
    p.add_argument("--preset", default="gc200")
    p.add_argument("--hidden", type=int, default=0, help="zoo parameter 'hidden' (mlp, bert)")
    p.add_argument("--precision", default="float16", choices=("float16", "float32"))
    p.add_argument("--offload-optimizer-state", default=True, action=argparse.BooleanOptionalAction,
                   help="optimizer state in streaming memory (remote buffers; default on)")
    p.add_argument("--micro-batches", default="1,2,4,8,16,32",
                   type=lambda s: [int(v) for v in s.split(",")], help="micro-batch sizes to try, ascending")
    p.add_argument("--accumulation", type=int, default=16, help="gradient accumulation steps (default 16)")
    p.add_argument("--replicas", type=int, default=4, help="replicas for the last row (default 4: an IPU-M2000)")
    args = p.parse_args(argv)
    fits = {}
    for mode in ("none", "standard"):
        print(f"{args.model} training step on one {args.preset} ({args.precision}), recomputation={mode}:")
        fits[mode] = largest_fit(args, mode)
        print(f"  largest micro-batch that fits: {fits[mode]}")
    best = max(("none", "standard"), key=lambda m: fits[m] or 0)
    if not fits[best]:
        print("no micro-batch fits")
        return fits, {}
    print(f"throughput at micro-batch {fits[best]} (recomputation={best}), timing only:")
    rates = {(a, r): throughput(args, fits[best], a, r, best)
             for a, r in ((1, 1), (args.accumulation, 1), (args.accumulation, args.replicas))}
    return fits, rates


if __name__ == "__main__":
    main()

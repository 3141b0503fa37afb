#!/usr/bin/env python3
"""A 2-layer MLP on an emulated TPU v4, checked against the cpu backend.

The TPU rounds matmul operands to bfloat16 (one pass at the default precision) and accumulates in
fp32, so its outputs differ from cpu's fp32 ones by about bf16's relative precision (2^-8); with
precision="highest" (6 bf16 passes) they agree to fp32 rounding.
"""
import numpy as np

import mimic


def main():
    model = mimic.nn.Sequential(mimic.nn.Linear(256, 512, seed=1), mimic.nn.ReLU(), mimic.nn.Linear(512, 10, seed=2))
    x = np.random.default_rng(0).normal(size=(32, 256)).astype(np.float32)
    cpu = mimic.compile(model, device="cpu", example_inputs=[x])(x)
    for precision in ("default", "highest"):
        exe = mimic.compile(model, device=mimic.tpu.emulated("v4"), example_inputs=[x], precision=precision)
        y = exe(x)
        r = exe.report
        rel = np.abs(y - cpu).max() / np.abs(cpu).max()
        print(f"tpu-emu:v4 precision={precision:8s} max |tpu - cpu| / max |cpu| = {rel:.2e}   "
              f"{r['cycles']} cycles = {r['device_seconds'] * 1e6:.1f} us at {r['clock_hz'] / 1e6:.0f} MHz")
        bound = 2.0 ** -7 if precision == "default" else 1e-5
        assert rel < bound, f"TPU and cpu differ by {rel} (> {bound}) at precision {precision}"
    print("ops on the TPU:", ", ".join(f"{op['op_type']} {op['shapes']} ({op['cycles']} cycles)" for op in r["ops"]))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The google/jax#9973 effect: a 2x2 float32 matmul on a TPU at the default precision rounds its
operands to bfloat16, so the result differs from float32 in the third digit; precision="highest"
(6 bf16 passes) gives the float32 answer. mimic's emulated TPU reproduces the numbers the TPU
printed in that issue.
"""
import numpy as np

import mimic

X = np.array([[0.3744, 0.1656], [0.4707, 0.1663]], np.float32)
Y = np.array([[0.3946, 0.1186], [0.1569, 0.3145]], np.float32)
TPU_PRINTED = np.array([[0.17405128, 0.09669876], [0.21180916, 0.10805416]])  # jax 0.3.4 on a TPU


def matmul_on(device, precision):
    a, b = mimic.placeholder("x", [2, 2], device=device), mimic.constant(Y, device)
    graph = mimic.trace_graph([mimic.matmul(a, b)], "jax9973")
    return mimic.compile(graph, device=device, precision=precision)(X)


def main():
    exact = X.astype(np.float64) @ Y.astype(np.float64)
    default = matmul_on("tpu-emu:v4", "default")
    highest = matmul_on("tpu-emu:v4", "highest")
    print("numpy float64        ", exact.ravel())
    print("TPU (issue #9973)    ", TPU_PRINTED.ravel())
    print("tpu-emu:v4 default   ", default.ravel(), f"  max diff vs TPU {np.abs(default - TPU_PRINTED).max():.1e}")
    print("tpu-emu:v4 highest   ", highest.ravel(), f"  max diff vs float64 {np.abs(highest - exact).max():.1e}")
    assert np.abs(default - TPU_PRINTED).max() < 1e-7
    assert np.abs(highest - exact).max() < 1e-6
    assert np.abs(default - exact).max() > 1e-4


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""PyTorch on the same GPU as run_cuda.py, for its comparison columns: the zoo's ResNet-50 and BERT-base
encoder as benchmarks/torch_models.py builds them in PyTorch (torchvision's ResNet-50; token and position
embeddings, LayerNorm, 12 post-norm encoder layers with exact GELU, hidden 768, 12 heads, FFN 3072,
sequence 128, no dropout), inference at batch 1, 8 and 64, fp32 weights, NCHW, random weights and inputs.

  python3 benchmarks/cuda/torch_reference.py --out torch_cuda.json
  python3 benchmarks/cuda/run_cuda.py --torch torch_cuda.json

Precision 'highest' disables TF32 (torch.backends.{cuda.matmul,cudnn}.allow_tf32 = False), 'default'
enables it for matmuls and convolutions, which is what mimic's cuda:0 does at each precision. GPU time is
the median over --runs of CUDA-event timings of one forward pass after --warmup passes (cuDNN
autotuning on, torch.inference_mode); input copies are not included. Exits with status 2 and writes
nothing when torch has no CUDA device.
"""
import argparse
import json
import os
import statistics
import sys


def gpu_seconds(torch, model, x, runs, warmup):
    with torch.inference_mode():
        for _ in range(warmup):
            model(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(runs):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(x)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e-3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--precisions", default="default,highest")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    import torch
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import torch_models  # the zoo's models in PyTorch (benchmarks/torch_models.py)
    if not torch.cuda.is_available():
        print("torch_reference.py: torch sees no CUDA device; nothing measured", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    rows = []
    for name in ("resnet50", "bert"):
        model, shape, dtype = torch_models.build(name)
        model = model.eval().cuda()
        for batch in (int(b) for b in a.batches.split(",")):
            x = torch_models.example_input(shape, dtype, batch).cuda()
            for precision in a.precisions.split(","):
                tf32 = precision == "default"
                torch.backends.cuda.matmul.allow_tf32 = tf32
                torch.backends.cudnn.allow_tf32 = tf32
                s = gpu_seconds(torch, model, x, a.runs, a.warmup)
                rows.append({"model": name, "batch": batch, "precision": precision, "gpu_seconds": s})
                print(json.dumps(rows[-1]), flush=True)
    with open(a.out, "w") as f:
        json.dump({"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
                   "gpu": torch.cuda.get_device_name(0), "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

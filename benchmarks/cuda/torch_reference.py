#!/usr/bin/env python3
"""PyTorch on the same GPU as run_cuda.py, for its comparison columns: torchvision's ResNet-50 and a
BERT-base encoder built like mimic's zoo "bert" (token and position embeddings, LayerNorm, 12 post-norm
encoder layers with exact GELU, hidden 768, 12 heads, FFN 3072, sequence 128, no dropout), inference at
batch 1, 8 and 64, fp32 weights, NCHW, random weights and inputs.

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
import statistics
import sys


def bert(torch, layers=12, hidden=768, heads=12, seq=128, vocab=30522):
    nn = torch.nn

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens = nn.Embedding(vocab, hidden)
            self.positions = nn.Parameter(torch.randn(seq, hidden) * 0.02)
            self.norm = nn.LayerNorm(hidden)
            layer = nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=False)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

        def forward(self, ids):
            return self.encoder(self.norm(self.tokens(ids) + self.positions))

    return Bert(), lambda batch: torch.randint(0, vocab, (batch, seq))


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
    import torchvision
    if not torch.cuda.is_available():
        print("torch_reference.py: torch sees no CUDA device; nothing measured", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    models = {"resnet50": (torchvision.models.resnet50(weights=None), lambda b: torch.randn(b, 3, 224, 224)),
              "bert": bert(torch)}
    rows = []
    for name, (model, make_input) in models.items():
        model = model.eval().cuda()
        for batch in (int(b) for b in a.batches.split(",")):
            x = make_input(batch).cuda()
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

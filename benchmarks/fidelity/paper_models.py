"""ONNX builders for the workloads of the published measurements that mimic's zoo does not have:
the TPUv1 paper's production apps (Jouppi et al., ISCA 2017, Table 1), MobileNet v1 (Howard et
al., 2017) and Inception v1 (TF-slim's) for the Coral Edge TPU rows, and the per-tile matrix
product of the IPU tile rows.

Weights are random (seeded): the fidelity suite runs timing-only, so values do not change cycles,
but int8 chips quantize them, which needs finite non-zero scales. Every model takes a symbolic
batch (first input dimension "N"), so one file serves every batch.

Where the paper does not publish a layer width, the shapes below are chosen to match the published
layer counts, weight counts and operational intensity (the paper's ops per weight byte: multiply-
accumulates per weight byte, equal to the batch for the MLPs and LSTMs, at the production batch)
and each builder's docstring states the assumption.
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Builder:
    """A small ONNX graph builder: one value name per op output, random initializers."""

    def __init__(self, name, seed=0):
        self.name = name
        self.nodes, self.inits = [], []
        self.rng = np.random.default_rng(seed)
        self.count = 0

    def _fresh(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def weight(self, shape, fan_in):
        name = self._fresh("w")
        bound = np.sqrt(6.0 / fan_in)
        data = self.rng.uniform(-bound, bound, size=shape).astype(np.float32)
        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def bias(self, n):
        name = self._fresh("b")
        self.inits.append(numpy_helper.from_array(np.zeros(n, np.float32), name))
        return name

    def op(self, op_type, inputs, **attrs):
        out = self._fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def split(self, x, sizes, parts, axis=1):
        outs = [self._fresh("split") for _ in range(parts)]
        self.nodes.append(helper.make_node("Split", [x, sizes], outs, name=outs[0], axis=axis))
        return outs

    def const_axes(self, axes):
        name = self._fresh("axes")
        self.inits.append(numpy_helper.from_array(np.array(axes, np.int64), name))
        return name

    def dense(self, x, n_in, n_out, relu=True):
        y = self.op("Gemm", [x, self.weight((n_out, n_in), n_in), self.bias(n_out)], transB=1)
        return self.op("Relu", [y]) if relu else y

    def conv(self, x, c_in, c_out, k, stride=1, groups=1, relu=True):
        pad = k // 2
        w = self.weight((c_out, c_in // groups, k, k), c_in // groups * k * k)
        y = self.op("Conv", [x, w, self.bias(c_out)], kernel_shape=[k, k], strides=[stride, stride],
                    pads=[pad] * 4, group=groups)
        return self.op("Relu", [y]) if relu else y

    def model(self, x_shape, y, y_shape, opset=13):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)
        out = helper.make_tensor_value_info(y, TensorProto.FLOAT, y_shape)
        graph = helper.make_graph(self.nodes, self.name, [x], [out], self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def mlp(layers, width):
    """An MLP of `layers` fully connected width x width layers with ReLU (MLP0: 5 x 2000 = 20M
    weights; MLP1: 4 x 1118 = 5.0M weights; the paper gives layer and weight counts only)."""
    b = Builder(f"mlp{layers}x{width}")
    x = "x"
    for i in range(layers):
        x = b.dense(x, width, width, relu=i + 1 < layers)
    return b.model(["N", width], x, ["N", width])


def cnn0():
    """TPUv1 CNN0: 16 convolutions, 8M weights, 2888 ops per weight byte at batch 8 (the paper's "ops"
    are multiply-accumulates: for the MLPs and LSTMs they equal the batch), and in Table 3 as many
    useful MACs as array-active cycles (78.2% each: no unused MACs, so every layer fills the 256x256
    array). Assumed: 256 -> 256 channels (whole weight tiles), 13 same-padded 3x3 convolutions and
    3 1x1 ones (every fifth layer; 7.86M weights), on 19x19 feature maps: 19 * 19 * 8 = 2888 MACs
    per weight byte at batch 8, exactly (19x19 is the one square map that gives it)."""
    b = Builder("tpuv1_cnn0")
    x, c = "x", 256
    for i in range(16):
        x = b.conv(x, c, c, 1 if i % 5 == 4 else 3)
    return b.model(["N", c, 19, 19], x, ["N", c, 19, 19])


def cnn1():
    """TPUv1 CNN1: 72 convolutions, 13 pools and 4 fully connected layers (89 layers), 100M weights,
    1750 MACs per weight byte at batch 32, its FC layers at intensity 32 (one MAC per weight per
    sample). Solving 32 * (H * W * Wc + Wf) = 1750 * (Wc + Wf) with Wc + Wf = 100M needs feature maps
    above 9x9 (at 7x7 the convolutions would need 112M weights); assumed: 19x19 maps (the Go board
    of AlphaGo, which CNN1 is reported to be), 72 same-padded 3x3 convolutions of 152 -> 152 channels
    (14.97M weights), 13 stride-1 3x3 max pools (one after every 6 convolutions, one before the FC
    layers), and FC layers 54872 -> 1536 -> 512 -> 256 -> 1000 from the flattened 152x19x19 map
    (85.46M). At batch 32: (14.97M * 361 * 32 + 85.46M * 32) / 100.43M = 1,749 MACs per weight byte."""
    b = Builder("tpuv1_cnn1")
    x, c = "x", 152
    for i in range(72):
        x = b.conv(x, c, c, 3)
        if i % 6 == 5:
            x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    x = b.op("Flatten", [x], axis=1)
    widths = [c * 19 * 19, 1536, 512, 256, 1000]
    for i in range(4):
        x = b.dense(x, widths[i], widths[i + 1], relu=i < 3)
    return b.model(["N", c, 19, 19], x, ["N", 1000])


def lstm_app(name, cells, hidden, steps, final_fc=False, gate_matrices=False):
    """TPUv1 LSTM0/LSTM1 as a stack of LSTM cells unrolled over `steps` time steps, decoder-style:
    each step's input is the previous step's output (the top cell's, or the final FC layer's), as
    in GNM Translate's decoder, of which LSTM0 is a subset. Table 1 gives both apps an operational
    intensity equal to their batch (64 and 96 multiply-accumulates per weight byte): every weight is
    fetched once per time step and used once per sample, which is what a step-by-step execution does
    and what one GEMM over all steps' input projections (an encoder's shortcut) would not. A cell's
    input and recurrent projections are [H, 4H] each (the paper's 2 FC layers per cell), or with
    `gate_matrices` one [H, H] matrix per gate and projection (8 per cell); the first step has no
    recurrent product (zero initial state).
    LSTM0: 24 FC layers and 52M weights -> 12 cells of hidden 736 (52.0M).
    LSTM1: 34M weights in 600 x 600 matrices: the paper's sensitivity study (Section 7) names "a
    600x600 matrix used in LSTM1", taking 9 steps of the 256x256 array, and Table 3 agrees: its
    useful MACs are 60% of the active ones (6.3 of 10.5), as 600^2 / 768^2 = 61% of a padded
    3 x 3 tile grid. -> 12 cells of hidden 600 with a 600 x 600 matrix per gate and projection
    (34.6M). Table 1's count of 37 FC layers does not fit 34M weights of such matrices, and is not
    followed. The sequence length is not published: assumed `steps`."""
    b = Builder(name)
    shape = (hidden, hidden) if gate_matrices else (hidden, 4 * hidden)
    per_cell = 4 if gate_matrices else 1
    w = [[b.weight(shape, hidden) for _ in range(per_cell)] for _ in range(cells)]
    r = [[b.weight(shape, hidden) for _ in range(per_cell)] for _ in range(cells)]
    fc = b.weight((hidden, hidden), hidden) if final_fc else None
    sizes = None if gate_matrices else b.const_axes([hidden] * 4)

    def project(x, ws):
        return [b.op("MatMul", [x, m]) for m in ws]

    h, c, x = [None] * cells, [None] * cells, "x"
    for _ in range(steps):
        for layer in range(cells):
            gates = project(x, w[layer])
            if h[layer] is not None:
                gates = [b.op("Add", [g, u]) for g, u in zip(gates, project(h[layer], r[layer]))]
            i, f, g, o = gates if gate_matrices else b.split(gates[0], sizes, 4)
            i, f, g, o = b.op("Sigmoid", [i]), b.op("Sigmoid", [f]), b.op("Tanh", [g]), b.op("Sigmoid", [o])
            ig = b.op("Mul", [i, g])
            c[layer] = ig if c[layer] is None else b.op("Add", [b.op("Mul", [f, c[layer]]), ig])
            h[layer] = x = b.op("Mul", [o, b.op("Tanh", [c[layer]])])
        if fc:
            x = b.op("MatMul", [x, fc])
    return b.model(["N", hidden], x, ["N", hidden], opset=14)


def mobilenet_v1(image=224, classes=1000):
    """MobileNet v1 (width 1.0): a 3x3 stride-2 convolution of 32 channels, 13 depthwise-separable
    blocks, global average pooling and a 1024 -> 1000 classifier (Howard et al., 2017, Table 1)."""
    b = Builder("mobilenet_v1")
    x = b.conv("x", 3, 32, 3, stride=2)
    blocks = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    c = 32
    for c_out, stride in blocks:
        x = b.conv(x, c, c, 3, stride=stride, groups=c)
        x = b.conv(x, c, c_out, 1)
        c = c_out
    x = b.op("GlobalAveragePool", [x])
    x = b.op("Flatten", [x], axis=1)
    x = b.dense(x, c, classes, relu=False)
    return b.model(["N", 3, image, image], x, ["N", classes])


# TF-slim's inception_v1 modules (nets/inception_v1.py, the Coral Edge TPU's Inception v1): branch
# widths [1x1, 3x3 reduce, 3x3, second 3x3 reduce, second 3x3, pool projection], each module's
# output the four branches concatenated. (TF-slim's third branch is a 3x3 convolution where
# Szegedy et al. 2014 have a 5x5.)
INCEPTION_V1_MODULES = {
    "3b": (64, 96, 128, 16, 32, 32), "3c": (128, 128, 192, 32, 96, 64),
    "4b": (192, 96, 208, 16, 48, 64), "4c": (160, 112, 224, 24, 64, 64),
    "4d": (128, 128, 256, 24, 64, 64), "4e": (112, 144, 288, 32, 64, 64),
    "4f": (256, 160, 320, 32, 128, 128), "5b": (256, 160, 320, 32, 128, 128),
    "5c": (384, 192, 384, 48, 128, 128),
}


def inception_v1(image=224, classes=1001):
    """Inception v1 as TF-slim builds it (inception_v1_base, then the logits), BatchNorm folded into
    the convolutions as the quantized TFLite model has it: a 7x7 stride-2 convolution of 64
    channels, 3x3 stride-2 max pooling, 1x1 (64) and 3x3 (192) convolutions, 3x3 stride-2 max
    pooling, modules 3b-3c, pooling, 4b-4f, 2x2 stride-2 pooling, 5b-5c, 7x7 average pooling and a
    1x1 convolution to 1,001 classes."""
    b = Builder("inception_v1")

    def max_pool(x, k, stride):
        pad = 1 if k == 3 else 0
        return b.op("MaxPool", [x], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)

    def module(x, c_in, widths):
        w0, w1r, w1, w2r, w2, w3 = widths
        b0 = b.conv(x, c_in, w0, 1)
        b1 = b.conv(b.conv(x, c_in, w1r, 1), w1r, w1, 3)
        b2 = b.conv(b.conv(x, c_in, w2r, 1), w2r, w2, 3)
        b3 = b.conv(max_pool(x, 3, 1), c_in, w3, 1)
        return b.op("Concat", [b0, b1, b2, b3], axis=1), w0 + w1 + w2 + w3

    x = max_pool(b.conv("x", 3, 64, 7, stride=2), 3, 2)
    x = max_pool(b.conv(b.conv(x, 64, 64, 1), 64, 192, 3), 3, 2)
    c = 192
    for name, widths in INCEPTION_V1_MODULES.items():
        if name in ("4b", "5b"):
            x = max_pool(x, 3 if name == "4b" else 2, 2)
        x, c = module(x, c, widths)
    x = b.op("GlobalAveragePool", [x])
    x = b.op("Flatten", [b.conv(x, c, classes, 1, relu=False)], axis=1)
    return b.model(["N", 3, image, image], x, ["N", classes])


def ipu_tile_matmul():
    """One [rows, 16] x [16, 16] matrix product whose rows the IPU planner spreads evenly over the
    chip's tiles (the batch is rows-per-tile x tiles): on every tile, the [N, 16] x [16, 16] product
    of tessellate-ipu's peak-FLOPS notebook (one ConvPartial1x1 vertex per tile)."""
    b = Builder("ipu_tile_matmul")
    w = b.weight((16, 16), 16)
    y = b.op("MatMul", ["x", w])
    return b.model(["N", 16], y, ["N", 16])


def ipu_link_transfer():
    """Two elementwise ops that a two-IPU pipeline puts one per IPU, so that the whole [N, 16384]
    f32 activation crosses the IPU-Links between them, one micro-batch at a time."""
    b = Builder("ipu_link_transfer")
    y = b.op("Neg", [b.op("Relu", ["x"])])
    return b.model(["N", 16384], y, ["N", 16384])


BUILDERS = {
    "tpuv1_mlp0": lambda: mlp(5, 2000),
    "tpuv1_mlp1": lambda: mlp(4, 1118),
    "tpuv1_cnn0": cnn0,
    "tpuv1_cnn1": cnn1,
    "tpuv1_lstm0": lambda: lstm_app("tpuv1_lstm0", 12, 736, 16),
    "tpuv1_lstm1": lambda: lstm_app("tpuv1_lstm1", 12, 600, 16, gate_matrices=True),
    "mobilenet_v1": mobilenet_v1,
    "inception_v1": inception_v1,
    "ipu_tile_matmul": ipu_tile_matmul,
    "ipu_link_transfer": ipu_link_transfer,
}


def write(name, path):
    onnx.save(BUILDERS[name](), path)

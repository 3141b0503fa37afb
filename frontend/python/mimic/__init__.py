"""mimic: run ML models on emulated TPUs and IPUs and on real devices, from numpy.

    import mimic, numpy as np
    model = mimic.nn.Sequential(mimic.nn.Linear(784, 256), mimic.nn.ReLU(), mimic.nn.Linear(256, 10))
    exe = mimic.compile(model, device="tpu-emu:v4", example_inputs=[np.zeros((8, 784), np.float32)])
    y = exe(np.random.rand(8, 784).astype(np.float32))
    print(exe.report["cycles"], exe.report["ops"][0])
"""
from . import _mimic
from ._mimic import (Device, DeviceInfo, Executable, Graph, Tensor, add, avg_pool2d, batch_norm, cast, concat,
                     constant, conv2d, devices, div, erf, exp, flatten, gelu, global_avg_pool, layer_norm, log,
                     log_softmax, matmul, max_pool2d, mul, placeholder, reduce_max, reduce_mean, reduce_sum, relu,
                     relu6, reshape, sigmoid, softmax, sqrt, sub, tanh, tensor, transpose)
from ._mimic import trace as trace_graph
from .errors import (CompileError, DeviceUnavailableError, Error, ExecutionError, InvalidArgument, IoError,
                     OutOfMemoryError, ShapeError, UnsupportedOpError)
from . import nn, optim, zoo, tpu, ipu, onnx, traces
from ._compile import compile
from ._train import compile_train, fit
from ._trace import trace as trace
from ._sweep import sweep

__version__ = _mimic.__version__

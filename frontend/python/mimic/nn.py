"""mimic.nn: modules in the PyTorch idiom. `model(x)` records ops on x's device; parameters are
constants with seeded random initialization that `.to(device)` moves with the module. Subclass
`Module` and write `forward` with mimic functions, as with torch.nn.Module."""
import math

import numpy as np

from . import _mimic


class Module:
    def __init__(self):
        self._device = "cpu"
        self._name = ""

    def forward(self, x):
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    def __call__(self, x):
        return _mimic._scoped_call(self._name, self.forward, x)

    def __setattr__(self, key, value):
        if isinstance(value, Module) and key != "_parent":
            value._name = key
        object.__setattr__(self, key, value)

    def children(self):
        return [(k, v) for k, v in vars(self).items() if isinstance(v, Module)]

    def named_parameters(self, prefix=""):
        for k, v in vars(self).items():
            if isinstance(v, _mimic.Tensor):
                yield prefix + k, v
            elif isinstance(v, Module):
                yield from v.named_parameters(prefix + k + ".")

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def state_dict(self):
        """{name: numpy array} of every parameter (BatchNorm running statistics included)."""
        return {name: np.array(p) for name, p in self.named_parameters()}

    def load_state_dict(self, state, strict=True):
        """Replaces parameters by name (e.g. from a TrainStep's state_dict(); optimizer entries are
        skipped). With strict, every parameter must be given; shapes must match."""
        own = dict(self.named_parameters())
        missing = [k for k in own if k not in state]
        if strict and missing:
            raise KeyError(f"load_state_dict: missing parameters {missing}")
        for name, value in state.items():
            if name not in own:
                continue
            value = np.ascontiguousarray(value, dtype=np.float32)
            if tuple(value.shape) != tuple(own[name].shape):
                raise ValueError(f"load_state_dict: '{name}' has shape {tuple(value.shape)}, "
                                 f"the module has {tuple(own[name].shape)}")
            *path, attr = name.split(".")
            module = self
            for part in path:
                module = module._child(part)
            object.__setattr__(module, attr, _mimic.constant(value, str(own[name].device)))
        return self

    def _child(self, name):
        return getattr(self, name)

    def to(self, device):
        device = str(device)
        for k, v in list(vars(self).items()):
            if isinstance(v, _mimic.Tensor):
                object.__setattr__(self, k, v.to(device))
            elif isinstance(v, Module):
                v.to(device)
        self._device = device
        return self

    @property
    def device(self):
        return self._device


class Sequential(Module):
    def __init__(self, *modules):
        super().__init__()
        self._modules = []
        for i, m in enumerate(modules):
            self.append(m, str(i))

    def append(self, module, name=None):
        module._name = name or str(len(self._modules))
        self._modules.append(module)
        return self

    def children(self):
        return [(m._name, m) for m in self._modules]

    def _child(self, name):
        for m in self._modules:
            if m._name == name:
                return m
        raise KeyError(f"Sequential has no module '{name}'")

    def named_parameters(self, prefix=""):
        for m in self._modules:
            yield from m.named_parameters(prefix + m._name + ".")

    def to(self, device):
        for m in self._modules:
            m.to(device)
        self._device = str(device)
        return self

    def forward(self, x):
        for m in self._modules:
            x = m(x)
        return x

    def __len__(self):
        return len(self._modules)

    def __getitem__(self, i):
        return self._modules[i]


def _parameter(array, device):
    return _mimic.constant(np.ascontiguousarray(array, dtype=np.float32), device)


class Linear(Module):
    """y = x @ weight + bias, with weight [in_features, out_features] (He-normal)."""

    def __init__(self, in_features, out_features, bias=True, seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.weight = _parameter(rng.normal(0, math.sqrt(2 / in_features), (in_features, out_features)), "cpu")
        self.bias = _parameter(rng.normal(0, 0.01, (out_features,)), "cpu") if bias else None

    def forward(self, x):
        y = _mimic.matmul(x, self.weight)
        return y if self.bias is None else y + self.bias


class Conv2d(Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, groups=1, bias=True,
                 layout="NCHW", seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)
        fan_in = in_channels // groups * kernel_size * kernel_size
        self.weight = _parameter(rng.normal(0, math.sqrt(2 / fan_in),
                                            (out_channels, in_channels // groups, kernel_size, kernel_size)), "cpu")
        self.bias = _parameter(rng.normal(0, 0.01, (out_channels,)), "cpu") if bias else None
        self.stride, self.padding, self.groups, self.layout = stride, padding, groups, layout

    def forward(self, x):
        return _mimic.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.groups, self.layout)


class ReLU(Module):
    def forward(self, x):
        return _mimic.relu(x)


class ReLU6(Module):
    def forward(self, x):
        return _mimic.relu6(x)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate == "tanh"

    def forward(self, x):
        return _mimic.gelu(x, self.approximate)


class Sigmoid(Module):
    def forward(self, x):
        return _mimic.sigmoid(x)


class Tanh(Module):
    def forward(self, x):
        return _mimic.tanh(x)


class Softmax(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return _mimic.softmax(x, self.dim)


class Flatten(Module):
    def __init__(self, start_dim=1):
        super().__init__()
        self.start_dim = start_dim

    def forward(self, x):
        return _mimic.flatten(x, self.start_dim)


class Identity(Module):
    def forward(self, x):
        return x


class BatchNorm2d(Module):
    """Inference batch normalization with running statistics (mean 0, variance 1 unless set)."""

    def __init__(self, num_features, eps=1e-5, layout="NCHW"):
        super().__init__()
        self.weight = _parameter(np.ones(num_features), "cpu")
        self.bias = _parameter(np.zeros(num_features), "cpu")
        self.running_mean = _parameter(np.zeros(num_features), "cpu")
        self.running_var = _parameter(np.ones(num_features), "cpu")
        self.eps, self.layout = eps, layout

    def forward(self, x):
        return _mimic.batch_norm(x, self.weight, self.bias, self.running_mean, self.running_var, self.eps, self.layout)


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5):
        super().__init__()
        self.weight = _parameter(np.ones(normalized_shape), "cpu")
        self.bias = _parameter(np.zeros(normalized_shape), "cpu")
        self.eps = eps

    def forward(self, x):
        return _mimic.layer_norm(x, self.weight, self.bias, -1, self.eps)


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, layout="NCHW"):
        super().__init__()
        self.args = (kernel_size, stride or kernel_size, padding, ceil_mode, layout)

    def forward(self, x):
        return _mimic.max_pool2d(x, *self.args)


class AvgPool2d(MaxPool2d):
    def forward(self, x):
        return _mimic.avg_pool2d(x, *self.args)


class AdaptiveAvgPool2d(Module):
    """Only output size 1 (global average pooling), as CNN heads use it."""

    def __init__(self, output_size=1, layout="NCHW"):
        super().__init__()
        if output_size not in (1, (1, 1)):
            raise ValueError(f"AdaptiveAvgPool2d supports output size 1 only, got {output_size}")
        self.layout = layout

    def forward(self, x):
        return _mimic.global_avg_pool(x, self.layout)

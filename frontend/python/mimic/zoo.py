"""mimic.zoo: the model zoo (seeded random weights, any batch, NCHW or NHWC for CNNs).

    model = mimic.zoo.resnet50(batch=8)
    exe = mimic.compile(model, device="tpu-emu:v4")
    y = exe(*model.example_inputs())
"""
from . import _mimic


class ZooModel:
    def __init__(self, name, batch=1, layout="nchw", seed=0, **params):
        module, graph, input_name, dtype, shape, int_high = _mimic._zoo_make(name, layout, seed, params)
        self.name, self.batch, self.layout, self.seed = name, batch, layout, seed
        self.module, self.graph = module, graph
        self.input_name, self.input_dtype = input_name, dtype
        self.input_shape = tuple(batch if d == -1 else d for d in shape)
        self._int_high = int_high or 100

    def example_inputs(self, seed=1):
        """Deterministic random inputs of the right shape and dtype (token ids for bert)."""
        return _mimic._random_inputs(self.graph, self.batch, seed, self._int_high)

    def __repr__(self):
        return f"mimic.zoo.{self.name}(batch={self.batch}, layout='{self.layout}')"


def names():
    return _mimic._zoo_names()


def mlp(batch=1, **params):
    return ZooModel("mlp", batch, **params)


def resnet18(batch=1, layout="nchw", **params):
    return ZooModel("resnet18", batch, layout, **params)


def resnet50(batch=1, layout="nchw", **params):
    return ZooModel("resnet50", batch, layout, **params)


def mobilenet_v2(batch=1, layout="nchw", **params):
    return ZooModel("mobilenet_v2", batch, layout, **params)


def bert(batch=1, **params):
    return ZooModel("bert", batch, **params)

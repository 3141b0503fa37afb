"""An IPU-style manager in the idiom of PopTorch/PopART users, on the emulated IPU.

    with mimic.ipu.Manager(num_ipus=2, precision="float16", memory_proportion=0.6,
                           enable_half_partials=True, compile_only=False) as ipu:
        compiled = ipu.compile_model(model, example_inputs)
        out = ipu.execute_model(compiled, inputs)
"""
from . import _mimic
from ._compile import compile as _compile
from .errors import InvalidArgument


class Manager:
    def __init__(self, num_ipus=1, precision="float32", memory_proportion=0.6, enable_half_partials=False,
                 compile_only=False, preset="gc200", **options):
        if not isinstance(num_ipus, int) or num_ipus <= 0:
            raise InvalidArgument(f"num_ipus must be a positive int, got {num_ipus!r}")
        if precision not in ("float32", "float16"):
            raise InvalidArgument(f"precision must be 'float32' or 'float16', got {precision!r}")
        if not 0 < float(memory_proportion) <= 1:
            raise InvalidArgument(f"memory_proportion must be in (0, 1], got {memory_proportion!r}")
        self.num_ipus, self.precision = num_ipus, precision
        self.memory_proportion, self.enable_half_partials = float(memory_proportion), bool(enable_half_partials)
        self.compile_only, self.preset, self.options = bool(compile_only), preset, options
        self.device = _mimic.Device(f"ipu-emu:{preset}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def compile_model(self, model, example_inputs=None, batch=None):
        """Compiles for the emulated IPU(s); raises mimic.OutOfMemoryError when a tile overflows."""
        return _compile(model, self.device, batch=batch, example_inputs=example_inputs, precision=self.precision,
                        compile_only=self.compile_only, num_ipus=self.num_ipus,
                        memory_proportion=self.memory_proportion, enable_half_partials=self.enable_half_partials,
                        **self.options)

    def execute_model(self, compiled, inputs):
        if not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        return compiled(*inputs)

    def get_ipu_count(self):
        return self.num_ipus

    def get_ipu_info(self):
        info = self.device.info()
        return {"device": info.name, "available": info.available, "description": info.description,
                "reason": info.reason, "num_ipus": self.num_ipus, "precision": self.precision,
                "memory_proportion": self.memory_proportion, "enable_half_partials": self.enable_half_partials}

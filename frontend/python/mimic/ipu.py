"""An IPU-style manager in the idiom of PopTorch/PopART users, on the emulated IPU.

    with mimic.ipu.Manager(num_ipus=2, precision="float16", memory_proportion=0.6,
                           enable_half_partials=True, compile_only=False) as ipu:
        compiled = ipu.compile_model(model, example_inputs)
        out = ipu.execute_model(compiled, inputs)
        trainer = ipu.training_model(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.1),
                                     example_inputs=x, gradient_accumulation=4, replication_factor=2,
                                     recomputation="standard")
        loss = trainer(x, y)

Other keyword options of Manager are ipu-emu's device options, e.g. pipeline_schedule="interleaved"
(grouped | interleaved | sequential, IPU TensorFlow's PipelineSchedule) for a model pipelined over
num_ipus / replication_factor IPUs.
"""
import numpy as np

from . import _mimic
from ._compile import compile as _compile
from ._train import compile_train as _compile_train
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

    # PopART's RecomputationType names (and mimic's own) -> mimic's recompute modes; "pipeline"
    # recomputes each pipeline stage from its stashed inputs, so it needs stages.
    _RECOMPUTE = {"none": "none", "norecompute": "none", "standard": "checkpoints",
                  "checkpoints": "checkpoints", "pipeline": "checkpoints", "recomputeall": "full",
                  "full": "full"}

    def _setting(self, name, given, default):
        """A training_model option: as given, else the Manager's, else the default; both given and
        different is an error."""
        if given is not None and name in self.options and str(self.options[name]).lower() != str(given).lower():
            raise InvalidArgument(f"training_model: {name}={given!r} disagrees with Manager({name}="
                                  f"{self.options[name]!r})")
        if given is not None:
            return given
        value = self.options.get(name, default)
        return value.lower() == "true" if isinstance(value, str) and name == "offload_optimizer_state" else value

    def training_model(self, model, loss="cross_entropy", optimizer=None, example_inputs=None, *,
                       gradient_accumulation=None, replication_factor=None, recomputation="none",
                       recomputation_checkpoints=(), offload_optimizer_state=None, loss_scale=None,
                       schedule=None, **kwargs):
        """A compiled training step on the emulated IPU(s), as poptorch.trainingModel: `loss = step(x, y)`.

        example_inputs' batch is the combined batch of one step (PopTorch's micro-batch x
        gradient_accumulation x replication_factor). gradient_accumulation: the step runs forward
        and backward on that many micro-batches, summing gradients in on-tile accumulators, and
        updates once; replication_factor: data-parallel replicas whose gradients are all-reduced
        once per step, on num_ipus IPUs (a multiple of it; num_ipus / replication_factor pipeline
        stages per replica). recomputation: "none", "standard" (PopART's name; keep the matrix
        ops' outputs, recompute the rest: mimic's "checkpoints"), "pipeline" (the same per
        pipeline stage; needs stages) or "full"/"recompute_all". recomputation_checkpoints: with
        "recompute_all", the names of the nodes whose outputs are kept (where poptorch's
        recomputationCheckpoint would go; e.g. ["layer1.0.relu"]). offload_optimizer_state: keep the
        optimizer state in streaming memory (remote buffers). The update uses the mean gradient
        of the whole batch, which is what accumulating equal micro-batches and all-reducing
        replicas compute, except that BatchNorm here normalizes over the whole batch, not per
        micro-batch and replica. With a compile_only Manager the step compiles (its
        compile_report has the tile memory) but cannot run. loss_scale and schedule: as
        mimic.compile_train.
        """
        if kwargs:
            raise InvalidArgument(f"training_model: option(s) {', '.join(sorted(kwargs))} are not modeled "
                                  "(known: gradient_accumulation, replication_factor, recomputation, "
                                  "recomputation_checkpoints, offload_optimizer_state, loss_scale, schedule)")
        # Left unset, these take the Manager's value (Manager(gradient_accumulation=4)), else: no
        # accumulation (or, over pipeline stages, the device's pick, as the CLI's), 1 replica, False.
        gradient_accumulation = self._setting("gradient_accumulation", gradient_accumulation, None)
        replication_factor = self._setting("replication_factor", replication_factor, 1)
        offload_optimizer_state = self._setting("offload_optimizer_state", offload_optimizer_state, False)
        for name, value in (("gradient_accumulation", gradient_accumulation),
                            ("replication_factor", replication_factor)):
            if value is None and name == "gradient_accumulation":
                continue
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
                raise InvalidArgument(f"training_model: {name} must be a positive int, got {value!r}")
        if self.num_ipus % replication_factor != 0:
            raise InvalidArgument(f"training_model: replication_factor={replication_factor} must divide "
                                  f"num_ipus={self.num_ipus}")
        stages = self.num_ipus // replication_factor
        mode = str(recomputation).lower().replace("_", "")
        if mode not in self._RECOMPUTE:
            raise InvalidArgument(f"training_model: recomputation={recomputation!r} is not one of "
                                  "none, standard, pipeline, recompute_all (or checkpoints, full)")
        if mode == "pipeline" and stages < 2:
            raise InvalidArgument(f"training_model: recomputation='pipeline' recomputes per pipeline stage, and "
                                  f"num_ipus={self.num_ipus} / replication_factor={replication_factor} gives "
                                  f"{stages} stage; use 'standard' or more IPUs per replica")
        options = dict(self.options, num_ipus=self.num_ipus, memory_proportion=self.memory_proportion,
                       enable_half_partials=self.enable_half_partials, recompute=self._RECOMPUTE[mode],
                       recompute_checkpoints=list(recomputation_checkpoints),
                       replication_factor=int(replication_factor),
                       offload_optimizer_state=bool(offload_optimizer_state))
        if gradient_accumulation is not None:
            options["gradient_accumulation"] = int(gradient_accumulation)
        if self.compile_only:
            options["compile_only"] = True
        return _compile_train(model, loss, optimizer, f"ipu-emu:{self.preset}", example_inputs=example_inputs,
                              precision=self.precision, loss_scale=loss_scale, schedule=schedule,
                              **{k: str(v).lower() if isinstance(v, bool) else v for k, v in options.items()})

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

"""mimic.compile_train(): one compiled training step (forward, loss, backward, optimizer update)."""
import numpy as np

from . import _mimic
from ._compile import _device_of
from .errors import InvalidArgument
from .optim import Optimizer
from .lr_scheduler import LRScheduler


def _check_optimizer_params(optimizer, params):
    """mimic trains every parameter of the model with one learning rate: an optimizer over part of
    them (frozen layers) or over parameter groups would be silently ignored, so it is refused."""
    given = optimizer.params
    if any(isinstance(p, dict) for p in given):
        raise InvalidArgument(f"{type(optimizer).__name__}: parameter groups (dicts with their own lr) are not "
                              "supported: every parameter trains with the optimizer's lr")
    if params is not None and given and len(given) != len(params):
        raise InvalidArgument(f"{type(optimizer).__name__} was given {len(given)} of the model's {len(params)} "
                              "parameters: mimic trains all of them (freezing layers is not supported); pass "
                              "model.parameters() or []")


def compile_train(model, loss="cross_entropy", optimizer=None, device=None, *, example_inputs=None,
                  label_smoothing=0.0, ignore_index=-100, precision="default", seed=0, schedule=None,
                  loss_scale=None, recompute="none", recompute_checkpoints=(), timing_only=False,
                  compile_only=False, strict=False, overrides=None, batch_norm_variance="auto", **options):
    """Compiles the training step of nn module `model` for `device`; `model` may also be an
    imported model (mimic.onnx.load), whose floating-point initializers are the parameters and
    whose symbolic batch is bound to example_inputs' first dimension.

    loss: "cross_entropy" (logits [N, C], int64 labels [N]), "mse" or "bce_with_logits".
    optimizer: a mimic.optim.SGD / Adam / AdamW / LAMB. example_inputs: an array with the batch's shape.
    schedule: a mimic.optim.lr_scheduler scheduler (StepLR, CosineAnnealingLR, LinearLR,
    SequentialLR, ...): step k uses its lr for k, as PyTorch's scheduler after k step() calls.
    loss_scale: None, "dynamic" (torch.amp.GradScaler's rule and defaults), a number (a fixed
    scale) or a dict of init_scale / growth_factor / backoff_factor / growth_interval (dynamic):
    the gradients of loss * scale are unscaled before the update, and a step whose gradients hold
    an inf or NaN is skipped (`step.skipped_steps`, `step.loss_scale`). For fp16 devices
    (ipu-emu at precision="float16").
    recompute: "none", "checkpoints" (keep conv/matmul outputs, recompute the ops between them
    in the backward pass) or "full" (keep about sqrt(n) block outputs, recompute each block):
    fewer activations live across the step for more operations (PopTorch's recomputation, XLA's
    rematerialization). The losses are the same. recompute_checkpoints (with "full"): the names of
    the forward nodes whose outputs are kept (e.g. ["layer1.0.relu", "layer2.0.relu"]), in place
    of the sqrt(n) block outputs, as PopTorch's recomputationCheckpoint places them.
    batch_norm_variance: how BatchNorm computes its batch variance: "auto" (one_pass on tpu and
    ipu devices, as XLA's BatchNormExpander, Flax and PopART do; two_pass elsewhere, as PyTorch does),
    "one_pass" (mean(x^2) - mean^2) or "two_pass" (mean((x - mean)^2)).
    seed: Dropout masks of step k are drawn from (seed, k), so a run repeats exactly.
    timing_only: emulators compute cycles only (the loss is 0); compile_only: compile and report
    (`step.compile_report`: the memory plan), the step cannot run. strict: an op the device cannot
    run is an error instead of running on the cpu fallback (as mimic.compile's). overrides: preset fields,
    e.g. {"offchip.bytes": 8 << 30}. Other keywords are the device's options (e.g. replicas=4,
    allow_out_of_memory=True on tpu-emu; gradient_accumulation=4 on ipu-emu).
    Returns a TrainStep: `loss = step(x, y)`; `step.state_dict()` gives the trained parameters
    (load them into the model with `model.load_state_dict(step.state_dict())`). Parameters and
    optimizer state stay on the device between steps (`step.state_on_device`; in host memory on
    cpu or when cpu fallback splits the step): state_dict() reads them back, load_state_dict()
    writes them.
    """
    if not isinstance(optimizer, Optimizer):
        raise InvalidArgument(f"compile_train needs optimizer=mimic.optim.SGD/Adam/AdamW(...), got {optimizer!r}")
    if schedule is not None and not isinstance(schedule, LRScheduler):
        raise InvalidArgument(f"compile_train: schedule must be a mimic.optim.lr_scheduler scheduler, got {schedule!r}")
    if example_inputs is None:
        raise InvalidArgument("compile_train needs example_inputs (an array with the batch's shape)")
    if isinstance(example_inputs, (list, tuple)):
        if len(example_inputs) != 1:
            raise InvalidArgument(f"modules take one input, got {len(example_inputs)} example inputs")
        example_inputs = example_inputs[0]
    x = np.asarray(example_inputs)
    if isinstance(model, _mimic.Graph):  # an imported model (mimic.onnx.load): initializers train
        graph, params = _mimic._bind_batch(model, int(x.shape[0])), None
    else:
        holder = _mimic.placeholder("input", list(x.shape), x.dtype, str(model.device))
        graph = _mimic.trace([model(holder)], type(model).__name__)
        params = list(model.named_parameters())
    _check_optimizer_params(optimizer, params)
    device = _device_of(model, device)
    loss_cfg = {"kind": str(loss), "label_smoothing": float(label_smoothing), "ignore_index": int(ignore_index)}
    opts = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()}
    opts.update({key: str(bool(value)).lower()
                 for key, value in (("timing_only", timing_only), ("compile_only", compile_only), ("strict", strict))})
    opts.update({f"set.{k}": str(v) for k, v in (overrides or {}).items()})
    return _mimic._compile_train(graph, params, str(device), loss_cfg, dict(optimizer.config), str(precision),
                                 opts, int(seed),
                                 [] if schedule is None else schedule.phases(), loss_scale, str(recompute),
                                 [str(name) for name in recompute_checkpoints], str(batch_norm_variance))


def fit(step, x, y, epochs=1, batch_size=None, shuffle=True, seed=0, verbose=False):
    """Keras-style training loop over arrays: `epochs` passes over (x, y) in batches of
    `batch_size` (the batch the step was compiled for), shuffled each epoch with `seed`. A last
    partial batch is dropped (the compiled step has a fixed batch), as tf.data's
    drop_remainder=True. Returns {"loss": [mean loss of each epoch]}, like Keras' History.history.
    Also available as `step.fit(x, y, ...)`."""
    x, y = np.asarray(x), np.asarray(y)
    if not isinstance(batch_size, (int, np.integer)) or isinstance(batch_size, bool) or batch_size <= 0:
        raise InvalidArgument(f"fit: batch_size must be the step's batch (a positive int), got {batch_size!r}")
    if len(x) != len(y):
        raise InvalidArgument(f"fit: x has {len(x)} samples, y has {len(y)}")
    batches = len(x) // int(batch_size)
    if batches == 0:
        raise InvalidArgument(f"fit: {len(x)} samples do not fill one batch of {batch_size}")
    if int(epochs) <= 0:
        raise InvalidArgument(f"fit: epochs must be > 0, got {epochs!r}")
    rng = np.random.default_rng(seed)
    history = {"loss": []}
    for epoch in range(int(epochs)):
        order = rng.permutation(len(x)) if shuffle else np.arange(len(x))
        losses = []
        for b in range(batches):
            idx = order[b * batch_size:(b + 1) * batch_size]
            losses.append(step(np.ascontiguousarray(x[idx]), np.ascontiguousarray(y[idx])))
        history["loss"].append(float(np.mean(losses)))
        if verbose:
            print(f"epoch {epoch + 1}/{epochs}: loss {history['loss'][-1]:.6f} ({batches} steps)")
    return history


_mimic.TrainStep.fit = fit

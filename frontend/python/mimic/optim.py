"""mimic.optim: optimizer settings for mimic.compile_train(), with torch.optim's names and
defaults. The update itself is part of the compiled training-step graph (PyTorch's formulas);
these objects only carry the hyperparameters."""
from .errors import InvalidArgument


class Optimizer:
    kind = None

    def __init__(self, params, **config):
        self.params = list(params)
        for key, value in config.items():
            if isinstance(value, bool) or key == "nesterov":
                continue
            if not isinstance(value, (int, float)):
                raise InvalidArgument(f"{type(self).__name__}: {key} must be a number, got {value!r}")
        if config.get("lr", 0) < 0:
            raise InvalidArgument(f"{type(self).__name__}: lr = {config['lr']} must be >= 0")
        self.config = dict(config, kind=self.kind)

    @property
    def lr(self):
        return self.config["lr"]

    def __repr__(self):
        args = ", ".join(f"{k}={v}" for k, v in self.config.items() if k != "kind")
        return f"mimic.optim.{type(self).__name__}({args})"


class SGD(Optimizer):
    kind = "sgd"

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 max_grad_norm=0.0):
        if dampening != 0:
            raise InvalidArgument(f"SGD: dampening = {dampening} is not supported (only 0)")
        super().__init__(params, lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=bool(nesterov),
                         max_grad_norm=max_grad_norm)


def _two_betas(name, betas):
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise InvalidArgument(f"{name}: betas must be a pair (beta1, beta2), got {betas!r}")
    return betas


class Adam(Optimizer):
    kind = "adam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, max_grad_norm=0.0):
        betas = _two_betas(type(self).__name__, betas)
        super().__init__(params, lr=lr, beta1=betas[0], beta2=betas[1], eps=eps, weight_decay=weight_decay,
                         max_grad_norm=max_grad_norm)


class AdamW(Adam):
    kind = "adamw"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, max_grad_norm=0.0):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         max_grad_norm=max_grad_norm)


class LAMB(Optimizer):
    """LAMB (You et al. 2019) as NVIDIA apex's FusedLAMB computes it (adam_w_mode, bias correction,
    trust ratio ||w|| / ||update|| per parameter where weight_decay > 0). apex clips gradients to a
    global norm of 1.0 by default; here max_grad_norm is off unless set."""
    kind = "lamb"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01, max_grad_norm=0.0):
        betas = _two_betas(type(self).__name__, betas)
        super().__init__(params, lr=lr, beta1=betas[0], beta2=betas[1], eps=eps, weight_decay=weight_decay,
                         max_grad_norm=max_grad_norm)


import sys  # noqa: E402

from . import lr_scheduler  # noqa: E402

sys.modules[__name__ + ".lr_scheduler"] = lr_scheduler  # `from mimic.optim.lr_scheduler import StepLR`

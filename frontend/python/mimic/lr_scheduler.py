"""mimic.optim.lr_scheduler: learning-rate schedules with torch.optim.lr_scheduler's names and
arguments. The lr is an input of the compiled training step, so a schedule runs on the host: pass
it to compile_train(..., schedule=...) and every step uses the schedule's lr for its step count
(the lr of step k is what PyTorch's scheduler gives after k calls to step()). The closed forms
are computed in C++ (frontend/api/lr_schedule.h); step() and get_last_lr() walk the same
sequence the way PyTorch's schedulers do."""
from . import _mimic
from .errors import InvalidArgument


class LRScheduler:
    def __init__(self, optimizer):
        if not hasattr(optimizer, "config"):
            raise InvalidArgument(f"{type(self).__name__} needs a mimic.optim optimizer, got {optimizer!r}")
        self.optimizer = optimizer
        self.base_lr = float(optimizer.lr)
        self.last_epoch = 0
        _mimic._lr_at(self.phases(), self.base_lr, 0)  # validates the arguments

    def phases(self):
        """The schedule as a list of phase dicts (kind, milestone and that kind's fields)."""
        raise NotImplementedError

    def lr_at(self, step):
        return _mimic._lr_at(self.phases(), self.base_lr, int(step))

    def step(self):
        self.last_epoch += 1

    def get_last_lr(self):
        return [self.lr_at(self.last_epoch)]


class ConstantLR(LRScheduler):
    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5):
        self.factor, self.total_iters = float(factor), int(total_iters)
        super().__init__(optimizer)

    def phases(self):
        return [{"kind": "constant", "factor": self.factor, "total_iters": self.total_iters}]


class StepLR(LRScheduler):
    def __init__(self, optimizer, step_size, gamma=0.1):
        self.step_size, self.gamma = int(step_size), float(gamma)
        super().__init__(optimizer)

    def phases(self):
        return [{"kind": "step", "step_size": self.step_size, "gamma": self.gamma}]


class ExponentialLR(LRScheduler):
    def __init__(self, optimizer, gamma):
        self.gamma = float(gamma)
        super().__init__(optimizer)

    def phases(self):
        return [{"kind": "exponential", "gamma": self.gamma}]


class LinearLR(LRScheduler):
    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5):
        self.start_factor, self.end_factor, self.total_iters = float(start_factor), float(end_factor), int(total_iters)
        # torch.optim.lr_scheduler.LinearLR's bounds (a warmup from 0 is --warmup-steps's phase)
        if not 0 < self.start_factor <= 1:
            raise InvalidArgument(f"LinearLR: start_factor {start_factor} must be in (0, 1]")
        if not 0 <= self.end_factor <= 1:
            raise InvalidArgument(f"LinearLR: end_factor {end_factor} must be in [0, 1]")
        super().__init__(optimizer)

    def phases(self):
        return [{"kind": "linear", "start_factor": self.start_factor, "end_factor": self.end_factor,
                 "total_iters": self.total_iters}]


class CosineAnnealingLR(LRScheduler):
    def __init__(self, optimizer, T_max, eta_min=0.0):
        self.T_max, self.eta_min = int(T_max), float(eta_min)
        super().__init__(optimizer)

    def phases(self):
        return [{"kind": "cosine", "t_max": self.T_max, "eta_min": self.eta_min}]


class SequentialLR(LRScheduler):
    """schedulers[i] applies from milestones[i - 1] on, counting its steps from there
    (e.g. warmup with LinearLR, then CosineAnnealingLR)."""

    def __init__(self, optimizer, schedulers, milestones):
        if len(milestones) != len(schedulers) - 1:
            raise InvalidArgument(f"SequentialLR: {len(schedulers)} schedulers need {len(schedulers) - 1} "
                                  f"milestones, got {len(milestones)}")
        self.schedulers, self.milestones = list(schedulers), [int(m) for m in milestones]
        super().__init__(optimizer)

    def phases(self):
        out = []
        for i, s in enumerate(self.schedulers):
            for p in s.phases():
                if p.get("milestone", 0) != 0:
                    raise InvalidArgument("SequentialLR: nested SequentialLR is not supported")
                out.append(dict(p, milestone=0 if i == 0 else self.milestones[i - 1]))
        return out

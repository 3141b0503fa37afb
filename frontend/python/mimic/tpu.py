"""TPU helpers in the idiom of JAX users: real TPUs are not reachable from mimic (yet); emulated
ones are devices like any other."""
from . import _mimic


def is_available():
    """True when a real TPU backend is built and has a device. mimic has no real-TPU backend yet."""
    return any(d.backend == "tpu" and d.available for d in _mimic.devices())


def emulated(preset="v4"):
    """The emulated TPU device for a preset name (v1, v2, v3, v4, v5e, v6e, edge) or a chip JSON file."""
    return _mimic.Device(f"tpu-emu:{preset}")


def presets():
    return [d.name.split(":", 1)[1] for d in _mimic.devices() if d.backend == "tpu-emu"]

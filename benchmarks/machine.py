"""Description of the machine a benchmark ran on (CPU, cores, memory, compiler, build flags)."""
import os
import platform
import re
import subprocess


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib():
    try:
        with open("/proc/meminfo") as f:
            kb = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1))
            return round(kb / 2**20, 1)
    except (OSError, AttributeError):
        return None


def _compiler():
    try:
        return subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        return "unknown"


def _build_flags(build_dir):
    flags = {}
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            for line in f:
                for key in ("CMAKE_BUILD_TYPE", "CMAKE_CXX_FLAGS_RELEASE", "MIMIC_NATIVE"):
                    if line.startswith(key + ":"):
                        flags[key] = line.split("=", 1)[1].strip()
    except OSError:
        pass
    if flags.get("MIMIC_NATIVE") == "ON":
        flags["arch"] = "-march=native"
    return flags


def _load_average():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def describe(build_dir):
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "os": platform.platform(),
        "compiler": _compiler(),
        "build": _build_flags(build_dir),
        "load_average": _load_average(),
    }


def markdown(machine):
    build = ", ".join(f"{k}={v}" for k, v in machine["build"].items())
    return (f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB, "
            f"{machine['os']}; {machine['compiler']}; build {build}; "
            f"load average at start {machine.get('load_average')}.")

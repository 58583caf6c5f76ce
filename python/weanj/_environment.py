"""Facts about this installation and machine, in one place: weanj's version, the versions
of the packages a variant depends on, and the environment block of benchmark records,
check files and the report.

Nothing here imports JAX at import time; `environment()` imports it to name the device.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

__version__ = "0.3.0"


def now() -> str:
    """The current UTC time, ISO 8601 to the second (records, files, pages)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def package_version(name: str) -> str | None:
    """The installed version of a distribution, or None."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def distribution_versions(modules: tuple[str, ...]) -> str:
    """`"kernex 0.2.1, jax 0.10.2, ..."` for importable modules (or distribution names)."""
    parts = []
    mapping = None
    for module in modules:
        version = package_version(module)
        if version is not None:
            parts.append(f"{module} {version}")
            continue
        if mapping is None:
            mapping = importlib.metadata.packages_distributions()
        dist = (mapping.get(module) or [module])[0]
        version = package_version(dist)
        parts.append(f"{dist} {version}" if version is not None else f"{dist} (not installed)")
    return ", ".join(parts)


def core_versions() -> dict[str, str]:
    """weanj, jax, jaxlib and numpy as installed (what every evaluation depends on)."""
    return {
        "weanj": __version__,
        **{name: package_version(name) or "not installed" for name in ("jax", "jaxlib", "numpy")},
    }


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_revision() -> str:
    """The revision of weanj's own checkout (the code measured), `-dirty` when changed."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def default_device() -> str:
    """The kind of device weanj's runs are placed on by default: the CPU, whatever JAX's
    default device is (a device run names its own device, docs/devices.md); the device of
    an environment block written after a run."""
    return "cpu"


def device_software(kind: str) -> str:
    """The software of an accelerator (`libtpu 0.0.42.1`; the CUDA plugin and its
    libraries), what a device run's provenance names; "" for the CPU."""
    if kind == "tpu":
        found = [f"{n} {v}" for n in ("libtpu", "libtpu-nightly") if (v := package_version(n))]
        return ", ".join(found) or "libtpu (version unknown)"
    if kind == "gpu":
        names = (
            "jax-cuda12-plugin",
            "jax-cuda12-pjrt",
            "nvidia-cuda-runtime-cu12",
            "nvidia-cudnn-cu12",
            "jax-rocm60-plugin",
        )
        found = [f"{n} {v}" for n in names if (v := package_version(n))]
        return ", ".join(found) or "CUDA (plugin version unknown)"
    return ""


def environment(device: str | None = None) -> dict[str, Any]:
    """Facts that make a measurement reproducible: versions, device, CPU, cores, date and
    revision (imports JAX)."""
    import jax
    import jaxlib

    env: dict[str, Any] = {
        "weanj": __version__,
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "date": now(),
        "git_revision": git_revision(),
    }
    if device is not None:
        env["device"] = device
        try:
            devs = jax.devices(device)
            env["device_kind"] = devs[0].device_kind
            env["device_count"] = len(devs)
            if device != "cpu":
                env["device_software"] = device_software(device)
        except RuntimeError:
            pass
    return env


def page_environment() -> dict[str, str]:
    """Where and when a report was written (no JAX: the report runs nothing)."""
    return {
        "weanj": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": now(),
    }

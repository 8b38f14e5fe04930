"""``jax.version`` and ``jax.print_environment_info``: the versions in play and the devices
this process sees, as JAX reports them (spec's own version, the JAX release it specifies,
NumPy, Python, devices, process count, platform)."""

from __future__ import annotations

import os
import platform
import sys
import textwrap

import numpy as np

from spec._src.backends import devices

SPEC_VERSION = "0.1.0"
SPECIFIED_JAX_VERSION = "0.12.0.1"


def version_info(version: str) -> tuple[int, ...]:
    """``"0.12.0.1"`` as ``(0, 12, 0, 1)``."""
    return tuple(int(part) for part in version.split("."))


def print_environment_info(return_string: bool = False) -> str | None:
    """Print (or, with ``return_string``, return) the versions and devices in use, then the
    ``JAX_*`` and ``XLA_*`` environment variables (the ones that configure spec too)."""
    found = devices.devices()
    info = textwrap.dedent(f"""\
    spec:   {SPEC_VERSION} (specifies jax {SPECIFIED_JAX_VERSION})
    numpy:  {np.__version__}
    python: {sys.version.replace(os.linesep, ' ')}
    device info: {found[0].device_kind}-{len(found)}, {len(devices.local_devices())} local devices
    process_count: {devices.process_count()}
    platform: {platform.uname()}""")
    for key, value in os.environ.items():
        if key.startswith(("JAX_", "XLA_")):
            info += f"\n{key}={value}"
    if return_string:
        return info
    print(info)
    return None

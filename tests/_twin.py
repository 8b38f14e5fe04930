"""One program text run twice: on real JAX in a subprocess with several CPU
devices (JAX fixes its device count at first use, and the test process has
already used it), and on spec in-process. The program names its library
``IMPL`` (as ``jax, jnp = IMPL``) and fills a dict ``out``; both results come
back through JSON so that they compare alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

_PRINT = "print(json.dumps(out))"
_JAX = "__import__('jax'), __import__('jax.numpy').numpy"
_SPEC = "__import__('spec'), __import__('spec.numpy').numpy"


def run_jax(program: str, devices: int = 4) -> dict[str, Any]:
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES=str(devices))
    code = program.replace("IMPL", _JAX)
    if _PRINT not in code:
        code += "\nimport json\n" + _PRINT + "\n"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300, check=True)
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def run_spec(program: str) -> dict[str, Any]:
    code = program.replace("IMPL", _SPEC).replace(_PRINT, "")
    scope: dict[str, Any] = {}
    exec(compile(code, "<twin program>", "exec"), scope)  # noqa: S102
    result: dict[str, Any] = json.loads(json.dumps(scope["out"]))
    return result


def run_both(program: str, devices: int = 4) -> tuple[dict[str, Any], dict[str, Any]]:
    """(spec's results, JAX's results) of one program; spec's device count
    and mesh are restored afterwards (the program may set them)."""
    import spec
    before = spec.config.jax_num_cpu_devices
    try:
        ours = run_spec(program)
    finally:
        spec.config.update("jax_num_cpu_devices", before)
        spec.set_mesh(None)
    return ours, run_jax(program, devices)


def on_virtual_devices(n: int, fn: Any) -> Any:
    """``fn()`` with spec on n virtual devices (device count and mesh restored)."""
    import spec
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", n)
    try:
        return fn()
    finally:
        spec.config.update("jax_num_cpu_devices", before)
        spec.set_mesh(None)

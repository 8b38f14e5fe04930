"""The recorded list of JAX's public names matches the installed JAX; the report runs."""

from __future__ import annotations

import importlib
import os
import pathlib
import subprocess
import sys

from spec._src.surface import missing_names
from spec._src.surface_names import JAX_PUBLIC_NAMES

WORKTREE = pathlib.Path(__file__).resolve().parents[2]


def test_recorded_names_are_what_installed_jax_exports() -> None:
    # A fresh process: which submodules are attributes of ``jax`` depends on what was imported.
    probe = ("import runpy, sys; "
             "sys.stdout.write(runpy.run_path('scripts/gen_jax_surface.py')['render']())")
    result = subprocess.run([sys.executable, "-c", probe], cwd=WORKTREE, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    recorded = (WORKTREE / "spec" / "_src" / "surface_names.py").read_text()
    assert result.stdout == recorded, "rerun scripts/gen_jax_surface.py"


def test_missing_names_agree_with_hasattr() -> None:
    spec_numpy = importlib.import_module("spec.numpy")
    lacking = set(missing_names("jax.numpy"))
    for name in JAX_PUBLIC_NAMES["jax.numpy"]:
        assert (name in lacking) == (not hasattr(spec_numpy, name)), name


def test_report_runs_and_lists_every_module() -> None:
    env = dict(os.environ, PYTHONPATH=str(WORKTREE))
    result = subprocess.run([sys.executable, "-m", "spec.surface"], env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    headers = [line.split(":")[0] for line in result.stdout.splitlines()
               if not line.startswith(" ")]
    assert headers == list(JAX_PUBLIC_NAMES)


def test_report_does_not_import_jax() -> None:
    env = dict(os.environ, PYTHONPATH=str(WORKTREE))
    probe = "import sys, spec.surface; spec.surface.report(); assert 'jax' not in sys.modules"
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr

"""``python -m spec prog.py`` runs a program written for JAX on spec, never on real JAX.

Oracle: the same program run by plain Python with real JAX installed prints the same numbers.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

WORKTREE = pathlib.Path(__file__).resolve().parents[2]

PROGRAM = '''
import sys
import jax
from jax import lax
import jax.numpy as jnp
import jax.tree_util

def loss(w, x):
    return jnp.sum(jnp.tanh(x @ w) ** 2)

w = jnp.arange(6.0).reshape(3, 2) / 10.0
x = jnp.ones((4, 3)) / 3.0
g = jax.jit(jax.grad(loss))(w, x)
leaves = jax.tree_util.tree_leaves({"a": w, "b": (x, lax.add(x, x))})
print("values", [round(float(v), 6) for v in g.ravel()], len(leaves))
print("argv", sys.argv[1:])
print("name", __name__)
print("backed_by", jax.__name__.split(".")[0], jnp.__name__.split(".")[0])
print("later", __import__("jax.experimental", fromlist=["x"]).__name__.split(".")[0])
'''


def _run(args: list[str], cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(WORKTREE), JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("prog") / "prog.py"
    path.write_text(PROGRAM)
    return path


def test_program_prints_what_real_jax_prints(program: pathlib.Path) -> None:
    on_spec = _run(["-m", "spec", str(program), "first", "--flag"], program.parent)
    on_jax = _run([str(program), "first", "--flag"], program.parent)
    assert on_spec.returncode == 0, on_spec.stderr
    assert on_jax.returncode == 0, on_jax.stderr
    spec_lines = on_spec.stdout.splitlines()
    jax_lines = on_jax.stdout.splitlines()
    assert spec_lines[:3] == jax_lines[:3]
    assert spec_lines[0].startswith("values")
    assert spec_lines[1] == "argv ['first', '--flag']"
    assert spec_lines[2] == "name __main__"
    assert spec_lines[3:] == ["backed_by spec spec", "later spec"]
    assert jax_lines[3:] == ["backed_by jax jax", "later jax"]


def test_real_jax_is_never_imported(tmp_path: pathlib.Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys, jax, jax.numpy, jax.tree_util\n"
        "import spec\n"
        "assert sys.modules['jax'] is spec, sys.modules['jax']\n"
        "assert sys.modules['jax.numpy'] is sys.modules['spec.numpy']\n"
        "foreign = [m.__file__ for n, m in sys.modules.items()\n"
        "           if n.split('.')[0] == 'jax'\n"
        "           and 'site-packages' in str(getattr(m, '__file__', ''))]\n"
        "assert not foreign, foreign\n"
        "print('ok')\n")
    result = _run(["-m", "spec", str(probe)], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_missing_module_is_named_and_tracebacks_name_the_program(tmp_path: pathlib.Path) -> None:
    probe = tmp_path / "missing.py"
    probe.write_text("import jax\n\nimport jax.no_such_module_anywhere\n")
    result = _run(["-m", "spec", str(probe)], tmp_path)
    assert result.returncode == 1
    assert "ModuleNotFoundError" in result.stderr
    assert "jax.no_such_module_anywhere" in result.stderr
    assert f'File "{probe}", line 3' in result.stderr


def test_install_as_jax_binds_jax_inside_a_running_process(tmp_path: pathlib.Path) -> None:
    probe = tmp_path / "embed.py"
    probe.write_text(
        "import spec\n"
        "spec.install_as_jax()\n"
        "import jax.lax\n"
        "assert jax.lax is spec.lax\n"
        "print('ok')\n")
    result = _run([str(probe)], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"

"""A primitive defined through ``jax.extend.core.Primitive`` and registered in
``jax.interpreters.{ad,batching,mlir}`` works under eval, jit, make_jaxpr,
jvp, grad and vmap, and a missing rule raises JAX's error.

Oracle: the same program run by plain Python on real JAX prints the same
jaxpr text and errors, and the same values up to float32 rounding.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

WORKTREE = pathlib.Path(__file__).resolve().parents[2]

PROGRAM = '''
import json
import jax
import jax.numpy as jnp
import jax.extend.core
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

sin_p = Primitive("my_sin")
def sin_impl(x):
    return jnp.sin(x)
sin_p.def_impl(sin_impl)
sin_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
ad.defjvp(sin_p, lambda t, x: t * jnp.cos(x))
batching.defvectorized(sin_p)
mlir.register_lowering(sin_p, mlir.lower_fun(sin_impl, multiple_results=False))

scale_p = Primitive("my_scale")
scale_p.def_impl(lambda x, *, k: x * k)
scale_p.def_abstract_eval(lambda x, *, k: jax.core.ShapedArray(x.shape, x.dtype))
ad.deflinear2(scale_p, lambda ct, x, *, k: [scale_p.bind(ct, k=k)])
def scale_batcher(args, dims, *, k):
    return scale_p.bind(args[0], k=k), dims[0]
batching.primitive_batchers[scale_p] = scale_batcher
mlir.register_lowering(scale_p, mlir.lower_fun(lambda x, *, k: x * k, multiple_results=False))

bare_p = Primitive("my_bare")
bare_p.def_impl(lambda x: x + 1.0)
bare_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
mlir.register_lowering(bare_p, mlir.lower_fun(lambda x: x + 1.0, multiple_results=False))

def f(x):
    return scale_p.bind(sin_p.bind(x), k=3.0) * x

x = jnp.linspace(-1.0, 2.0, 5, dtype=jnp.float32)
xs = jnp.arange(10.0, dtype=jnp.float32).reshape(2, 5) / 7.0
out = {}
out["eval"] = f(x).tolist()
out["jit"] = jax.jit(f)(x).tolist()
out["jaxpr"] = str(jax.make_jaxpr(f)(x))
out["jvp"] = [v.tolist() for v in jax.jvp(f, (x,), (jnp.ones_like(x),))]
out["grad"] = jax.grad(lambda x: f(x).sum())(x).tolist()
out["jit_grad"] = jax.jit(jax.grad(lambda x: f(x).sum()))(x).tolist()
out["vmap"] = jax.vmap(f)(xs).tolist()
out["grad_jaxpr"] = str(jax.make_jaxpr(jax.grad(lambda x: scale_p.bind(x, k=2.0).sum()))(x))
out["bare"] = bare_p.bind(x).tolist()
out["as_fun"] = jax.extend.core.jaxpr_as_fun(jax.make_jaxpr(f)(x))(x)[0].tolist()
for what, run in [("grad", lambda: jax.grad(lambda x: bare_p.bind(x).sum())(x)),
                  ("vmap", lambda: jax.vmap(bare_p.bind)(xs)),
                  ("transpose", lambda: jax.linear_transpose(sin_p.bind, x)(x))]:
    try:
        run()
        out["error_" + what] = None
    except Exception as e:
        out["error_" + what] = [type(e).__name__, str(e).splitlines()[0]]
import jax.interpreters.partial_eval, jax.interpreters.pxla, jax.interpreters.xla
out["names"] = {label: sorted(n for n in dir(m) if not n.startswith("_"))
                for label, m in [("core", jax.extend.core), ("ad", ad), ("batching", batching),
                                 ("mlir", mlir), ("pe", jax.interpreters.partial_eval),
                                 ("pxla", jax.interpreters.pxla),
                                 ("xla", jax.interpreters.xla)]}
try:
    jax.interpreters.partial_eval.trace_to_jaxpr_dynamic(f, [])
    out["unsupported"] = None
except Exception as e:
    out["unsupported"] = [type(e).__name__, str(e)]
import jax.api_util as au
tree = jax.tree_util.tree_structure(((1.0, {"a": 2.0, "b": 3.0}), {"c": 4.0, "d": (5.0, 6.0)}))
args_tree = jax.tree_util.tree_structure(([1.0, 2.0], {"u": 3.0}))
out["api_util"] = [
    list(au.safe_map(lambda a, b: a * b, [1, 2], [3, 4])),
    list(au.flatten_axes("in_axes", args_tree, ([0, None], {"u": 1}))),
    list(au.rebase_donate_argnums((1, 4), (0, 2))),
    list(au.donation_vector((1,), ("d",), tree)),
    str(au.shaped_abstractify(jnp.ones((2, 3), jnp.int32))),
]
print(json.dumps(out))
'''


def _run(args: list[str], cwd: pathlib.Path) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(WORKTREE), JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    path = tmp_path_factory.mktemp("prog") / "prog.py"
    path.write_text(PROGRAM)
    return _run(["-m", "spec", str(path)], path.parent), _run([str(path)], path.parent)


@pytest.mark.parametrize("key", ["eval", "jit", "jvp", "grad", "jit_grad", "vmap", "bare",
                                 "as_fun"])
def test_values_match_jax(results: tuple[dict[str, Any], dict[str, Any]], key: str) -> None:
    on_spec, on_jax = results
    np.testing.assert_allclose(np.array(on_spec[key]), np.array(on_jax[key]),
                               rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("key", ["jaxpr", "grad_jaxpr"])
def test_jaxpr_text_matches_jax(results: tuple[dict[str, Any], dict[str, Any]], key: str
                                ) -> None:
    on_spec, on_jax = results
    assert on_spec[key] == on_jax[key]


@pytest.mark.parametrize("what", ["grad", "vmap", "transpose"])
def test_missing_rule_raises_jax_error(results: tuple[dict[str, Any], dict[str, Any]],
                                       what: str) -> None:
    on_spec, on_jax = results
    assert on_jax["error_" + what] is not None
    assert on_spec["error_" + what] == on_jax["error_" + what]


def test_interpreter_modules_have_jax_names(results: tuple[dict[str, Any], dict[str, Any]]
                                            ) -> None:
    """Every public name of JAX's modules that spec backs (jax.extend.core,
    partly) or names (the interpreters, fully) is there."""
    on_spec, on_jax = results
    for module, names in on_jax["names"].items():
        if module != "core":
            assert set(names) <= set(on_spec["names"][module]), module


def test_unbacked_name_raises_naming_itself(results: tuple[dict[str, Any], dict[str, Any]]
                                            ) -> None:
    on_spec, _ = results
    kind, message = on_spec["unsupported"]
    assert kind == "NotImplementedError"
    assert "jax.interpreters.partial_eval.trace_to_jaxpr_dynamic" in message


def test_api_util_helpers_match_jax(results: tuple[dict[str, Any], dict[str, Any]]) -> None:
    on_spec, on_jax = results
    assert on_spec["api_util"] == on_jax["api_util"]

# ruff: noqa: E501  (the page's HLO lines are quoted as printed)
"""The XLA-metadata cells of JAX's page docs/new_docs/201/controlling-xla.md,
run on spec and on JAX 0.12.0.1. The cells print lowered HLO: spec's
``lower(1.0).as_text("hlo")`` is JAX's (live) and its entry computation the
page's, up to instruction numbering; spec's ``frontend_attributes`` of each
equation match the operations of JAX's lowered text. Values of the cells'
functions and their derivatives are JAX's."""

from __future__ import annotations

import re
from typing import Any

import jax
import numpy as np
import pytest

import spec
from spec._src.core.interpreter import dce_jaxpr
from spec._src.lax.xla_metadata import frontend_attributes
from tests.lowering.xla_run import hlo_renumbered
from tests.xla_metadata.lowered import OP_OF, _lowers_to_an_operation, assert_same_attributes

# (the cell's code, the expression it lowers, the entry computation the page prints)
CELLS: list[tuple[str, str, str | None]] = [
    ('''
import jax
import jax.numpy as jnp
from jax.experimental.xla_metadata import xla_metadata_call

@xla_metadata_call(tag="my_block")
def block(x):
  y = jnp.sin(x)
  return y * jnp.cos(x)

@jax.jit
def f(x):
  return block(x) + 1.
''', "f", '''
ENTRY main.2 {
  x.1 = f32[] parameter(0)
  xla_metadata_call.1 = f32[] call(x.1), to_apply=xla_metadata_call.1, frontend_attributes={tag="my_block"}
  constant.1 = f32[] constant(1)
  ROOT add.1 = f32[] add(xla_metadata_call.1, constant.1)
}
'''),
    ('''
@xla_metadata_call(tag="my_block")
def block(x):
  return jnp.sin(x)
''', "jax.grad(block)", '''
ENTRY main.3 {
  x.1 = f32[] parameter(0)
  xla_metadata_call.2 = f32[] call(x.1), to_apply=xla_metadata_call.1, frontend_attributes={tag="my_block"}
  constant.1 = f32[] constant(1)
  ROOT xla_metadata_call.3 = f32[] call(xla_metadata_call.2, constant.1), to_apply=xla_metadata_call_0.2, frontend_attributes={tag="my_block"}
}
'''),
    ('''
from jax.experimental.xla_metadata import xla_metadata_call2

f = xla_metadata_call2(jnp.sin, {"tag": "x"})                             # tag fwd + bwd (default)
''', "jax.grad(f)", None),
    ('''
f = xla_metadata_call2(jnp.sin, {"tag": "x"}, ad_metadata='drop')         # tag fwd only
''', "jax.grad(f)", None),
    ('''
f = xla_metadata_call2(jnp.sin, {"tag": "x"}, ad_metadata={"tag": "y"})   # retag bwd
''', "jax.grad(f)", None),
    ('''
from jax.experimental.xla_metadata import set_xla_metadata

def g(x):
  y = jnp.sin(x)
  z = jnp.cos(x)
  return set_xla_metadata(y * z, breakpoint=True)
''', "g", '''
ENTRY main.1 {
  x.1 = f32[] parameter(0)
  sin.1 = f32[] sine(x.1)
  cos.1 = f32[] cosine(x.1)
  ROOT mul.1 = f32[] multiply(sin.1, cos.1), frontend_attributes={breakpoint="true"}
}
'''),
    # "differentiate g above and the backward-pass operations come out untagged"
    ('', "jax.grad(g)", None),
]

_HLO_OP = re.compile(r"^\s*(?:ROOT )?[\w.]+ = \S+ (\w+)\(")
_HLO_ATTRS = re.compile(r"frontend_attributes=\{([^}]*)\}")
_HLO_PAIR = re.compile(r'(\w+)="([^"]*)"')


def _entry_ops(hlo: str) -> list[tuple[str, dict[str, str]]]:
    """The page's entry computation: each operation (parameters and
    constants left out) and its attributes."""
    ops = []
    for line in hlo.strip().splitlines():
        op = _HLO_OP.match(line)
        if op and op.group(1) not in ("parameter", "constant"):
            attrs = _HLO_ATTRS.search(line)
            ops.append((op.group(1), dict(_HLO_PAIR.findall(attrs.group(1))) if attrs else {}))
    return ops


def _namespace_run(lib: Any) -> list[dict[str, Any]]:
    """Run the cells in one namespace; per cell, right after it runs (a later
    cell redefines names): the function it lowers, its program (spec: the
    traced jaxpr; JAX: the lowered text), its jaxpr text and its value."""
    ns: dict[str, Any] = {}
    out = []
    for code, expr, _ in CELLS:
        if lib is spec:
            code = code.replace("import jax.numpy as jnp", "import spec.numpy as jnp")
            code = code.replace("import jax\n", "import spec as jax\n")
            code = code.replace("from jax.experimental", "from spec.experimental")
        exec(compile(code, "<cell>", "exec"), ns)
        fn = eval(expr, ns)
        staged = fn if hasattr(fn, "lower") else lib.jit(fn)
        program = staged.trace(1.0).jaxpr if lib is spec else staged.lower(1.0).as_text()
        out.append({"program": program, "hlo": staged.lower(1.0).as_text("hlo"),
                    "jaxpr": str(lib.make_jaxpr(fn)(1.0)),
                    "value": np.asarray(fn(np.float32(0.8)))})
    return out


Runs = tuple[list[dict[str, Any]], list[dict[str, Any]]]


@pytest.fixture(scope="module")
def programs() -> Runs:
    return _namespace_run(spec), _namespace_run(jax)


@pytest.mark.parametrize("i", range(len(CELLS)))
def test_cell_attributes(programs: Runs, i: int) -> None:
    body = programs[0][i]["program"]
    assert assert_same_attributes(body, programs[1][i]["program"]) > 0
    page = CELLS[i][2]
    if page is not None:
        hlo_names = {"call": "call", "stablehlo.sine": "sine", "stablehlo.cosine": "cosine",
                     "stablehlo.multiply": "multiply", "stablehlo.add": "add"}
        from_spec = [(hlo_names[OP_OF[e.primitive.name]], a)
                     for e, a in zip(body.eqns, frontend_attributes(body))
                     if _lowers_to_an_operation(e)]
        assert from_spec == _entry_ops(page)


def test_value_tags_do_not_reach_the_backward_pass(programs: Runs) -> None:
    body = dce_jaxpr(programs[0][-1]["program"])
    # (the tagged primal product is dead code in the derivative)
    assert body.eqns and all(not a for a in frontend_attributes(body))


@pytest.mark.parametrize("i", range(len(CELLS)))
def test_cell_jaxprs_and_values(programs: Runs, i: int) -> None:
    assert programs[0][i]["jaxpr"] == programs[1][i]["jaxpr"]
    np.testing.assert_allclose(programs[0][i]["value"], programs[1][i]["value"], rtol=1e-6)


@pytest.mark.parametrize("i", range(len(CELLS)))
def test_cell_hlo_text(programs: Runs, i: int) -> None:
    """The printed HLO: JAX's module text, and the entry computation the
    page shows, up to instruction numbering."""
    ours = programs[0][i]["hlo"]
    assert hlo_renumbered(ours) == hlo_renumbered(programs[1][i]["hlo"])
    page = CELLS[i][2]
    if page is not None:
        entry = ours[ours.index("ENTRY"):].strip()
        assert hlo_renumbered(entry) == hlo_renumbered(page.strip())

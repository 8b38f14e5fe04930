"""spec.testing's strategies draw what they promise, its checkers catch what
they check for, and the README's example (JAX's eval_shape against spec's
typing) runs as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spec
import spec.numpy as snp
from spec import testing as sth
from spec._src.core.sharding import AbstractMesh
from spec._src.core.types import ArrayType

README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_example() -> str:
    text = README.read_text()
    m = re.search(r"<!-- spec.testing example -->\n```python\n(.*?)```", text, re.S)
    assert m is not None, "README lost its spec.testing example"
    return m.group(1)


def test_readme_example_runs() -> None:
    pytest.importorskip("jax")
    scope: dict[str, Any] = {}
    exec(compile(_readme_example(), str(README), "exec"), scope)  # noqa: S102
    tests = [v for k, v in scope.items() if k.startswith("test_")]
    assert len(tests) == 2
    for test in tests:
        test()


@settings(max_examples=20, deadline=None)
@given(sth.meshes(max_axes=3, max_devices=8).flatmap(
    lambda m: st.tuples(st.just(m), sth.sharded_types(m, reductions=True))))
def test_sharded_types_are_valid_on_their_mesh(drawn: tuple[AbstractMesh, ArrayType]) -> None:
    mesh, aval = drawn
    assert int(np.prod(mesh.axis_sizes)) <= 8
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    spec_ = aval.sharding.spec
    used: list[str] = []
    for d, entry in zip(aval.shape, spec_.partitions):
        axes = () if entry is None else (entry,) if isinstance(entry, str) else entry
        assert d % int(np.prod([sizes[a] for a in axes])) == 0
        used += axes
    used += sorted(spec_.unreduced) + sorted(spec_.reduced)
    assert len(used) == len(set(used)), f"an axis used twice in {spec_}"
    # The printed type names its mesh axes as jaxprs do (and parse_jaxpr reads back).
    text = aval.str_short(True)
    parsed = spec.parse_jaxpr(f"{{ lambda ; a:{text}. let  in (a,) }}", mesh=mesh)
    assert parsed.invars[0].aval == aval


def test_check_transpose_accepts_transposes_and_catches_wrong_ones() -> None:
    def f(x: Any, y: Any) -> Any:
        return snp.cumsum(x, axis=0) * 2.0 - y[::-1]
    primals = [np.ones((3, 2), np.float32), np.ones((3, 2), np.float32)]
    sth.check_transpose(f, primals)
    with pytest.raises(AssertionError, match="dot-product test"):
        sth.check_transpose(f, primals, transpose=lambda c: (snp.cumsum(c, axis=0), -c))


def test_check_vmap_against_a_loop_catches_a_wrong_batching() -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    w = np.ones((4, 2), np.float32)
    sth.check_vmap(lambda a, b: snp.sin(a) @ b, [x, w], in_axes=(0, None))

    def wrong_vmap(f: Any, in_axes: Any) -> Any:
        return lambda a, b: f(a[::-1], b)  # batches the slices in the wrong order
    with pytest.raises(AssertionError):
        sth.check_vmap(lambda a, b: snp.sin(a) @ b, [x, w], in_axes=(0, None),
                       vmap=wrong_vmap)

"""``spec.version``, ``spec.__version_info__`` and ``spec.print_environment_info`` against
JAX's: the same signature and kinds of values; the report names the same facts, line by line,
as JAX's (numpy, python, device info, process_count, platform) with this process's values."""

from __future__ import annotations

import inspect
import platform

import jax
import numpy as np
import pytest

import spec


def test_version_names_match_jax() -> None:
    for module in (spec, spec.version):
        assert isinstance(module.__version_info__, tuple)
        assert all(isinstance(part, int) for part in module.__version_info__)
        assert ".".join(map(str, module.__version_info__)) == module.__version__
    assert spec.version.__version__ == spec.__version__ == spec.version._version
    assert spec.version.jax_version == jax.__version__
    assert isinstance(jax.version.__version__, str) and isinstance(jax.__version_info__, tuple)


def _keys(report: str) -> list[str]:
    return [line.split(":")[0] for line in report.splitlines() if line]


def test_environment_report_has_jax_lines(capsys: pytest.CaptureFixture[str]) -> None:
    def signature(fn: object) -> str:  # (annotations as text, quoted or not)
        return str(inspect.signature(fn)).replace("'", "")  # type: ignore[arg-type]
    assert signature(spec.print_environment_info) == signature(jax.print_environment_info)
    ours = spec.print_environment_info(return_string=True)
    theirs = jax.print_environment_info(return_string=True)
    assert isinstance(ours, str) and isinstance(theirs, str)
    # JAX's first lines are jax and jaxlib; spec's first is spec (with the JAX it specifies).
    assert _keys(ours)[0] == "spec" and _keys(theirs)[:2] == ["jax", "jaxlib"]
    assert _keys(ours)[1:] == _keys(theirs)[2:]
    assert f"numpy:  {np.__version__}" in ours and str(platform.uname()) in ours
    assert spec.print_environment_info() is None
    assert capsys.readouterr().out == ours + "\n"

"""A hijax primitive on a mesh: the expansion runs equation by equation on
each device (no gathering for an elementwise expansion), with the values of
the unsharded program; a value-branching expansion runs gathered."""

from __future__ import annotations

from typing import Any

import numpy as np

import spec
import spec.numpy as snp
from spec.experimental.hijax import VJPHiPrimitive


class Scale(VJPHiPrimitive):
    def __init__(self, x_aval: Any) -> None:
        self.in_avals = (x_aval,)
        self.out_aval = x_aval
        self.params = {}
        super().__init__()

    def expand(self, x: Any) -> Any:
        return snp.sin(x) * 2.0

    def vjp_fwd(self, nzs_in: Any, x: Any) -> Any:
        return self(x), x

    def vjp_bwd_retval(self, x: Any, g: Any) -> Any:
        return (snp.cos(x) * 2.0 * g,)


class Branchy(Scale):
    def expand(self, x: Any) -> Any:
        return x * 2.0 if snp.sum(x) > 0 else x


def _on_mesh(f: Any, value: np.ndarray) -> tuple[np.ndarray, int, str]:
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", 4)
    try:
        with spec.set_mesh(spec.make_mesh((4,), ("X",))):
            x = spec.device_put(value, spec.P("X"))
            with spec.collectives_log() as log:
                out = spec.jit(f)(x)
            return np.asarray(out), log.count(), str(spec.typeof(out))
    finally:
        spec.config.update("jax_num_cpu_devices", before)


def test_elementwise_expansion_runs_per_device() -> None:
    value = np.linspace(-2, 2, 8, dtype=np.float32)
    got, moved, typ = _on_mesh(lambda x: Scale(spec.typeof(x))(x), value)
    np.testing.assert_array_equal(got, np.asarray(Scale(spec.typeof(value))(value)))
    np.testing.assert_allclose(got, np.sin(value) * 2, rtol=1e-6)
    assert moved == 0
    assert typ == "float32[8@X]"


def test_gradient_on_a_mesh() -> None:
    value = np.linspace(-2, 2, 8, dtype=np.float32)
    got, _, typ = _on_mesh(spec.grad(lambda x: snp.sum(Scale(spec.typeof(x))(x))), value)
    np.testing.assert_allclose(got, np.cos(value) * 2, rtol=1e-6)
    assert typ == "float32[8@X]"


def test_value_branching_expansion_runs_gathered() -> None:
    value = np.arange(8, dtype=np.float32)
    got, _, _ = _on_mesh(lambda x: Branchy(spec.typeof(x))(x), value)
    np.testing.assert_array_equal(got, value * 2)

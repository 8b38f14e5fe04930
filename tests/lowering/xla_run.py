"""Test helpers: compile StableHLO module text with the installed jaxlib's
CPU client and run it; canonicalise module text for comparison with JAX's."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jax._src import xla_bridge
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib import lapack, xla_client
from jax._src.lib.mlir import ir

import spec
from spec._src.lowering.emitter import lower_jaxpr


def compile_and_run(text: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run module text on the first CPU device."""
    if "@lapack_" in text:
        # jaxlib binds its LAPACK FFI kernels to LAPACK's routines only when
        # JAX first lowers a linear-algebra op; a module from elsewhere must
        # do it first, or the call jumps through an unset pointer.
        lapack.prepare_lapack_call("potrf_ffi", np.float32)
    backend = xla_bridge.get_backend("cpu")
    device = backend.devices()[0]
    exe = backend.compile_and_load(text, xla_client.DeviceList((device,)),
                                   xla_client.CompileOptions())
    results = exe.execute_sharded([jax.device_put(np.asarray(a), device) for a in args])
    return [np.asarray(r[0]) for r in results.disassemble_into_single_device_arrays()]


def lowered(fn: Callable[..., Any], *args: Any) -> str:
    return lower_jaxpr(spec.make_jaxpr(fn)(*args), "f")


def spec_and_compiled(fn: Callable[..., Any], *args: Any
                      ) -> tuple[list[np.ndarray], list[np.ndarray], str]:
    """spec's evaluation of ``fn`` under jit, and its lowering compiled and
    run by XLA, as flat lists of arrays, and the module text."""
    text = lowered(fn, *args)
    ours = [np.asarray(o) for o in spec.tree_util.tree_leaves(spec.jit(fn)(*args))]
    return ours, compile_and_run(text, [np.asarray(a) for a in args]), text


def assert_bitwise(ours: list[np.ndarray], theirs: list[np.ndarray]) -> None:
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert a.dtype == b.dtype and a.shape == b.shape, (k, a.dtype, b.dtype, a.shape, b.shape)
        assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes(), (k, a, b)


_MODULE_ATTRS = re.compile(r"^module @\w+( attributes \{[^\n]*\})? \{", re.M)
_RESULT_INFO = re.compile(r" \{jax\.result_info = \"[^\"]*\"\}")
_RESULT_INFO_FIRST = re.compile(r"jax\.result_info = \"[^\"]*\", ")


def canonical(text: str) -> str:
    """The module as jaxlib's MLIR printer prints it (SSA names, constants,
    locations canonical), without JAX's module and result attributes."""
    text = _RESULT_INFO_FIRST.sub("", _RESULT_INFO.sub("", text))
    text = _MODULE_ATTRS.sub("module @jit_f {", text)
    with jax_mlir.make_ir_context():
        return str(ir.Module.parse(text))


def parsed(text: str) -> str:
    """The module as jaxlib's MLIR printer prints it, attributes kept."""
    with jax_mlir.make_ir_context():
        return str(ir.Module.parse(text))


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def xla_hlo_text(module_text: str) -> str:
    """XLA's conversion of StableHLO module text to HLO, printed as
    ``Lowered.as_text("hlo")`` prints it (short parsable, no metadata)."""
    from jax._src import lib as jax_lib
    from jax._src.lib import hlo
    with jax_mlir.make_ir_context():
        code = jax_mlir.module_to_bytecode(ir.Module.parse(module_text))
    computation = jax_lib._jax.mlir.mlir_module_to_xla_computation(
        code, use_tuple_args=False, return_tuple=False)
    options = hlo.HloPrintOptions.short_parsable()
    options.print_metadata = False
    return str(computation.as_hlo_module().to_string(options))


_COMPUTATION_REF = re.compile(r"((?:to_apply|condition|body)=)([\w.-]+\.\d+)")
_COMPUTATION_HEAD = re.compile(r"^((?:ENTRY )?)([\w.-]+\.\d+)( \{)$", re.M)
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")
_NUMBERED = re.compile(r"(?<![\w.#-])([A-Za-z_][\w-]*)\.(\d+)\b")


def hlo_renumbered(text: str) -> str:
    """HLO text with each computation's and each instruction's ``.N`` replaced
    by its rank among the names of its kind with the same stem, in order of
    first appearance (XLA numbers them in an order of its own)."""
    seen: dict[tuple[str, str], str] = {}

    def name(kind: str, full: str) -> str:
        if (kind, full) not in seen:
            stem = full.rsplit(".", 1)[0]
            rank = sum(1 for k, f in seen if k == kind and f.rsplit(".", 1)[0] == stem)
            seen[(kind, full)] = f"{stem}.#{rank}"
        return seen[(kind, full)]
    text = _COMPUTATION_HEAD.sub(lambda m: m.group(1) + name("c", m.group(2)) + m.group(3), text)
    text = _COMPUTATION_REF.sub(lambda m: m.group(1) + name("c", m.group(2)), text)
    text = _BRANCHES.sub(lambda m: "branch_computations={" + ", ".join(
        name("c", b.strip()) for b in m.group(1).split(",")) + "}", text)
    return _NUMBERED.sub(lambda m: name("i", m.group(0)), text)

"""Configuration flags, spelled as JAX spells them.

Each flag has a default, an environment variable that overrides the default
at import time, and can be changed with ``config.update(name, value)``, read
as ``config.<name>``, and set for a block with the flag's context manager
(``with config.enable_x64(True): ...``).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["config", "Config", "UserConfig", "enable_x64", "make_user_context",
           "use_direct_linearize"]

_FALSY = ("", "0", "false", "f", "no", "n", "off")


def _parse_bool(text: str) -> bool:
    return text.strip().lower() not in _FALSY


def _parse_int(text: str) -> int:
    return int(text.strip())


def _parse_str(text: str) -> str:
    return text


def _check_default_device(value: Any) -> None:
    # A device is anything with a platform and an id (the device class lives
    # in the backends layer, above this one).
    if value is None or isinstance(value, str) or (
            hasattr(value, "platform") and hasattr(value, "id")):
        return
    raise ValueError("jax.default_device must be passed either a Device object (e.g. "
                     "`jax.devices('cpu')[0]`) or a platform name string like 'cpu' or "
                     f"'gpu', got: {value!r}")


# The values jax_default_matmul_precision takes: the level names and the
# names of the dot-algorithm presets (spec/_src/lax/dot_algorithms.py).
MATMUL_PRECISION_NAMES = (
    "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
    "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
    "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9",
    "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64")


def _check_matmul_precision(value: Any) -> None:
    if value is None or value in MATMUL_PRECISION_NAMES:
        return
    raise ValueError(f"new enum value must be None or in {list(MATMUL_PRECISION_NAMES)}, "
                     f"got {value} of type {type(value)}.")


# The levels of XLA's ExecutionOptions.optimization_level / memory_fitting_level.
OPTIMIZATION_LEVELS = ("UNKNOWN", "O0", "O1", "O2", "O3")
# The levels of a transfer guard (None: the default, allow).
_GUARD_LEVELS = (None, "allow", "log", "disallow", "log_explicit", "disallow_explicit")


@dataclass
class _Flag:
    name: str
    default: Any
    env_var: str
    parse: Callable[[str], Any]
    choices: tuple[Any, ...] | None = None
    validate: Callable[[Any], None] | None = None

    def initial_value(self) -> Any:
        raw = os.environ.get(self.env_var)
        if raw is None:
            return self.default
        value = self.parse(raw)
        if self.choices is not None and value not in self.choices:
            raise ValueError(f'Invalid value "{raw}" for JAX flag {self.name}')
        return value


_FLAGS: dict[str, _Flag] = {
    flag.name: flag
    for flag in (
        _Flag("jax_enable_x64", False, "JAX_ENABLE_X64", _parse_bool),
        _Flag("jax_num_cpu_devices", -1, "JAX_NUM_CPU_DEVICES", _parse_int),
        _Flag("jax_use_direct_linearize", True, "JAX_USE_DIRECT_LINEARIZE", _parse_bool),
        _Flag("jax_default_matmul_precision", None, "JAX_DEFAULT_MATMUL_PRECISION", _parse_str,
              validate=_check_matmul_precision),
        _Flag("jax_explicit_x64_dtypes", "warn", "JAX_EXPLICIT_X64_DTYPES", _parse_str,
              ("allow", "warn", "error")),
        _Flag("jax_numpy_rank_promotion", "allow", "JAX_NUMPY_RANK_PROMOTION", _parse_str,
              ("allow", "warn", "raise")),
        _Flag("jax_numpy_dtype_promotion", "standard", "JAX_NUMPY_DTYPE_PROMOTION", _parse_str,
              ("standard", "strict")),
        _Flag("jax_platforms", None, "JAX_PLATFORMS", _parse_str),
        _Flag("jax_threefry_partitionable", True, "JAX_THREEFRY_PARTITIONABLE", _parse_bool),
        # Off: Lowered.as_text() writes GSPMD's mhlo.sharding in place of
        # Shardy's (spec/_src/lowering/gspmd.py).
        _Flag("jax_use_shardy_partitioner", True, "JAX_USE_SHARDY_PARTITIONER", _parse_bool),
        _Flag("jax_disable_jit", False, "JAX_DISABLE_JIT", _parse_bool),
        # As in JAX, enables internal checking; in spec: check_jaxpr on every
        # jaxpr that jit/make_jaxpr trace.
        _Flag("jax_enable_checks", False, "JAX_ENABLE_CHECKS", _parse_bool),
        # Check every eagerly computed floating result for NaNs / infinities
        # (spec/_src/core/nan_checks.py).
        _Flag("jax_debug_nans", False, "JAX_DEBUG_NANS", _parse_bool),
        _Flag("jax_debug_infs", False, "JAX_DEBUG_INFS", _parse_bool),
        # Log why a jit call traced anew (spec/_src/api/cache_misses.py).
        _Flag("jax_explain_cache_misses", False, "JAX_EXPLAIN_CACHE_MISSES", _parse_bool),
        # Accepted, as JAX 0.12 accepts it; spec has one checkpoint implementation.
        _Flag("jax_remat3", False, "JAX_REMAT3", _parse_bool),
        # Where arrays made without a placement live (None: the first device).
        _Flag("jax_default_device", None, "JAX_DEFAULT_DEVICE", _parse_str,
              validate=_check_default_device),
        # spec's own: "flush" gives XLA CPU's flush-to-zero arithmetic
        # (JAX's observable behaviour); "ieee" keeps NumPy's gradual underflow.
        _Flag("spec_denormals", "flush", "SPEC_DENORMALS", _parse_str, ("flush", "ieee")),
        # spec's own: "as_named" computes each dot algorithm as its name
        # documents (spec/_src/lax/dot_algorithms.py); "cpu_jax" as JAX's CPU
        # backend (its presets only, computed as plain contractions).
        _Flag("spec_dot_algorithms", "as_named", "SPEC_DOT_ALGORITHMS", _parse_str,
              ("as_named", "cpu_jax")),
        # spec's own: "exact" computes real transcendentals with the
        # machine-independent kernels of spec/_src/lax/elementwise_math.py;
        # "numpy" (faster) with NumPy's CPU-dispatched ufuncs.
        _Flag("spec_transcendentals", "numpy", "SPEC_TRANSCENDENTALS", _parse_str,
              ("numpy", "exact")),
        # spec's own: True runs a jit call as Python code generated from its
        # jaxpr (spec/_src/api/codegen.py); False interprets the jaxpr
        # equation by equation. Both compute the same bits.
        _Flag("spec_jit_codegen", True, "SPEC_JIT_CODEGEN", _parse_bool),
        # XLA's optimization and memory-fitting levels, given to the compiler
        # with every compilation; they change nothing spec computes.
        _Flag("jax_optimization_level", "UNKNOWN", "JAX_OPTIMIZATION_LEVEL", _parse_str,
              OPTIMIZATION_LEVELS),
        _Flag("jax_memory_fitting_level", "O2", "JAX_MEMORY_FITTING_LEVEL", _parse_str,
              OPTIMIZATION_LEVELS),
    )
}

# Flags JAX 0.12 accepts that change nothing spec computes (guards, logging,
# compiler and TPU tuning, jax2tf's lowering choices): (name, default, choices).
_ACCEPTED: tuple[tuple[str, Any, tuple[Any, ...] | None], ...] = (
    ("jax_allow_f16_reductions", True, None),
    ("jax_array_garbage_collection_guard", None, (None, "allow", "log", "fatal")),
    ("jax_auto_pcast", True, None),
    ("jax_check_tracer_leaks", False, None),
    ("jax_debug_key_reuse", False, None),
    ("jax_default_prng_impl", "threefry2x32", ("threefry2x32", "rbg", "unsafe_rbg")),
    ("jax_enable_custom_prng", False, None),
    ("jax2tf_associative_scan_reductions", False, None),
    ("jax_legacy_prng_key", "allow", ("allow", "warn", "error")),
    ("jax_log_compiles", False, None),
    ("jax_no_execution", False, None),
    ("jax_no_tracing", False, None),
    ("jax_remove_size_one_mesh_axis_from_type", False, None),
    ("jax_softmax_custom_jvp", False, None),
    ("jax_thread_guard", False, None),
    ("jax_transfer_guard_device_to_device", None, _GUARD_LEVELS),
    ("jax_transfer_guard_device_to_host", None, _GUARD_LEVELS),
    ("jax_transfer_guard_host_to_device", None, _GUARD_LEVELS),
)
for _name, _default, _choices in _ACCEPTED:
    _parser = _parse_bool if isinstance(_default, bool) else _parse_str
    _FLAGS[_name] = _Flag(_name, _default, _name.upper(), _parser, _choices)


class Config:
    """The flag store. ``config.jax_enable_x64`` reads; ``update`` writes."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {n: f.initial_value() for n, f in _FLAGS.items()}
        # Bumped on every change, so caches keyed on configuration can use it.
        self.epoch = 0

    def update(self, name: str, value: Any) -> None:
        flag = _FLAGS.get(name)
        if flag is None:
            raise AttributeError(f"Unrecognized config option: {name}")
        if isinstance(flag.default, bool):
            # As JAX: a boolean flag stores the truth value of whatever it is
            # given (0, None, [] are False; any non-empty string is True).
            value = bool(value)
        if flag.choices is not None and value not in flag.choices:
            raise ValueError(f"new enum value must be in {list(flag.choices)}, "
                             f"got {value} of type {type(value)}.")
        if flag.validate is not None:
            flag.validate(value)
        self._values[name] = value
        self.epoch += 1

    def read(self, name: str) -> Any:
        if name not in self._values:
            raise AttributeError(f"Unrecognized config option: {name}")
        return self._values[name]

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_values")
        if values is not None and name in values:
            return values[name]
        raise AttributeError(f"Unrecognized config option: {name}")

    def values_key(self) -> tuple[Any, ...]:
        """The flags that change what a traced program means (for jit caches)."""
        v = self._values
        return (v["jax_enable_x64"], v["jax_use_direct_linearize"],
                v["jax_default_matmul_precision"], v["jax_numpy_rank_promotion"],
                v["jax_numpy_dtype_promotion"], tuple(c.value for c in _USER_CONTEXTS))

    def use_direct_linearize(self, new_val: bool = True) -> contextlib.AbstractContextManager[None]:
        """Within the block, select the direct (True) or legacy (False)
        linearize path (``spec.config.use_direct_linearize(False)``)."""
        return self._override("jax_use_direct_linearize", new_val)

    @contextlib.contextmanager
    def as_traced(self, name: str, value: Any) -> Iterator[None]:
        """Within the block, the flag holds the value an equation was traced
        under, while that equation is evaluated or lowered: the program's
        meaning, not a configuration change, so no jit cache is invalidated."""
        old = self._values[name]
        self._values[name] = value
        try:
            yield
        finally:
            self._values[name] = old

    @contextlib.contextmanager
    def _override(self, name: str, value: Any) -> Iterator[None]:
        old = self._values[name]
        self.update(name, value)
        try:
            yield
        finally:
            self.update(name, old)


config = Config()


def x64_enabled() -> bool:
    return bool(config._values["jax_enable_x64"])


@contextlib.contextmanager
def enable_x64(new_val: bool = True) -> Iterator[None]:
    with config._override("jax_enable_x64", new_val):
        yield


@contextlib.contextmanager
def use_direct_linearize(new_val: bool = True) -> Iterator[None]:
    with config._override("jax_use_direct_linearize", new_val):
        yield


@contextlib.contextmanager
def default_matmul_precision(new_val: str | None) -> Iterator[None]:
    with config._override("jax_default_matmul_precision", new_val):
        yield


def update(name: str, value: Any) -> None:
    config.update(name, value)


@contextlib.contextmanager
def numpy_dtype_promotion(mode: str) -> Iterator[None]:
    """``with numpy_dtype_promotion("strict"): ...``"""
    with config._override("jax_numpy_dtype_promotion", mode):
        yield


@contextlib.contextmanager
def numpy_rank_promotion(mode: str) -> Iterator[None]:
    """``with numpy_rank_promotion("raise"): ...``"""
    with config._override("jax_numpy_rank_promotion", mode):
        yield


@contextlib.contextmanager
def enable_checks(new_val: bool = True) -> Iterator[None]:
    with config._override("jax_enable_checks", new_val):
        yield


@contextlib.contextmanager
def threefry_partitionable(new_val: bool = True) -> Iterator[None]:
    """Within the block, threefry draws random bits by the partitionable
    (True, the default) or the original (False) counter layout."""
    with config._override("jax_threefry_partitionable", new_val):
        yield


@contextlib.contextmanager
def debug_nans(new_val: bool = True) -> Iterator[None]:
    """Within the block, raise FloatingPointError when a NaN is computed."""
    with config._override("jax_debug_nans", new_val):
        yield


@contextlib.contextmanager
def debug_infs(new_val: bool = True) -> Iterator[None]:
    """Within the block, raise FloatingPointError when an infinity is computed."""
    with config._override("jax_debug_infs", new_val):
        yield


@contextlib.contextmanager
def explain_cache_misses(new_val: bool = True) -> Iterator[None]:
    """Within the block, log why each jit call missed its cache."""
    with config._override("jax_explain_cache_misses", new_val):
        yield


@contextlib.contextmanager
def disable_jit(disable: bool = True) -> Iterator[None]:
    """Run jit-decorated functions eagerly (op by op) inside the block."""
    with config._override("jax_disable_jit", disable):
        yield


@contextlib.contextmanager
def default_device(device: Any) -> Iterator[None]:
    """Arrays made inside the block without a placement (and computations on
    uncommitted arrays alone) live on ``device``."""
    with config._override("jax_default_device", device):
        yield


class FlagContext:
    """A flag as JAX's top-level names give it: ``name(value)`` is a context
    manager setting it within a block; ``.value`` reads it."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def value(self) -> Any:
        return config.read(self.name)

    def __call__(self, new_val: Any = True) -> contextlib.AbstractContextManager[None]:
        return config._override(self.name, new_val)

    def __repr__(self) -> str:
        return f"FlagContext({self.name!r})"


def accepted_flag_contexts() -> dict[str, FlagContext]:
    """The accepted flags' top-level names (``jax.log_compiles``, ...)."""
    return {name.removeprefix("jax_"): FlagContext(name) for name, _, _ in _ACCEPTED}


@contextlib.contextmanager
def transfer_guard(new_val: str) -> Iterator[None]:
    """Within the block, all three transfer guards are ``new_val``."""
    with contextlib.ExitStack() as stack:
        for kind in ("host_to_device", "device_to_host", "device_to_device"):
            stack.enter_context(config._override(f"jax_transfer_guard_{kind}", new_val))
        yield


class UserConfig:
    """A context value that keys every jit cache (``jax.make_user_context``): its global
    value, or within ``with ctx(v):`` blocks (per thread, innermost first) ``v``."""

    def __init__(self, default_value: Any) -> None:
        self._global = default_value
        self._local = threading.local()
        _USER_CONTEXTS.append(self)

    @property
    def value(self) -> Any:
        stack = getattr(self._local, "stack", None)
        return stack[-1] if stack else self._global

    def get_global(self) -> Any:
        return self._global

    def set_global(self, new_value: Any) -> None:
        self._global = new_value
        config.epoch += 1

    @contextlib.contextmanager
    def __call__(self, new_value: Any) -> Iterator[None]:
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        self._local.stack.append(new_value)
        config.epoch += 1  # (remembered jit calls check the epoch)
        try:
            yield
        finally:
            self._local.stack.pop()
            config.epoch += 1


_USER_CONTEXTS: list[UserConfig] = []


class ParsedState(UserConfig):
    """A setting JAX keeps as a ``State`` outside ``jax.config`` (so
    ``config.update`` does not know it): ``.value`` reads it, ``state(v)``
    sets it within a block after ``parser`` checks and canonicalises ``v``
    (at the call, as JAX), and it keys every jit cache."""

    def __init__(self, name: str, default_value: Any, parser: Callable[[Any], Any]) -> None:
        super().__init__(default_value)
        self.name = name
        self._parser = parser

    def __call__(self, new_value: Any) -> contextlib._GeneratorContextManager[None]:
        return super().__call__(self._parser(new_value))


def _axis_name_set(value: Any) -> frozenset[Any]:
    if not isinstance(value, (set, frozenset)):
        raise TypeError("Expected axis name(s) as set or frozenset, got "
                        f"{value} of type {type(value)}")
    return frozenset(value)


# The mesh axes across which no collective may run (``jax.sharding.no_collectives``):
# collectives over them, and sharding rules that would need one, raise
# ForbiddenCollectiveError.
no_collectives = ParsedState("jax_no_collectives", frozenset(), _axis_name_set)


def make_user_context(default_value: Any = None) -> UserConfig:
    """A new jit-cache-sensitive context, starting at ``default_value``: a jitted function
    called under another value of it is traced again."""
    return UserConfig(default_value)

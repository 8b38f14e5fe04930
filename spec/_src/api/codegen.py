"""Code generation: a jitted program as a Python function of NumPy calls.

A jit call evaluates its (live) jaxpr. Instead of walking the equations at
every call, ``generated(jaxpr)`` writes the jaxpr once as the source of a
Python function and compiles it: each equation becomes one statement that
calls its primitive's kernel on local variables, with the parameters bound
when the function is written (the kernels and constants are the function's
globals), intermediates deleted after their last use, and the control-flow
primitives (``scan``, ``while``, ``cond``) and nested ``jit`` calls written
out as Python loops, branches and inline code. Typing happened once, when
the jaxpr was traced; nothing is re-typed.

Each equation runs either

- a *direct kernel*: for a common primitive at common operand types, the
  NumPy ufunc its impl ends up calling (``mul`` of float32 operands is
  ``np.multiply``), chosen once per (primitive, operand types, params,
  configuration) by ``_direct_kernel``; or
- its primitive's impl, with its params bound: exactly what the interpreter
  (``eval_jaxpr_values``) calls.

Floating-point environment. An arithmetic impl runs its kernel with XLA
CPU's flush-to-zero/denormals-are-zero mode and NumPy's error reporting off
(``denormals.arithmetic``), switching both around every kernel. A direct
kernel instead runs inside a *held* region: the generated code switches the
environment once on entering a run of direct kernels and once on leaving it
(before an impl, which switches for itself and may run user code, and at
the end of the call). Kernels that move data or only touch sign bits
(reshape, select_n, neg, integer arithmetic) give the same bits in either
environment and never end a region.

The generated function computes exactly the interpreter's values: the same
kernels in the same order on the same operands, in the same floating-point
environment (tests/codegen compares the bits of both on drawn programs).
A jaxpr it cannot write (constants that are refs, loops nested deeper than
Python's block limit) is interpreted.

A jaxpr evaluated on a mesh (``spmd.eval_jaxpr``) is written the same way,
one statement per device this process holds (``write_device``, below).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec._src.core import denormals
from spec._src.core.config import config
from spec._src.core.effects import running_compiled
from spec._src.core.interpreter import (
    DropVar,
    Eqn,
    Jaxpr,
    Literal,
    Primitive,
    Var,
    under_traced_context,
    hooks,
    canonical_value,
    dce_jaxpr,
)
from spec._src.core.sharding import _context as _mesh_context
from spec._src.core.state_types import RefType
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.lax.scan import counts

# ------------------------------------------------------------ environments

# The environment a kernel needs: NORMAL (IEEE, NumPy's error policy: what
# impls expect), HELD (flush-to-zero when flushing, errors ignored: what an
# arithmetic kernel runs in), or ANY (the same bits in either).
NORMAL, HELD, ANY = "normal", "held", "any"


@dataclass(frozen=True)
class _Strategy:
    """How the held environment is entered: ``hardware`` (SSE FTZ/DAZ bits
    and the error policy), ``quiet`` (flushing off: the error policy only),
    or ``none`` (flushing without the hardware switch: no direct arithmetic
    kernels, every arithmetic equation runs its impl)."""

    kind: str
    transcendentals: str

    @property
    def direct_arithmetic(self) -> bool:
        return self.kind != "none"


def _strategy() -> _Strategy:
    quiet_ok = denormals._ERROR_POLICY is not None
    if not denormals.flushing():
        kind = "quiet" if quiet_ok else "none"
    else:
        hardware = denormals._use_hardware[0] and denormals.hardware_available()
        kind = "hardware" if hardware and quiet_ok else "none"
    return _Strategy(kind, str(config.read("spec_transcendentals")))


def hardware_switch() -> list[bool]:
    """The one-element list saying whether the hardware switch is in use
    (``strategy_token`` reads it)."""
    return denormals._use_hardware


def strategy_token() -> bool:
    """What, besides the configuration (its epoch), the strategy depends on:
    whether the hardware switch is in use (tests turn it off)."""
    return denormals._use_hardware[0]


# ------------------------------------------------------------ direct kernels

_REAL_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_INTS = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8,
                                     np.uint16, np.uint32, np.uint64))

# Binary arithmetic: the ufunc each impl calls for real float operands of one
# dtype (``lifted(np.add)`` and so on), and for integers where the impl is
# the plain ufunc too.
# (``add_any``, autodiff's accumulation, is ``arithmetic(np.add)`` too.)
_BINARY_FLOAT = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                 "div": np.true_divide, "add_any": np.add}
_BINARY_INT = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "add_any": np.add}
_COMPARE = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}
# Unary float kernels whose impl calls the NumPy ufunc when
# ``spec_transcendentals`` is "numpy" (``elementwise_math._via64``).
_TRANSCENDENTAL = {"sin": np.sin, "cos": np.cos, "exp": np.exp, "log": np.log,
                   "tanh": np.tanh}
_ONES = {dt: np.ones((), dt) for dt in (np.dtype(np.float32), np.dtype(np.float64))}


def _one_minus_square(x: np.ndarray) -> Any:
    """``one_minus_square``'s impl, (1 + x) * (1 - x), as three ufuncs in
    the held environment (the impl runs each in it)."""
    one = _ONES[x.dtype]
    return np.multiply(np.add(one, x), np.subtract(one, x))


_UNARY_FLOAT: dict[str, Callable[..., Any]] = {"sqrt": np.sqrt,
                                               "one_minus_square": _one_minus_square}
# Kernels whose every element is one correctly rounded (or exact) operation
# on the operands' elements at the same position: writing the result over a
# dead operand of the result's shape and dtype gives the same bits.
_IN_PLACE = frozenset({np.add, np.subtract, np.multiply, np.true_divide, np.sqrt,
                       np.negative})
# Results at least this big are written over a dead operand (no fresh
# allocation, whose page faults cost about as much as the arithmetic);
# smaller ones are not worth the keyword argument.
IN_PLACE_MIN_BYTES = 1 << 18
# Impls that only move data (no floating-point arithmetic, no environment
# switch of their own): the same bits in either environment.
_DATA_MOVEMENT = frozenset({"reshape", "transpose", "squeeze", "broadcast_in_dim",
                            "select_n"})


@dataclass(frozen=True)
class Kernel:
    """One equation's kernel: the callable, the environment it needs, and
    whether its result must be made an array (a ufunc on 0-d operands
    returns a NumPy scalar; impls return arrays)."""

    fn: Callable[..., Any]
    env: str
    scalar_result: bool = False


def _dtypes(avals: Sequence[Any]) -> list[np.dtype[Any]] | None:
    try:
        return [np.dtype(a.dtype) for a in avals]
    except TypeError:  # an extended dtype (PRNG keys)
        return None


def direct_kernel(eqn: Eqn, strategy: _Strategy) -> Kernel | None:
    """The ufunc an equation's impl calls, when the operand types and params
    make that one call the whole impl; None otherwise."""
    if len(eqn.outvars) != 1:
        return None
    return kernel_for(eqn.primitive.name, [a.aval for a in eqn.invars], eqn.params,
                      not eqn.outvars[0].aval.shape, strategy)


def kernel_for(name: str, avals: Sequence[Any], params: dict[str, Any], scalar: bool,
               strategy: _Strategy) -> Kernel | None:
    """``direct_kernel`` from the operand types: the ufunc, or None."""
    if any(type(a) is not ArrayType for a in avals):
        return None
    dts = _dtypes(avals)
    if not dts or any(d != dts[0] for d in dts):
        return None
    dt = dts[0]
    arith = strategy.direct_arithmetic and dt in _REAL_FLOATS
    fn: Any = None
    env = HELD
    if len(dts) == 2 and not params.get("out_dtype"):
        if arith and name in _BINARY_FLOAT:
            fn = _BINARY_FLOAT[name]
        elif arith and name in _COMPARE:
            fn = _COMPARE[name]
        elif dt in _INTS and name in _BINARY_INT:
            fn, env = _BINARY_INT[name], ANY  # integer kernels ignore the environment
    elif len(dts) == 1:
        if arith and name in _UNARY_FLOAT:
            fn = _UNARY_FLOAT[name]
        elif arith and name in _TRANSCENDENTAL and strategy.transcendentals == "numpy":
            fn = _TRANSCENDENTAL[name]
        elif name == "neg" and (dt in _REAL_FLOATS or dt in _INTS):
            # A sign flip: the same bits in either environment.
            fn, env = np.negative, ANY
    if fn is None:
        return None
    return Kernel(fn, env, scalar)


# Reductions whose impl, for operands of these dtypes reduced over non-empty
# axes, is one ufunc ``reduce`` in the operand's dtype: ``reduce_sum`` sums in
# the dtype itself (integers wrap), ``reduce_max``/``reduce_min`` choose
# (``np.max`` is ``np.maximum.reduce``; NaN propagates).
_REDUCE_UFUNC = {"reduce_sum": np.add, "reduce_max": np.maximum, "reduce_min": np.minimum}


def reduction_kernel(name: str, x: Any, params: dict[str, Any], scalar: bool,
                     strategy: _Strategy) -> Kernel | None:
    """The direct kernel of a reduction's impl on a block of type ``x``
    (per device, in generated per-device code), or None."""
    ufunc = _REDUCE_UFUNC.get(name)
    if ufunc is None or type(x) is not ArrayType or set(params) - {"axes", "out_sharding"}:
        return None
    dts = _dtypes([x])
    axes = tuple(int(a) for a in params["axes"])
    if dts is None or any(x.shape[a] == 0 for a in axes):
        return None
    (dt,) = dts
    if dt in _REAL_FLOATS and strategy.direct_arithmetic:
        env = HELD
    elif dt in _INTS:
        env = ANY  # integer kernels ignore the environment
    else:
        return None
    reduce = ufunc.reduce

    def kernel(block: np.ndarray) -> Any:
        return reduce(block, axes, dt)
    kernel.__name__ = name
    return Kernel(kernel, env, scalar)


def eager_kernel(prim: Primitive, avals: Sequence[ArrayType], params: dict[str, Any]
                 ) -> Callable[..., list[Any]] | None:
    """For eager evaluation: a direct kernel switching the environment
    around itself (as ``denormals.arithmetic`` does), or None. Elementwise
    results are rank 0 exactly when every operand is. A ``jit`` equation
    evaluated eagerly (what a jit call under eager ``grad`` or ``vmap``
    comes to) runs its generated program."""
    if prim.name == "jit":
        return _call_kernel(prim, params)
    strategy = _strategy()
    kernel = kernel_for(prim.name, avals, params, all(not a.shape for a in avals), strategy)
    if kernel is None:
        return None
    fn, scalar = kernel.fn, kernel.scalar_result
    if kernel.env == ANY:
        if scalar:
            return lambda *xs: [np.asarray(fn(*xs))]
        return lambda *xs: [fn(*xs)]
    return _held_kernel(fn, scalar, strategy.kind == "hardware")


def _held_kernel(fn: Callable[..., Any], scalar: bool, hardware: bool
                 ) -> Callable[..., list[Any]]:
    policy = denormals._ERROR_POLICY
    assert policy is not None
    set_policy, reset_policy, ignore = policy.set, policy.reset, denormals._IGNORE_ALL
    hw = denormals._HARDWARE
    if not hardware or hw is None:
        def quiet(*xs: Any) -> list[Any]:
            token = set_policy(ignore)
            try:
                out = fn(*xs)
            finally:
                reset_policy(token)
            return [np.asarray(out) if scalar else out]
        return quiet
    fesetmode, flushed, normal = hw._set, hw._flushed_ref, hw._normal_ref

    def held(*xs: Any) -> list[Any]:
        token = set_policy(ignore)
        fesetmode(flushed)
        try:
            out = fn(*xs)
        finally:
            fesetmode(normal)
            reset_policy(token)
        return [np.asarray(out) if scalar else out]
    return held


def _call_kernel(prim: Primitive, params: dict[str, Any]) -> Callable[..., Any]:
    """A ``jit`` equation's eager kernel: its live program's generated
    function, which computes what the impl (``call_impl``: the live program
    interpreted, as a compiled computation) computes; the impl itself where
    the program is interpreted (as a jit call's own path decides: codegen
    off, NaN checks, inside shard_map, sharded types, programs not written)."""
    impl = functools.partial(prim.impl, **params)
    jaxpr: Jaxpr = params["jaxpr"]

    def kernel(*values: Any) -> Any:
        program = _eager_program(jaxpr)
        if program is None:
            return impl(*values)
        if program.runs_impls:
            with running_compiled():
                return program.fn(*values)
        return program.fn(*values)
    return kernel


# Eager transformations make a new jaxpr for every call they transform (the
# jvp, the known part, the transpose of a jit's program), which would be
# written once and run once: writing costs several interpreted runs. So a
# ``jit`` equation's program is written from the second evaluation of the
# same jaxpr on, and interpreted before.
_EAGER_SEEN: weakref.WeakKeyDictionary[Jaxpr, bool] = weakref.WeakKeyDictionary()


def _eager_program(jaxpr: Jaxpr) -> Generated | None:
    values = config._values
    if not values["spec_jit_codegen"] or values["jax_debug_nans"] or values["jax_debug_infs"] \
            or _mesh_context.in_manual or _has_sharded_types(jaxpr):
        return None
    if jaxpr not in _EAGER_SEEN:
        _EAGER_SEEN[jaxpr] = True
        return None
    return generated(live_program(jaxpr))


def _has_sharded_types(jaxpr: Jaxpr) -> bool:
    return any(getattr(a, "sharding", None) is not None
               for a in (*jaxpr.in_avals, *jaxpr.out_avals))


hooks.eager_kernel = eager_kernel


# ------------------------------------------------------------------ writing


class Unsupported(Exception):
    """A jaxpr the generator does not write (it is interpreted)."""


class _Writer:
    """Writes one jaxpr (and its inlined sub-jaxprs) as a function body."""

    def __init__(self, strategy: _Strategy) -> None:
        self.strategy = strategy
        self.lines: list[str] = []
        self.indent = 1
        self.globals: dict[str, Any] = {"_asarray": np.asarray, "_empty": np.empty,
                                        "_where": np.where}
        self._global_ids: dict[tuple[int, str], str] = {}
        self.names: dict[int, str] = {}
        self.counter = 0
        self.env = NORMAL
        self.uses_held = False
        self.runs_impls = False
        # The functions finished so far, when the top-level block is cut
        # into several (``_cut``): each one's parameters, lines and whether
        # it enters the held environment.
        self.parts: list[tuple[list[str], list[str], bool]] = []
        self.part_params: list[str] = []
        # Variables (by id) holding an array a direct kernel allocated, which
        # nothing but direct kernels has read (no view, no impl, no output
        # can see it): at its last read it may be written over.
        self.owned: set[int] = set()

    # names ---------------------------------------------------------------
    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def bind(self, var: Var) -> str:
        if isinstance(var, DropVar):
            return "_"
        name = self.fresh()
        self.names[id(var)] = name
        return name

    def constant(self, value: Any, prefix: str) -> str:
        key = (id(value), prefix)
        known = self._global_ids.get(key)
        if known is None:
            known = self._global_ids[key] = self.fresh(prefix)
            self.globals[known] = value
        return known

    def atom(self, a: Any) -> str:
        if isinstance(a, Literal):
            return self.constant(np.asarray(a.val, dtype=a.aval.dtype), "_lit")
        return self.names[id(a)]

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    # environment ---------------------------------------------------------
    def switch(self, env: str) -> None:
        """Enter the environment ``env`` needs (ANY: stay)."""
        if env == ANY or env == self.env:
            return
        hardware = self.strategy.kind == "hardware"
        if env == HELD:
            self.emit("_tok = _policy_set(_IGNORE)")
            if hardware:
                self.emit("_fesetmode(_FLUSHED)")
            self.uses_held = True
        else:
            if hardware:
                self.emit("_fesetmode(_NORMAL)")
            self.emit("_policy_reset(_tok); _tok = None")
        self.env = env

    def demand(self, eqns: Sequence[Eqn]) -> str:
        """The first environment the equations need (ANY if none)."""
        for eqn in eqns:
            need = self.eqn_demand(eqn)
            if need != ANY:
                return need
        return ANY

    def eqn_demand(self, eqn: Eqn) -> str:
        name = eqn.primitive.name
        if name in _WRITERS:
            return self.demand([e for j in _sub_jaxprs(eqn) for e in j.eqns])
        kernel = direct_kernel(eqn, self.strategy)
        if kernel is not None:
            return kernel.env
        return ANY if name in _DATA_MOVEMENT else NORMAL

    # blocks ----------------------------------------------------------------
    def block(self, jaxpr: Jaxpr, inputs: Sequence[str], top: bool = False) -> list[str]:
        """Write ``jaxpr``'s equations with its inputs named ``inputs``;
        returns the expressions of its outputs. Variables defined here are
        deleted after their last use (outputs excepted). ``top``: the
        program's own block, which is cut into functions of about
        ``_PART_LINES`` lines (``_cut``)."""
        for v, c in zip(jaxpr.constvars, jaxpr.consts):
            if type(getattr(c, "aval", None)) is RefType:
                raise Unsupported("a ref constant")
            self.names[id(v)] = self.constant(canonical_value(c)[0], "_const")
        for v, n in zip(jaxpr.invars, inputs):
            self.names[id(v)] = n
        last = _last_uses(jaxpr)
        outputs = {id(v) for v in jaxpr.outvars if isinstance(v, Var)}
        alive: dict[int, str] = {}  # (top) the variables defined so far and read later
        for i, eqn in enumerate(jaxpr.eqns):
            dying = [v for v in last.get(i, ()) if id(v) not in outputs]
            self.equation(eqn, {id(v) for v in dying})
            dead = [self.names[id(v)] for v in dying]
            if dead:
                self.emit("del " + ", ".join(dead))
            if top:
                alive.update((id(v), self.names[id(v)]) for v in eqn.outvars
                             if not isinstance(v, DropVar))
                for v in dying:
                    alive.pop(id(v), None)
                if len(self.lines) >= _PART_LINES and i + 1 < len(jaxpr.eqns):
                    self._cut([*inputs, *alive.values()])
        self.owned.difference_update(outputs)
        return [self.atom(v) for v in jaxpr.outvars]

    def _cut(self, carried: list[str]) -> None:
        """End the current function, returning the values the rest reads
        (``carried``: the program's inputs and the variables still alive),
        and start the next, which takes them. Python compiles a function's
        body whole: one function of 100,000 lines costs the compiler over a
        gigabyte, parts of a few thousand lines cost it megabytes each."""
        self.switch(NORMAL)
        self.emit(f"return [{', '.join(carried)}]")
        self.parts.append((self.part_params, self.lines, self.uses_held))
        self.part_params, self.lines, self.uses_held = ["carried"], [], False
        # (emptied: the caller's list must not keep values this part deletes)
        self.emit(f"{', '.join(carried)}, = carried; carried.clear()")

    def equation(self, eqn: Eqn, dying: Set[int] = frozenset()) -> None:
        writer = _WRITERS.get(eqn.primitive.name)
        kernel = None if writer is not None else direct_kernel(eqn, self.strategy)
        if kernel is None or kernel.scalar_result:
            # Anything else may keep or view its operands.
            self.owned.difference_update(id(a) for a in eqn.invars)
        if writer is not None and writer(self, eqn):
            return
        ins = ", ".join(self.atom(a) for a in eqn.invars)
        if kernel is not None:
            self.switch(kernel.env)
            k = self.constant(kernel.fn, "_" + kernel.fn.__name__)
            target = self.reusable(eqn, kernel, dying)
            out = self.bind(eqn.outvars[0])
            call = f"{k}({ins})" if target is None else f"{k}({ins}, out={target})"
            self.emit(f"{out} = _asarray({call})" if kernel.scalar_result else f"{out} = {call}")
            if not kernel.scalar_result:
                self.owned.add(id(eqn.outvars[0]))
            return
        if eqn.primitive.name not in _DATA_MOVEMENT:
            self.switch(NORMAL)
            self.runs_impls = True
        impl = eqn.primitive.impl
        if eqn.source_info is not None and not eqn.source_info.threefry_partitionable:
            impl = under_traced_context(impl, eqn.source_info)
        fn = functools.partial(impl, **eqn.params) if eqn.params else impl
        k = self.constant(fn, f"_{_ident(eqn.primitive.name)}")
        outs = [self.bind(v) for v in eqn.outvars]
        if not outs:
            self.emit(f"{k}({ins})")
        else:
            self.emit(f"{', '.join(outs)}, = {k}({ins})")

    def reusable(self, eqn: Eqn, kernel: Kernel, dying: Set[int]) -> str | None:
        """The name of a dead operand array the kernel's result may be
        written over (``out=``), or None."""
        if kernel.fn not in _IN_PLACE or kernel.scalar_result:
            return None
        aval = eqn.outvars[0].aval
        if aval.size * np.dtype(aval.dtype).itemsize < IN_PLACE_MIN_BYTES:
            return None
        for a in eqn.invars:
            if isinstance(a, Var) and id(a) in dying and id(a) in self.owned \
                    and a.aval.shape == aval.shape and a.aval.dtype == aval.dtype:
                self.owned.discard(id(a))
                return self.names[id(a)]
        return None

    def assign(self, names: Sequence[str], exprs: Sequence[str]) -> None:
        if names:
            self.emit(f"{', '.join(names)}, = {', '.join(exprs)},")

    def nested(self, jaxpr: Jaxpr, inputs: Sequence[str]) -> list[str]:
        """A sub-block that starts and ends in the current environment."""
        entry = self.env
        outs = self.block(jaxpr, inputs)
        self.switch(entry)
        return outs


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def _last_uses(jaxpr: Jaxpr) -> dict[int, list[Var]]:
    """Per equation index, the variables defined in ``jaxpr`` read for the
    last time there (or never read: right after their definition)."""
    return _last_uses_of(jaxpr.eqns)


def _last_uses_of(eqns: Sequence[Eqn]) -> dict[int, list[Var]]:
    defined: dict[int, Var] = {}
    last: dict[int, int] = {}
    for i, eqn in enumerate(eqns):
        for a in eqn.invars:
            if isinstance(a, Var) and id(a) in defined:
                last[id(a)] = i
        for v in eqn.outvars:
            if not isinstance(v, DropVar):
                defined[id(v)] = v
                last.setdefault(id(v), i)
    by_eqn: dict[int, list[Var]] = {}
    for key, i in last.items():
        by_eqn.setdefault(i, []).append(defined[key])
    return by_eqn


# A call runs its program after dead-code elimination (as ``call_impl``
# does): work nothing reads does not run, effects always do.
_LIVE: weakref.WeakKeyDictionary[Jaxpr, Jaxpr | None] = weakref.WeakKeyDictionary()


def live_program(jaxpr: Jaxpr) -> Jaxpr:
    if jaxpr in _LIVE:
        return _LIVE[jaxpr] or jaxpr
    live = dce_jaxpr(jaxpr)
    # (an unchanged program is not stored as its own value: it would keep itself alive)
    _LIVE[jaxpr] = None if live is jaxpr else live
    return live


def _sub_jaxprs(eqn: Eqn) -> list[Jaxpr]:
    p = eqn.params
    name = eqn.primitive.name
    if name == "jit":
        return [live_program(p["jaxpr"])]
    if name == "scan":
        return [p["jaxpr"]]
    if name == "while":
        return [p["cond_jaxpr"], p["body_jaxpr"]]
    if name == "cond":
        return list(p["branches"])
    return []


# ----------------------------------------------------- control flow writers


def _write_jit(w: _Writer, eqn: Eqn) -> bool:
    """A nested call: its live program inline (what ``call_impl`` runs)."""
    inner = live_program(eqn.params["jaxpr"])
    outs = w.nested(inner, [w.atom(a) for a in eqn.invars])
    w.assign([w.bind(v) for v in eqn.outvars], outs)
    # The inner names of its results are aliases now: drop them.
    defined = {w.names[id(v)] for e in inner.eqns for v in e.outvars if id(v) in w.names}
    dead = sorted({o for o in outs if o in defined})
    if dead:
        w.emit("del " + ", ".join(dead))
    return True


def _write_scan(w: _Writer, eqn: Eqn) -> bool:
    """``scan``: a Python loop over the iterations, the body inline (as
    ``_scan_impl`` runs it)."""
    p = eqn.params
    jaxpr: Jaxpr = p["jaxpr"]
    nc, nk, _, _ = counts(p["ft_in"], p["ft_out"])
    length: int = p["length"]
    args = [w.atom(a) for a in eqn.invars]
    consts, init, xs = args[:nc], args[nc:nc + nk], args[nc + nk:]
    carry = [w.fresh("carry") for _ in init]
    w.assign(carry, init)
    ys = [w.fresh("ys") for _ in jaxpr.out_avals[nk:]]
    for y, a in zip(ys, jaxpr.out_avals[nk:]):
        shape = w.constant((length, *a.shape), "_shape")
        dtype = w.constant(np.dtype(a.dtype), "_dtype")
        w.emit(f"{y} = _empty({shape}, {dtype})")
    x_refs = [type(a) is RefType for a in jaxpr.in_avals[nc + nk:]]
    i = w.fresh("i")
    steps = f"range({length - 1}, -1, -1)" if p["reverse"] else f"range({length})"
    w.switch(w.demand(jaxpr.eqns))
    w.emit(f"for {i} in {steps}:")
    w.indent += 1
    rows = [w.fresh("row") for _ in xs]
    for row, x, r in zip(rows, xs, x_refs):
        w.emit(f"{row} = {x}[{i}, ...]" if r else f"{row} = {x}[{i}]")
    outs = w.nested(jaxpr, [*consts, *carry, *rows])
    for y, o in zip(ys, outs[nk:]):  # (before the carry moves on: a y may be a carry)
        w.emit(f"{y}[{i}] = {o}")
    w.assign(carry, outs[:nk])
    w.emit("pass")
    w.indent -= 1
    w.assign([w.bind(v) for v in eqn.outvars], [*carry, *ys])
    return True


def _write_while(w: _Writer, eqn: Eqn) -> bool:
    """``while``: the predicate and body inline in a Python loop (as
    ``_while_impl`` runs them); a batched predicate keeps finished
    examples' carries."""
    p = eqn.params
    cond: Jaxpr = p["cond_jaxpr"]
    body: Jaxpr = p["body_jaxpr"]
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    args = [w.atom(a) for a in eqn.invars]
    cconsts, bconsts, init = args[:nc], args[nc:nc + nb], args[nc + nb:]
    carry = [w.fresh("carry") for _ in init]
    w.assign(carry, init)
    w.switch(w.demand([*cond.eqns, *body.eqns]))
    w.emit("while True:")
    w.indent += 1
    (pred,) = w.nested(cond, [*cconsts, *carry])
    w.emit(f"if not _asarray({pred}).any():")
    w.emit("    break")
    new = w.nested(body, [*bconsts, *carry])
    if not cond.out_avals[0].shape:
        w.assign(carry, new)
    else:
        w.globals["_select_carry"] = _select_carry
        w.assign(carry, [f"_select_carry({pred}, {n}, {c})" for n, c in zip(new, carry)])
    w.indent -= 1
    w.assign([w.bind(v) for v in eqn.outvars], carry)
    return True


def _select_carry(pred: np.ndarray, new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """The while impl's choice of carry under a batched predicate."""
    mask = pred.reshape(pred.shape + (1,) * (old.ndim - pred.ndim))
    return np.where(mask, new, old)


def _write_cond(w: _Writer, eqn: Eqn) -> bool:
    """``cond``/``switch``: an if-chain over the clamped index, each branch
    inline (as ``_cond_impl`` picks it)."""
    branches: tuple[Jaxpr, ...] = eqn.params["branches"]
    index, *ops = [w.atom(a) for a in eqn.invars]
    outs = [w.bind(v) for v in eqn.outvars]
    i = w.fresh("branch")
    w.emit(f"{i} = min(max(int({index}), 0), {len(branches) - 1})")
    for k, branch in enumerate(branches):
        head = "if" if k == 0 else "elif"
        w.emit(f"{head} {i} == {k}:" if k < len(branches) - 1 else "else:")
        w.indent += 1
        w.assign(outs, w.nested(branch, ops))
        w.emit("pass")
        w.indent -= 1
    return True


_WRITERS: dict[str, Callable[[_Writer, Eqn], bool]] = {
    "jit": _write_jit, "scan": _write_scan, "while": _write_while, "cond": _write_cond}


# ------------------------------------------------------------ the program


@dataclass(frozen=True)
class Generated:
    """A jaxpr written as Python: its source, the compiled function (NumPy
    arrays in, the list of output arrays out), and whether some equation
    runs its impl (which may run user callbacks)."""

    source: str
    fn: Callable[..., list[np.ndarray]]
    runs_impls: bool


# Lines of generated code per function of a jit program (``_Writer._cut``).
_PART_LINES = 2000


def write(jaxpr: Jaxpr, name: str = "program") -> Generated:
    """``jaxpr`` (closed, live) as a generated Python function (calling its
    parts in turn, when it is long)."""
    strategy = _strategy()
    w = _Writer(strategy)
    params = [w.fresh("a") for _ in jaxpr.invars]
    w.part_params = params
    w.indent = 2
    outs = w.block(jaxpr, params, top=True)
    w.switch(NORMAL)
    w.emit(f"return [{', '.join(outs)}]")
    namespace = dict(w.globals)
    namespace.update(_environment_globals())
    if not w.parts:
        source = _assemble(name, params, w.lines, w.uses_held, strategy)
        exec(compile(source, f"<spec jit {name}>", "exec"), namespace)
        return Generated(source, namespace[name], w.runs_impls)
    parts = [*w.parts, (w.part_params, w.lines, w.uses_held)]
    names = [f"{name}_part{k}" for k in range(1, len(parts) + 1)]
    calls = [f"    carried = {names[0]}({', '.join(params)})",
             *(f"    carried = {n}(carried)" for n in names[1:-1]),
             f"    return {names[-1]}(carried)"]
    sources = ["\n".join([f"def {name}({', '.join(params)}):", *calls]) + "\n"]
    for part_name, (part_params, lines, held) in zip(names, parts):
        sources.append(_assemble(part_name, part_params, lines, held, strategy))
    for k, source in enumerate(sources):  # compiled one by one: see _Writer._cut
        exec(compile(source, f"<spec jit {name}{f' part {k}' if k else ''}>", "exec"),
             namespace)
    return Generated("\n".join(sources), namespace[name], w.runs_impls)


def _assemble(name: str, params: Sequence[str], body: list[str], uses_held: bool,
              strategy: _Strategy) -> str:
    """The function's source: its body, inside a ``try`` that leaves the
    held environment where the body enters it."""
    head = [f"def {name}({', '.join(params)}):"]
    if uses_held:
        head += ["    _tok = None", "    try:"]
        tail = ["    finally:", "        if _tok is not None:"]
        if strategy.kind == "hardware":
            tail.append("            _fesetmode(_NORMAL)")
        tail.append("            _policy_reset(_tok)")
    else:
        body = [line[4:] for line in body]
        tail = []
    return "\n".join([*head, *body, *tail]) + "\n"


def _environment_globals() -> dict[str, Any]:
    policy = denormals._ERROR_POLICY
    names: dict[str, Any] = {}
    if policy is not None:
        names.update(_policy_set=policy.set, _policy_reset=policy.reset,
                     _IGNORE=denormals._IGNORE_ALL)
    hw = denormals._HARDWARE
    if hw is not None:
        names.update(_fesetmode=hw._set, _FLUSHED=hw._flushed_ref, _NORMAL=hw._normal_ref)
    return names


# Generated programs per jaxpr and strategy (None: interpreted); an entry
# goes with its jaxpr.
_PROGRAMS: weakref.WeakKeyDictionary[Jaxpr, dict[_Strategy, Generated | None]] = \
    weakref.WeakKeyDictionary()


def generated(jaxpr: Jaxpr) -> Generated | None:
    """The generated program of a (live) jaxpr under the current
    configuration, written on first use; None where it is interpreted."""
    strategy = _strategy()
    per = _PROGRAMS.get(jaxpr)
    if per is None:
        per = _PROGRAMS[jaxpr] = {}
    if strategy in per:
        return per[strategy]
    try:
        program: Generated | None = write(jaxpr)
    except (Unsupported, SyntaxError, RecursionError):
        # (SyntaxError: Python's limit on nested blocks, for deeply nested loops)
        program = None
    per[strategy] = program
    return program


def python_source(jaxpr: Jaxpr) -> str:
    """The Python source a jit call of ``jaxpr`` runs (its live program)."""
    try:
        return write(live_program(jaxpr)).source
    except Unsupported as why:
        return f"# interpreted: {why}\n"


# ------------------------------------------------- per-device programs
#
# A jaxpr evaluated on a mesh (``spmd.eval_jaxpr``: a sharded jit call, a
# shard_map body, a loop body or branch over Dists) runs every equation's
# per-device program on the devices' buffers. Its generated function takes
# the argument Dists and returns the result Dists; each value in between is
# one local variable per device this process holds. An equation whose
# per-device program is the impl on each device's buffers as they are (a
# ``local`` program, or an ``aligned`` one whose operands already have the
# result's layout) runs that impl, or its direct kernel, on each device's
# variables; a device whose operands are the very buffers of the first
# device's shares its result (as ``run_local`` does for replicated work).
# Every other equation (collectives, reshards, gathered programs, control
# flow, anything another mesh's devices take part in) calls its per-device
# program (``spmd.apply``) on Dists made from the variables.


@dataclass(frozen=True)
class DeviceGenerated:
    """A jaxpr's per-device program as Python, for one mesh geometry and
    argument types: its source, and the function (argument Dists in,
    result Dists out)."""

    source: str
    fn: Callable[..., list[S.Dist]]


class _DeviceWriter(_Writer):
    """Writes a jaxpr evaluated on Dists, one statement per device."""

    def __init__(self, strategy: _Strategy, geo: S.Geometry) -> None:
        super().__init__(strategy)
        self.geo = geo
        self.globals["_Dist"] = S.Dist
        # Per variable (by id): its expression on every device (``None`` on
        # the devices of other processes), and the Dist expression or type
        # it is packed with for a per-device program.
        self.dev: dict[int, list[str]] = {}
        self.packing: dict[int, str] = {}
        self.types: dict[int, Any] = {}

    # values ------------------------------------------------------------
    def bind_device(self, var: Var) -> list[str]:
        base = self.fresh()
        names = [f"{base}_{k}" if k in self.geo.local else "None" for k in range(self.geo.n)]
        if not isinstance(var, DropVar):
            self.dev[id(var)] = names
            self.types[id(var)] = var.aval
            self.packing[id(var)] = self.constant(var.aval, "_aval")
        return names

    def device_atom(self, a: Any) -> list[str]:
        if isinstance(a, Literal):
            c = self.constant(np.asarray(a.val, dtype=a.aval.dtype), "_lit")
            return [c if k in self.geo.local else "None" for k in range(self.geo.n)]
        return self.dev[id(a)]

    def atom_type(self, a: Any) -> Any:
        return a.aval if isinstance(a, Literal) else self.types[id(a)]

    def packed(self, a: Any) -> str:
        """A Dist expression of an operand (the argument's own Dist for the
        program's arguments)."""
        if isinstance(a, Literal):
            return self.constant(S.uniform(np.asarray(a.val, dtype=a.aval.dtype), a.aval,
                                           self.geo), "_lit")
        pack = self.packing[id(a)]
        if pack.startswith("_aval"):
            return f"_Dist({pack}, ({', '.join(self.dev[id(a)])},))"
        return pack

    # blocks ------------------------------------------------------------
    def device_block(self, jaxpr: Jaxpr, consts: Sequence[Any]) -> list[Any]:
        """Write ``jaxpr``'s live equations (its inputs bound already);
        returns its output atoms."""
        for v, c in zip(jaxpr.constvars, consts):
            if type(getattr(c, "aval", None)) is RefType:
                raise Unsupported("a ref constant")
            try:
                d = c if isinstance(c, S.Dist) else S.from_value(c, self.geo)
            except (ValueError, NotImplementedError) as e:  # raised again when interpreted
                raise Unsupported(str(e)) from e
            name = self.constant(d, "_const")
            self.dev[id(v)] = self.unpack(name)
            self.packing[id(v)] = name
            self.types[id(v)] = d.aval
        live = S.live_equations(jaxpr)
        eqns = [e for e, keep in zip(jaxpr.eqns, live) if keep]
        last = _last_uses_of(eqns)
        outputs = {id(v) for v in jaxpr.outvars if isinstance(v, Var)}
        for i, eqn in enumerate(eqns):
            self.device_equation(eqn)
            dead = [n for v in last.get(i, ()) if id(v) not in outputs
                    for n in self.dev.get(id(v), ()) if n != "None" and n[0] == "v"]
            if dead:
                self.emit("del " + ", ".join(dead))
        return list(jaxpr.outvars)

    def unpack(self, dist: str) -> list[str]:
        base = self.fresh("d")
        names = [f"{base}_{k}" for k in range(self.geo.n)]
        self.emit(f"{', '.join(names)}, = {dist}.bufs")
        return [n if k in self.geo.local else "None" for k, n in enumerate(names)]

    def device_equation(self, eqn: Eqn) -> None:
        if any(type(v.aval) is RefType for v in (*eqn.invars, *eqn.outvars)):
            raise Unsupported("a ref")
        prim = eqn.primitive
        out_avals = [v.aval for v in eqn.outvars]
        same_mesh = S.geometry_of(out_avals, self.geo) is self.geo
        if same_mesh and prim.name == "jit":
            self.device_jit(eqn)
            return
        layout = getattr(prim.per_device, PD.LAYOUT_ATTR, None)
        if layout == "alias" and same_mesh and len(eqn.invars) == len(eqn.outvars) == 1:
            # A free cast: every device's buffer as it is, under a new type.
            (src,), (out,) = [self.device_atom(a) for a in eqn.invars], \
                [self.bind_device(v) for v in eqn.outvars]
            held = [(o, s) for o, s in zip(out, src) if o != "None"]
            if held:
                self.emit(f"{', '.join(o for o, _ in held)}, = {', '.join(s for _, s in held)},")
            return
        in_avals = [self.atom_type(a) for a in eqn.invars]
        if same_mesh and not eqn.effects and (layout == "local" or (
                layout == "aligned" and all(c is None for c in PD.aligned_cuts(in_avals,
                                                                             out_avals[0])))):
            self.device_local(eqn, in_avals)
            return
        rule = prim.per_device
        if same_mesh and not eqn.effects and isinstance(rule, PD.Reduction):
            natural = rule.natural(in_avals[0], out_avals[0], eqn.params["axes"])
            if natural is not None:
                self.device_reduction(eqn, in_avals, natural, rule.op)
                return
        self.switch(NORMAL)
        self.runs_impls = True
        call = self.constant(_DeviceCall(prim, eqn.params, out_avals, self.geo),
                             f"_{_ident(prim.name)}")
        args = ", ".join(self.packed(a) for a in eqn.invars)
        outs = [self.bind_device(v) for v in eqn.outvars]
        targets = ", ".join(f"({', '.join(_targets(o))},)" for o in outs)
        self.emit(f"{targets}, = {call}({args})" if outs else f"{call}({args})")

    def device_reduction(self, eqn: Eqn, in_avals: Sequence[Any], natural: Any, op: str
                         ) -> None:
        """A reduction's program (``per_device.Reduction``) inline: its
        kernel on each device's block to the natural result, then the
        reshard to the result type (the all-reduce, the interpreter's call)."""
        (out,) = eqn.outvars
        kernel = reduction_kernel(eqn.primitive.name, in_avals[0], eqn.params,
                                  not out.aval.shape, self.strategy)
        plan = S.reshard_plan(natural, out.aval, self.geo, op)
        if plan is None:
            self.device_local(eqn, in_avals, kernel)
            return
        base = self.fresh("p")
        partial = [f"{base}_{k}" if k in self.geo.local else "None" for k in range(self.geo.n)]
        self.device_local(eqn, in_avals, kernel, [partial])
        self.switch(NORMAL)
        self.runs_impls = True
        finish = self.constant(plan, "_reshard")
        names = self.bind_device(out)
        self.emit(f"({', '.join(_targets(names))},) = {finish}(({', '.join(partial)},))")
        held = [n for n in partial if n != "None"]
        self.emit("del " + ", ".join(held))

    def device_local(self, eqn: Eqn, in_avals: Sequence[Any], kernel: Kernel | None = None,
                     outs: list[list[str]] | None = None) -> None:
        """The impl (or its direct kernel) on each device's buffers, into
        the variables of the equation's results (or ``outs``)."""
        if kernel is None and len(eqn.outvars) == 1 and all(
                type(a) is ArrayType for a in in_avals):
            kernel = kernel_for(eqn.primitive.name, in_avals, eqn.params,
                                not eqn.outvars[0].aval.shape, self.strategy)
        ins = [self.device_atom(a) for a in eqn.invars]
        if kernel is not None:
            self.switch(kernel.env)
            fn = self.constant(kernel.fn, "_" + kernel.fn.__name__)
            wrap = "_asarray({})" if kernel.scalar_result else "{}"
        else:
            if eqn.primitive.name not in _DATA_MOVEMENT:
                self.switch(NORMAL)
                self.runs_impls = True
            impl = eqn.primitive.impl
            fn = self.constant(functools.partial(impl, **eqn.params) if eqn.params else impl,
                               f"_{_ident(eqn.primitive.name)}")
        if outs is None:
            outs = [self.bind_device(v) for v in eqn.outvars]
        first = None
        for k in self.geo.local:
            call = f"{fn}({', '.join(col[k] for col in ins)})"
            if kernel is not None:
                statement = f"{outs[0][k]} = {wrap.format(call)}"
            elif outs:
                statement = f"{', '.join(o[k] for o in outs)}, = map(_asarray, {call})"
            else:
                statement = call
            if first is None:
                self.emit(statement)
                first = k
                continue
            # The first device's results where this device's operands are its
            # very buffers (replicated work done once).
            shared = "; ".join(f"{o[k]} = {o[first]}" for o in outs) or "pass"
            same = [f"{col[k]} is {col[first]}" for col in ins if col[k] != col[first]]
            if not same:
                self.emit(shared)
                continue
            self.emit(f"if {' and '.join(same)}:")
            self.emit(f"    {shared}")
            self.emit("else:")
            self.emit(f"    {statement}")

    def device_jit(self, eqn: Eqn) -> None:
        """A nested call inline: its jaxpr evaluated per device (as its
        per-device program, ``call_program``, evaluates it)."""
        inner: Jaxpr = eqn.params["jaxpr"]
        for v, a in zip(inner.invars, eqn.invars):
            self.dev[id(v)] = self.device_atom(a)
            self.types[id(v)] = self.atom_type(a)
            self.packing[id(v)] = self.packed(a) if isinstance(a, Literal) \
                else self.packing[id(a)]
        outs = self.device_block(inner, inner.consts)
        for v, o in zip(eqn.outvars, outs):
            names = self.bind_device(v)
            src = self.device_atom(o)
            held = [(n, s) for n, s in zip(names, src) if n != "None"]
            if held:
                self.emit(f"{', '.join(n for n, _ in held)}, = {', '.join(s for _, s in held)},")
        # The inner names of its results are aliases now: drop them.
        defined = {n for e in inner.eqns for v in e.outvars for n in self.dev.get(id(v), ())
                   if n != "None"}
        dead = sorted({n for o in outs if isinstance(o, Var) for n in self.dev[id(o)]
                       if n in defined})
        if dead:
            self.emit("del " + ", ".join(dead))


def _targets(names: Sequence[str]) -> list[str]:
    return [n if n != "None" else "_" for n in names]


class _DeviceCall:
    """One equation's per-device program on Dists, returning each result's
    buffers."""

    __slots__ = ("prim", "params", "out_avals", "geo")

    def __init__(self, prim: Primitive, params: dict[str, Any], out_avals: list[Any],
                 geo: S.Geometry) -> None:
        self.prim, self.params, self.out_avals, self.geo = prim, params, out_avals, geo

    def __call__(self, *args: S.Dist) -> list[Any]:
        return [d.bufs for d in S.apply(self.prim, list(args), self.params, self.out_avals,
                                        self.geo)]


def write_device(jaxpr: Jaxpr, consts: Sequence[Any], arg_avals: Sequence[Any],
                 geo: S.Geometry, name: str = "device_program") -> DeviceGenerated:
    """``jaxpr`` evaluated per device on ``geo``'s mesh, as a generated
    function of the argument Dists."""
    strategy = _strategy()
    w = _DeviceWriter(strategy, geo)
    params = [w.fresh("a") for _ in jaxpr.invars]
    w.indent = 2
    for p, v, aval in zip(params, jaxpr.invars, arg_avals):
        if type(aval) is RefType:
            raise Unsupported("a ref argument")
        w.dev[id(v)] = w.unpack(p)
        w.packing[id(v)] = p
        w.types[id(v)] = aval
    outs = w.device_block(jaxpr, consts)
    w.switch(NORMAL)
    # (an argument or constant is its own Dist, as ``eval_jaxpr`` returns it)
    results = [w.packed(o) for o in outs]
    w.emit(f"return [{', '.join(results)}]")
    source = _assemble(name, params, w.lines, w.uses_held, strategy)
    namespace = dict(w.globals)
    namespace.update(_environment_globals())
    exec(compile(source, f"<spec per-device {name}>", "exec"), namespace)
    return DeviceGenerated(source, namespace[name])


# Per-device programs per jaxpr: (geometry, strategy, argument types) and
# the program (None: interpreted). A jaxpr is written from its second
# evaluation on (as a ``jit`` equation evaluated eagerly is).
_DEVICE_PROGRAMS: weakref.WeakKeyDictionary[
    Jaxpr, list[tuple[S.Geometry, _Strategy, tuple[Any, ...], DeviceGenerated | None]]] = \
    weakref.WeakKeyDictionary()


# How many per-device programs have been written (tests read it).
DEVICE_WRITES = [0]


def device_program(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[S.Dist],
                   geo: S.Geometry) -> list[S.Dist] | None:
    """``spmd.eval_jaxpr(jaxpr, consts, args, geo)`` by the jaxpr's
    generated per-device program, or None where it is interpreted (codegen
    off, NaN/inf checks, other constants than the jaxpr's own, refs, a first
    evaluation)."""
    values = config._values
    if not values["spec_jit_codegen"] or values["jax_debug_nans"] \
            or values["jax_debug_infs"] or consts is not jaxpr.consts:
        return None
    program = device_program_for(jaxpr, args, geo)
    return None if program is None else program.fn(*args)


def device_function(jaxpr: Jaxpr, args: Sequence[S.Dist], geo: S.Geometry
                    ) -> Callable[..., list[S.Dist]] | None:
    """The function of ``jaxpr``'s generated per-device program for
    ``args``' types, under the conditions of ``device_program`` (None
    otherwise)."""
    values = config._values
    if not values["spec_jit_codegen"] or values["jax_debug_nans"] or values["jax_debug_infs"]:
        return None
    program = device_program_for(jaxpr, args, geo)
    return None if program is None else program.fn


def device_program_for(jaxpr: Jaxpr, args: Sequence[S.Dist], geo: S.Geometry
                       ) -> DeviceGenerated | None:
    """The generated per-device program of ``jaxpr`` on ``args`` (None where
    it is interpreted, or written not yet: the first evaluation)."""
    strategy = _strategy()
    known = _DEVICE_PROGRAMS.get(jaxpr)
    if known is None:
        _DEVICE_PROGRAMS[jaxpr] = []
        return None
    for g, st, avals, program in known:
        if g is geo and st == strategy and len(avals) == len(args) and all(
                a is d.aval or a == d.aval for a, d in zip(avals, args)):
            return program
    avals = tuple(d.aval for d in args)
    try:
        program = write_device(jaxpr, jaxpr.consts, avals, geo)
        DEVICE_WRITES[0] += 1
    except (Unsupported, SyntaxError, RecursionError):
        program = None
    if len(known) >= 8:
        del known[0]
    known.append((geo, strategy, avals, program))
    return program


def device_source(jaxpr: Jaxpr, geo: S.Geometry, arg_avals: Sequence[Any]) -> str:
    """The Python source of ``jaxpr``'s per-device program on ``geo``'s
    mesh (a comment saying why where it is interpreted)."""
    try:
        return write_device(jaxpr, jaxpr.consts, arg_avals, geo).source
    except Unsupported as why:
        return f"# interpreted: {why}\n"


S.generated_program[0] = device_program
S.generated_function[0] = device_function

"""The top-level transforms of this issue: ``jit``, ``make_jaxpr``, ``typeof``.

``jit`` stages a function into a typed jaxpr once per (argument structure,
argument types, static arguments, relevant config) and binds the ``jit``
primitive with it; evaluating that primitive runs the jaxpr's NumPy impls
without re-typing. Under another trace the same bind stages a nested ``jit``
equation.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import weakref
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec._src.api import codegen
from spec._src.api.cache_misses import explain_miss
from spec._src.api.partitioned import compiled_text, program_mesh
from spec._src.api.placement import devices
from spec._src.api.jit_shardings import place_arguments, place_results, staged_shardings
from spec._src.lax.call_shardings import unspecified, with_shardings
from spec._src.api.stages import (
    ArgInfo,
    CompiledMemoryStats,
    Format,
    Layout,
    ShapeDtypeStruct,
    cost_analysis,
)
from spec._src.core import tree_util
from spec._src.core.array import Array, from_numpy, placed_on
from spec._src.core.debug_info import DebugInfo, func_src_info
from spec._src.core.commitment import committed_device, is_committed
from spec._src.core import nan_checks
from spec._src.core import compiler_options as copts
from spec._src.core import source_info as si
from spec._src.core.config import config
from spec._src.core.resources import check_allocatable, check_program
from spec._src.core.hitypes import HI_VALUE_TYPES, plain_aval, shown_aval
from spec._src.core.interpreter import (
    EvalTrace,
    Jaxpr,
    JaxprTrace,
    Tracer,
    canonical_aval_of,
    canonical_value,
    check_jaxpr,
    current_trace,
    trace_to_jaxpr,
)
from spec._src.interpreters import spmd
from spec._src.interpreters.hi_lowering import has_hi_types
from spec._src.core.sharding import (
    NamedSharding,
    PartitionSpec,
    SingleDeviceSharding,
    _context,
    get_abstract_mesh,
    get_concrete_mesh,
)
from spec._src.core.effects import running_compiled
from spec._src.core.source_info import current_xla_metadata
from spec._src.core.state_types import RefType
from spec._src.lax.calls import jit_p
from spec._src.lowering.donation import donation_plan, partitioned_plan
from spec._src.lowering.emitter import lower_jaxpr
from spec._src.lowering.gspmd import gspmd_text
from spec._src.lowering.hlo_text import hlo_text
from spec._src.core.sharding import extend_axis_env
from spec._src.core.tokens import is_token_type
from spec._src.core.types import ArrayType

# ------------------------------------------------------------ argument handling


def _normalize_argnums(argnums: int | Sequence[int] | None) -> tuple[int, ...]:
    if argnums is None:
        return ()
    if isinstance(argnums, int):
        return (argnums,)
    return tuple(argnums)


def _normalize_argnames(names: str | Sequence[str] | None) -> tuple[str, ...]:
    if names is None:
        return ()
    if isinstance(names, str):
        return (names,)
    return tuple(names)


def _check_hashable(value: Any, where: str) -> None:
    try:
        hash(value)
    except TypeError as err:
        raise ValueError(
            f"Non-hashable static arguments are not supported. An error occurred while "
            f"trying to hash an object of type {type(value)}, {value!r} ({where}). "
            f"The error was:\nTypeError: {err}") from None


def _leaf_aval(leaf: Any, fun_name: str, path: str) -> ArrayType:
    if isinstance(leaf, ArrayType):
        # A type stands for a value of that type when tracing (make_jaxpr(f)(aval)); typeof's
        # unmeshed sharding is spec's absent one.
        aval: ArrayType = plain_aval(leaf)
        return aval
    try:
        return canonical_aval_of(leaf)
    except TypeError:
        raise TypeError(
            f"Error interpreting argument to {fun_name} as an abstract array. The problematic "
            f"value is of type {type(leaf)} and was passed to the function at path {path}.\n"
            "This typically means that a jit-wrapped function was called with a non-array "
            "argument, and this argument was not marked as static using the static_argnums "
            "or static_argnames parameters of jax.jit.") from None


@dataclass(frozen=True)
class _Split:
    """A call's arguments, split into static values and flat dynamic leaves."""

    static_args: tuple[tuple[int, Any], ...]
    static_kwargs: tuple[tuple[str, Any], ...]
    dyn_treedef: Any
    leaves: list[Any]

    def rebuild(self, dyn_leaves: Sequence[Any]) -> tuple[list[Any], dict[str, Any]]:
        dyn_args, dyn_kwargs = tree_util.tree_unflatten(self.dyn_treedef, list(dyn_leaves))
        args = list(dyn_args)
        for i, v in self.static_args:
            args.insert(i, v)
        kwargs = dict(dyn_kwargs)
        kwargs.update(self.static_kwargs)
        return args, kwargs


_LEAF_TYPES = (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex)


@functools.lru_cache(maxsize=64)
def _flat_args_treedef(n: int) -> Any:
    return tree_util.tree_structure((tuple(range(n)), {}))


def _split_args(args: Sequence[Any], kwargs: dict[str, Any], static_argnums: tuple[int, ...],
                static_argnames: tuple[str, ...], fun: Callable[..., Any] | None = None
                ) -> _Split:
    if not kwargs and not static_argnums and all(isinstance(a, _LEAF_TYPES) for a in args):
        # The common call f(x, y, ...) with array arguments: no tree to walk.
        return _Split((), (), _flat_args_treedef(len(args)), list(args))
    n = len(args)
    statics = sorted({i + n if i < 0 else i for i in static_argnums if -n <= i < n})
    static_args = tuple((i, args[i]) for i in statics)
    dyn_args = tuple(a for i, a in enumerate(args) if i not in statics)
    static_kwargs = tuple(sorted((k, v) for k, v in kwargs.items() if k in static_argnames))
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
    leaves, treedef = tree_util.tree_flatten((dyn_args, dyn_kwargs))
    try:
        for i, v in static_args:
            _check_hashable(v, f"static argument {i}")
        for k, v in static_kwargs:
            _check_hashable(v, f"static argument {k!r}")
    except ValueError:
        # JAX abstracts the dynamic arguments before it hashes the static ones: a
        # non-array argument is reported first.
        split = _Split(static_args, static_kwargs, treedef, leaves)
        if fun is None:
            for i, leaf in enumerate(leaves):
                _leaf_aval(leaf, "jit", f"leaf {i}")
        else:
            _leaf_avals(fun, split)
        raise
    return _Split(static_args, static_kwargs, treedef, leaves)


@dataclass(frozen=True, eq=False)
class _TypedStatic:
    """A static argument as a cache key holds it: equal to another only when both the
    values and their types are (1, 1.0 and True are traced apart, as in JAX)."""

    value: Any

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, _TypedStatic) and type(self.value) is type(other.value)
                and bool(self.value == other.value))

    def __hash__(self) -> int:
        return hash(self.value)


def _typed(statics: tuple[tuple[Any, Any], ...]) -> tuple[tuple[Any, _TypedStatic], ...]:
    return tuple((where, _TypedStatic(v)) for where, v in statics)


def _ctx_mesh() -> Any:
    """The mesh in context when the call is made: the concrete one of
    set_mesh, else the abstract one (as JAX records it)."""
    concrete = get_concrete_mesh()
    return get_abstract_mesh() if concrete.empty else concrete


def _fun_name(fun: Callable[..., Any]) -> str:
    """A function's name; a ``functools.partial`` goes by the function it
    wraps (the jaxpr's ``name`` and the lowered module's ``@jit_...``)."""
    name = getattr(fun, "__name__", None)
    if name is not None:
        return str(name)
    if isinstance(fun, functools.partial):
        return _fun_name(fun.func)
    return type(fun).__name__


def _flat_fun(fun: Callable[..., Any], split: _Split, out_tree: list[Any]
              ) -> Callable[..., list[Any]]:
    def flat(*leaves: Any) -> list[Any]:
        args, kwargs = split.rebuild(leaves)
        out = fun(*args, **kwargs)
        out_leaves, treedef = tree_util.tree_flatten(out)
        for leaf in out_leaves:
            _output_leaf_check(leaf, fun, split, leaves)
        out_tree.append(treedef)
        return list(out_leaves)
    return flat


def _output_leaf_check(leaf: Any, fun: Callable[..., Any], split: _Split | None = None,
                       args: Sequence[Any] = ()) -> None:
    try:
        aval = canonical_aval_of(leaf)
    except TypeError:
        raise TypeError(f"function {_fun_name(fun)} returned a value of type {type(leaf)}, "
                        "which is not a valid JAX type") from None
    if type(aval) is RefType:
        # Refs cannot leave a jit: the caller would alias the callee's buffer.
        where = "was created inside the function"
        for i, x in enumerate(args):
            if x is leaf and split is not None:
                where = f"was passed in as the argument {_arg_name(fun, split, i)}"
        raise ValueError(
            f"function {_fun_sourceinfo(fun)} traced for jit returned a mutable array "
            f"reference of type {aval}, but mutable array references cannot be returned.\n\n"
            f"The returned mutable array {where}.")


def _ref_identity(x: Any) -> Any:
    """The object a ref value stands for: a tracer of a jit argument is its
    variable's tracer, an eager ref itself."""
    return getattr(x, "jaxpr_var", x)


def _fun_sourceinfo(fun: Callable[..., Any]) -> str:
    """``f at file.py:12``, as JAX names a traced function in errors."""
    code = getattr(inspect.unwrap(fun), "__code__", None)
    if code is None:
        return _fun_name(fun)
    return f"{_fun_name(fun)} at {code.co_filename}:{code.co_firstlineno}"


def _arg_name(fun: Callable[..., Any], split: _Split, leaf: int) -> str:
    """The name of the parameter a flat argument leaf was passed as (for
    arguments that are single arrays; else its leaf number)."""
    try:
        names = [p.name for p in inspect.signature(fun).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    dynamic = [n for i, n in enumerate(names) if i not in dict(split.static_args)]
    if len(split.leaves) <= len(dynamic) and split.dyn_treedef == _flat_args_treedef(
            len(split.leaves)):
        return dynamic[leaf]
    return f"leaf {leaf}"


def _refuse_abstract_leaves(fun: Callable[..., Any], split: _Split) -> None:
    """A call runs on values: a type or a ShapeDtypeStruct (which tracing takes as the
    value it stands for) is refused with JAX's TypeError."""
    for i, leaf in enumerate(split.leaves):
        if isinstance(leaf, ArrayType):
            raise TypeError(f"Argument '{leaf}' of type {type(leaf)} is not a valid JAX type.")
        if isinstance(leaf, ShapeDtypeStruct):
            name = _leaf_arg_names(fun, split)[i]
            raise TypeError(f"Argument '{name}' of shape {shown_aval(leaf.aval).str_short()} "
                            f"of type {type(leaf)} is not a valid JAX type.")


def _leaf_arg_names(fun: Callable[..., Any], split: _Split) -> list[str]:
    """Each flat argument leaf named as JAX names it in errors: the
    parameter it was passed as, then its path inside that argument
    (``p['a']``, ``args[1]`` for a ``*args`` parameter)."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), "args")
    statics = {i for i, _ in split.static_args}
    original = [i for i in range(len(positional) + len(split.leaves) + len(statics))
                if i not in statics]
    # Rebuilt from the real leaves: a node type may refuse stand-ins.
    tree = tree_util.tree_unflatten(split.dyn_treedef, list(split.leaves))
    names: list[str] = [""] * len(split.leaves)
    paths = [path for path, _ in tree_util.tree_flatten_with_path(tree)[0]]
    for leaf, path in enumerate(paths):
        where, key, *rest = path
        if where.idx == 0:  # a positional argument
            i = original[key.idx]
            head = (positional[i] if i < len(positional)
                    else f"{varargs}[{i - len(positional)}]")
        else:
            head = str(key.key)
        names[leaf] = head + tree_util.keystr(tuple(rest))
    return names


def _check_committed(fun: Callable[..., Any], split: _Split, jaxpr: Jaxpr, skip: int,
                     keep_unused: bool) -> list[Any]:
    """Committed arguments the program reads must live on one device, and
    none may be deleted. Arguments it never reads are pruned (unless
    ``keep_unused``), as JAX prunes them: they come back uncommitted, so
    that they place nothing, and a deleted one is never looked at."""
    read = _read_invars(jaxpr)[skip:skip + len(split.leaves)]
    if keep_unused:
        read = [True] * len(read)
    for x, r in zip(split.leaves, read):
        if r and type(x) is Array:
            x.check_not_deleted()
    names = _leaf_arg_names(fun, split)
    used = [(x, n) for x, n, r in zip(split.leaves, names, read) if r]
    qualname = getattr(fun, "__qualname__", _fun_name(fun))
    committed_device([x for x, _ in used], [n for _, n in used], qualname)
    return [x if r or type(x) is not Array or x._sharding is not None
            else _pruned(x) for x, r in zip(split.leaves, read)]


def _pruned(x: Array) -> Array:
    """An argument the program never reads, as the call passes it: uncommitted
    where it is, and a stand-in of its type where it was deleted."""
    if x.is_deleted():
        return from_numpy(np.zeros(x.shape, np.dtype(x.dtype)), x.aval.weak_type)
    return placed_on(x, None, False)


def _read_invars(jaxpr: Jaxpr) -> list[bool]:
    read = {id(v) for e in jaxpr.eqns for v in e.invars}
    read |= {id(v) for v in jaxpr.outvars}
    return [id(v) in read for v in jaxpr.invars]


def _check_ref_args(fun: Callable[..., Any], split: _Split) -> None:
    """A ref may be passed to a jit function once (two names for one buffer
    would alias)."""
    seen: dict[int, int] = {}
    for i, x in enumerate(split.leaves):
        aval = getattr(x, "aval", None)
        if type(aval) is not RefType:
            continue
        first = seen.setdefault(id(_ref_identity(x)), i)
        if first != i:
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a "
                f"function, but when tracing {_fun_sourceinfo(fun)} for jit the mutable array "
                f"reference of type {aval} appeared at both {_arg_name(fun, split, first)} and "
                f"{_arg_name(fun, split, i)}.")


def _check_ref_consts(fun: Callable[..., Any], split: _Split, jaxpr: Jaxpr) -> None:
    """A ref may not be both closed over and passed as an argument."""
    passed = {id(_ref_identity(x)): i for i, x in enumerate(split.leaves)
              if type(getattr(x, "aval", None)) is RefType}
    for c in jaxpr.consts:
        i = passed.get(id(_ref_identity(c)))
        if i is not None and type(getattr(c, "aval", None)) is RefType:
            raise ValueError(
                f"when tracing {_fun_sourceinfo(fun)} for jit, a mutable array reference of "
                f"type {c.aval} was both closed over and passed as the argument "
                f"{_arg_name(fun, split, i)}")


def _leaf_avals(fun: Callable[..., Any], split: _Split) -> list[ArrayType]:
    """The flat arguments' types; a leaf that is no array is JAX's TypeError,
    naming the function and the argument's path as JAX does (``x``,
    ``y['k'][0]``, ``arys[0]`` of a ``*arys`` parameter)."""
    try:
        return [_leaf_aval(x, "", "") for x in split.leaves]
    except TypeError:
        names = _leaf_arg_names(fun, split)
        return [_leaf_aval(x, repr(fun), name) for x, name in zip(split.leaves, names)]


def _trace(fun: Callable[..., Any], split: _Split) -> tuple[Jaxpr, Any]:
    out_tree: list[Any] = []
    avals = _leaf_avals(fun, split)
    if any(type(a) is RefType for a in avals):
        _check_ref_args(fun, split)
    info = DebugInfo("jit", func_src_info(fun), tuple(_leaf_arg_names(fun, split)))
    jaxpr, _ = trace_to_jaxpr(_flat_fun(fun, split, out_tree), avals, info)
    if jaxpr.consts and any(type(a) is RefType for a in avals):
        _check_ref_consts(fun, split, jaxpr)
    if config.jax_enable_checks:
        check_jaxpr(jaxpr)
    return jaxpr, out_tree[0]


def _hoist_tracer_consts(jaxpr: Jaxpr) -> tuple[Jaxpr, list[Any], list[Any]]:
    """Closed-over tracers of an enclosing trace become leading parameters,
    closed-over refs trailing ones (as JAX passes them to the jit equation:
    a ref is never a constant of a call); concrete constants stay as the
    closed jaxpr's consts."""
    traced = [(v, c) for v, c in zip(jaxpr.constvars, jaxpr.consts) if isinstance(c, Tracer)]
    refs = [(v, c) for v, c in zip(jaxpr.constvars, jaxpr.consts)
            if not isinstance(c, Tracer) and type(getattr(c, "aval", None)) is RefType]
    if not traced and not refs:
        return jaxpr, [], []
    moved = {id(v) for v, _ in (*traced, *refs)}
    kept = [(v, c) for v, c in zip(jaxpr.constvars, jaxpr.consts) if id(v) not in moved]
    new = Jaxpr([v for v, _ in kept],
                [v for v, _ in traced] + jaxpr.invars + [v for v, _ in refs], jaxpr.outvars,
                jaxpr.eqns, jaxpr.effects, [c for _, c in kept])
    return new, [c for _, c in traced], [c for _, c in refs]


# ------------------------------------------------------------------------ jit


def _donated_leaves(fun: Callable[..., Any], split: _Split, donate_argnums: tuple[int, ...],
                    donate_argnames: tuple[str, ...] = ()) -> list[bool]:
    """Whether each dynamic leaf belongs to a donated argument: a
    positional one by its position among all the arguments, a keyword one
    by its name."""
    if not donate_argnums and not donate_argnames:
        return [False] * len(split.leaves)
    statics = {i for i, _ in split.static_args}
    args_tree, _ = tree_util.treedef_children(split.dyn_treedef)
    n_dyn = len(tree_util.treedef_children(args_tree))
    positions = [i for i in range(n_dyn + len(statics)) if i not in statics]
    tree = tree_util.tree_unflatten(split.dyn_treedef, list(split.leaves))
    paths = [path for path, _ in tree_util.tree_flatten_with_path(tree)[0]]
    return [positions[key.idx] in donate_argnums if where.idx == 0
            else key.key in donate_argnames for where, key, *_ in paths]


class Traced:
    """``jit(f).trace(*args)``: the staged program."""

    def __init__(self, jitted: Jitted, jaxpr: Jaxpr, out_tree: Any, split: _Split) -> None:
        self.jaxpr = jaxpr
        self._jitted = jitted
        self._out_tree = out_tree
        self._split = split
        ins, outs = jitted._staged_shardings(split, out_tree)
        self._in_placed = [_on_mesh(s) for s in ins]
        self._out_placed = [_on_mesh(s) for s in outs]
        # Counted when traced: the context mesh is the one at the trace.
        self._devices = _device_count(jaxpr, split.leaves, _placement_meshes(
            jaxpr, [*self._in_placed, *self._out_placed]))
        self._mesh = _program_devices(split.leaves)

    @property
    def fun_name(self) -> str:
        return _fun_name(self._jitted._fun)

    @property
    def in_tree(self) -> Any:
        return self._split.dyn_treedef

    @property
    def out_tree(self) -> Any:
        return self._out_tree

    @property
    def out_info(self) -> Any:
        return tree_util.tree_unflatten(
            self._out_tree, [a if is_token_type(a)  # a token's shape is its type (JAX's)
                             else ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                             for a in self.jaxpr.out_avals])

    @property
    def args_info(self) -> Any:
        donated = _donated_leaves(self._jitted._fun, self._split, self._jitted._donate_argnums,
                                  self._jitted._donate_argnames)
        infos = [ArgInfo(a, d) for a, d in zip(self.jaxpr.in_avals, donated)]
        return tree_util.tree_unflatten(self._split.dyn_treedef, infos)

    @property
    def python_source(self) -> str:
        """The Python function a call of this program runs (4.1b)."""
        return python_text(self)

    def lower(self) -> Lowered:
        # Lowering plans the donations (and warns of unusable ones) once per program.
        donated = self._jitted._donated(self._split)
        if any(donated):
            plan = donation_plan if self._devices == 1 else partitioned_plan
            plan(self.jaxpr, donated, self._jitted._keep_unused, stacklevel=3)
        return Lowered(self)


_DIALECTS = (None, "stablehlo", "hlo")


def _module_text(traced: Traced, dialect: str | None, debug_info: bool = False) -> str:
    """The program's text in ``dialect``: the StableHLO module (``None``,
    ``"stablehlo"``) that ``lower_jaxpr`` emits, with locations when
    ``debug_info``; ``"hlo"`` the HLO text XLA converts that module to (rendered from
    the module with locations, which name the instructions); ``"python"`` is the
    generated NumPy code a call runs."""
    if dialect == "python":
        return python_text(traced)
    if dialect not in _DIALECTS:
        raise ValueError(f"unknown dialect: {dialect}")
    if dialect == "hlo":
        return hlo_text(_module_text(traced, "stablehlo", debug_info=True))
    names = _leaf_arg_names(traced._jitted._fun, traced._split)
    text = lower_jaxpr(traced.jaxpr, traced.fun_name, debug_info=debug_info, arg_names=names,
                       result_names=_result_names(traced.out_tree),
                       num_partitions=traced._devices,
                       arg_placements=[p or _placement(x) for x, p in
                                       zip(traced._split.leaves, traced._in_placed)],
                       result_placements=traced._out_placed,
                       donated=list(traced._jitted._donated(traced._split)),
                       keep_unused=traced._jitted._keep_unused)
    return text if config.jax_use_shardy_partitioner else gspmd_text(text)


def _result_names(out_tree: Any) -> list[str]:
    """Each result leaf named as JAX's ``jax.result_info`` names it:
    ``result``, then its path (``result[0]``, ``result['a']``)."""
    tree = tree_util.tree_unflatten(out_tree, list(range(out_tree.num_leaves)))
    return ["result" + tree_util.keystr(path)
            for path, _ in tree_util.tree_flatten_with_path(tree)[0]]


def _placement(leaf: Any) -> Any:
    """The sharding an argument is placed with: its NamedSharding, or for
    one committed to a single device that device's sharding (None for an
    uncommitted one)."""
    s = getattr(leaf, "_sharding", None)
    if s is not None and hasattr(s, "spec"):
        return s
    if isinstance(leaf, ShapeDtypeStruct):
        return leaf.sharding
    if isinstance(leaf, Array) and leaf.committed:
        return leaf.sharding
    return None


def _one_device() -> Any:
    return SingleDeviceSharding(devices()[0])


def _result_sharding(aval: Any, mesh: Any) -> Any:
    if mesh is None or mesh.empty:
        return _one_device()
    spec = aval.sharding.spec if aval.sharding is not None and not aval.sharding.mesh.empty \
        else PartitionSpec()
    return NamedSharding(mesh, spec)


def _program_devices(leaves: Sequence[Any]) -> Any:
    """The concrete mesh a staged program runs on: its placed arguments',
    else the context's (None for neither)."""
    for leaf in leaves:
        mesh = getattr(_placement(leaf), "mesh", None)
        if mesh is not None and not mesh.empty:
            return mesh
    mesh = get_concrete_mesh()
    return None if mesh is None or mesh.empty else mesh


def _on_mesh(s: Any) -> Any:
    """A jit sharding entry that places a value (over a mesh, or on a
    single device), else None."""
    if isinstance(s, SingleDeviceSharding):
        return s
    return s if isinstance(s, NamedSharding) and not s.mesh.empty else None


def _placement_meshes(jaxpr: Jaxpr, placed: Sequence[Any]) -> list[Any]:
    """The meshes jit shardings place values on: the top-level call's
    (``placed``), then those of the jit calls inside."""
    meshes = [s.mesh for s in placed if isinstance(s, NamedSharding)]
    for eqn in jaxpr.eqns:
        if eqn.primitive is jit_p:
            inner = [*eqn.params.get("in_shardings", ()), *eqn.params.get("out_shardings", ())]
            meshes += _placement_meshes(eqn.params["jaxpr"], [_on_mesh(s) for s in inner])
    return meshes


def _device_count(jaxpr: Jaxpr, leaves: Sequence[Any], placements: Sequence[Any] = ()) -> int:
    """The devices a staged program runs on, as JAX counts its partitions:
    the mesh its arguments are placed on (by themselves or by jit's
    shardings: ``placements``), else the mesh its types or a ``shard_map``
    name, else the context's, else one."""
    for leaf in leaves:
        mesh = getattr(_placement(leaf), "mesh", None)
        if mesh is not None and not mesh.empty:
            return int(mesh.size)
    if placements:
        return int(placements[0].size)
    mesh = program_mesh(jaxpr)
    if mesh.empty:
        mesh = next((e.params["mesh"] for e in jaxpr.eqns if e.primitive.name == "shard_map"),
                    mesh)
    return 1 if mesh.empty else int(mesh.size)


class _Stage:
    """What a lowered and a compiled program both tell of their traced one."""

    _traced: Traced

    @property
    def in_tree(self) -> Any:
        return self._traced.in_tree

    @property
    def out_tree(self) -> Any:
        return self._traced.out_tree

    @property
    def out_info(self) -> Any:
        return self._traced.out_info

    @property
    def args_info(self) -> Any:
        return self._traced.args_info

    def cost_analysis(self) -> dict[str, float]:
        return cost_analysis(self._traced.jaxpr)


class Lowered(_Stage):
    """``jit(f).lower(*args)``: the staged program ready to compile."""

    def __init__(self, traced: Traced) -> None:
        self._traced = traced

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        return _module_text(self._traced, dialect, debug_info)

    def compiler_ir(self, dialect: str | None = None) -> str:
        """The lowering as an object for debugging (JAX's is an MLIR module
        or an XLA computation, whose text this is): the StableHLO module's
        text (``None``, ``"stablehlo"``), or the HLO text (``"hlo"``)."""
        if dialect not in (None, "stablehlo", "hlo"):
            raise ValueError(f"unknown dialect: {dialect}")
        return _module_text(self._traced, dialect)

    def compile(self, compiler_options: Any = None) -> Compiled:
        """Compiling validates the jit's compiler options, then these (which
        override the jit's of the same name)."""
        copts.check_xla_flags()
        check_program(self._traced.jaxpr)
        extra = () if compiler_options is None else tuple(compiler_options.items())
        options = copts.validated(self._traced._jitted._compiler_options + extra)
        return Compiled(self._traced, options)


class _StructureLeaf:
    """A placeholder leaf, to compare argument structures."""


_STRUCTURE_LEAF = _StructureLeaf()


def _node_text(x: Any) -> str:
    return "pytree leaf" if x is _STRUCTURE_LEAF else str(type(x))


def _structure_errors(seen: Any, given: Any, path: str) -> list[str]:
    """Where the structure a Compiled was called with departs from the one it
    was compiled for, down each branch."""
    if seen is _STRUCTURE_LEAF and given is _STRUCTURE_LEAF:
        return []
    head = f"    * at {path}, seen "
    if type(seen) is not type(given):
        return [f"{head}{_node_text(seen)} but now given {_node_text(given)}, so their "
                "Python types differ"]
    if isinstance(seen, (tuple, list)):
        if len(seen) != len(given):
            return [f"{head}{type(seen).__name__} of length {len(seen)} but now given "
                    f"{type(given).__name__} of length {len(given)}, so the lengths do not "
                    "match"]
        return [e for i, (a, b) in enumerate(zip(seen, given))
                for e in _structure_errors(a, b, f"{path}[{i}]")]
    if isinstance(seen, dict):
        if set(seen) != set(given):
            return [f"{head}{type(seen)} with keys {sorted(seen)} but now given "
                    f"{type(given)} with keys {sorted(given)}, so the keys do not match"]
        return [e for k in seen for e in _structure_errors(seen[k], given[k], f"{path}[{k!r}]")]
    return [f"{head}{tree_util.tree_structure(seen)} but now given "
            f"{tree_util.tree_structure(given)}, so the structures differ"]


def _type_text(aval: Any) -> str:
    return f"{np.dtype(aval.dtype).name}[{','.join(str(d) for d in aval.shape)}]"


class Compiled(_Stage):
    """A compiled program: the traced jaxpr and the compiler options it was
    compiled with (which change nothing spec computes). Calling it takes the
    dynamic arguments only, of the structure and types it was compiled for."""

    def __init__(self, traced: Traced, compiler_options: dict[str, Any]) -> None:
        self._traced = traced
        self.compiler_options = compiler_options

    def as_text(self) -> str:
        """The per-device program spec runs, as HLO-like text (SPEC.md 4.1)."""
        traced = self._traced
        text = compiled_text(traced.jaxpr, traced.fun_name,
                             _leaf_arg_names(traced._jitted._fun, traced._split))
        if self.compiler_options:
            return copts.options_text(self.compiler_options) + text
        return text

    @property
    def input_formats(self) -> Any:
        """Each dynamic argument's ``Format``: row-major, with the sharding
        it is placed with (one device's when not placed)."""
        split, avals = self._traced._split, self._traced.jaxpr.in_avals
        formats = [Format(Layout.row_major(a.ndim),
                          getattr(x, "_sharding", None) or _one_device())
                   for x, a in zip(split.leaves, avals)]
        return tree_util.tree_unflatten(split.dyn_treedef, formats)

    @property
    def output_formats(self) -> Any:
        """Each result's ``Format``: row-major; sharded by its type over the
        program's mesh (replicated there when its type names none), on one
        device without a mesh."""
        mesh = self._traced._mesh
        formats = [Format(Layout.row_major(a.ndim), _result_sharding(a, mesh))
                   for a in self._traced.jaxpr.out_avals]
        return tree_util.tree_unflatten(self._traced.out_tree, formats)

    def memory_analysis(self) -> CompiledMemoryStats:
        split = self._traced._split
        jitted = self._traced._jitted
        return CompiledMemoryStats(self._traced.jaxpr,
                                   jitted._donated(split))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        split = self._traced._split
        leaves, treedef = tree_util.tree_flatten((args, kwargs))
        if treedef != split.dyn_treedef:
            placeholder = [_STRUCTURE_LEAF] * split.dyn_treedef.num_leaves
            seen = tree_util.tree_unflatten(split.dyn_treedef, placeholder)
            given = tree_util.tree_unflatten(treedef, [_STRUCTURE_LEAF] * len(leaves))
            errors = [*_structure_errors(seen[0], given[0], "args"),
                      *_structure_errors(seen[1], given[1], "kwargs")]
            raise TypeError("\n".join([
                "Function compiled with input pytree does not match the input pytree it was "
                f"called with. There are {len(errors)} mismatches, including:", *errors]))
        for leaf in leaves:
            if isinstance(leaf, Tracer):
                raise TypeError(
                    "Cannot apply JAX transformations to a function lowered and compiled for "
                    f"a particular signature. Detected argument of Tracer type {type(leaf)}.")
        leaves = self._check_types(leaves)
        full_args, full_kwargs = split.rebuild(leaves)
        return self._traced._jitted._call(full_args, full_kwargs, check_options=False)

    def _check_types(self, leaves: Sequence[Any]) -> list[Any]:
        """The arguments, checked against the compiled types; one of the
        compiled shape and dtype takes the compiled weak type (the program's
        result types are the compiled ones)."""
        split = self._traced._split
        names = _leaf_arg_names(self._traced._jitted._fun, split)
        mismatches = []
        checked = list(leaves)
        for i, (name, leaf, want) in enumerate(zip(names, leaves, self._traced.jaxpr.in_avals)):
            got = _leaf_aval(leaf, "jit", name)
            if tuple(got.shape) != tuple(want.shape) or got.dtype != want.dtype:
                mismatches.append(f"Argument {name!r} compiled with {_type_text(want)} "
                                  f"and called with {_type_text(got)}")
            elif got.weak_type != want.weak_type:
                checked[i] = from_numpy(np.asarray(leaf, np.dtype(want.dtype)), want.weak_type)
        if mismatches:
            raise TypeError(
                "Argument types differ from the types for which this computation was "
                "compiled. Perhaps you are calling the compiled executable with a different "
                "enable_x64 mode than when it was AOT compiled? The mismatches are:\n"
                + "\n".join(mismatches))
        return checked


class Jitted:
    """A jit-wrapped function (``PjitFunction`` in JAX)."""

    def __init__(self, fun: Callable[..., Any], static_argnums: tuple[int, ...],
                 static_argnames: tuple[str, ...], donate_argnums: int | Sequence[int] | None,
                 keep_unused: bool, inline: bool,
                 compiler_options: tuple[tuple[str, Any], ...] = (),
                 donate_argnames: str | Sequence[str] | None = None) -> None:
        if not callable(fun):
            raise TypeError(f"Expected a callable value, got {fun!r}")
        # Copy the wrapped function's name, doc and __dict__ first: that dict
        # may hold another wrapper's private state (a function wrapped with
        # functools.wraps around a Jitted carries the inner Jitted's ``_fun``
        # and ``_cache``), which must never replace this object's own.
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._static_argnums, self._static_argnames = _infer_statics(
            fun, static_argnums, static_argnames)
        self._donate_argnums, self._donate_argnames = _resolve_donations(
            fun, donate_argnums, donate_argnames, self._static_argnames)
        self._keep_unused = keep_unused
        self._inline = inline
        self._cache = _cache_for(fun)
        self._options = (self._static_argnums, self._static_argnames, self._donate_argnums,
                         self._donate_argnames, keep_unused, inline)
        self._compiler_options = compiler_options
        self._options_ok = not compiler_options
        # The common call (positional arrays, no statics or compiler
        # options) repeats with the same argument types: the last such
        # call's program answers it without rebuilding the cache key.
        self._fast_ok = not compiler_options and not self._static_argnums \
            and not self._static_argnames and not self._donate_argnums \
            and not self._donate_argnames
        self._last: _LastCall | _MeshCall | None = None

    def __repr__(self) -> str:
        return f"<PjitFunction of {self._fun!r}>"

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def _split(self, args: Sequence[Any], kwargs: dict[str, Any]) -> _Split:
        return _split_args(args, kwargs, self._static_argnums, self._static_argnames,
                           self._fun)

    def _staged(self, split: _Split) -> tuple[Jaxpr, Any, list[Any], list[Any], Jaxpr]:
        """The call's jaxpr, its output tree, the closed-over tracers and refs
        it takes as leading and trailing operands, and the jaxpr as traced
        (closed over its refs and tracers)."""
        avals = tuple(_leaf_avals(self._fun, split))
        # The context mesh types sharded operations, and the ambient XLA
        # metadata tags the traced equations: both are part of the key.
        key = (self._options, split.dyn_treedef, avals, _typed(split.static_args),
               _typed(split.static_kwargs), config.values_key(), _context.typing_key,
               current_xla_metadata())
        cached = self._cache.get(key)
        if cached is not None:
            jaxpr, out_tree, *ref_entry = cached
            refs, closed = ref_entry if ref_entry else ([], jaxpr)
            return jaxpr, out_tree, [], refs, closed
        if config.jax_explain_cache_misses:
            explain_miss(self._fun, key, list(self._cache), self._static_argnums)
        closed, out_tree = _trace(self._fun, split)
        jaxpr, tracer_consts, refs = _hoist_tracer_consts(closed)
        if not tracer_consts:
            # (closed-over refs are kept alive by the entry, as by the function)
            self._cache[key] = (jaxpr, out_tree, refs, closed) if refs else (jaxpr, out_tree)
        return jaxpr, out_tree, tracer_consts, refs, closed if refs or tracer_consts else jaxpr

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs and self._fast_ok:
            last = self._last
            if last is not None:
                outs = last.run(args)
                if outs is not _MISS:
                    return outs
        return self._call(args, kwargs, check_options=True)

    def _call(self, args: Sequence[Any], kwargs: dict[str, Any], check_options: bool) -> Any:
        """A call; ``check_options`` False for a program compiled already."""
        if config.jax_disable_jit:
            return self._fun(*args, **kwargs)
        copts.check_xla_flags()
        if self._compiler_options and _staging():
            raise ValueError(
                "`compiler_options` can only be passed to top-level `jax.jit`. Got "
                f"compiler_options={dict(self._compiler_options)} specified on a nested jit "
                f"with name: {_fun_name(self._fun)} and source info: "
                f"{si.summarize(si.current())}")
        split = self._split(args, kwargs)
        jaxpr, out_tree, tracer_consts, refs, _ = self._staged(split)
        _refuse_abstract_leaves(self._fun, split)
        if check_options and not self._options_ok:
            self._check_compiler_options()
        donated = self._donated(split)
        if not tracer_consts and not refs and not any(donated):
            generated = _run_generated(jaxpr, split.leaves)
            if generated is not None:
                if self._fast_ok and not kwargs:
                    self._last = _LastCall.of(jaxpr, out_tree, split.leaves)
                return tree_util.tree_unflatten(out_tree, generated)
        leaves = split.leaves
        if any(is_committed(x) for x in leaves):
            leaves = _check_committed(self._fun, split, jaxpr, len(tracer_consts),
                                      self._keep_unused)
        operands = [*tracer_consts, *leaves, *refs]
        donated = (tuple(False for _ in tracer_consts) + donated
                   + tuple(False for _ in refs))
        params = dict(jaxpr=jaxpr, name=_fun_name(self._fun), donated_invars=donated,
                      inline=self._inline, keep_unused=self._keep_unused,
                      ctx_mesh=_ctx_mesh())
        ins, outs = self._staged_shardings(split, out_tree)
        params = with_shardings(params, [*unspecified(len(tracer_consts)), *ins,
                                         *unspecified(len(refs))], outs)
        bind: Any = jit_p.bind
        if HI_VALUE_TYPES and type(current_trace()) is EvalTrace and has_hi_types(jaxpr):
            bind = jit_p.to_lojax  # run on the hi values' components
        if nan_checks.active():
            try:
                with nan_checks.python_rerun():
                    outs = bind(*operands, **params)
            except nan_checks.InternalFloatingPointError as e:
                nan_checks.rerun_deoptimized(e, lambda: self._fun(*args, **kwargs))
        else:
            outs = bind(*operands, **params)
            if self._fast_ok and not kwargs and not tracer_consts and not refs:
                self._last = _MeshCall.of(jaxpr, out_tree, leaves, outs)
        return tree_util.tree_unflatten(out_tree, outs)

    def _check_compiler_options(self) -> None:
        """Compiling the call validates its options (an error is raised again
        at every call, as each call compiles again)."""
        copts.check_xla_flags()
        copts.validated(self._compiler_options)
        self._options_ok = True

    def _staged_shardings(self, split: _Split, out_tree: Any) -> tuple[list[Any], list[Any]]:
        """The staged call's in_shardings entries per argument leaf and
        out_shardings entries per result leaf."""
        return unspecified(len(split.leaves)), unspecified(out_tree.num_leaves)

    def _donated(self, split: _Split) -> tuple[bool, ...]:
        """Whether each argument leaf is donated (none while NaNs are
        checked: the check may run the program again on them)."""
        if (not self._donate_argnums and not self._donate_argnames) or nan_checks.active():
            return tuple(False for _ in split.leaves)
        return tuple(_donated_leaves(self._fun, split, self._donate_argnums,
                                     self._donate_argnames))

    def trace(self, *args: Any, **kwargs: Any) -> Traced:
        split = self._split(args, kwargs)
        jaxpr, out_tree, _, refs, closed = self._staged(split)
        return Traced(self, closed if refs else jaxpr, out_tree, split)

    def traced_jaxpr(self, *args: Any, **kwargs: Any) -> tuple[Jaxpr, Any]:
        """The jaxpr as traced (closed over what it closes over, tracers of
        enclosing traces included) and its output tree: ``make_jaxpr``'s,
        from the trace cache jit calls of the function share."""
        _, out_tree, _, _, closed = self._staged(self._split(args, kwargs))
        return closed, out_tree

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args: Any, **kwargs: Any) -> Any:
        return self.trace(*args, **kwargs).out_info

    def clear_cache(self) -> None:
        self._cache.clear()
        self._last = None

    def _cache_size(self) -> int:
        return len(self._cache)


_CONFIG_VALUES = config._values  # read directly: on every call's path
_SCALAR_LEAVES = (bool, int, float, complex, np.ndarray, np.generic)
_PROGRAM_ATTR = "_generated_program"


def _run_generated(jaxpr: Jaxpr, leaves: Sequence[Any]) -> list[Any] | None:
    """The call's results from the jaxpr's generated program, or None where
    the call is not one it runs: under a transformation, with operands
    placed on devices or meshes or under a context mesh, with hi types or NaN checks (those calls
    bind ``jit``, whose impl interprets the jaxpr)."""
    if not _CONFIG_VALUES["spec_jit_codegen"] or type(current_trace()) is not EvalTrace \
            or _context.placing or _context.in_manual or nan_checks.active():
        return None
    values = []
    for x in leaves:
        if type(x) is Array:
            if x._shards is not None or x._committed:
                return None
            values.append(x._val)
        elif isinstance(x, _SCALAR_LEAVES):
            values.append(canonical_value(x)[0])
        else:
            return None
    program = _program_for(jaxpr)
    if program is None:
        return None
    if program.runs_impls:
        with running_compiled():
            outs = program.fn(*values)
    else:
        outs = program.fn(*values)
    made = Array._from_checked
    return [made(o if type(o) is np.ndarray else np.asarray(o), a, jit_p)
            for o, a in zip(outs, jaxpr.out_avals)]


_LEAF = tree_util.tree_structure(0)
_USE_HARDWARE = codegen.hardware_switch()  # read directly: on every call's path
_MISS = object()  # a call the last call's entry does not answer


class _LastCall:
    """A call that ran a generated program, and what it was run under: a
    call whose arguments have the very same types (the same type objects,
    which results of the same operations share), under the same
    configuration epoch, typing context and XLA metadata, runs the same
    program. Anything else takes the full path."""

    __slots__ = ("avals", "epoch", "typing_key", "metadata", "token", "fn", "runs_impls",
                 "out_avals", "out_tree", "single")

    def __init__(self, jaxpr: Jaxpr, out_tree: Any, leaves: Sequence[Any],
                 program: codegen.Generated) -> None:
        self.avals = tuple(x.aval for x in leaves)
        self.epoch = config.epoch
        self.typing_key = _context.typing_key
        self.metadata = current_xla_metadata()
        self.token = codegen.strategy_token()
        self.fn = program.fn
        self.runs_impls = program.runs_impls
        self.out_avals = tuple(jaxpr.out_avals)
        self.out_tree = out_tree
        self.single = out_tree == _LEAF

    @staticmethod
    def of(jaxpr: Jaxpr, out_tree: Any, leaves: Sequence[Any]) -> _LastCall | None:
        if not all(type(x) is Array for x in leaves):
            return None
        program = _program_for(jaxpr)
        return None if program is None else _LastCall(jaxpr, out_tree, leaves, program)

    def run(self, args: Sequence[Any]) -> Any:
        """The call's result, or ``_MISS`` where this entry does not answer it."""
        avals = self.avals
        if len(args) != len(avals) or _context_moved(self):
            return _MISS
        values = []
        for x, a in zip(args, avals):
            if type(x) is not Array or x.aval is not a or x._shards is not None \
                    or x._committed:
                return _MISS
            values.append(x._val)
        # (no XLA_FLAGS check: the full call that made this entry did it)
        if self.runs_impls:
            with running_compiled():
                outs = self.fn(*values)
        else:
            outs = self.fn(*values)
        made = Array._from_checked
        if self.single:
            (o,) = outs
            return made(o if type(o) is np.ndarray else np.asarray(o), self.out_avals[0], jit_p)
        results = [made(o if type(o) is np.ndarray else np.asarray(o), a, jit_p)
                   for o, a in zip(outs, self.out_avals)]
        return tree_util.tree_unflatten(self.out_tree, results)


def _context_moved(entry: _LastCall | _MeshCall) -> bool:
    """Whether what a remembered call's program depends on beyond its
    arguments (configuration, typing context, XLA metadata, the hardware
    flush switch, the trace) differs from when it was remembered."""
    return config.epoch != entry.epoch or not _CONFIG_VALUES["spec_jit_codegen"] \
        or _context.typing_key is not entry.typing_key or _context.in_manual \
        or current_xla_metadata() is not entry.metadata \
        or _USE_HARDWARE[0] != entry.token \
        or type(current_trace()) is not EvalTrace


class _MeshCall:
    """A call on arrays laid out over a mesh that ran a generated per-device
    program, and what it was run under: a call whose arguments have the
    very same types and placements (the same objects), under the same
    configuration epoch, typing context and XLA metadata, runs the same
    program on the arguments' buffers and makes its results as the full
    path does. Anything else takes the full path."""

    __slots__ = ("avals", "placements", "epoch", "typing_key", "metadata", "token", "fn",
                 "mesh", "geo", "out_tree", "out_placements")

    def __init__(self, leaves: Sequence[Any], out_tree: Any, outs: Sequence[Any], mesh: Any,
                 geo: spmd.Geometry, program: codegen.DeviceGenerated) -> None:
        # (lists: an argument equal to the one remembered takes its place, so
        # that results fed back in compare at once)
        self.avals = [x.aval for x in leaves]
        self.placements = [x._sharding for x in leaves]
        # The results' placements are made once: results share them.
        self.out_placements = tuple(o._sharding for o in outs)
        self.epoch = config.epoch
        self.typing_key = _context.typing_key
        self.metadata = current_xla_metadata()
        self.token = codegen.strategy_token()
        self.fn = program.fn
        self.mesh, self.geo = mesh, geo
        self.out_tree = out_tree

    @staticmethod
    def of(jaxpr: Jaxpr, out_tree: Any, leaves: Sequence[Any], outs: Sequence[Any]
           ) -> _MeshCall | None:
        if not leaves or not _CONFIG_VALUES["spec_jit_codegen"] or nan_checks.active() \
                or type(current_trace()) is not EvalTrace or _context.in_manual \
                or jaxpr.effects or has_hi_types(jaxpr) \
                or not all(type(o) is Array for o in outs):
            return None
        if not all(type(x) is Array and x._shards is not None and x._sharding is not None
                   and spmd.shards_follow_type(x) for x in leaves):
            return None
        mesh = leaves[0]._sharding.mesh
        if any(x._sharding.mesh is not mesh for x in leaves):
            return None
        geo = spmd.geometry(mesh)
        dists = [spmd.Dist(x.aval, tuple(x._shards)) for x in leaves]
        program = codegen.device_program_for(jaxpr, dists, geo)
        if program is None:
            return None
        return _MeshCall(leaves, out_tree, outs, mesh, geo, program)

    def run(self, args: Sequence[Any]) -> Any:
        """The call's result, or ``_MISS`` where this entry does not answer it."""
        avals, placements = self.avals, self.placements
        if len(args) != len(avals) or _context_moved(self):
            return _MISS
        dists = []
        for i, x in enumerate(args):
            if type(x) is not Array or x._shards is None:
                return _MISS
            a, s = x.aval, x._sharding
            if a is not avals[i] or s is not placements[i]:
                if a != avals[i] or s != placements[i]:
                    return _MISS
                avals[i], placements[i] = a, s
            dists.append(spmd.Dist(a, tuple(x._shards)))
        outs = spmd.arrays_of(self.fn(*dists), self.mesh, self.geo, self.out_placements)
        return tree_util.tree_unflatten(self.out_tree, outs)


def _program_for(jaxpr: Jaxpr) -> codegen.Generated | None:
    """The generated program of a jit call's jaxpr under the current
    configuration (remembered on the jaxpr, per configuration epoch); None
    for a program that is interpreted."""
    key = (config.epoch, codegen.strategy_token())
    known = getattr(jaxpr, _PROGRAM_ATTR, None)
    if known is not None and known[0] == key:
        program: codegen.Generated | None = known[1]
        return program
    program = None
    # Compiling sizes every buffer; the generated program allocates the results.
    check_program(jaxpr)
    check_allocatable(jaxpr.out_avals)
    if _interpreted_because(jaxpr) is None:
        program = codegen.generated(codegen.live_program(jaxpr))
    setattr(jaxpr, _PROGRAM_ATTR, (key, program))
    return program


_SHARDED_TYPES = "the program has sharded types"


def _interpreted_because(jaxpr: Jaxpr) -> str | None:
    """Why calls of ``jaxpr`` are interpreted whatever their operands, or None."""
    if has_hi_types(jaxpr):
        return "the program has hi types"
    if any(getattr(a, "sharding", None) is not None
           for a in (*jaxpr.in_avals, *jaxpr.out_avals)):
        return _SHARDED_TYPES
    if any(type(getattr(c, "aval", None)) is RefType for c in jaxpr.consts):
        return "the program closes over refs"
    return None


def python_text(traced: Traced) -> str:
    """The Python source a call of the traced program runs (a comment
    saying why where it is interpreted)."""
    why = _interpreted_because(traced.jaxpr)
    if why == _SHARDED_TYPES:
        # A call runs the program per device on its operands' mesh.
        mesh = spmd.concrete_mesh(traced._split.leaves)
        if not mesh.empty:
            return codegen.device_source(traced.jaxpr, spmd.geometry(mesh),
                                         traced.jaxpr.in_avals)
    if why is not None:
        return f"# interpreted: {why}\n"
    return codegen.python_source(traced.jaxpr)


def _staging() -> bool:
    """Whether a call made now ends up as an equation of a jaxpr being
    staged (under jit or make_jaxpr, through any transformations), rather
    than being compiled and run."""
    trace: Any = current_trace()
    while hasattr(trace, "parent"):
        trace = trace.parent
    return isinstance(trace, JaxprTrace)


# Traced jaxprs are cached per underlying function, shared by every jit
# wrapper of it (``jit(f)`` twice reuses one trace, as in JAX); the entry goes
# away with the function.
_CacheDict = dict[Hashable, tuple[Any, ...]]
_CACHES: weakref.WeakKeyDictionary[Any, _CacheDict] = weakref.WeakKeyDictionary()


def _cache_for(fun: Callable[..., Any]) -> _CacheDict:
    try:
        return _CACHES.setdefault(fun, {})
    except TypeError:  # not weakly referenceable: a private cache
        return {}


def _infer_statics(fun: Callable[..., Any], argnums: tuple[int, ...], argnames: tuple[str, ...]
                   ) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Static argnums and argnames name the same parameters, as in JAX."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return argnums, argnames
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    _check_argnums_exist(params, positional, argnums, argnames)
    names = set(argnames)
    nums = set(argnums)
    for i in argnums:
        if 0 <= i < len(positional) and params[i].kind != params[i].POSITIONAL_ONLY:
            names.add(positional[i])
    for n in argnames:
        if n in positional:
            nums.add(positional.index(n))
    return tuple(sorted(nums)), tuple(sorted(names))


def _resolve_donations(fun: Callable[..., Any], argnums: int | Sequence[int] | None,
                       argnames: str | Sequence[str] | None, static_argnames: tuple[str, ...]
                       ) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The donated positions and names, each completed from the other by
    the signature when only one is given (a keyword call of a parameter
    donated by position is donated too), checked against the signature;
    negative positions counted from the last positional parameter."""
    nums = _normalize_argnums(argnums)
    names = _normalize_argnames(argnames)
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        if argnames is not None:
            raise ValueError(f"Getting the signature of function {fun} failed. Pass "
                             "donate_argnums instead of donate_argnames.") from None
        return nums, ()
    params = list(sig.parameters.values())
    either = [p.kind == p.POSITIONAL_OR_KEYWORD for p in params]
    if argnums is None and argnames is not None:
        nums = tuple(i for i, p in enumerate(params) if either[i] and p.name in names)
    elif argnames is None and argnums is not None:
        n = len(params)
        names = tuple(p.name for i, p in enumerate(params)
                      if either[i] and (i in nums or i - n in nums))
    var_positional = any(p.kind == p.VAR_POSITIONAL for p in params)
    n_pos = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    if not var_positional and nums and (-min(nums) > n_pos or max(nums) >= n_pos):
        raise ValueError(f"Jitted function has donate_argnums={nums}, but only accepts "
                         f"{n_pos} positional arguments.")
    positional_only = {p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                            p.VAR_POSITIONAL)}
    if bad := positional_only & set(names):
        raise ValueError(f"Jitted function has invalid argnames {bad} in donate_argnames. "
                         "These are positional-only")
    if not any(p.kind == p.VAR_KEYWORD for p in params):
        keywordable = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                            p.KEYWORD_ONLY)}
        if bad := set(names) - keywordable:
            raise ValueError(f"Jitted function has invalid argnames {bad} in "
                             "donate_argnames. Function does not take these args.")
    if not var_positional and n_pos > 0:
        nums = tuple(i % n_pos if i < 0 else i for i in nums)
    if both := set(static_argnames) & set(names):
        raise ValueError("static_argnames and donate_argnames cannot intersect. Argument "
                         f"names {both} appear in both static_argnames and donate_argnames")
    return nums, names


def _check_argnums_exist(params: list[inspect.Parameter], positional: list[str],
                         argnums: tuple[int, ...], argnames: tuple[str, ...]) -> None:
    """Static argnums/argnames must name parameters the function has."""
    kinds = {p.kind for p in params}
    if inspect.Parameter.VAR_POSITIONAL not in kinds:
        bad = [i for i in argnums if not -len(positional) <= i < len(positional)]
        if bad:
            raise ValueError(f"jit: static_argnums={argnums} names positions {bad}, but the "
                             f"function accepts only {len(positional)} positional arguments.")
    if inspect.Parameter.VAR_KEYWORD not in kinds:
        keywordable = {p.name for p in params if p.kind in (
            p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        unknown = sorted(set(argnames) - keywordable)
        if unknown:
            raise ValueError(f"jit: static_argnames names {unknown}, which the function does "
                             "not take as arguments.")


def jit(fun: Callable[..., Any] | None = None, *, in_shardings: Any = None,
        out_shardings: Any = None, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Sequence[str] | None = None, keep_unused: bool = False,
        device: Any = None, backend: Any = None, inline: bool = False,
        abstracted_axes: Any = None, compiler_options: Any = None) -> Any:
    """Stage ``fun`` into a jaxpr per argument signature and evaluate that."""
    options = () if compiler_options is None else tuple(compiler_options.items())

    def wrap(f: Callable[..., Any]) -> Jitted:
        if in_shardings is not None or out_shardings is not None:
            return PlacingJitted(f, _normalize_argnums(static_argnums),
                                 _normalize_argnames(static_argnames),
                                 donate_argnums, keep_unused, inline, options, donate_argnames,
                                 shardings=(in_shardings, out_shardings))
        return Jitted(f, _normalize_argnums(static_argnums), _normalize_argnames(static_argnames),
                      donate_argnums, keep_unused, inline, options, donate_argnames)
    return wrap if fun is None else wrap(fun)


class PlacingJitted(Jitted):
    """A jit with ``in_shardings``/``out_shardings``: an eager call checks and
    places its arguments and places its results (spec/_src/api/jit_shardings.py);
    staged calls trace as without them."""

    def __init__(self, *args: Any, shardings: tuple[Any, Any]) -> None:
        super().__init__(*args)
        self._in_shardings, self._out_shardings = shardings
        self._fast_ok = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if type(current_trace()) is not EvalTrace or config.jax_disable_jit:
            return super().__call__(*args, **kwargs)
        given = args
        if self._in_shardings is not None:
            args = place_arguments(args, self._in_shardings, self._static_argnums)
        out = super().__call__(*args, **kwargs)
        if given is not args and (self._donate_argnums or self._donate_argnames):
            _donate_unmoved(given, args)
        return out if self._out_shardings is None else place_results(out, self._out_shardings)

    def _staged_shardings(self, split: _Split, out_tree: Any) -> tuple[list[Any], list[Any]]:
        return staged_shardings(split.dyn_treedef, self._in_shardings, out_tree,
                                self._out_shardings)


def _donate_unmoved(given: Sequence[Any], placed: Sequence[Any]) -> None:
    """An argument in_shardings placed where it already was is passed as its
    own buffer: when the call takes the placed one, the given one is gone
    too (one moved elsewhere was a copy, and stays)."""
    for x, y in zip(tree_util.tree_leaves(list(given)), tree_util.tree_leaves(list(placed))):
        if x is not y and isinstance(x, Array) and isinstance(y, Array) and y.is_deleted() \
                and not x.is_deleted() and x.sharding == y.sharding:
            x.delete()


# ----------------------------------------------------------------- make_jaxpr


def make_jaxpr(fun: Callable[..., Any], static_argnums: int | Sequence[int] = (),
               axis_env: Any = None, return_shape: bool = False,
               abstracted_axes: Any = None) -> Callable[..., Any]:
    """``make_jaxpr(f)(*args)`` is the closed jaxpr of ``f`` at the args' types."""
    nums = _normalize_argnums(static_argnums)

    @functools.wraps(fun)
    def make(*args: Any, **kwargs: Any) -> Any:
        # As JAX's, a jit of the function traces it: a trace a jit call made
        # already (or makes later) at the same argument types is this one
        # (the Python side effects of tracing happen once).
        jitted = Jitted(fun, nums, (), (), False, False)
        with contextlib.ExitStack() as stack:
            # Named axes the traced function may use in collectives.
            for name, size in axis_env or ():
                stack.enter_context(extend_axis_env(name, int(size)))
            jaxpr, out_tree = jitted.traced_jaxpr(*args, **kwargs)
        if not return_shape:
            return jaxpr
        shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                  for a in jaxpr.out_avals]
        return jaxpr, tree_util.tree_unflatten(out_tree, shapes)

    return make


def typeof(x: Any) -> ArrayType:
    """The type of a value: ``float32[3]``, weak Python scalars ``~int32[]``.
    A tracer's type is known even after its trace has ended."""
    if isinstance(x, Tracer):
        shown: ArrayType = shown_aval(x.aval)
        return shown
    try:
        shown = shown_aval(canonical_aval_of(x))
        return shown
    except TypeError:
        raise TypeError(f"Argument '{x}' of type '{type(x)}' is not a valid JAX type") from None


def eval_shape(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return jit(fun).eval_shape(*args, **kwargs)

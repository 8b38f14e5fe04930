"""User-defined derivative rules: ``custom_jvp`` and ``custom_vjp``.

Calling a decorated function wraps it and the user's rules as flat callables
that check what the rules return, with JAX's messages, and hands them to the
innermost trace (spec/_src/api/custom_calls.py), which runs the function, runs
a rule, or stages ``custom_jvp_call`` / ``custom_vjp_call``
(spec/_src/lax/custom.py). Called with no trace around (eager), the function
simply runs, as in JAX.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from spec._src.core import tree_util
from spec._src.interpreters import ad
from spec._src.interpreters.ad_util import Zero, add_tangents
from spec._src.core.errors import UnexpectedTracerError
from spec._src.core.interpreter import (
    EvalTrace,
    Jaxpr,
    Tracer,
    canonical_aval_of,
    current_trace,
    trace_to_jaxpr,
)
from spec._src.api.custom_calls import (
    JvpCall,
    VjpCall,
    process_custom_jvp,
    process_custom_vjp,
)
from spec._src.lax.custom import (
    SymbolicZero,
    consts_as_inputs,
    linear_call_p,
    memoize,
    remat_opt_p,
    rule_name,
    zeros_like_aval,
)
from spec._src.core.types import FLOAT0, ArrayType
from spec._src.lax.ad_prims import stop_gradient
from spec._src.lax import shaping as L


class CustomVJPPrimal:
    """An argument of a ``custom_vjp`` fwd rule declared with
    ``symbolic_zeros=True``: the primal ``value`` and whether it is
    ``perturbed`` (differentiated)."""

    __slots__ = ("perturbed", "value")

    def __init__(self, value: Any, perturbed: bool) -> None:
        self.value = value
        self.perturbed = perturbed

    def __repr__(self) -> str:
        return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed})"


def zero_from_primal(val: Any, symbolic_zeros: bool = False) -> Any:
    """A zero tangent for each leaf of ``val``: ``SymbolicZero`` objects, or
    materialised zeros."""

    def zero(x: Any) -> Any:
        aval = canonical_aval_of(x).tangent_type()
        return SymbolicZero(aval) if symbolic_zeros else zeros_like_aval(aval)

    return tree_util.tree_map(zero, val)


def custom_vjp_primal_tree_values(tree: Any) -> Any:
    """Replace each ``CustomVJPPrimal`` leaf of ``tree`` by its value."""

    def value(leaf: Any) -> Any:
        if type(leaf) is not CustomVJPPrimal:
            raise TypeError(f"unexpected leaf type {type(leaf)}")
        return leaf.value

    return tree_util.tree_map(value, tree)


# ------------------------------------------------------------------ helpers


def _resolve_kwargs(fun: Callable[..., Any], args: tuple[Any, ...],
                    kwargs: dict[str, Any], kind: str, name: str) -> tuple[Any, ...]:
    """All arguments as positional ones (defaults filled in), as JAX binds them."""
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
        bound.apply_defaults()
        if bound.kwargs:
            passed = [k for k in bound.kwargs if k in kwargs]
            if passed:
                raise TypeError(f"keyword arguments ({passed}) could not be resolved to "
                                "positions")
            raise TypeError("keyword-only arguments with defaults are not supported")
    except TypeError as e:
        raise TypeError(f"The input arguments to the {kind}-decorated function {name} could "
                        "not be resolved to positional-only arguments. Binding failed with "
                        f"the error:\n{e}") from e
    except ValueError:  # no signature (a builtin): take the arguments as given
        if kwargs:
            raise
        return args
    return tuple(bound.args)


def _nondiff_argnums(fun: Callable[..., Any], nondiff_argnums: Sequence[int],
                     nondiff_argnames: Sequence[str]) -> tuple[int, ...]:
    nums = {int(i) for i in nondiff_argnums}
    if nondiff_argnames:
        params = list(inspect.signature(fun).parameters)
        for name in nondiff_argnames:
            if name in params:
                nums.add(params.index(name))
    return tuple(sorted(nums))


def _split(args: tuple[Any, ...], nondiff: tuple[int, ...]
           ) -> tuple[list[Any], list[Any]]:
    static = [args[i] for i in nondiff if i < len(args)]
    dyn = [a for i, a in enumerate(args) if i not in nondiff]
    return static, dyn


def _merge(nondiff: tuple[int, ...], static: Sequence[Any], dyn: Sequence[Any]) -> list[Any]:
    s_it, d_it = iter(static), iter(dyn)
    n = len(static) + len(dyn)
    return [next(s_it) if i in nondiff else next(d_it) for i in range(n)]


def _ty_tree(tree: Any, avals: Sequence[ArrayType]) -> str:
    return str(tree_util.tree_unflatten(tree, [_short(a) for a in avals])).replace("'", "")


def _short(a: ArrayType) -> str:
    """A type as JAX's ``str_short`` writes it in these messages: long dtype
    names, no weak-type mark."""
    return str(_strip(a))


def _typematch(a: ArrayType, b: ArrayType) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def _aval(x: Any) -> ArrayType:
    if type(x) in (Zero, SymbolicZero):
        aval: ArrayType = x.aval
        return aval
    return canonical_aval_of(x)


def _strip(a: ArrayType) -> ArrayType:
    return ArrayType(a.shape, a.dtype, False)


def _fun_sourceinfo(fun: Callable[..., Any]) -> str:
    code = getattr(fun, "__code__", None)
    name = rule_name(fun)
    if code is None:
        return name
    return f"{name} at {code.co_filename}:{code.co_firstlineno}"


class _OutType:
    """The output tree and types of a custom function, once known: from the
    function when it ran, else from the rule that ran in its place (JAX
    checks a rule's primal outputs against the function's only when the
    function ran first)."""

    def __init__(self) -> None:
        self.tree: Any = None
        self.avals: list[ArrayType] | None = None

    def record(self, tree: Any, leaves: Sequence[Any]) -> None:
        if self.tree is None:
            self.tree = tree
            self.avals = [canonical_aval_of(x) for x in leaves]


def _flat_fun(fun: Callable[..., Any], nondiff: tuple[int, ...], static: list[Any],
              in_tree: Any, out: _OutType) -> Callable[..., list[Any]]:
    """``fun`` over flat argument leaves, its output flattened (and its
    tree and types recorded)."""
    def flat(*xs: Any) -> list[Any]:
        dyn = tree_util.tree_unflatten(in_tree, list(xs))
        result = fun(*_merge(nondiff, static, dyn))
        leaves, tree = tree_util.tree_flatten(result)
        out.tree, out.avals = tree, [canonical_aval_of(x) for x in leaves]
        return leaves
    return flat


def _eager() -> bool:
    return isinstance(current_trace(), EvalTrace)


# ------------------------------------------------------------------ custom_jvp


class _FlatJvp:
    """The user's JVP rule over flat lists, checking what it returns."""

    def __init__(self, rule: Callable[..., Any], static: list[Any], in_tree: Any,
                 out: _OutType, fun_name: str) -> None:
        self.rule = rule
        self.static = static
        self.in_tree = in_tree
        self.out = out
        self.fun_name = fun_name
        self.__name__ = rule_name(rule)

    def __call__(self, primals: Sequence[Any], tangents: Sequence[Any]
                 ) -> tuple[list[Any], list[Any]]:
        py_p = tree_util.tree_unflatten(self.in_tree, list(primals))
        py_t = tree_util.tree_unflatten(self.in_tree, list(tangents))
        pair = self.rule(*self.static, tuple(py_p), tuple(py_t))
        jvp_name, name = self.__name__, self.fun_name
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise TypeError(f"Custom JVP rule {jvp_name} for function {name} must produce a "
                            "pair (list or tuple of length two) representing primal and "
                            f"tangent outputs, but got {pair}.")
        p_outs, p_tree = tree_util.tree_flatten(pair[0])
        t_outs, t_tree = tree_util.tree_flatten(
            pair[1], is_leaf=lambda x: type(x) in (Zero, SymbolicZero))
        if p_tree != t_tree:
            raise TypeError(f"Custom JVP rule {jvp_name} for function {name} must produce "
                            "primal and tangent outputs with equal container (pytree) "
                            f"structures, but got {p_tree} and {t_tree} respectively.")
        p_avals = [canonical_aval_of(p) for p in p_outs]
        if self.out.avals is not None:
            self._check_primals(p_tree, p_avals, self.out.tree, self.out.avals)
        self._check_tangents(p_avals, [_aval(t) for t in t_outs])
        self.out.record(p_tree, p_outs)
        return p_outs, t_outs

    def _check_primals(self, tree: Any, avals: list[ArrayType], fun_tree: Any,
                       fun_avals: list[ArrayType]) -> None:
        head = (f"Custom JVP rule {self.__name__} for function {self.fun_name} must produce "
                "a pair (list or tuple of length two) where the first element represents "
                "the primal output (equal in value to the output of the custom_jvp-decorated "
                f"function {self.fun_name}, ")
        ours, theirs = _ty_tree(tree, avals), _ty_tree(fun_tree, fun_avals)
        if tree != fun_tree:
            raise TypeError(head + "and in particular of the same container/pytree "
                            "structure), but instead the JVP rule output's first element "
                            f"had container/pytree structure:\n    {ours}\nwhile the "
                            f"custom_jvp-decorated function {self.fun_name} had output "
                            f"container/pytree structure:\n    {theirs}.")
        if not all(map(_typematch, avals, fun_avals)):
            raise TypeError(head + "and in particular with leaves of the same shape/dtype), "
                            "but instead the JVP rule output's first element had "
                            f"shapes/dtypes of:\n    {ours}\nwhile the custom_jvp-decorated "
                            f"function {self.fun_name} had output shapes/dtypes of:\n"
                            f"    {theirs}")

    @staticmethod
    def _check_tangents(p_avals: list[ArrayType], t_avals: list[ArrayType]) -> None:
        primal = [_strip(a) for a in p_avals]
        expected = [_strip(a.tangent_type()) for a in p_avals]
        got = [_strip(a) for a in t_avals]
        if all(map(_typematch, expected, got)):
            return
        if len(expected) == 1:
            raise TypeError("Custom JVP rule must produce primal and tangent outputs with "
                            f"corresponding shapes and dtypes. Expected "
                            f"{_short(expected[0])} (tangent type of "
                            f"{_short(primal[0])}) but got {_short(got[0])}.")
        lines = [f"  primal {_short(p)} with tangent {_short(t)}, expecting tangent {e}"
                 for p, e, t in zip(primal, expected, got) if not _typematch(e, t)]
        raise TypeError("Custom JVP rule must produce primal and tangent outputs with "
                        "corresponding shapes and dtypes, but got:\n" + "\n".join(lines))


def _stop_gradient_leaves(x: Any) -> Any:
    """Non-differentiable arguments: tracers among them get ``stop_gradient``."""

    return tree_util.tree_map(lambda v: stop_gradient(v) if isinstance(v, Tracer) else v, x)


def _sum_tangents(_: Any, x: Any, *xs: Any) -> Any:
    return functools.reduce(add_tangents, xs, x)


class custom_jvp[R]:
    """A function with a custom JVP rule (set with ``defjvp`` or ``defjvps``)."""

    def __init__(self, fun: Callable[..., R], nondiff_argnums: Sequence[int] = (),
                 nondiff_argnames: Sequence[str] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _nondiff_argnums(fun, nondiff_argnums, nondiff_argnames)
        self.jvp: Callable[..., Any] | None = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable[..., Any], symbolic_zeros: bool = False
               ) -> Callable[..., Any]:
        """Set the rule ``jvp(*nondiff_args, primals, tangents) -> (out, out_tangent)``."""
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps: Callable[..., Any] | None) -> None:
        """One rule per argument, ``jvp_i(t_i, primal_out, *primals)``; their
        contributions are summed."""
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

        def jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
            primal_out = self(*primals)
            zeros = tree_util.tree_map(Zero.from_primal_value, primal_out)
            parts = [fn(t, primal_out, *primals) if fn else zeros
                     for t, fn in zip(tangents, jvps)]
            return primal_out, tree_util.tree_map(
                _sum_tangents, primal_out, *parts, is_leaf=lambda x: type(x) is Zero)

        self.defjvp(jvp)

    def __call__(self, *args: Any, **kwargs: Any) -> R:
        name = rule_name(self.fun)
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        full = _resolve_kwargs(self.fun, args, kwargs, "custom_jvp", name)
        if _eager():
            return self.fun(*full)
        nondiff = self.nondiff_argnums
        if nondiff:
            full = tuple(_stop_gradient_leaves(a) if i in nondiff else a
                         for i, a in enumerate(full))
        static, dyn = _split(full, nondiff)
        leaves, in_tree = tree_util.tree_flatten(tuple(dyn))
        out = _OutType()
        call = JvpCall(_flat_fun(self.fun, nondiff, static, in_tree, out),
                       _FlatJvp(self.jvp, static, in_tree, out, name), self.symbolic_zeros)
        outs = process_custom_jvp(current_trace(), call, leaves)
        return tree_util.tree_unflatten(out.tree, outs)  # type: ignore[no-any-return]


# ------------------------------------------------------------------ custom_vjp


class _FlatFwd:
    """The user's fwd rule over flat lists: ``(residuals, primal_outs)``."""

    def __init__(self, fwd: Callable[..., Any], nondiff: tuple[int, ...], static: list[Any],
                 in_tree: Any, out: _OutType, symbolic_zeros: bool, fun_name: str) -> None:
        self.fwd = fwd
        self.nondiff = nondiff
        self.static = static
        self.in_tree = in_tree
        self.out = out
        self.symbolic_zeros = symbolic_zeros
        self.fun_name = fun_name
        self.res_tree: Any = None
        self.__name__ = rule_name(fwd)

    def __call__(self, primals: Sequence[Any], nonzeros: Sequence[bool]
                 ) -> tuple[list[Any], list[Any]]:
        args: list[Any] = list(primals)
        if self.symbolic_zeros:
            args = [CustomVJPPrimal(x, nz) for x, nz in zip(primals, nonzeros)]
        dyn = tree_util.tree_unflatten(self.in_tree, args)
        pair = self.fwd(*_merge(self.nondiff, self.static, dyn))
        fwd_name, name = self.__name__, self.fun_name
        head = (f"Custom VJP fwd rule {fwd_name} for function {name} must produce a pair "
                "(list or tuple of length two) where the first element represents the "
                "primal output (equal to ")
        tail = ("and the second element represents residuals (i.e. values stored from the "
                "forward pass for use on the backward pass), but ")
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise TypeError(head + f"those of the custom_vjp-decorated function {name}) " + tail
                            + f"instead of a pair the fwd rule {fwd_name} produced {pair}.")
        p_outs, p_tree = tree_util.tree_flatten(pair[0])
        res, self.res_tree = tree_util.tree_flatten(pair[1])
        p_avals = [canonical_aval_of(p) for p in p_outs]
        if self.out.avals is not None:
            self._check_primals(p_tree, p_avals, head, tail)
        for r in res:
            canonical_aval_of(r)  # residuals must be arrays (raises TypeError otherwise)
        self.out.record(p_tree, p_outs)
        return res, p_outs

    def _check_primals(self, p_tree: Any, p_avals: list[ArrayType], head: str, tail: str
                       ) -> None:
        name = self.fun_name
        fun_tree, fun_avals = self.out.tree, self.out.avals or []
        ours, theirs = _ty_tree(p_tree, p_avals), _ty_tree(fun_tree, fun_avals)
        if p_tree != fun_tree:
            raise TypeError(head + f"the output of the custom_vjp-decorated function {name}) "
                            + tail + "instead the fwd rule output's first element had "
                            f"container/pytree structure:\n    {ours}\nwhile the "
                            f"custom_vjp-decorated function {name} had output "
                            f"container/pytree structure:\n    {theirs}.")
        if not all(map(_typematch, p_avals, fun_avals)):
            raise TypeError(head + f"the output of the custom_vjp-decorated function {name}) "
                            + tail + "instead the fwd rule output's "
                            f"first element had shapes/dtypes of:\n    {ours}\nwhile the "
                            f"custom_vjp-decorated function {name} had output "
                            f"shapes/dtypes of:\n    {theirs}")

    def out_trees(self) -> tuple[Any, Any]:
        return self.out.tree, self.res_tree


class _FlatBwd:
    """The user's bwd rule over flat lists: one cotangent per (non-const)
    input, ``Zero`` where the rule gave ``None``; checked as JAX does."""

    def __init__(self, bwd: Callable[..., Any], static: list[Any], in_tree: Any,
                 in_avals: Sequence[ArrayType], fwd: _FlatFwd, fun: Callable[..., Any],
                 symbolic_zeros: bool, with_logs: bool = False) -> None:
        self.bwd = bwd
        self.with_logs = with_logs
        self.static = static
        self.in_tree = in_tree
        self.in_avals = list(in_avals)
        self.fwd = fwd
        self.fun = fun
        self.symbolic_zeros = symbolic_zeros
        self.__name__ = rule_name(bwd)

    def __call__(self, residuals: Sequence[Any], cts_out: Sequence[Any]) -> list[Any]:
        if not self.symbolic_zeros:
            cts_out = [zeros_like_aval(c.aval) if type(c) is SymbolicZero else c
                       for c in cts_out]
        py_res = tree_util.tree_unflatten(self.fwd.res_tree, list(residuals))
        py_cts = tree_util.tree_unflatten(self.fwd.out.tree, list(cts_out))
        cts_in = self.bwd(*self.static, py_res, py_cts)
        if self.with_logs:
            cts_in = self._logged(cts_in)
        n_args = len(tree_util.treedef_children(self.in_tree))
        if isinstance(cts_in, list) and len(cts_in) == n_args:
            cts_in = tuple(cts_in)
        flat = self._flatten_like_args(cts_in)
        dummy = tree_util.tree_unflatten(self.in_tree, [object()] * self.in_tree.num_leaves)
        paths = [p for p, _ in tree_util.tree_flatten_with_path(dummy)[0]]
        return [self._check(p, a, ct) for p, a, ct in zip(paths, self.in_avals, flat)]

    _NONE = object()

    def _logged(self, got: Any) -> Any:
        """The cotangents of a ``defvjp_with_logs`` rule's ``(in_cts, logs)``,
        its logs merged into the backward pass."""
        if not (isinstance(got, (list, tuple)) and len(got) == 2):
            raise TypeError(f"Custom VJP bwd rule {self.bwd} was registered with "
                            "defvjp_with_logs and so must produce a pair (in_cts, logs), "
                            f"but got {got}.")
        cts_in, logs = got
        if logs is not None and type(logs) is not dict:
            raise TypeError(f"Custom VJP bwd rule {self.bwd} was registered with "
                            "defvjp_with_logs, and so the second element of the pair it "
                            "returns must be None or a dict of backward-pass log entries, "
                            f"but got {type(logs).__name__}.")
        ad.add_logs(logs, f"the custom_vjp rule {self.__name__}")
        return cts_in

    def _flatten_like_args(self, cts_in: Any) -> list[Any]:
        """One entry per argument leaf; a ``None`` stands for all leaves of its subtree."""
        dummy = tree_util.tree_unflatten(self.in_tree, [object()] * self.in_tree.num_leaves)
        flat: list[Any] = []

        def append(x: Any, d: Any) -> Any:
            n = len(tree_util.tree_leaves(d))
            flat.extend([self._NONE if x is None else x] * n)
            return x

        try:
            if isinstance(cts_in, tuple):
                tree_util.tree_map(append, cts_in, dummy, is_leaf=lambda x: x is None)
                return flat
        except (ValueError, TypeError):
            pass
        got = tree_util.tree_structure(cts_in)
        raise TypeError("Custom VJP bwd rule must produce an output with the same container "
                        "(pytree) structure as the args tuple of the primal function, and in "
                        "particular must produce a tuple of length equal to the number of "
                        "arguments to the primal function, but got bwd output structure "
                        f"{got} for primal input structure {self.in_tree}.")

    def _check(self, path: Any, aval: ArrayType, ct: Any) -> Any:
        want = aval.ct_type()
        if ct is self._NONE or want.dtype == FLOAT0:
            return Zero(want)
        where = tree_util.keystr(path)
        if type(ct) is SymbolicZero:
            if not _typematch(want, ct.aval):
                raise ValueError("Custom VJP bwd rule produced a SymbolicZero with a "
                                 "shape/dtype that does not match the corresponding input "
                                 f"tangent shape/dtype: at output{where} the SymbolicZero had "
                                 f"shape/dtype {_short(ct.aval)} while the corresponding "
                                 f"input had shape/dtype {_short(aval)}. Consider just "
                                 "returning a None here instead of a SymbolicZero object.")
            return Zero(want)
        got = canonical_aval_of(ct)
        if _typematch(want, got):
            return ct
        if got.shape == want.shape and want.dtype.kind in "fc":
            # JAX lets a floating cotangent differ in dtype; give it the input's.
            return L.convert_element_type(ct, want.dtype)
        raise ValueError(f"Custom VJP bwd rule attached to {_fun_sourceinfo(self.fun)} must "
                         "produce an output with the same type as the args tuple of the "
                         f"primal function, but at output{where} the bwd rule produced an "
                         f"output of type {_short(got)} corresponding to an input of type "
                         f"{_short(aval)}{_mismatch_extra(aval, got)}")


def _mismatch_extra(want: ArrayType, got: ArrayType) -> str:
    """What differs between two types, as JAX words it after a type error."""
    found = [what for what, differs in (("the dtypes do not match", want.dtype != got.dtype),
                                        ("the shapes do not match", want.shape != got.shape))
             if differs]
    if not found:
        return ""
    if len(found) == 1:
        return ", so " + found[0]
    return ", so " + ", ".join(found[:-1]) + ", and " + found[-1]


def _check_for_tracers(x: Any) -> None:
    for leaf in tree_util.tree_leaves(x):
        if isinstance(leaf, Tracer):
            raise UnexpectedTracerError(
                "Found a JAX Tracer object passed as an argument to a custom_vjp function in "
                "a position indicated by nondiff_argnums as non-differentiable. Tracers "
                "cannot be passed as non-differentiable arguments to custom_vjp functions; "
                "instead, nondiff_argnums should only be used for arguments that can't be or "
                "contain JAX tracers, e.g. function-valued arguments. In particular, "
                "array-valued arguments should typically not be indicated as nondiff_argnums.")


class custom_vjp[R]:
    """A function with custom forward and backward passes (set with ``defvjp``)."""

    def __init__(self, fun: Callable[..., R], nondiff_argnums: Sequence[int] = (),
                 nondiff_argnames: Sequence[str] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _nondiff_argnums(fun, nondiff_argnums, nondiff_argnames)
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None
        self.symbolic_zeros = False
        self.optimize_remat = False
        self.with_logs = False

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any],
               symbolic_zeros: bool = False, optimize_remat: bool = False) -> None:
        """``fwd(*args) -> (out, residuals)``; ``bwd(*nondiff_args, residuals,
        out_ct) -> tuple of cotangents, one per argument (None: zero)``."""
        if symbolic_zeros and optimize_remat:
            raise NotImplementedError(
                "remat optimization for custom_vjp does not support symbolic zeros")
        self.fwd = fwd
        self.bwd = bwd
        self.symbolic_zeros = symbolic_zeros
        self.optimize_remat = optimize_remat
        self.with_logs = False

    def defvjp_with_logs(self, fwd: Callable[..., Any], bwd: Callable[..., Any],
                         symbolic_zeros: bool = False, optimize_remat: bool = False) -> None:
        """Like ``defvjp``, but ``bwd`` returns ``(in_cts, logs)``: ``logs`` a
        dict of named pytrees logged out of the backward pass (``None``:
        nothing), which ``VJP.with_logs`` returns."""
        self.defvjp(fwd, bwd, symbolic_zeros=symbolic_zeros, optimize_remat=optimize_remat)
        self.with_logs = True

    def __call__(self, *args: Any, **kwargs: Any) -> R:
        name = rule_name(self.fun)
        if self.fwd is None or self.bwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        full = _resolve_kwargs(self.fun, args, kwargs, "custom_vjp", name)
        nondiff = self.nondiff_argnums
        for i in nondiff:
            if i < len(full):
                _check_for_tracers(full[i])
        if _eager():
            return self.fun(*full)
        static, dyn = _split(full, nondiff)
        leaves, in_tree = tree_util.tree_flatten(tuple(dyn))
        out = _OutType()
        user_fwd = self.fwd
        if self.optimize_remat:
            user_fwd = _remat_optimized_fwd(self.fun, self.fwd, nondiff)
        fwd = _FlatFwd(user_fwd, nondiff, static, in_tree, out, self.symbolic_zeros, name)
        bwd = _FlatBwd(self.bwd, static, in_tree, [canonical_aval_of(x) for x in leaves], fwd,
                       self.fun, self.symbolic_zeros, self.with_logs)
        call = VjpCall(_flat_fun(self.fun, nondiff, static, in_tree, out), fwd, bwd,
                       fwd.out_trees, self.symbolic_zeros)
        outs = process_custom_vjp(current_trace(), call, leaves)
        return tree_util.tree_unflatten(out.tree, outs)  # type: ignore[no-any-return]


def _remat_optimized_fwd(fun: Callable[..., Any], fwd: Callable[..., Any],
                         nondiff: tuple[int, ...]) -> Callable[..., Any]:
    """``fwd`` staged whole as one ``remat_opt`` equation (JAX's ``optimize_remat``): its
    jaxpr's results are the residuals that are not arguments (those are passed through),
    then the primal outputs; ``fun`` is traced only if dead-code elimination asks for it."""
    @functools.wraps(fwd)
    def staged_fwd(*args: Any) -> tuple[Any, Any]:
        static, dyn = _split(args, nondiff)
        leaves, in_tree = tree_util.tree_flatten(tuple(dyn))
        avals = [canonical_aval_of(x) for x in leaves]
        trees: list[tuple[Any, Any, list[int | None]]] = []
        not_pairs: list[Any] = []

        def flat_fwd(*xs: Any) -> list[Any]:
            pair = fwd(*_merge(nondiff, static, tree_util.tree_unflatten(in_tree, list(xs))))
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                not_pairs.append(pair)  # returned as it is, for the caller's check
                return []
            p_outs, p_tree = tree_util.tree_flatten(pair[0])
            res, res_tree = tree_util.tree_flatten(pair[1])
            position = {id(x): i for i, x in enumerate(xs)}
            forwarded = [position.get(id(r)) for r in res]
            trees.append((p_tree, res_tree, forwarded))
            return [*(r for r, f in zip(res, forwarded) if f is None), *p_outs]

        traced, _ = trace_to_jaxpr(flat_fwd, avals)
        if not_pairs:
            return not_pairs[0]  # type: ignore[no-any-return]
        p_tree, res_tree, forwarded = trees[0]
        fwd_jaxpr, consts = consts_as_inputs(traced)
        num_res = sum(f is None for f in forwarded)

        def fun_jaxpr_thunk() -> tuple[Jaxpr, list[Any]]:
            fun_jaxpr, _ = trace_to_jaxpr(
                _flat_fun(fun, nondiff, static, in_tree, _OutType()), avals)
            return fun_jaxpr, list(fun_jaxpr.consts)

        outs = remat_opt_p.bind(*consts, *leaves, num_consts=len(consts), num_res=num_res,
                                fwd_jaxpr=fwd_jaxpr, fun_jaxpr_thunk=memoize(fun_jaxpr_thunk))
        computed = iter(outs[:num_res])
        res = [next(computed) if f is None else leaves[f] for f in forwarded]
        return (tree_util.tree_unflatten(p_tree, list(outs[num_res:])),
                tree_util.tree_unflatten(res_tree, res))
    return staged_fwd


# ------------------------------------------------------------ linear_call


def _traced_with_consts(fun: Callable[..., Any], res_tree: Any, res_avals: list[ArrayType],
                        arg_tree: Any, arg_avals: list[ArrayType]
                        ) -> tuple[Jaxpr, list[Any], Any]:
    """``fun(residuals, args)`` staged with its constants as leading inputs; the
    constants' values and the output tree."""
    out_trees: list[Any] = []
    n_res = len(res_avals)

    def flat(*xs: Any) -> list[Any]:
        res = tree_util.tree_unflatten(res_tree, list(xs[:n_res]))
        args = tree_util.tree_unflatten(arg_tree, list(xs[n_res:]))
        leaves, tree = tree_util.tree_flatten(fun(res, args))
        out_trees.append(tree)
        return leaves
    traced, _ = trace_to_jaxpr(flat, [*res_avals, *arg_avals])
    jaxpr = Jaxpr([], [*traced.constvars, *traced.invars], traced.outvars, traced.eqns,
                  traced.effects)
    return jaxpr, list(traced.consts), out_trees[0]


def linear_call(fun: Callable[..., Any], fun_transpose: Callable[..., Any],
                residual_args: Any, linear_args: Any) -> Any:
    """``fun(residual_args, linear_args)``, where ``fun`` is linear in ``linear_args``
    and ``fun_transpose(residual_args, ct)`` is its transpose: autodiff transposes the
    call into a call of ``fun_transpose`` (whose transpose is ``fun``)."""
    res_leaves, res_tree = tree_util.tree_flatten(residual_args)
    lin_leaves, lin_tree = tree_util.tree_flatten(linear_args)
    res_avals = [canonical_aval_of(x) for x in res_leaves]
    lin_avals = [canonical_aval_of(x) for x in lin_leaves]
    callee, consts, out_tree = _traced_with_consts(fun, res_tree, res_avals, lin_tree,
                                                   lin_avals)
    out_avals = list(callee.out_avals)

    def traced_transpose() -> tuple[Jaxpr, list[Any]]:
        t_jaxpr, t_consts, t_tree = _traced_with_consts(fun_transpose, res_tree, res_avals,
                                                        out_tree, out_avals)
        if t_tree != lin_tree:
            raise TypeError("transpose output pytree structure must match that of linear "
                            f"inputs, got output structure {t_tree} and input structure "
                            f"{lin_tree}.")
        return t_jaxpr, t_consts

    outs = linear_call_p.bind(*consts, *res_leaves, *lin_leaves, callee=callee,
                              transpose_thunk=memoize(traced_transpose),
                              num_callee_consts=len(consts), num_res=len(res_leaves))
    return tree_util.tree_unflatten(out_tree, list(outs))


__all__ = ["CustomVJPPrimal", "SymbolicZero", "custom_jvp", "custom_vjp",
           "custom_vjp_primal_tree_values", "linear_call", "zero_from_primal"]

"""Primitives defined by users through ``jax.extend.core.Primitive``.

A user primitive is not a new declaration: every one binds the one declared
primitive ``user_primitive`` with the user's object as its param ``prim``,
and that declaration's sections run what the user registered (``def_impl``,
``def_abstract_eval``, ``ad.primitive_jvps``, ``ad.primitive_transposes``,
``batching.primitive_batchers``). A section nobody registered raises the
error JAX raises for it. Equations print under the user's name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core import pretty as pp
from spec._src.core.array import Array, from_numpy
from spec._src.core.interpreter import Eqn, Jaxpr, PpContext, eval_jaxpr, pp_params, pp_vars
from spec._src.core.registry import declare
from spec._src.core.types import ArrayType
from spec._src.interpreters.ad_util import UndefinedPrimal, Zero, instantiate

Rule = Callable[..., Any]

# The rule tables, keyed by the user's primitive (JAX keeps them as module
# dicts that libraries write to directly).
primitive_jvps: dict[Any, Rule] = {}
primitive_transposes: dict[Any, Rule] = {}
primitive_batchers: dict[Any, Rule] = {}
lowerings: dict[Any, Rule] = {}


class Primitive:
    """A named operation whose rules are registered one by one."""

    multiple_results = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.impl: Rule | None = None
        self.abstract_eval: Rule | None = None

    def __repr__(self) -> str:
        return self.name

    def def_impl(self, impl: Rule) -> Rule:
        self.impl = impl
        return impl

    def def_abstract_eval(self, abstract_eval: Rule) -> Rule:
        self.abstract_eval = abstract_eval
        return abstract_eval

    def def_effectful_abstract_eval(self, effectful: Rule) -> Rule:
        """A rule returning (types, effects); user effects are not tracked."""
        def types_only(*avals: Any, **params: Any) -> Any:
            out, effects = effectful(*avals, **params)
            if effects:
                raise NotImplementedError(f"effects of user primitive {self.name!r}: {effects}")
            return out
        self.abstract_eval = types_only
        return effectful

    def bind(self, *args: Any, **params: Any) -> Any:
        outs = user_primitive_p.bind(*args, prim=self, params=_Params(params))
        return list(outs) if self.multiple_results else outs[0]


class _Params(dict[str, Any]):
    """The user's params, hashable so the equation's params stay hashable."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted((k, _key(v)) for k, v in self.items())))


def _key(v: Any) -> Any:
    try:
        hash(v)
    except TypeError:
        return id(v)
    return v


def _listed(prim: Primitive, out: Any) -> list[Any]:
    return list(out) if prim.multiple_results else [out]


def _typing(*avals: ArrayType, prim: Primitive, params: _Params) -> list[ArrayType]:
    if prim.abstract_eval is None:
        raise NotImplementedError(f"Abstract evaluation for '{prim.name}' not implemented")
    return _listed(prim, prim.abstract_eval(*avals, **params))


def _impl(*values: np.ndarray, prim: Primitive, params: _Params) -> Sequence[np.ndarray]:
    if prim.impl is None:
        raise NotImplementedError(f"Evaluation rule for '{prim.name}' not implemented")
    out = _listed(prim, prim.impl(*(from_numpy(np.asarray(v)) for v in values), **params))
    return [np.asarray(o._value if isinstance(o, Array) else o) for o in out]


def _jvp(primals: list[Any], tangents: list[Any], *, prim: Primitive, params: _Params
         ) -> tuple[list[Any], list[Any]]:
    rule = primitive_jvps.get(prim)
    if rule is None:
        raise NotImplementedError(f"Differentiation rule for '{prim.name}' not implemented")
    out, t_out = rule(primals, tangents, **params)
    return _listed(prim, out), _listed(prim, t_out)


def _transpose(cts: list[Any], *invals: Any, prim: Primitive, params: _Params) -> list[Any]:
    rule = primitive_transposes.get(prim)
    if rule is None:
        raise NotImplementedError(f"Transpose rule (for reverse-mode differentiation) for "
                                  f"'{prim.name}' not implemented")
    ct = cts if prim.multiple_results else cts[0]
    return [None if type(c) is Zero else c for c in rule(ct, *invals, **params)]


def _batch(axis: Any, args: list[Any], dims: list[Any], *, prim: Primitive, params: _Params
           ) -> tuple[list[Any], list[Any]]:
    rule = primitive_batchers.get(prim)
    if rule is None:
        raise NotImplementedError(f"Batching rule for '{prim.name}' not implemented")
    out, out_dims = rule(args, dims, **params)
    if prim.multiple_results:
        return list(out), list(out_dims)
    return [out], [out_dims]


def _sharding(*avals: ArrayType, prim: Primitive, params: _Params) -> list[Any]:
    return [None for _ in _typing(*avals, prim=prim, params=params)]


def _lowering(ctx: Any, operands: Sequence[str], in_avals: Sequence[ArrayType],
              out_avals: Sequence[ArrayType], *, prim: Primitive, params: _Params) -> list[str]:
    raise NotImplementedError(f"MLIR translation rule for primitive '{prim.name}' not found "
                              "(spec does not lower user primitives)")


def _pp(eqn: Eqn, ctx: PpContext) -> pp.Doc:
    """``outs = name[params] operands``, as JAX prints any primitive."""
    prim: Primitive = eqn.params["prim"]
    lhs = pp_vars(eqn.outvars, ctx, print_shapes=True)
    rhs = [pp.text(prim.name), pp_params(dict(eqn.params["params"]), ctx),
           pp.text(" ") + pp_vars(eqn.invars, ctx)]
    return pp.concat([lhs, pp.text(" = "), *rhs])


def zeros_instantiated(tangents: Sequence[Any]) -> list[Any]:
    return [instantiate(t) for t in tangents]


user_primitive_p = declare(
    "user_primitive", typing=_typing, impl=_impl, multiple_results=True, jvp=_jvp,
    transpose=_transpose, batch=_batch, sharding=_sharding, lowering=_lowering, pp_rule=_pp,
    doc="A primitive defined through jax.extend.core.Primitive (the param `prim`): each "
        "section runs the rule registered for it.")


# ----------------------------------------------- the registration helpers


def _add(a: Any, b: Any) -> Any:
    if type(a) is Zero:
        return b
    if type(b) is Zero:
        return a
    return a + b


def defjvp(prim: Primitive, *rules: Rule | None) -> None:
    """One tangent rule per operand (None: the output does not depend on
    it); the output tangent is the sum over the operands with a tangent."""
    def jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> Any:
        out = prim.bind(*primals, **params)
        total: Any = Zero(_aval(out).tangent_type())
        for rule, t in zip(rules, tangents):
            if rule is not None and type(t) is not Zero:
                total = _add(total, rule(t, *primals, **params))
        return out, total
    primitive_jvps[prim] = jvp


def _aval(x: Any) -> ArrayType:
    aval: ArrayType = x.aval
    return aval


def deflinear2(prim: Primitive, transpose_rule: Rule) -> None:
    """A primitive linear in all operands: its tangent is itself applied to
    the tangents, its transpose the given rule (skipped on a zero
    cotangent)."""
    def jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> Any:
        return prim.bind(*primals, **params), prim.bind(*zeros_instantiated(tangents), **params)

    def transpose(ct: Any, *args: Any, **params: Any) -> Any:
        if type(ct) is Zero:
            return [None] * len(args)
        return transpose_rule(ct, *args, **params)
    primitive_jvps[prim] = jvp
    primitive_transposes[prim] = transpose


def deflinear(prim: Primitive, transpose_rule: Rule) -> None:
    """``deflinear2`` for a transpose rule that takes only the cotangent."""
    deflinear2(prim, lambda ct, *args, **params: transpose_rule(ct, **params))


def defvectorized(prim: Primitive) -> None:
    """The primitive applied to batched operands as they are, all batched
    along the same axis."""
    def batcher(args: Sequence[Any], dims: Sequence[Any], **params: Any) -> Any:
        mapped = [d for d in dims if d is not None]
        if any(d != mapped[0] for d in mapped):
            raise NotImplementedError(f"defvectorized {prim.name}: operands batched along "
                                      f"different axes {list(dims)}")
        return prim.bind(*args, **params), mapped[0]
    primitive_batchers[prim] = batcher


def lower_fun(fun: Rule, multiple_results: bool = True) -> Rule:
    """A lowering written as a function of arrays; spec evaluates user
    primitives by their impl and lowers none, so the function is kept."""
    return fun


def register_lowering(prim: Primitive, rule: Rule, platform: str | None = None) -> None:
    lowerings[prim] = rule


def jaxpr_as_fun(closed_jaxpr: Jaxpr, *args: Any) -> Any:
    """The function a closed jaxpr computes: its results as a list."""
    def fun(*operands: Any) -> list[Any]:
        return eval_jaxpr(closed_jaxpr, closed_jaxpr.consts, *operands)
    return fun(*args) if args else fun


def unsupported(module: str, name: str) -> Callable[..., Any]:
    """A name of JAX's interpreter modules that works on JAX's own tracing
    machinery (traces, tracers, MLIR builders), which spec does not expose."""
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{module}.{name} works on JAX's internal tracing machinery, "
                                  "which spec does not expose")
    fail.__name__ = name
    return fail


def add_tangents(a: Any, b: Any) -> Any:
    """The sum of two tangents, either of which may be a symbolic zero."""
    return _add(a, b)


def is_undefined_primal(x: Any) -> bool:
    return type(x) is UndefinedPrimal

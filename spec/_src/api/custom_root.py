"""``lax.custom_root``: a root finder differentiated by the implicit function theorem.

``solve(f, guess)`` runs as given; its derivative never differentiates ``solve``. At
the root ``x(p)`` of ``f(p, x)``, ``D_x f dx + D_p f dp = 0``, so the tangent of the
root is ``-tangent_solve(D_x f, D_p f dp)``, with respect to the values ``f`` closes
over (``p``); the initial guess and the values only ``solve`` reads get no derivative.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from spec._src.api.autodiff import jvp
from spec._src.api.custom_derivatives import custom_jvp
from spec._src.core import tree_util
from spec._src.core.interpreter import Jaxpr, eval_jaxpr
from spec._src.interpreters.ad_util import zeros_like_aval
from spec._src.lax.control_flow import _aval_of, _trace, hoist_consts
from spec._src.lax.linear_solve import check_tree


def _closed(j: Jaxpr) -> tuple[Jaxpr, list[Any]]:
    (out,), consts = hoist_consts([j])
    return out, consts


def custom_root(f: Callable[[Any], Any], initial_guess: Any,
                solve: Callable[[Callable[[Any], Any], Any], Any],
                tangent_solve: Callable[[Callable[[Any], Any], Any], Any],
                has_aux: bool = False) -> Any:
    """``solve(f, initial_guess)``, differentiated as the root of ``f``."""
    leaves, tree = tree_util.tree_flatten(initial_guess)
    in_tree = tree_util.tree_structure((initial_guess,))
    avals = [_aval_of(x, "custom_root initial_guess") for x in leaves]
    f_raw, f_tree = _trace(f, in_tree, avals, "f")
    check_tree("f", "initial_guess", f_tree, tree, False)
    s_raw, s_tree = _trace(functools.partial(solve, f), in_tree, avals, "solve")
    _, aux_tree = check_tree("solve", "initial_guess", s_tree, tree, has_aux)
    f_j, f_consts = _closed(f_raw)
    s_j, s_consts = _closed(s_raw)
    n = len(leaves)

    def f_at(consts: Sequence[Any], x: Sequence[Any]) -> list[Any]:
        return list(eval_jaxpr(f_j, [], *consts, *x))

    @custom_jvp
    def root(p: list[Any], s: list[Any], guess: list[Any]) -> list[Any]:
        return list(eval_jaxpr(s_j, [], *s, *guess))

    def root_jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...]
                 ) -> tuple[list[Any], list[Any]]:
        p, s, guess = primals
        sol = root(p, s, guess)
        x = list(sol[:n])
        _, rhs = jvp(lambda *c: f_at(c, x), tuple(p), tuple(tangents[0]))

        def linear(v: Any) -> Any:
            _, out = jvp(lambda *y: f_at(p, y), tuple(x), tuple(tree_util.tree_leaves(v)))
            return tree_util.tree_unflatten(tree, out)

        dx = tangent_solve(linear, tree_util.tree_unflatten(tree, rhs))
        dx_leaves = [-t for t in tree_util.tree_leaves(dx)]
        aux_dot = [zeros_like_aval(_aval_of(a, "aux").tangent_type()) for a in sol[n:]]
        return list(sol), [*dx_leaves, *aux_dot]

    root.defjvp(root_jvp)
    outs = root(list(f_consts), list(s_consts), list(leaves))
    if not has_aux:
        return tree_util.tree_unflatten(tree, outs)
    x = tree_util.tree_unflatten(tree, outs[:n])
    return x, tree_util.tree_unflatten(aux_tree, outs[n:])


__all__ = ["custom_root"]

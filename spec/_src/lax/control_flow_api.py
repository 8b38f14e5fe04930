"""``lax.cond``, ``lax.switch``, ``lax.while_loop``, ``lax.fori_loop``.

Each traces its functions to jaxprs (constants they close over become
operands, shared between branches), checks the types JAX checks, with JAX's
messages, and binds ``cond`` or ``while``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core import tree_util
from spec._src.core.state_types import is_ref_type
from spec._src.core.config import config
from spec._src.core.interpreter import (
    EvalTrace,
    Jaxpr,
    Tracer,
    canonical_aval_of,
    current_trace,
    dce_jaxpr,
    trace_to_jaxpr,
)
from spec._src.lax.control_flow import cond_p, hoist_consts, same_type, while_p
from spec._src.core.types import ArrayType, result_type_and_weak
from spec._src.lax.elementwise import clamp
from spec._src.lax.shaping import asarray, convert_element_type
from spec._src.core.sharding import get_abstract_mesh

_no_operand = object()


def _source(fun: Callable[..., Any]) -> str:
    name = getattr(fun, "__name__", type(fun).__name__)
    code = getattr(fun, "__code__", None)
    if code is None:
        return name
    return f"{name} at {code.co_filename}:{code.co_firstlineno}"


def _aval_of(x: Any, what: str) -> ArrayType:
    try:
        return canonical_aval_of(x)
    except TypeError:
        raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX type "
                        f"({what})") from None


def _trace(fun: Callable[..., Any], in_tree: Any, avals: Sequence[ArrayType],
           traced_for: str, leaves: Sequence[Any] = ()) -> tuple[Jaxpr, Any]:
    """``fun`` called on the pytree ``in_tree`` of arrays of ``avals``
    (the values ``leaves``), staged. It may not be passed a ref twice, close
    over a ref it is passed, nor return a ref (ValueError, JAX's messages
    naming ``traced_for``)."""
    check_ref_args(fun, traced_for, in_tree, leaves)
    out_trees: list[Any] = []

    def flat(*leaves: Any) -> list[Any]:
        args = tree_util.tree_unflatten(in_tree, leaves)
        leaves_out, tree = tree_util.tree_flatten(fun(*args))
        for leaf in leaves_out:
            _aval_of(leaf, "output of a control-flow function")
        out_trees.append(tree)
        return list(leaves_out)

    jaxpr, _ = trace_to_jaxpr(flat, avals)
    check_returned_refs(fun, traced_for, in_tree, jaxpr, out_trees[0])
    check_ref_consts(fun, traced_for, in_tree, leaves, jaxpr)
    return jaxpr, out_trees[0]


# ------------------------------------------------------------------ refs


def with_debug_info(fun: Callable[..., Any], shown: Callable[..., Any], traced_for: str,
                    arg_names: Sequence[str] | None) -> Callable[..., Any]:
    """Mark a wrapper that lax builds around a user's function (fori_loop's
    loop bodies) so that errors name the user's function, what it was
    traced for and its arguments, as JAX's messages do."""
    fun.__spec_debug_info__ = (shown, traced_for, arg_names)  # type: ignore[attr-defined]
    return fun


def arg_names(fun: Callable[..., Any], args_tree: Any) -> list[str]:
    """The names of a function's flat arguments (``args_tree``: the structure
    of the tuple of its positional arguments), as JAX's error messages give
    them: the parameter name and the leaf's key path (``c``, ``c[1]``,
    ``c['a']``); ``args[k]...`` when the signature does not bind."""
    args = tree_util.tree_unflatten(args_tree, [0] * args_tree.num_leaves)
    try:
        bound = list(inspect.signature(fun).bind(*args).arguments.items())
    except (TypeError, ValueError):
        bound = [("args", tuple(args))]
    return [f"{name}{tree_util.keystr(path)}" for name, x in bound
            for path, _ in tree_util.tree_flatten_with_path(x)[0]]


def result_paths(out_tree: Any) -> list[str]:
    """``result[0][1]``-style paths of a function's flat results; none for a
    single bare result (JAX names no path then)."""
    out = tree_util.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
    paths = [f"result{tree_util.keystr(p)}" for p, _ in tree_util.tree_flatten_with_path(out)[0]]
    return [""] if paths == ["result"] else paths


def tuple_tree(*trees: Any) -> Any:
    """The structure of a tuple of pytrees of the given structures."""
    return tree_util.tree_structure(tuple(
        tree_util.tree_unflatten(t, [0] * t.num_leaves) for t in trees))


def check_returned_refs(fun: Callable[..., Any], traced_for: str, args_tree: Any,
                        jaxpr: Jaxpr, out_tree: Any) -> None:
    """A function traced for control flow returns no ref (ValueError, JAX's
    message): the caller would get a second name for a buffer. Says where
    the ref came from: an argument, a ref the function closed over, or one
    it created."""
    bad = [k for k, v in enumerate(jaxpr.outvars) if is_ref_type(v.aval)]
    if not bad:
        return
    k = bad[0]
    out = jaxpr.outvars[k]
    shown, what, names = getattr(fun, "__spec_debug_info__", (fun, traced_for, None))
    paths = result_paths(out_tree)
    loc = f" at output tree path {paths[k]}" if k < len(paths) and paths[k] else ""
    if any(out is v for v in jaxpr.invars):
        i = next(i for i, v in enumerate(jaxpr.invars) if out is v)
        names = list(names) if names is not None else arg_names(fun, args_tree)
        origin = f"was passed in as the argument {names[i] if i < len(names) else ''}"
    elif any(out is v for e in jaxpr.eqns for v in e.outvars):
        origin = "was created inside the function"
    else:
        origin = ("was closed over by the function, rather than passed in as an argument or "
                  "created inside it")
    raise ValueError(
        f"function {_source(shown)} traced for {what} returned a mutable array reference of "
        f"type {out.aval}{loc}, but mutable array references cannot be returned.\n\n"
        f"The returned mutable array {origin}.")


def _referent(x: Any) -> Any:
    """What a ref value stands for: a staged ref its variable, an eager ref
    itself."""
    return getattr(x, "var", x)


def check_ref_args(fun: Callable[..., Any], traced_for: str, args_tree: Any,
                   leaves: Sequence[Any]) -> None:
    """A ref may be passed to a traced function once: two arguments naming
    one buffer would alias (ValueError, JAX's message)."""
    seen: dict[int, int] = {}
    for i, x in enumerate(leaves):
        aval = getattr(x, "aval", None)
        if not is_ref_type(aval):
            continue
        first = seen.setdefault(id(_referent(x)), i)
        if first != i:
            names = arg_names(fun, args_tree)
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a "
                f"function, but when tracing {_source(fun)} for {traced_for} the mutable "
                f"array reference of type {aval} appeared at both {names[first]} and "
                f"{names[i]}.")


def check_ref_consts(fun: Callable[..., Any], traced_for: str, args_tree: Any,
                     leaves: Sequence[Any], jaxpr: Jaxpr) -> None:
    """A ref may not be both closed over by a traced function and passed to
    it (ValueError, JAX's message)."""
    passed = {id(_referent(x)): i for i, x in enumerate(leaves)
              if is_ref_type(getattr(x, "aval", None))}
    if not passed:
        return
    for c in jaxpr.consts:
        i = passed.get(id(_referent(c)))
        if i is not None and is_ref_type(getattr(c, "aval", None)):
            raise ValueError(
                f"when tracing {_source(fun)} for {traced_for}, a mutable array reference of "
                f"type {c.aval} was both closed over and passed as the argument "
                f"{arg_names(fun, args_tree)[i]}")


def _check_eager_aliases(operands: Sequence[Any], prim: str) -> None:
    """Eagerly JAX runs a control-flow primitive as a jit of it, whose
    arguments may not name one ref twice (a while whose predicate and body
    both read a ref passes it twice); staged, the equation may."""
    if type(current_trace()) is not EvalTrace:
        return
    seen: dict[int, int] = {}
    for i, x in enumerate(operands):
        aval = getattr(x, "aval", None)
        if is_ref_type(aval) and seen.setdefault(id(_referent(x)), i) != i:
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a "
                f"function, but when tracing {prim} for jit the mutable array reference of "
                f"type {aval} appeared at both args[{seen[id(_referent(x))]}] and args[{i}].")


def _long(a: ArrayType) -> str:
    """A type as JAX's error messages show it: ``float32[3]``, with its
    varying manual axes (``float32[3]{V:i}``)."""
    suffix = a.update(sharding=None, munreduced=frozenset(), mreduced=frozenset())._suffix()
    return f"{a.dtype.name}[{','.join(map(str, a.shape))}]{suffix}"


def vma_hint(missing: Any, where: str, comma: bool = False) -> str:
    """JAX's advice for values whose varying manual axes differ."""
    order = list(get_abstract_mesh().axis_names)
    axes = tuple(sorted(missing, key=lambda a: order.index(a) if a in order else len(order)))
    return (f"\nThis might be fixed by applying `jax.lax.pcast(..., {axes}, to='varying')`"
            f"{',' if comma else ''} {where}.\nSee "
            "https://docs.jax.dev/en/latest/201/shard-map.html#scan-vma for more information.\n")


def _mismatch(a: ArrayType, b: ArrayType) -> str:
    """Which parts of two unequal types differ, listed as JAX lists them."""
    parts = []
    if a.dtype != b.dtype:
        parts.append("the dtypes do not match")
    if a.shape != b.shape:
        parts.append("the shapes do not match")
    if a.vma != b.vma:
        parts.append("the manual axis types do not match")
    if not parts:
        return ""
    if len(parts) == 1:
        return ", so " + parts[0]
    return ", so " + ", ".join(parts[:-1]) + ", and " + parts[-1]


class _Leaf:
    """A stand-in for a leaf when describing structural differences."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


# How JAX names a leaf of its carry types (abstract arrays) and of a bare
# tree structure, in its structural-difference messages.
_CARRY_LEAF = "<class 'jax._src.core.ShapedArray'>"
_TREE_LEAF = "pytree leaf"


def _is_empty_node(x: Any) -> bool:
    try:
        tree_util.flatten_one_level(x)
    except ValueError:
        return False
    return True


def structure_differences(t1: Any, t2: Any, path: tuple[Any, ...] = ()
                          ) -> list[tuple[tuple[Any, ...], str, str, str]]:
    """Where two pytrees' structures differ: (key path, what the first has,
    what the second has, why they differ), as JAX's messages describe them.
    Leaves are ``_Leaf`` stand-ins (or anything that is a pytree leaf)."""
    if not _is_empty_node(t1) and not _is_empty_node(t2):
        return []  # two leaves
    leaf1, leaf2 = not _is_empty_node(t1), not _is_empty_node(t2)
    if type(t1) is not type(t2):
        name1 = t1.name if leaf1 and isinstance(t1, _Leaf) else str(type(t1))
        name2 = t2.name if leaf2 and isinstance(t2, _Leaf) else str(type(t2))
        return [(path, name1, name2, "their Python types differ")]
    if isinstance(t1, (list, tuple)) and len(t1) != len(t2):
        return [(path, f"{type(t1).__name__} of length {len(t1)}",
                 f"{type(t2).__name__} of length {len(t2)}", "the lengths do not match")]
    c1, m1 = tree_util.flatten_one_level(t1)
    c2, m2 = tree_util.flatten_one_level(t2)
    kids1, kids2 = tuple(c1), tuple(c2)
    keys1 = tuple(k for k, _ in tree_util.flatten_one_level_with_keys(t1)[0])
    keys2 = tuple(k for k, _ in tree_util.flatten_one_level_with_keys(t2)[0])
    if len(kids1) != len(kids2):
        try:
            diff = " ".join(repr(k.key) for k in set(keys1).symmetric_difference(keys2))
        except (AttributeError, TypeError):
            diff = ""
        def many(n: int) -> str:
            return "ren" if n > 1 else ""
        return [(path, f"{type(t1)} with {len(kids1)} child{many(len(kids1))}",
                 f"{type(t2)} with {len(kids2)} child{many(len(kids2))}",
                 "the numbers of children do not match"
                 + (f", with the symmetric difference of key sets: {{{diff}}}" if diff else ""))]
    if m1 != m2:
        return [(path, f"{type(t1)} with pytree metadata {m1}",
                 f"{type(t2)} with pytree metadata {m2}",
                 "the pytree node metadata does not match")]
    out: list[tuple[tuple[Any, ...], str, str, str]] = []
    for k, a, b in zip(keys1, kids1, kids2):
        out.extend(structure_differences(a, b, (*path, k)))
    return out


def _listing(diffs: Sequence[str], capitalize: bool = True) -> str:
    """One difference as a sentence; several as a bulleted list."""
    if len(diffs) == 1:
        d = diffs[0]
        return (d[0].upper() + d[1:] if capitalize else d) + ".\n"
    return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


def check_carry(what: str, body_fun: Callable[..., Any], in_tree: Any,
                in_avals: Sequence[ArrayType], out_tree: Any,
                out_avals: Sequence[ArrayType],
                layout: Callable[[ArrayType], Any] | None = None) -> None:
    """The carry a loop body returns has the structure and types of the one
    it takes (``what``: "scan body" or "while_loop body"); JAX's messages.
    ``layout``: also compare the types' sharding layouts by it."""
    try:
        params = list(inspect.signature(body_fun).parameters)
        carry_name: str | None = params[0] if params else None
    except (ValueError, TypeError):
        carry_name = None

    def component(path: str) -> str:
        if carry_name:
            return f"the input carry component {carry_name}{path}" if path else \
                f"the input carry {carry_name}"
        return f"the input carry at path {path}" if path else "the input carry"

    if in_tree != out_tree:
        try:
            t_out = tree_util.tree_unflatten(out_tree,
                                             [_Leaf(_CARRY_LEAF)] * out_tree.num_leaves)
        except Exception:
            t_out = None
        if t_out is None:
            differences = (f"the input tree structure is:\n{in_tree}\n"
                           f"the output tree structure is:\n{out_tree}\n")
        else:
            t_in = tree_util.tree_unflatten(in_tree, [_Leaf(_CARRY_LEAF)] * in_tree.num_leaves)
            diffs = [f"{component(tree_util.keystr(p))} is a {a} but the corresponding "
                     f"component of the carry output is a {b}, so {why}"
                     for p, a, b, why in structure_differences(t_in, t_out)]
            if not diffs:
                return
            differences = _listing(diffs)
        raise TypeError(
            f"{what} function carry input and carry output must have the same pytree "
            f"structure, but they differ:\n\n{differences}\nRevise the function so that "
            "the carry output has the same pytree structure as the carry input.")
    paths = _paths(in_tree, in_avals)

    def agree(a: ArrayType, b: ArrayType) -> bool:
        return same_type(a, b) and a.vma == b.vma and \
            (layout is None or layout(a) == layout(b))

    diffs = [f"{component(p)} has type {_long(a)} but the corresponding output carry "
             f"component has type {_long(b)}{_mismatch(a, b)}"
             for p, a, b in zip(paths, in_avals, out_avals) if not agree(a, b)]
    if not diffs:
        return
    hints = [vma_hint(b.vma - a.vma, "to the initial carry value corresponding to "
                      f"{component(p)}", comma=True)
             for p, a, b in zip(paths, in_avals, out_avals) if same_type(a, b) and
             a.vma != b.vma]
    raise TypeError(f"{what} function carry input and carry output must have equal "
                    f"types, but they differ:\n\n{_listing(diffs)}{''.join(hints)}\nRevise "
                    "the function so that all output types match the corresponding input "
                    "types.")


def _paths(tree: Any, leaves: Sequence[Any]) -> list[str]:
    paths, _ = tree_util.tree_flatten_with_path(tree_util.tree_unflatten(tree, list(leaves)))
    return [tree_util.keystr(p) for p, _ in paths]


def _check_branch_outputs(api: str, name1: str, name2: str, f1: Callable[..., Any],
                          f2: Callable[..., Any], tree1: Any, avals1: Sequence[ArrayType],
                          tree2: Any, avals2: Sequence[ArrayType]) -> None:
    header = f"{name1} is {_source(f1)}\n{name2} is {_source(f2)}\n\n"
    if tree1 != tree2:
        t1 = tree_util.tree_unflatten(tree1, [_Leaf(_TREE_LEAF)] * tree1.num_leaves)
        t2 = tree_util.tree_unflatten(tree2, [_Leaf(_TREE_LEAF)] * tree2.num_leaves)

        def at(p: tuple[Any, ...]) -> str:
            return f" at path {tree_util.keystr(p)}" if p else ""
        diffs = [f"{name1} output{at(p)} is a {a} but {name2} output{at(p)} is a {b}, "
                 f"so {why}" for p, a, b, why in structure_differences(t1, t2)]
        if diffs:
            raise TypeError(
                f"{api} branch outputs must have the same pytree structure, but they "
                f"differ:\n\n{header}{_listing(diffs, capitalize=False)}\n"
                f"Revise {name1} and/or {name2} so that they have the same pytree structure.")
    def agree(a: ArrayType, b: ArrayType) -> bool:
        return same_type(a, b) and a.vma == b.vma

    if all(agree(a, b) for a, b in zip(avals1, avals2)):
        return
    paths = _paths(tree1, avals1)
    diffs = [f"the output of {name1}{f' at path {p}' if p else ''} has type {_long(a)} "
             f"but the corresponding output of {name2} has type {_long(b)}"
             f"{_mismatch(a, b)}"
             for p, a, b in zip(paths, avals1, avals2) if not agree(a, b)]
    hints = [vma_hint(b.vma - a.vma, f"to the output of {name1}")
             for a, b in zip(avals1, avals2) if same_type(a, b) and a.vma != b.vma]
    body = diffs[0][0].upper() + diffs[0][1:] + ".\n" if len(diffs) == 1 else \
        "".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"
    raise TypeError(f"{api} branches must have equal output types but they differ.\n\n"
                    f"{header}{body}{''.join(hints)}\nRevise {name1} and/or {name2} so that "
                    "all output types match.")


def _forwarded(jaxprs: Sequence[Jaxpr]) -> list[int | None]:
    """Per output: the input index every jaxpr returns unchanged there, if any."""
    result: list[int | None] = []
    for k in range(len(jaxprs[0].outvars)):
        found: set[int | None] = set()
        for j in jaxprs:
            out = j.outvars[k]
            found.add(next((i for i, v in enumerate(j.invars) if v is out), None))
        only = found.pop() if len(found) == 1 else None
        result.append(only)
    return result


def _prune_outputs(j: Jaxpr, keep: Sequence[bool]) -> Jaxpr:
    # Shallow, as JAX's tracing of a cond: calls inside a branch keep their outputs.
    return dce_jaxpr(Jaxpr(j.constvars, j.invars, [o for o, k in zip(j.outvars, keep) if k],
                           j.eqns, j.effects, j.consts), rules=False)


def _bind_cond(index: Any, funs: Sequence[Callable[..., Any]], names: Sequence[str],
               api: str, operands: Sequence[Any]) -> Any:
    leaves, in_tree = tree_util.tree_flatten(tuple(operands))
    avals = [_aval_of(x, f"{api} operand") for x in leaves]
    traced = [_trace(f, in_tree, avals, api, leaves) for f in funs]
    for (j, tree), f, name in zip(traced[1:], funs[1:], names[1:]):
        _check_branch_outputs(api, names[0], name, funs[0], f, traced[0][1],
                              traced[0][0].out_avals, tree, j.out_avals)
    jaxprs, consts = hoist_consts([j for j, _ in traced])
    # Outputs that every branch takes unchanged from one input are that input.
    fwd = _forwarded(jaxprs)
    keep = [f is None for f in fwd]
    jaxprs = [_prune_outputs(j, keep) for j in jaxprs]
    return jaxprs, consts, leaves, fwd, traced[0][1]


def _finish(outs: Sequence[Any], fwd: Sequence[int | None], inputs: Sequence[Any],
            out_tree: Any) -> Any:
    it = iter(outs)
    flat = [next(it) if f is None else asarray(inputs[f]) for f in fwd]
    return tree_util.tree_unflatten(out_tree, flat)


def cond(pred: Any, true_fun: Callable[..., Any], false_fun: Callable[..., Any],
         *operands: Any, operand: Any = _no_operand) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``;
    both branches are traced, one runs."""
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    if operand is not _no_operand:
        if operands:
            raise TypeError("if 'operand' keyword is passed then no positional operands can "
                            f"be passed, got operand={operand} and positional operands "
                            f"{operands}")
        operands = (operand,)
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, Sequence) or np.ndim(_shape_probe(pred)) != 0:
        raise TypeError(f"Pred must be a scalar, got {pred} of " + (
            f"type {type(pred)}" if isinstance(pred, Sequence)
            else f"shape {np.shape(_shape_probe(pred))}."))
    try:
        dtype = _aval_of(pred, "cond predicate").dtype
    except TypeError as err:
        raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from err
    if dtype.kind != "b":
        if dtype.kind not in "iuf":
            raise TypeError(f"Pred type must be either boolean or number, got {dtype}.")
        pred = pred != 0
    if config.jax_disable_jit and not isinstance(pred, Tracer):
        return true_fun(*operands) if bool(pred) else false_fun(*operands)
    jaxprs, consts, leaves, fwd, out_tree = _bind_cond(
        pred, [true_fun, false_fun], ["true_fun", "false_fun"], "cond", operands)
    index = convert_element_type(pred, np.int32)
    outs = cond_p.bind(index, *consts, *leaves, branches=(jaxprs[1], jaxprs[0]))
    return _finish(outs, fwd, [*consts, *leaves], out_tree)


def _shape_probe(x: Any) -> Any:
    """Something ``np.shape`` understands, without reading a tracer's value."""
    if isinstance(x, Tracer) or hasattr(x, "aval"):
        return np.empty(canonical_aval_of(x).shape)
    return x


def switch(index: Any, branches: Sequence[Callable[..., Any]], *operands: Any,
           operand: Any = _no_operand) -> Any:
    """``branches[clamp(0, index, len(branches) - 1)](*operands)``."""
    if not all(callable(b) for b in branches):
        raise TypeError("lax.switch: branches argument should be a sequence of callables.")
    if operand is not _no_operand:
        if operands:
            raise TypeError("if 'operand' keyword is passed then no positional operands can "
                            f"be passed, got operand={operand} and positional operands "
                            f"{operands}")
        operands = (operand,)
    shape = np.shape(_shape_probe(index))
    if len(shape) != 0:
        raise TypeError(f"Branch index must be scalar, got {index} of shape {shape}.")
    try:
        dtype = _aval_of(index, "switch index").dtype
    except TypeError as err:
        raise TypeError(f"Index type must be an integer, got {index}.") from err
    if dtype.kind not in "iu":
        raise TypeError(f"Index type must be an integer, got {index} as {dtype}")
    funs = tuple(branches)
    if not funs:
        raise ValueError("Empty branch sequence")
    if len(funs) == 1:
        return funs[0](*operands)
    index = convert_element_type(index, np.int32)
    index = clamp(np.array(0, np.int32), index, np.array(len(funs) - 1, np.int32))
    if config.jax_disable_jit and not isinstance(index, Tracer):
        return funs[int(index)](*operands)
    names = ["branch 0", *(f"branch{i}" for i in range(1, len(funs)))]
    jaxprs, consts, leaves, fwd, out_tree = _bind_cond(index, funs, names, "switch", operands)
    outs = cond_p.bind(index, *consts, *leaves, branches=tuple(jaxprs))
    return _finish(outs, fwd, [*consts, *leaves], out_tree)


# ---------------------------------------------------------------- loops


def _reads(j: Jaxpr) -> set[int]:
    live = dce_jaxpr(j)
    read = {id(a) for e in live.eqns for a in e.invars}
    return read | {id(a) for a in live.outvars}


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any],
               init_val: Any) -> Any:
    """Apply ``body_fun`` to the carry while ``cond_fun`` of it is true."""
    if not (callable(body_fun) and callable(cond_fun)):
        raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
    if config.jax_disable_jit:
        val = tree_util.tree_map(asarray, init_val)
        while cond_fun(val):
            val = tree_util.tree_map(asarray, body_fun(val))
        return val
    leaves, tree = tree_util.tree_flatten(init_val)
    in_tree = tree_util.tree_structure((init_val,))

    def make(avals: Sequence[ArrayType]) -> tuple[Jaxpr, Jaxpr, Any]:
        cj, ctree = _trace(cond_fun, in_tree, avals, "while_cond")
        bj, btree = _trace(body_fun, in_tree, avals, "while_body")
        if not tree_util.treedef_is_leaf(ctree) or len(cj.outvars) != 1:
            raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {ctree}.")
        p = cj.out_avals[0]
        if p.shape != () or p.dtype != np.dtype(np.bool_):
            raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                            f"[{p!r}].")
        return cj, bj, btree

    avals = [_aval_of(x, "while_loop carry") for x in leaves]
    cond_j, body_j, out_tree = make(avals)
    if len(body_j.outvars) != len(avals) or out_tree != tree:
        check_carry("while_loop body", body_fun, tree, avals, out_tree, body_j.out_avals)
    # Weakly typed initial values take the type the body gives them.
    changed = False
    for i, (a, o) in enumerate(zip(avals, body_j.out_avals)):
        if a.weak_type and not same_type(a, o):
            dtype, _ = result_type_and_weak(leaves[i], o.dtype)
            leaves[i] = convert_element_type(leaves[i], dtype)
            changed = True
    if changed:
        avals = [_aval_of(x, "while_loop carry") for x in leaves]
        cond_j, body_j, out_tree = make(avals)
    check_carry("while_loop body", body_fun, tree, avals, out_tree, body_j.out_avals)
    (cond_j,), cconsts = hoist_consts([cond_j])
    (body_j,), bconsts = hoist_consts([body_j])
    # A carry the body returns unchanged and the predicate ignores is a body
    # constant (JAX does this so that vmap need not batch it).
    nb, nc = len(bconsts), len(cconsts)
    read = _reads(cond_j)
    move = [body_j.outvars[k] is body_j.invars[nb + k] and id(cond_j.invars[nc + k]) not in read
            for k in range(len(leaves))]
    init = list(leaves)
    moved: list[Any] = []
    if any(move):
        cond_j = Jaxpr([], [v for i, v in enumerate(cond_j.invars)
                            if i < nc or not move[i - nc]],
                       cond_j.outvars, dce_jaxpr(cond_j).eqns, cond_j.effects)
        binders = body_j.invars
        front = [binders[nb + k] for k in range(len(leaves)) if move[k]]
        rest = [v for i, v in enumerate(binders) if i < nb or not move[i - nb]]
        body_j = Jaxpr([], [*front, *rest], [o for o, m in zip(body_j.outvars, move) if not m],
                       body_j.eqns, body_j.effects)
        moved = [x for x, m in zip(init, move) if m]
        init = [x for x, m in zip(init, move) if not m]
        bconsts = [*moved, *bconsts]
    _check_eager_aliases([*cconsts, *bconsts, *init], "while")
    outs = while_p.bind(*cconsts, *bconsts, *init, cond_nconsts=len(cconsts),
                        cond_jaxpr=cond_j, body_nconsts=len(bconsts), body_jaxpr=body_j)
    it, mv = iter(outs), iter(moved)
    flat = [next(mv) if m else next(it) for m in move]
    return tree_util.tree_unflatten(tree, flat)


__all__ = ["cond", "switch", "while_loop"]

"""vmap of functions using refs: batched refs, batched indices,
batched written values, refs as vmap arguments, refs made inside the vmapped
function, vmap of jit, and the refusal of writes into unbatched refs.

Every deterministic test runs one program on spec and on real JAX (live, in
this process) and compares values, the final contents of the refs, printed
jaxprs and exception classes and messages. The property test compares spec
with a NumPy loop over the batch (the meaning of vmap).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spec
import spec.numpy as snp


def both(fn: Callable[[Any, Any], Any]) -> tuple[Any, Any]:
    """``fn(lib, numpy_module)`` on spec, then on JAX."""
    return fn(spec, snp), fn(jax, jnp)


@dataclass(frozen=True)
class Raised:
    cls: type[BaseException]
    msg: str


def outcome(fn: Callable[[], Any]) -> Any:
    """What ``fn`` gives, or the class and message of what it raises."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 (the error is the result)
        return Raised(type(e), str(e))


def assert_same(ours: Any, theirs: Any) -> None:
    """Equal structure; arrays equal exactly with the same dtype and shape;
    the same exception class, spec's message JAX's (spec may add the
    constraint it checks)."""
    if isinstance(theirs, Raised):
        assert isinstance(ours, Raised) and ours.cls is theirs.cls, (ours, theirs)
        assert ours.msg.startswith(theirs.msg.rstrip()), (ours.msg, theirs.msg)
        return
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs), (ours, theirs)
        for a, b in zip(ours, theirs):
            assert_same(a, b)
        return
    if isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray), (ours, theirs)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (ours, theirs)
        np.testing.assert_array_equal(ours, theirs)
        return
    assert ours == theirs, f"\nspec:\n{ours}\njax:\n{theirs}"


def same(fn: Callable[[Any, Any], Any]) -> Any:
    ours, theirs = both(lambda j, n: outcome(lambda: fn(j, n)))
    assert_same(ours, theirs)
    return ours


def contents(ref: Any) -> np.ndarray:
    return np.asarray(ref[...])


def value(x: Any) -> Any:
    return None if x is None else np.asarray(x)


UNBATCHED_SWAP = ("performing a set/swap operation with vmapped value on an unbatched array "
                  "reference of type Ref{float32[]}. Move the array reference to be an "
                  "argument to the vmapped function?")


# ------------------------------------------------------------ the documentation


def test_doc_scale_into() -> None:
    """state.md: vmap of an impure function over a batch of ref entries."""
    def prog(j: Any, n: Any) -> Any:
        def scale_into(x: Any, out_ref: Any) -> None:
            out_ref[...] = 2.0 * x

        xs = n.arange(3.0)
        out_ref = j.new_ref(n.zeros(3))
        text = str(j.make_jaxpr(j.vmap(scale_into))(xs, out_ref))
        before = contents(out_ref)  # (make_jaxpr only traces)
        result = j.vmap(scale_into)(xs, out_ref)
        return text, before, result, contents(out_ref), repr(out_ref)
    text, _, result, after, _ = same(prog)
    assert result is None and "b[...] <- c" in text
    np.testing.assert_array_equal(after, [0.0, 2.0, 4.0])


def test_doc_write_shared_raises() -> None:
    """state.md: vmap of a function closing over a ref it writes fails."""
    def prog(j: Any, n: Any) -> Any:
        r = j.new_ref(0.0)

        def write_shared(x: Any) -> None:
            r[...] = x

        return outcome(lambda: j.vmap(write_shared)(n.arange(3.0))), contents(r)
    err, after = same(prog)
    assert err == Raised(Exception, UNBATCHED_SWAP)
    assert after == 0.0


@pytest.mark.parametrize("how", ["const", "iadd", "addupdate", "index", "jit"])
def test_write_into_unbatched_ref_raises(how: str) -> None:
    """Any write into a ref the vmapped function closes over (or gets with
    in_axes=None) is refused, even of an unbatched value."""
    def prog(j: Any, n: Any) -> Any:
        r = j.new_ref(n.zeros(()))
        v = j.new_ref(n.zeros(4))

        def f(x: Any, w: Any) -> None:
            if how == "const":
                r[...] = 1.0
            elif how == "iadd":
                r[...] += x
            elif how == "addupdate":
                j.ref.addupdate(r, ..., x)
            elif how == "index":
                w[1] = x  # w is passed with in_axes=None
            else:
                j.jit(lambda y: j.ref.swap(r, (), y))(x)

        return outcome(lambda: j.vmap(f, in_axes=(0, None))(n.arange(3.0), v))
    err = same(prog)
    assert err.cls is Exception and "unbatched array reference" in err.msg


def test_reading_an_unbatched_ref() -> None:
    """Reads of a closed-over ref (or one passed with in_axes=None) are fine."""
    def prog(j: Any, n: Any) -> Any:
        r = j.new_ref(n.arange(4.0))

        def f(x: Any, q: Any) -> Any:
            return r[...] * x + q[1]

        def g(i: Any) -> Any:
            return r[i] + r[1:3][0]

        xs, q = n.arange(3.0), j.new_ref(n.array([5.0, 7.0]))
        jit_f = j.jit(lambda x: r[2] + x)
        return (value(j.vmap(f, in_axes=(0, None))(xs, q)),
                str(j.make_jaxpr(j.vmap(f, in_axes=(0, None)))(xs, q)),
                value(j.vmap(g)(n.array([3, 0, 1]))), str(j.make_jaxpr(j.vmap(g))(n.array([3, 0]))),
                value(j.vmap(jit_f)(xs)), str(j.make_jaxpr(j.vmap(jit_f))(xs)))
    same(prog)


# ------------------------------------------------- refs made inside the vmap


def test_new_ref_inside_vmap() -> None:
    """A ref of a batched value is batched; a ref of an unbatched value is
    broadcast (so that batched values can be written into it)."""
    def prog(j: Any, n: Any) -> Any:
        def batched_init(x: Any) -> Any:
            q = j.new_ref(x)
            q[...] += 1.0
            return q[...]

        def unbatched_init(x: Any) -> Any:
            q = j.new_ref(n.zeros(3))
            q[1] = x
            j.ref.addupdate(q, ..., n.ones(3))
            return j.ref.freeze(q)

        def unused(x: Any) -> Any:
            q = j.new_ref(n.ones(2))
            return q[...]

        xs = n.arange(3.0)
        return tuple(
            item for fn in (batched_init, unbatched_init, unused)
            for item in (value(j.vmap(fn)(xs)), str(j.make_jaxpr(j.vmap(fn))(xs)),
                         str(j.make_jaxpr(j.vmap(j.jit(fn)))(xs))))
    same(prog)


def test_vmap_returns_a_ref() -> None:
    def prog(j: Any, n: Any) -> Any:
        made = j.vmap(lambda x: j.new_ref(x * 2.0))(n.arange(3.0))
        ref = j.new_ref(n.arange(6.0).reshape(2, 3))
        back = j.vmap(lambda r: r, in_axes=1, out_axes=1)(ref)
        return (repr(made), str(j.typeof(made)), back is ref,
                outcome(lambda: j.vmap(lambda: j.new_ref(1.0), axis_size=2)().shape))
    same(prog)


def test_moving_a_returned_refs_batch_axis_is_an_error() -> None:
    """A ref cannot be transposed: returning one with its batch axis
    elsewhere than out_axes fails (JAX: an internal AttributeError; spec: the
    refusal of a ref operand)."""
    def prog(j: Any, n: Any) -> Any:
        ref = j.new_ref(n.arange(6.0).reshape(2, 3))
        return outcome(lambda: j.vmap(lambda r: r, in_axes=1)(ref))
    ours, theirs = both(prog)
    assert isinstance(theirs, Raised)
    assert ours == Raised(ValueError, "Attempting to pass a Ref Ref{float32[2,3]} to a "
                          "primitive: transpose -- did you forget to unpack ([...]) the ref?")


# ------------------------------------------- refs as arguments, and vmap of jit


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_ref_argument_mapped_axis(axis: int) -> None:
    """Each example reads and updates its own slice of the caller's ref."""
    def prog(j: Any, n: Any) -> Any:
        ref = j.new_ref(n.arange(12.0).reshape(3, 4))
        size = 3 if axis == 0 else 4
        xs = n.arange(float(size)) * 10.0

        def f(x: Any, r: Any) -> Any:
            old = r[1]
            r[1] += x
            r[0] = old
            return r[...].sum()

        text = str(j.make_jaxpr(j.vmap(f, in_axes=(0, axis)))(xs, ref))
        out = j.vmap(f, in_axes=(0, axis))(xs, ref)
        return text, value(out), contents(ref)
    same(prog)


def test_vmap_of_jit_with_ref_arguments() -> None:
    def prog(j: Any, n: Any) -> Any:
        def body(x: Any, r: Any, acc: Any) -> Any:
            r[...] = 2.0 * x
            j.ref.addupdate(acc, 0, x)
            return r[...] + acc[1]

        step = j.jit(body)

        xs = n.arange(3.0)
        out_ref, acc = j.new_ref(n.zeros(3)), j.new_ref(n.ones((2, 3)))
        vm = j.vmap(step, in_axes=(0, 0, 1))
        text = str(j.make_jaxpr(vm)(xs, out_ref, acc))
        out = vm(xs, out_ref, acc)
        jvm = j.jit(vm)
        text2 = str(j.make_jaxpr(jvm)(xs, out_ref, acc))
        out2 = jvm(xs, out_ref, acc)
        return text, value(out), text2, value(out2), contents(out_ref), contents(acc)
    same(prog)


def test_nested_vmap() -> None:
    def prog(j: Any, n: Any) -> Any:
        ref = j.new_ref(n.zeros((2, 3, 4)))

        def inner(x: Any, r: Any) -> None:
            r[1] += x
            j.ref.addupdate(r, 2, x * x)

        vv = j.vmap(j.vmap(inner, in_axes=(0, 1)), in_axes=(0, 0))
        xs = n.arange(8.0).reshape(2, 4)
        text = str(j.make_jaxpr(vv)(xs, ref))
        vv(xs, ref)
        vv2 = j.vmap(j.vmap(inner, in_axes=(None, 0)), in_axes=(0, 2))
        text2 = str(j.make_jaxpr(vv2)(n.ones((4, 3)), ref))
        vv2(n.ones((4, 3)), ref)
        return text, text2, contents(ref)
    same(prog)


def test_addupdate_repeated_batched_indices_accumulate() -> None:
    def prog(j: Any, n: Any) -> Any:
        ref = j.new_ref(n.zeros((2, 5)))

        def f(r: Any, i: Any, v: Any) -> None:
            j.ref.addupdate(r, i, v)

        idx = n.array([[1, 1, 2], [4, 4, 4]])
        j.vmap(f, in_axes=(0, 0, None))(ref, idx, n.array([1.0, 2.0, 3.0]))
        j.vmap(f, in_axes=(0, 0, 0))(ref, idx, n.ones((2, 3)))
        return contents(ref), str(j.make_jaxpr(j.vmap(f, in_axes=(0, 0, None)))(
            ref, idx, n.ones(3)))
    out, _ = same(prog)
    np.testing.assert_array_equal(out, [[0, 5, 4, 0, 0], [0, 0, 0, 0, 9]])


def test_written_values_keep_the_refs_dtype() -> None:
    """Python scalars (weak) broadcast along the batch and write into f32 and
    i32 refs; a strong value of another dtype is the typing error."""
    def prog(j: Any, n: Any) -> Any:
        f, i = j.new_ref(n.zeros((2, 3))), j.new_ref(n.zeros((2, 3), dtype=n.int32))

        def write(r: Any, s: Any) -> None:
            r[...] = s
            r[0] = s

        text = str(j.make_jaxpr(j.vmap(write, in_axes=(0, None)))(f, 2.0))
        j.vmap(write, in_axes=(0, None))(f, 2.0)
        j.vmap(write, in_axes=(1, None))(i, 7)
        bad = outcome(lambda: j.vmap(write, in_axes=(0, None))(f, n.int32(1)))
        return text, contents(f), contents(i), bad
    same(prog)


# ----------------------------------------------------------- the indexing matrix
#
# Per-example ref of shape (3, 4, 5), batch of 2. Each index kind gives the
# per-example index from the index operands (given to vmap with the listed
# in_axes); the ref's batch axis, the written value's and the operation vary.

B = 2
SHAPE = (3, 4, 5)
A2 = np.array([2, 0], np.int32)  # an unbatched index array (valid for every dim)
BA = np.array([[1, 1], [0, 2]], np.int32)  # batched index arrays, batch first
BS = np.array([2, 1], np.int32)  # batched scalars

IndexKind = tuple[Callable[..., Any], tuple[np.ndarray, ...], tuple[int | None, ...]]
KINDS: dict[str, IndexKind] = {
    "ellipsis": (lambda: ..., (), ()),
    "int": (lambda: 1, (), ()),
    "int_slice": (lambda: (2, slice(1, 3)), (), ()),
    "slice_int": (lambda: (slice(None), 3), (), ()),
    "strided": (lambda: (slice(0, 3, 2), 1, slice(1, 5, 2)), (), ()),
    "bscalar": (lambda i: i, (BS,), (0,)),
    "slice_bscalar": (lambda i: (slice(1, 3), i), (BS,), (0,)),
    "bscalars": (lambda i, k: (i, slice(None), k), (BS, BS[::-1].copy()), (0, 0)),
    "array": (lambda a: a, (A2,), (None,)),
    "slice_array_array": (lambda a, b: (slice(None), a, b), (A2, A2[::-1].copy()), (None, None)),
    "array_slice_array": (lambda a, b: (a, slice(None), b), (A2, A2[::-1].copy()), (None, None)),
    "slice_barray": (lambda a: (slice(1, 3), a), (BA,), (0,)),
    "barray_t_slice_array": (lambda a, b: (a, slice(None), b), (BA.T.copy(), A2), (1, None)),
    "slice_barray_barray": (lambda a, b: (slice(None), a, b), (BA, BA[::-1].copy()), (0, 0)),
}


def _per_example_shape(kind: str) -> tuple[int, ...]:
    build, args, axes = KINDS[kind]
    example = [a if ax is None else np.take(a, 0, axis=ax) for a, ax in zip(args, axes)]
    shape: tuple[int, ...] = np.zeros(SHAPE)[build(*example)].shape
    return shape


def _indexing_program(kind: str, op: str, ref_axis: int | None, val_axis: int | None
                      ) -> Callable[[Any, Any], Any]:
    build, idx_args, idx_axes = KINDS[kind]

    def prog(j: Any, n: Any) -> Any:
        full = np.arange(B * 60, dtype=np.float32).reshape(B, *SHAPE)
        init = full[0] if ref_axis is None else np.moveaxis(full, 0, ref_axis)
        ref = j.new_ref(n.asarray(init))
        per = _per_example_shape(kind)
        val = 1000.0 + np.arange(B * int(np.prod(per)), dtype=np.float32).reshape(B, *per)
        val = val[0] if val_axis is None else np.moveaxis(val, 0, val_axis)

        def f(r: Any, v: Any, *ix: Any) -> Any:
            idx = build(*ix)
            if op == "get":
                return r[idx]
            if op == "swap":
                return j.ref.swap(r, idx, v)
            j.ref.addupdate(r, idx, v)
            return None

        vm = j.vmap(f, in_axes=(ref_axis, val_axis, *idx_axes))
        args = (ref, n.asarray(val), *(n.asarray(a) for a in idx_args))
        text = outcome(lambda: str(j.make_jaxpr(vm)(*args)))
        out = outcome(lambda: value(vm(*args)))
        return text, out, contents(ref)
    return prog


def _write_ref_axes(k: int) -> list[int]:
    """Two of the three batch axes of a written ref, a different pair for
    consecutive index kinds: every (op, ref axis, value axis) combination
    still meets several kinds, at two thirds of the full product's cost."""
    axes = [0, 2, -1]
    return [a for i, a in enumerate(axes) if i != k % 3]


_CASES = [(kind, op, ref_axis, val_axis)
          for k, kind in enumerate(KINDS)
          for op, val_axes in (("get", [None]), ("swap", [0, None, -1]), ("add", [0, None]))
          for ref_axis in ([None, 0, 1, 3] if op == "get" else _write_ref_axes(k))
          for val_axis in val_axes
          if ref_axis is not None or KINDS[kind][2]]  # (something batched)


@pytest.mark.parametrize(("kind", "op", "ref_axis", "val_axis"), _CASES)
def test_indexing_matrix(kind: str, op: str, ref_axis: int | None, val_axis: int | None
                         ) -> None:
    same(_indexing_program(kind, op, ref_axis, val_axis))


@pytest.mark.parametrize("kind", ["int", "bscalar", "slice_barray"])
def test_indexing_matrix_unbatched_ref_write(kind: str) -> None:
    """A write into a ref passed with in_axes=None: JAX's error, whatever the
    index and value."""
    for op in ("swap", "add"):
        out = same(_indexing_program(kind, op, None, 0))
        assert isinstance(out[0], Raised) and out[0].cls is Exception


# ---------------------------------------------------------------- properties


@st.composite
def _programs(draw: st.DrawFn) -> dict[str, Any]:
    size = draw(st.integers(1, 4))
    rows, cols = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    ref_axis = draw(st.integers(0, 2))
    k = draw(st.integers(1, 3))
    return {
        "size": size, "rows": rows, "cols": cols, "ref_axis": ref_axis,
        "op": draw(st.sampled_from(["get", "set", "add", "iadd"])),
        "where": draw(st.sampled_from(["row", "col", "rows", "cols", "whole"])),
        "idx_batched": draw(st.booleans()), "val_batched": draw(st.booleans()),
        "idx": draw(st.lists(st.lists(st.integers(0, 3), min_size=k, max_size=k),
                          min_size=size, max_size=size)),
        "k": k, "seed": draw(st.integers(0, 2**16))}


def _index(where: str, i: Any) -> Any:
    """The per-example index from one example's index operand ``i`` (a
    scalar for row/col, an array for rows/cols)."""
    if where == "whole":
        return ...
    return i if where in ("row", "rows") else (slice(None), i)


@given(_programs())
@settings(max_examples=20, deadline=None)
def test_vmap_equals_a_loop_over_the_batch(p: dict[str, Any]) -> None:
    """vmap of a function reading and writing its ref argument equals running
    it on each example in turn (a NumPy loop over views of the same buffer)."""
    size, rows, cols, ax = p["size"], p["rows"], p["cols"], p["ref_axis"]
    where, op = p["where"], p["op"]
    bound = rows if where in ("row", "rows") else cols
    idx = np.asarray(p["idx"], np.int32) % bound
    if where in ("row", "col"):
        idx = idx[:, 0]
    elif op == "set":
        # Distinct indices: which of repeated writes wins is unspecified (XLA).
        k = min(p["k"], bound)
        idx = ((np.arange(k) + idx[:, :1]) % bound).astype(np.int32)
    rng = np.random.default_rng(p["seed"])
    full = rng.integers(-9, 9, (size, rows, cols)).astype(np.float32)
    init = np.moveaxis(full, 0, ax)
    per = np.zeros((rows, cols))[_index(where, idx[0])].shape
    vals = rng.integers(-9, 9, (size, *per)).astype(np.float32)
    idx_in = idx if p["idx_batched"] else idx[0]
    val_in = vals if p["val_batched"] else vals[0]

    # The oracle: each example in turn, on its view of one shared buffer.
    buf = init.copy()
    expected_out = []
    for b in range(size):
        view = np.moveaxis(buf, ax, 0)[b]
        where_b = _index(where, idx_in[b] if p["idx_batched"] else idx_in)
        v = val_in[b] if p["val_batched"] else val_in
        expected_out.append(view[where_b].copy())
        if op == "set":
            view[where_b] = v
        elif op in ("add", "iadd"):
            if where == "whole":
                view[...] += v
            else:
                np.add.at(view, where_b, v)
    expected = np.stack(expected_out)

    def f(r: Any, i: Any, v: Any) -> Any:
        at = _index(where, i)
        old = r[at]
        if op == "set":
            r[at] = v
        elif op == "add":
            spec.ref.addupdate(r, at, v)
        elif op == "iadd" and where not in ("rows", "cols"):  # (+= is get/add/set)
            r[at] += v
        elif op == "iadd":
            spec.ref.addupdate(r, at, v)
        return old

    ref = spec.new_ref(snp.asarray(init))
    out = spec.vmap(f, in_axes=(ax, 0 if p["idx_batched"] else None,
                                0 if p["val_batched"] else None))(
        ref, snp.asarray(idx_in), snp.asarray(val_in))
    np.testing.assert_array_equal(np.asarray(out), expected)
    np.testing.assert_array_equal(np.asarray(ref[...]), buf)

"""Bad-input fuzzing: ``python -m spec.testing.fuzz --bad-inputs N``.

Random calls of the public API whose arguments are drawn from the spellings of each
argument's kind (axes, shapes, dtypes, counts, fill values, sequences) that users write by
mistake, mixed with good ones: floats for integers, strings, sets, bytes, None, huge and
negative sizes, repeated axes. Each call runs as text in spec and in JAX. Where JAX raises,
spec must raise a class whose MRO holds a class of the same name; where JAX returns, spec
must return the same shape, dtype and values (floats to one ULP: XLA's division by a
constant is a multiplication by its reciprocal). A disagreement counts when a fresh
interpreter repeats it, since JAX's caches can carry an earlier call's outcome to a later
one. Each is printed as the call itself, which runs as it stands with ``jnp``, ``np`` and
``lax`` bound.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import random
import subprocess
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import spec
import spec.numpy as snp
from spec import lax as slax
from spec._src.core import types as T

X = "jnp.arange(6.0).reshape(2, 3)"

# Spellings of each kind of argument, good and bad; sizes stay small where accepted.
POOLS: dict[str, tuple[str, ...]] = {
    "axis": ("0", "1", "-1", "5", "-3", "1.0", "'0'", "{1}", "{0, 1}", "(0, 0)", "[1]",
             "None", "True", "np.int64(1)", "np.array(1)", "1j", "b'0'", "()", "(0.0,)"),
    "shape": ("(2, 3)", "3", "()", "[2]", "-1", "(2, -1)", "2.0", "(1.5,)", "'3'", "None",
              "{1, 2}", "{}", "b'xy'", "np.array([2, 3])", "(2**62,)", "2**63",
              "(np.int32(2),)", "[[2]]",
              "(4, 2, 3)", "(2.0, 3)", "(4.0, 2, 3)", "(2, None)", "((2,), 3)"),
    "dtype": ("jnp.float32", "'int8'", "'float'", "bool", "int", "None", "'foo'", "1",
              "np.dtype('V4')", "object", "str", "jnp.bfloat16", "'complex64'"),
    "count": ("2", "3", "0", "-1", "2.0", "2.5", "'2'", "None", "np.int64(3)", "True", "[2]"),
    "value": ("1.0", "0", "-1", "None", "'a'", "[1, 2]", "{1}", "1j", "True", "np.nan",
              "2**70", "jnp.ones(3)", "b'x'"),
    "array": (X, "jnp.ones(3)", "1.0", "[1, 2, 3]", "None", "'abc'", "{1, 2}",
              "[1, 'a']", "np.array(['a'])", "()", "[[1], [2, 3]]", "object()"),
    "dims": ("(0, 1)", "(1, 2)", "[1, 2]", "(1.0, 2)", "(0, 1.5)", "{0, 1}", "(0, 0)", "()",
             "None", "0", "(0, '1')", "np.array([0, 1])", "(0, True)", "((0, 1),)"),
    "seq": (f"[{X}, {X}]", f"({X},)", "[]", "{1, 2}", f"{X}", "None", "[1.0, 'a']",
            "[jnp.ones(2), jnp.ones(3)]"),
}

TEMPLATES: tuple[str, ...] = (
    "jnp.sum({array}, axis={axis})", "jnp.mean({array}, axis={axis})",
    "jnp.max({array}, axis={axis})", "jnp.any({array}, axis={axis})",
    "jnp.argmax({array}, axis={axis})", "jnp.cumsum({array}, axis={axis})",
    "jnp.sort({array}, axis={axis})", "jnp.take({array}, {count}, axis={axis})",
    "jnp.expand_dims({array}, {axis})", "jnp.squeeze({array}, {axis})",
    "jnp.zeros({shape})", "jnp.ones({shape}, dtype={dtype})", "jnp.full({shape}, {value})",
    "jnp.empty({shape})", "jnp.broadcast_to({array}, {shape})", "jnp.reshape({array}, {shape})",
    "jnp.round({array}, {count})", "jnp.concatenate({seq})", "jnp.stack({seq})",
    "jnp.clip({array}, {value}, {value})", "jnp.asarray({value}, dtype={dtype})",
    "jnp.array({array})", "jnp.arange({count})", "jnp.eye({count})",
    "jnp.split({array}, {count})", "jnp.linspace(0.0, 1.0, {count})",
    "jnp.astype({array}, {dtype})", "jnp.tile({array}, {count})",
    "jnp.repeat({array}, {count})", "jnp.where({array}, {value}, {value})",
    "lax.integer_pow({array}, {count})", "jnp.zeros(3, dtype={dtype})",
    "jnp.prod({array}, axis={axis})", "jnp.var({array}, axis={axis})",
    "jnp.argsort({array}, axis={axis})", "jnp.flip({array}, axis={axis})",
    "jnp.roll({array}, {count}, axis={axis})", "jnp.moveaxis({array}, {axis}, {axis})",
    "jnp.transpose({array}, {axis})", "jnp.full_like({array}, {value}, shape={shape})",
    "jnp.zeros_like({array}, dtype={dtype})", "lax.full({shape}, {value})",
    "lax.reshape({array}, {shape})", "lax.broadcast_in_dim({array}, {shape}, {dims})",
    "jnp.nonzero({array}, size={count})", "jnp.tri({count}, dtype={dtype})",
)


def draw(rng: random.Random) -> str:
    """One random call: a template with every argument drawn from its kind's pool."""
    template = rng.choice(TEMPLATES)

    class Filler(dict[str, str]):
        # Each occurrence of a slot draws its own value (``{value}, {value}``).
        def __missing__(self, key: str) -> str:
            return rng.choice(POOLS[key])

    return template.format_map(Filler())


@dataclasses.dataclass(frozen=True)
class Result:
    raised: BaseException | None
    value: Any = None


def run(snippet: str, jax_mod: Any, jnp_mod: Any, lax_mod: Any) -> Result:
    scope = {"jax": jax_mod, "jnp": jnp_mod, "lax": lax_mod, "np": np}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (x64 truncation notices: not what is compared)
        try:
            return Result(None, eval(snippet, scope))
        except Exception as e:  # noqa: BLE001 - the exception is the outcome compared
            return Result(e)


def _leaves(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _ordered_bits(x: np.ndarray) -> np.ndarray:
    """Floats as int64 in the order of their values, adjacent floats one apart (both
    zeros are 0): a float's bits read as a signed integer, negatives reflected."""
    bits = np.ascontiguousarray(x).view(f"i{x.dtype.itemsize}").astype(np.int64)
    lowest = np.int64(-(2 ** (8 * x.dtype.itemsize - 1)))
    return np.where(bits < 0, lowest - bits, bits)


def _float_parts(x: np.ndarray) -> list[np.ndarray]:
    return [x.real, x.imag] if T.is_complex(x.dtype) else [x]


def _close_floats(u: np.ndarray, v: np.ndarray) -> bool:
    """Equal up to one ULP, NaNs where JAX has NaNs: spec's division is correctly
    rounded, XLA's division by a constant is a multiplication by its rounded reciprocal
    (SPEC.md's numerical contract, rule 5), as in ``jnp.round(x, 3)``."""
    for p, q in zip(_float_parts(u), _float_parts(v)):
        nan_p, nan_q = np.isnan(p.astype(np.float64)), np.isnan(q.astype(np.float64))
        if not np.array_equal(nan_p, nan_q):
            return False
        gap = np.abs(_ordered_bits(p) - _ordered_bits(q))
        if np.any(gap[~nan_p] > 1):
            return False
    return True


def _same_values(ours: Any, theirs: Any) -> str | None:
    a, b = _leaves(ours), _leaves(theirs)
    if len(a) != len(b):
        return f"{len(a)} results, JAX {len(b)}"
    for u, v in zip(a, b):
        u_np, v_np = np.asarray(u), np.asarray(v)
        if u_np.shape != v_np.shape or u_np.dtype != v_np.dtype:
            return f"{u_np.dtype}{list(u_np.shape)}, JAX {v_np.dtype}{list(v_np.shape)}"
        same = _close_floats(u_np, v_np) if T.is_inexact(u_np.dtype) else \
            np.array_equal(u_np, v_np)
        if not same:
            return f"values {u_np!r}, JAX {v_np!r}"
    return None


def jax_internal(e: BaseException) -> bool:
    """An error of JAX's compiler stack rather than a check of its API (``jnp.empty(-1)``
    fails in MLIR's verifier): spec raises its own check's class there, and the call is
    counted apart."""
    return type(e).__module__.startswith("jaxlib") or type(e).__name__ == "SystemError"


def judge(ours: Result, theirs: Result) -> str | None:
    """Why spec's outcome departs from JAX's, or None."""
    if theirs.raised is not None and jax_internal(theirs.raised):
        return None if ours.raised is not None else (
            f"JAX fails internally ({type(theirs.raised).__name__}); spec returns")
    if theirs.raised is not None:
        name = type(theirs.raised).__name__
        if ours.raised is None:
            return f"JAX raises {name}: {theirs.raised}; spec returns"
        if name not in [k.__name__ for k in type(ours.raised).__mro__]:
            return (f"JAX raises {name}: {str(theirs.raised)[:120]}; spec raises "
                    f"{type(ours.raised).__name__}: {str(ours.raised)[:120]}")
        return None
    if ours.raised is not None:
        return f"JAX returns; spec raises {type(ours.raised).__name__}: {ours.raised}"
    return _same_values(ours.value, theirs.value)


def judge_snippet(snippet: str) -> str | None:
    """Run ``snippet`` in JAX and in spec and judge the outcomes (``judge``)."""
    import jax  # the oracle, imported when a campaign runs
    import jax.numpy as jnp  # (the oracle)
    from jax import lax as jlax  # (the oracle)

    theirs = run(snippet, jax, jnp, jlax)
    return judge(run(snippet, spec, snp, slax), theirs)


def judge_in_fresh_process(snippet: str) -> str | None:
    """``judge_snippet`` in a new interpreter, where no earlier call has filled a cache.
    JAX keeps caches keyed by values equal across types (a shape of 2.0 equals one of 2),
    so in a long campaign a call may meet the trace or the error of an earlier call."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(spec.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])]))
    code = ("import sys; from spec.testing import fuzz_inputs as f; "
            "print(repr(f.judge_snippet(sys.argv[1])))")
    done = subprocess.run([sys.executable, "-c", code, snippet], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    if done.returncode != 0:
        return f"the call ends a fresh interpreter: {done.stderr.strip()[-300:]}"
    said: str | None = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return said


@dataclasses.dataclass
class Campaign:
    tried: int = 0
    rejected_by_jax: int = 0
    jax_internal: int = 0
    # Disagreements that a fresh interpreter does not reproduce (earlier calls' caches).
    history_dependent: int = 0
    failures: list[tuple[str, str]] = dataclasses.field(default_factory=list)


def campaign(n: int, seed_value: int) -> Campaign:
    """``n`` distinct random calls (fewer if the space runs out), compared with JAX; a
    disagreement counts when a fresh interpreter reproduces it."""
    import jax  # the oracle, imported when a campaign runs
    import jax.numpy as jnp  # (the oracle)
    from jax import lax as jlax  # (the oracle)

    rng = random.Random(seed_value)
    seen: set[str] = set()
    out = Campaign()
    for _ in range(20 * n):
        if out.tried >= n:
            break
        snippet = draw(rng)
        if snippet in seen:
            continue
        seen.add(snippet)
        theirs = run(snippet, jax, jnp, jlax)
        ours = run(snippet, spec, snp, slax)
        out.tried += 1
        out.rejected_by_jax += theirs.raised is not None
        out.jax_internal += theirs.raised is not None and jax_internal(theirs.raised)
        if judge(ours, theirs) is None:
            continue
        why = judge_in_fresh_process(snippet)
        if why is None:
            out.history_dependent += 1
        else:
            out.failures.append((snippet, why.splitlines()[0][:300]))
    return out


def report(c: Campaign, out: Callable[[str], None], shown: int = 20) -> None:
    for snippet, why in c.failures[:shown]:
        out(f"{snippet}\n    # {why}")
    out(f"bad-input calls: {c.tried} tried, {c.rejected_by_jax} rejected by JAX "
        f"({c.jax_internal} inside its compiler), {len(c.failures)} disagreements "
        f"({c.history_dependent} more that a fresh interpreter does not reproduce)")

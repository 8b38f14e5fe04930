"""Case registry: the ``@case`` decorator, ``register_case`` and case discovery.

A case is a function ``fn(jax, jnp, lax)`` returning a pytree of results. It never imports an
implementation itself; the runner passes in the modules of whichever implementation it is testing.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from typing import Any, overload

from conformance.compare import Contraction, Raised

CaseFn = Callable[[Any, Any, Any], Any]
ExcSpec = type[BaseException] | str
Ulp = int | Mapping[str, int]

CASES_PACKAGE = "conformance.cases"


@dataclasses.dataclass(frozen=True, eq=False)
class Case:
    """One registered case.

    ``raises`` holds exception class *names*: implementations define their own classes, so a
    declared class is matched by name against the MRO of whatever was raised.
    """

    id: str
    fn: CaseFn
    tags: frozenset[str]
    ulp: Ulp
    raises: tuple[str, ...] | None
    x64: bool

    def ulp_for(self, dtype_name: str) -> int:
        """Allowed ULP distance for float results of dtype ``dtype_name``."""
        if isinstance(self.ulp, int):
            return self.ulp
        return int(self.ulp.get(dtype_name, self.ulp.get("*", 0)))


_REGISTRY: dict[str, Case] = {}


def _short_module(module: str) -> str:
    prefix = CASES_PACKAGE + "."
    return module[len(prefix):] if module.startswith(prefix) else module


def _exc_names(raises: ExcSpec | Iterable[ExcSpec] | None) -> tuple[str, ...] | None:
    if raises is None:
        return None
    items: Iterable[ExcSpec]
    if isinstance(raises, (str, type)):
        items = (raises,)
    else:
        items = raises
    names = tuple(r if isinstance(r, str) else r.__name__ for r in items)
    if not names:
        raise ValueError("raises= must name at least one exception class")
    return names


def register_case(
    name: str,
    fn: CaseFn,
    *,
    module: str | None = None,
    tags: Iterable[str] = (),
    ulp: Ulp = 0,
    raises: ExcSpec | Iterable[ExcSpec] | None = None,
    x64: bool = False,
) -> Case:
    """Register ``fn`` as case ``<module>.<name>``; for generating many cases in a loop."""
    mod = _short_module(module if module is not None else fn.__module__)
    case_id = f"{mod}.{name}"
    if case_id in _REGISTRY:
        raise ValueError(f"duplicate conformance case id {case_id!r}")
    if isinstance(ulp, int) and ulp < 0:
        raise ValueError(f"ulp must be >= 0, got {ulp} for case {case_id!r}")
    # The module name is always a tag, so `--tags promotion` selects a whole file.
    all_tags = frozenset(tags) | {mod.split(".")[0]}
    c = Case(case_id, fn, all_tags, ulp, _exc_names(raises), x64)
    _REGISTRY[case_id] = c
    return c


@overload
def case(fn: CaseFn, /) -> CaseFn: ...


@overload
def case(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    tags: Iterable[str] = (),
    ulp: Ulp = 0,
    raises: ExcSpec | Iterable[ExcSpec] | None = None,
    x64: bool = False,
) -> Callable[[CaseFn], CaseFn]: ...


def case(
    fn: CaseFn | None = None,
    /,
    *,
    name: str | None = None,
    tags: Iterable[str] = (),
    ulp: Ulp = 0,
    raises: ExcSpec | Iterable[ExcSpec] | None = None,
    x64: bool = False,
) -> CaseFn | Callable[[CaseFn], CaseFn]:
    """Decorator registering a case; usable bare (``@case``) or with options (``@case(ulp=4)``)."""

    def deco(f: CaseFn) -> CaseFn:
        register_case(
            name or f.__name__, f, tags=tags, ulp=ulp, raises=raises, x64=x64
        )
        return f

    return deco(fn) if fn is not None else deco


def capture(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn``; an exception becomes a ``Raised`` leaf instead of aborting the whole case.

    Lets one case cover many independent sub-results (e.g. a promotion-table row) where some
    entries are expected to raise.
    """
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the exception *is* the result being recorded
        return Raised.of(e)


def contraction(value: Any, magnitude: Any, depth: int) -> Contraction:
    """Mark ``value``, the result of a contraction, for comparison under SPEC.md's numerical
    contract (within gamma_depth * magnitude + 1 ULP of the reference; see ``Contraction``)
    instead of bit for bit. ``magnitude``: the same contraction of the operands' absolute
    values; ``depth``: the number of products summed per element."""
    return Contraction(value, magnitude, depth)


def load_cases(package: str = CASES_PACKAGE) -> list[Case]:
    """Import every module of ``package`` (sorted by name) and return all registered cases."""
    pkg = importlib.import_module(package)
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue  # private helpers, not case modules
        importlib.import_module(f"{package}.{info.name}")
    return list(_REGISTRY.values())


def load_cases_named(ids: Iterable[str], package: str = CASES_PACKAGE) -> dict[str, Case]:
    """The cases with these ids, importing only their modules (an id is ``<module>.<name>``).
    Ids of no module or no case are left out."""
    wanted = set(ids)
    for module in sorted({i.split(".", 1)[0] for i in wanted}):
        try:
            importlib.import_module(f"{package}.{module}")
        except ModuleNotFoundError:
            continue
    return {i: c for i, c in _REGISTRY.items() if i in wanted}


def all_cases() -> list[Case]:
    """Cases registered so far, in registration order."""
    return list(_REGISTRY.values())

"""What a trace knows of the function it stages, for error messages.

A trace made for a transformation (``jit``, ``scan``, ...) carries the
traced function's name and source location and the name of each argument
leaf, so that an error about a traced value can say, as JAX's does, which
function was being traced for what, and which arguments the value depends
on.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DebugInfo:
    traced_for: str  # the transformation: "jit", "scan", ...
    func_src_info: str  # "f at file.py:12"
    arg_names: tuple[str, ...]  # one per flat argument leaf

    def tracing_sentence(self, depends_on: Sequence[int]) -> str:
        """JAX's sentence naming the traced function and the arguments (by
        flat position) that a value depends on."""
        where = (f"The error occurred while tracing the function {self.func_src_info} for "
                 f"{self.traced_for}.")
        names = [self.arg_names[i] for i in depends_on if i < len(self.arg_names)]
        if not names:
            return where
        if len(names) == 1:
            what = f"the value of the argument {names[0]}"
        elif len(names) == 2:
            what = f"the values of the arguments {names[0]} and {names[1]}"
        else:
            what = f"the values of the arguments {', '.join(names[:-1])}, and {names[-1]}"
        return (f"{where} This concrete value was not available in Python because it "
                f"depends on {what}.")


def func_src_info(fun: Callable[..., Any]) -> str:
    """``f at file.py:12``: the function's name and where it is defined."""
    name = getattr(fun, "__name__", type(fun).__name__)
    code = getattr(inspect.unwrap(fun), "__code__", None)
    if code is None:
        return name
    return f"{name} at {code.co_filename}:{code.co_firstlineno}"

"""Running a documentation page's code cells as a notebook runs them."""

from __future__ import annotations

import ast
import contextlib
import io
from typing import Any


def run_cell(source: str, ns: dict[str, Any]) -> str:
    """Run a cell in ``ns`` as a notebook does (its final expression shown by
    repr); returns what it printed, and the exception it raised, if any."""
    tree = ast.parse(source)
    last = tree.body[-1] if tree.body else None
    shown = isinstance(last, ast.Expr)
    body = ast.Module(body=tree.body[:-1] if shown else tree.body, type_ignores=[])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            exec(compile(body, "<cell>", "exec"), ns)
            if shown:
                assert isinstance(last, ast.Expr)
                value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns)
                if value is not None:
                    print(repr(value))
        except Exception as err:  # noqa: BLE001 (the class and message are compared)
            print(f"raises {type(err).__name__}: {err}")
    return out.getvalue()

"""``python -m spec prog.py [args]``: run a program written for JAX with spec as its ``jax``.

``python -m spec -m package.module [args]`` runs a module the same way.  The program sees its
own ``sys.argv``, runs as ``__main__``, and its tracebacks name its own file.
"""

from __future__ import annotations

import os
import runpy
import sys

from spec._src.jax_alias import install_as_jax

USAGE = "usage: python -m spec prog.py [args...] | python -m spec -m module [args...]"


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        raise SystemExit(2 if not argv else 0)
    install_as_jax()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(USAGE, file=sys.stderr)
            raise SystemExit(2)
        sys.argv = argv[1:]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    program = argv[0]
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(program)))
    runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])

# Sourced by the other scripts: make sure .venv exists and holds spec[dev].
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="$ROOT/.venv/bin/python"
STAMP="$ROOT/.venv/.spec-installed"
if [ ! -x "$PY" ]; then
  python3 -m venv "$ROOT/.venv"
fi
if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ]; then
  # uv resolves and installs from the same package index several times faster than pip
  # (a minute of a CI run), compiling the bytecode as pip does; pip is the fallback where
  # uv cannot be had.
  if ! { "$PY" -m pip install --quiet uv &&
         "$PY" -m uv pip install --quiet --compile-bytecode --python "$PY" -e ".[dev]"; }; then
    "$PY" -m pip install --quiet --upgrade pip
    "$PY" -m pip install --quiet -e ".[dev]"
  fi
  touch "$STAMP"
fi
export JAX_PLATFORMS=cpu
# Each test process imports spec, and many import JAX: with bytecode caching off (some
# environments set PYTHONDONTWRITEBYTECODE) every one of them would compile those sources
# again, seconds each.
unset PYTHONDONTWRITEBYTECODE

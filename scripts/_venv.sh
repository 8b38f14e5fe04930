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
  "$PY" -m pip install --quiet --upgrade pip
  "$PY" -m pip install --quiet -e ".[dev]"
  touch "$STAMP"
fi
export JAX_PLATFORMS=cpu

#!/usr/bin/env bash
# All tests: mypy --strict on spec, ruff, the import-layer contracts, then pytest (unit,
# property and conformance tests).
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
# mypy is one single-threaded process of a minute on a cold cache: it runs beside the
# other checks and pytest (whose workers it shares the cores with) instead of before them,
# and its report comes at the end.
mypy_log="$(mktemp)"
"$PY" -m mypy --strict spec >"$mypy_log" 2>&1 &
mypy_pid=$!
trap 'kill "$mypy_pid" 2>/dev/null || true; rm -f "$mypy_log"' EXIT
"$PY" -m ruff check spec tests conformance examples benchmarks scripts
"$ROOT/.venv/bin/lint-imports" --no-cache
# The test command is CI's: reproducible property tests (tests/conftest.py's "ci" profile).
export SPEC_TESTS_PROFILE=ci
# Two workers: CI machines have two cores.
pytest_status=0
"$PY" -m pytest -p no:cacheprovider -n 2 --durations=25 "$@" || pytest_status=$?
mypy_status=0
wait "$mypy_pid" || mypy_status=$?
echo "mypy --strict spec:"
cat "$mypy_log"
if [ "$pytest_status" -ne 0 ]; then
  exit "$pytest_status"
fi
exit "$mypy_status"

#!/usr/bin/env bash
# All tests: mypy --strict on spec, ruff, the import-layer contracts, then pytest (unit,
# property and conformance tests).
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
"$PY" -m mypy --strict spec
"$PY" -m ruff check spec tests conformance examples benchmarks scripts
"$ROOT/.venv/bin/lint-imports" --no-cache
# The test command is CI's: reproducible property tests (tests/conftest.py's "ci" profile).
export SPEC_TESTS_PROFILE=ci
# Two workers: CI machines have two cores.
"$PY" -m pytest -p no:cacheprovider -n 2 --durations=25 "$@"

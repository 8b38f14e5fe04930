#!/usr/bin/env bash
# All tests: pytest (unit, property and conformance tests) and mypy --strict on spec.
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
"$PY" -m mypy --strict spec
"$PY" -m pytest -p no:cacheprovider "$@"

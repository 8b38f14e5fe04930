#!/usr/bin/env bash
# The main job: run the conformance corpus on spec against real JAX and print the table.
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
exec "$PY" -m conformance "$@"

#!/usr/bin/env bash
# Sets up everything and runs every check: lint, types, the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --dev
echo "== ruff" >&2
.venv/bin/ruff check server tests benchmarks scripts
.venv/bin/ruff format --check server tests benchmarks scripts
echo "== mypy" >&2
.venv/bin/mypy
echo "== pytest" >&2
.venv/bin/python -m pytest -q "$@"

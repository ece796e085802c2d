#!/usr/bin/env bash
# Sets up everything and runs every check: lint, types, the release wheelhouse (built,
# installed offline without a compiler, its demo and one ask run), the VS Code extension's
# build and tests (unit + end-to-end in a real VS Code), and the whole Python test
# suite (real models, real files, real editors and LSP clients over stdio).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --dev
scripts/install-editors.sh
echo "== ruff" >&2
.venv/bin/ruff check server tests benchmarks scripts
.venv/bin/ruff format --check server tests benchmarks scripts
echo "== mypy" >&2
.venv/bin/mypy
echo "== release: the wheelhouse installed offline, without a compiler, into a new venv" >&2
scripts/release_check.sh
echo "== VS Code extension" >&2
bash editor-clients/vscode/scripts/ci.sh
echo "== pytest" >&2
.venv/bin/python -m pytest -q "$@"

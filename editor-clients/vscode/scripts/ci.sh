#!/usr/bin/env bash
# Everything the VS Code extension's CI checks, from a fresh clone:
#   npm ci -> typecheck -> unit tests -> npm run package (.vsix) -> end-to-end test ->
#   the install path end to end (the linux-x64 .vsix with the wheelhouse, a clean profile).
# Prints one "PASS"/"FAIL" line per step and a final verdict; exits non-zero on failure.
# The end-to-end step installs code-server, playwright-core and chromium on first use
# (see scripts/setup-e2e.sh) and needs the daemon (<repo>/.venv, made by scripts/setup.sh).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

T0=$(date +%s)
summary=()
finish() {
  echo
  echo "== VS Code extension CI summary"
  for line in "${summary[@]}"; do echo "  $line"; done
  echo "VS CODE EXTENSION CI $1 ($(( $(date +%s) - T0 )) s)"
}
step() {
  local name=$1; shift
  local t=$(date +%s)
  echo
  echo "== $name"
  if "$@"; then
    summary+=("PASS  $name ($(( $(date +%s) - t )) s)")
  else
    summary+=("FAIL  $name ($(( $(date +%s) - t )) s)")
    finish FAILED
    exit 1
  fi
}

step "npm ci" npm ci --no-audit --no-fund
step "typecheck" npm run --silent typecheck
step "unit tests" npm test --silent
step "package (.vsix)" npm run --silent package
step "end-to-end (code-server + chromium + daemon)" env CITELINE_E2E_SKIP_PACKAGE=1 bash scripts/e2e.sh
step "end-to-end install (linux-x64 .vsix, clean profile, no citeline on PATH)" bash scripts/e2e-install.sh
finish PASSED

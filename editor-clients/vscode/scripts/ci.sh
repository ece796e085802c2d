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
# A browser driving a real editor on a shared machine can stall once; a second, fresh run
# decides. The first run's results stay in test-results/attempt-1 and its failure is printed.
e2e_once_more() {
  env CITELINE_E2E_SKIP_PACKAGE=1 bash scripts/e2e.sh && return 0
  rm -rf test-results-attempt-1 && mv test-results test-results-attempt-1
  echo "== end-to-end: the first run failed (above; its results: test-results/attempt-1); running it once more"
  env CITELINE_E2E_SKIP_PACKAGE=1 bash scripts/e2e.sh
  local rc=$?
  mv test-results-attempt-1 test-results/attempt-1 2>/dev/null || true
  [ "$rc" = 0 ] && summary+=("NOTE  end-to-end passed on its second run; the first failed (see above)")
  return "$rc"
}
step "end-to-end (code-server + chromium + daemon)" e2e_once_more
step "end-to-end install (linux-x64 .vsix, clean profile, no citeline on PATH)" bash scripts/e2e-install.sh
finish PASSED

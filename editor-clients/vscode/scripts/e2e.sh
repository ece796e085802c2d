#!/usr/bin/env bash
# End-to-end test of the Citeline extension in a real VS Code (code-server),
# driven by headless Chromium, against the real daemon with the default models.
#
#   npm run test:e2e          (from editor-clients/vscode)
#   bash scripts/e2e.sh
#
# Sets up what it needs: code-server + playwright-core + chromium (setup-e2e.sh,
# cached in $CITELINE_E2E_PREFIX), the extension's npm deps and .vsix, and the
# daemon (the repository's scripts/setup.sh when .venv/bin/citeline is missing).
# Copies samples/ into a scratch workspace so the index does not land in the repo.
#
# Writes test-results/: sidebar-unserved.png, sidebar-indexing.png, sidebar-paused.png,
# sidebar-cancelled.png (index the folder from the sidebar, pause its indexing there, resume
# it, cancel it), problems.png,
# answer.png (the answer panel), copied-answer.md (the clipboard after Copy Answer),
# citation.png, hover.png, history.png, closest.png (a "closest" answer's label),
# pdf-viewer.png (the bundled viewer at the cited page, passage highlighted),
# sidebar-history.png, history-reopened.png (after a window reload), history-stale.png,
# e2e.log, and on failure failure.png plus the code-server and Citeline logs.
#
# Environment:
#   CITELINE_E2E_PREFIX   where code-server etc. live (default ~/.cache/citeline/vscode-e2e)
#   CITELINE_E2E_RUN      scratch dir for this run (default: a new /tmp/citeline-e2e.XXXXXX)
#   CITELINE_E2E_KEEP=1   keep the scratch dir afterwards
#   CITELINE_E2E_SKIP_PACKAGE=1   use the existing dist/citeline.vsix
#   CITELINE_SERVER       daemon executable (default <repo>/.venv/bin/citeline)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"   # editor-clients/vscode
REPO="$(cd "$HERE/../.." && pwd)"
RESULTS="$HERE/test-results"
T0=$(date +%s)
step() { printf '[e2e.sh +%ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
fail() { printf '[e2e.sh] E2E FAILED: %s\n' "$*" >&2; exit 1; }

rm -rf "$RESULTS"
mkdir -p "$RESULTS"

# ---- 1. tools: code-server, playwright-core, chromium --------------------------
PREFIX="$(bash "$HERE/scripts/setup-e2e.sh" | tail -n 1)"
CS="$PREFIX/node_modules/.bin/code-server"
[ -x "$CS" ] || fail "code-server not found in $PREFIX"
step "tools ready in $PREFIX"

# ---- 2. the daemon ----------------------------------------------------------------
SERVER="${CITELINE_SERVER:-$REPO/.venv/bin/citeline}"
if [ ! -x "$SERVER" ] && [ -z "${CITELINE_SERVER:-}" ]; then
  step "no $SERVER: running scripts/setup.sh (first time: builds llama-cpp-python, 15-25 min)"
  (cd "$REPO" && scripts/setup.sh)
fi
[ -x "$SERVER" ] || fail "daemon not found: $SERVER"
"$SERVER" serve --help >/dev/null 2>&1 || fail "\"$SERVER serve --help\" fails: the daemon has no LSP server yet"
step "daemon: $SERVER"

# ---- 3. the extension ---------------------------------------------------------
cd "$HERE"
if [ "${CITELINE_E2E_SKIP_PACKAGE:-0}" != 1 ] || [ ! -f dist/citeline.vsix ]; then
  [ -d node_modules/vscode-languageclient ] || npm ci --no-audit --no-fund
  npm run --silent package >/dev/null
fi
VSIX="$HERE/dist/citeline.vsix"
[ -f "$VSIX" ] || fail "no $VSIX"
step "extension: $VSIX"

# ---- 4. scratch run dir: workspace (a copy of samples/), profile, settings ----------
mkdir -p /tmp
RUN="${CITELINE_E2E_RUN:-$(mktemp -d /tmp/citeline-e2e.XXXXXX)}"
mkdir -p "$RUN"
RUN="$(cd "$RUN" && pwd)"
WS="$RUN/docs"
rm -rf "$WS" "$RUN/user-data" "$RUN/extensions"
cp -r "$REPO/samples" "$WS"
rm -rf "$WS/.citeline"
# A document that cannot be indexed: its problem must show in the Problems panel.
printf '%%PDF-1.4\nnot really a PDF\n' > "$WS/broken.pdf"
# code-server and chromium write config, data and caches under the XDG dirs: keep them in RUN.
export XDG_CONFIG_HOME="$RUN/xdg-config" XDG_DATA_HOME="$RUN/xdg-data" XDG_CACHE_HOME="$RUN/xdg-cache"
# An empty gallery disables the marketplace (no open-vsx.org lookups).
export EXTENSIONS_GALLERY='{}'
CS_ARGS=(--user-data-dir "$RUN/user-data" --extensions-dir "$RUN/extensions")
mkdir -p "$RUN/user-data/User"
node -e '
const [file, server] = process.argv.slice(1);
require("fs").writeFileSync(file, JSON.stringify({
  "citeline.server.command": [server, "serve"],
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "security.workspace.trust.enabled": false,
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "update.mode": "none",
  "telemetry.telemetryLevel": "off",
  "editor.hover.delay": 300,
  "editor.minimap.enabled": false,
  "files.autoSave": "off",
  "git.enabled": false,
  "chat.disableAIFeatures": true
}, null, 2));
' "$RUN/user-data/User/settings.json" "$SERVER"

timeout 180 "$CS" "${CS_ARGS[@]}" --install-extension "$VSIX" >"$RUN/install.log" 2>&1 || { cat "$RUN/install.log"; fail "could not install $VSIX"; }
timeout 60 "$CS" "${CS_ARGS[@]}" --list-extensions --show-versions 2>/dev/null | grep -q '^citeline.citeline@' || fail "extension not listed after install"
step "installed into $RUN/extensions; workspace $WS"

# ---- 5. code-server on 127.0.0.1 -------------------------------------------------
PORT=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
setsid "$CS" "${CS_ARGS[@]}" --bind-addr "127.0.0.1:$PORT" --auth none \
  --disable-telemetry --disable-update-check --disable-workspace-trust \
  --disable-getting-started-override --config "$RUN/config.yaml" \
  "$WS" >"$RUN/code-server.log" 2>&1 &
CS_PID=$!
collect() {
  cp "$RUN/code-server.log" "$RESULTS/" 2>/dev/null || true
  # The extension host's output channels (the "Citeline" one has the daemon's stderr).
  # One of each per extension host (a window reload starts another): named after it.
  find "$RUN/user-data/logs" \( -name '*Citeline*.log' -o -name 'remoteexthost.log' \) 2>/dev/null |
    while read -r log; do
      host=$(basename "$(dirname "$log")"); [ "${host#output_logging}" != "$host" ] && host=$(basename "$(dirname "$(dirname "$log")")")
      cp "$log" "$RESULTS/$host-$(basename "$log")" 2>/dev/null || true
    done
}
cleanup() {
  # setsid made code-server a process-group leader; the extension host and the
  # daemon it started are in that group: stop exactly that group.
  kill -TERM -- "-$CS_PID" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$CS_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$CS_PID" 2>/dev/null || true
  collect
  if [ "${CITELINE_E2E_KEEP:-0}" = 1 ] || [ -n "${CITELINE_E2E_RUN:-}" ]; then
    echo "[e2e.sh] kept $RUN"
  else
    rm -rf "$RUN"
  fi
}
trap cleanup EXIT
up=0
for _ in $(seq 1 120); do
  if curl -fsS --max-time 2 "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1; then up=1; break; fi
  kill -0 "$CS_PID" 2>/dev/null || break
  sleep 0.5
done
[ "$up" = 1 ] || { tail -40 "$RUN/code-server.log"; fail "code-server did not come up"; }
step "code-server on 127.0.0.1:$PORT (pid $CS_PID)"

# ---- 6. drive it ---------------------------------------------------------------
set +e
NODE_PATH="$PREFIX/node_modules" timeout 900 node "$HERE/test/e2e/run_e2e.mjs" \
  --url "http://127.0.0.1:$PORT" --workspace "$WS" --out "$RESULTS" 2>&1 | tee "$RESULTS/e2e.log"
rc=${PIPESTATUS[0]}
set -e
step "done (rc=$rc); results in $RESULTS"
if [ "$rc" != 0 ]; then
  echo "--- code-server.log (tail)"; tail -30 "$RUN/code-server.log"
  # One "Citeline" output log per extension host (a window reload starts another), oldest first.
  find "$RUN/user-data/logs" -name '*Citeline*.log' 2>/dev/null | sort | while read -r log; do
    echo "--- Citeline output (tail of ${log#"$RUN/user-data/logs/"}, $(wc -l <"$log") lines)"; tail -40 "$log"
  done
  # Last, so that a CI log's tail shows what the run did and where it stopped.
  echo "--- e2e steps (tail)"; grep -E '^\[e2e|E2E' "$RESULTS/e2e.log" | tail -25
  echo "E2E FAILED"
  exit "$rc"
fi
echo "E2E PASSED ($(( $(date +%s) - T0 )) s); screenshot: $RESULTS/answer.png"

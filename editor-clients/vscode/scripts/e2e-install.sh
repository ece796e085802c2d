#!/usr/bin/env bash
# The install path end to end, in a real VS Code (code-server) driven by headless
# Chromium, from a clean profile and with no `citeline` on the PATH:
#
#   1. a folder with citeline.toml: the install offer appears, is accepted, shows its
#      progress, and installs the server from the wheelhouse the linux-x64 .vsix
#      carries into the extension's global storage; then an ask is answered and cited;
#      the running server is that installed one (from the process list);
#   2. the same profile (server installed) on a folder without citeline.toml or
#      .citeline/: the extension activates (its log says so) but no server process
#      starts (from the process list) and nothing of Citeline shows;
#   3. that folder again, with the documents folder of 1 named in the user's
#      citeline.folders setting: the server starts and is ready;
#   4. a .code-workspace holding only that folder (setting cleared): no server; the
#      documents folder added to the workspace is served by the running extension
#      (no reload: onDidChangeWorkspaceFolders), a server in the process list; removed
#      again, the server process stops;
#   5. the documents folder with the Python extension's API selecting the repository's
#      .venv interpreter (which has Citeline): the server runs from that interpreter (from
#      the process list), not the one of 1. code-server has no Python extension and the
#      test has no marketplace: test/e2e/python-extension-api/, installed as
#      ms-python.python, stands in for it, serving the same documented API surface.
#
#   bash scripts/e2e-install.sh
#
# Writes test-results/install/: install-offer.png, install-progress.png,
# install-answer.png, unmarked-window.png, named-window.png, folder-added.png,
# folder-removed.png, python-window.png, e2e-install.log, and the logs on failure.
# Environment: CITELINE_E2E_PREFIX (tools, as e2e.sh), CITELINE_E2E_SKIP_PACKAGE=1 (use
# the existing dist/citeline-linux-x64.vsix), CITELINE_E2E_KEEP=1 (keep the scratch dir).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
RESULTS="$HERE/test-results/install"
T0=$(date +%s)
step() { printf '[e2e-install.sh +%ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
fail() { printf '[e2e-install.sh] E2E INSTALL FAILED: %s\n' "$*" >&2; exit 1; }
rm -rf "$RESULTS" && mkdir -p "$RESULTS"
exec > >(tee "$RESULTS/e2e-install.log") 2>&1

PREFIX="$(bash "$HERE/scripts/setup-e2e.sh" | tail -n 1)"
CS="$PREFIX/node_modules/.bin/code-server"
[ -x "$CS" ] || fail "code-server not found in $PREFIX"

VSIX="$HERE/dist/citeline-linux-x64.vsix"
if [ "${CITELINE_E2E_SKIP_PACKAGE:-0}" != 1 ] || [ ! -f "$VSIX" ]; then
  (cd "$HERE" && { [ -d node_modules/vscode-languageclient ] || npm ci --no-audit --no-fund; } && bash scripts/package-platform.sh linux-x64 >/dev/null)
fi
[ -f "$VSIX" ] || fail "no $VSIX"
step "extension: $VSIX ($(( $(stat -c %s "$VSIX") / 1000000 )) MB)"

RUN="$(mktemp -d /tmp/citeline-e2e-install.XXXXXX)"
WS="$RUN/docs"
PLAIN="$RUN/code"
cp -r "$REPO/samples" "$WS" && rm -rf "$WS/.citeline"
printf '# Citeline settings for this folder (its marker: wire agreement C).\n' > "$WS/citeline.toml"
mkdir -p "$PLAIN/src"
printf '# Notes\n\nA project folder that is not a documents folder.\n' > "$PLAIN/notes.md"
printf 'print("hello")\n' > "$PLAIN/src/main.py"

# No citeline on the PATH: drop every PATH entry that has one.
path_without_citeline=""
IFS=':' read -r -a entries <<< "$PATH"
for dir in "${entries[@]}"; do
  [ -n "$dir" ] && [ ! -e "$dir/citeline" ] && path_without_citeline+="${path_without_citeline:+:}$dir"
done
export PATH="$path_without_citeline"
! command -v citeline >/dev/null || fail "citeline is still on the PATH: $(command -v citeline)"
export XDG_CONFIG_HOME="$RUN/xdg-config" XDG_DATA_HOME="$RUN/xdg-data" XDG_CACHE_HOME="$RUN/xdg-cache"
export CITELINE_CACHE_DIR="$RUN/citeline-cache" EXTENSIONS_GALLERY='{}'
CS_ARGS=(--user-data-dir "$RUN/user-data" --extensions-dir "$RUN/extensions")
mkdir -p "$RUN/user-data/User"
cat > "$RUN/user-data/User/settings.json" <<'JSON'
{
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "security.workspace.trust.enabled": false,
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "update.mode": "none",
  "telemetry.telemetryLevel": "off",
  "editor.minimap.enabled": false,
  "git.enabled": false,
  "chat.disableAIFeatures": true
}
JSON
timeout 300 "$CS" "${CS_ARGS[@]}" --install-extension "$VSIX" >"$RUN/install.log" 2>&1 || { cat "$RUN/install.log"; fail "could not install $VSIX"; }
step "clean profile in $RUN; no citeline on the PATH"

CS_PID=""
start_code_server() {
  local folder="$1" log="$2"
  PORT=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
  setsid "$CS" "${CS_ARGS[@]}" --bind-addr "127.0.0.1:$PORT" --auth none --disable-telemetry \
    --disable-update-check --disable-workspace-trust --disable-getting-started-override \
    --config "$RUN/config.yaml" "$folder" >"$log" 2>&1 &
  CS_PID=$!
  for _ in $(seq 1 120); do
    curl -fsS --max-time 2 "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && return 0
    kill -0 "$CS_PID" 2>/dev/null || break
    sleep 0.5
  done
  tail -30 "$log"; fail "code-server did not come up"
}
stop_code_server() {
  [ -n "$CS_PID" ] || return 0
  kill -TERM -- "-$CS_PID" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$CS_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$CS_PID" 2>/dev/null || true
  CS_PID=""
}
# The Citeline servers among this code-server's processes (its process group).
servers_of() { ps -eo pgid=,args= | awk -v g="$1" '$1 == g' | grep -E 'citeline(\.cli)? serve' | grep -v awk || true; }
cleanup() {
  stop_code_server
  find "$RUN/user-data/logs" -name '*Citeline*.log' -exec cp {} "$RESULTS/" \; 2>/dev/null || true
  cp "$RUN"/code-server-*.log "$RESULTS/" 2>/dev/null || true
  if [ "${CITELINE_E2E_KEEP:-0}" = 1 ]; then echo "[e2e-install.sh] kept $RUN"; else rm -rf "$RUN"; fi
}
trap cleanup EXIT

# ---- 1. the install offer, accepted; an ask answered and cited ------------------------
start_code_server "$WS" "$RUN/code-server-install.log"
step "code-server on 127.0.0.1:$PORT (pid $CS_PID), folder $WS"
NODE_PATH="$PREFIX/node_modules" timeout 1500 node "$HERE/test/e2e/run_e2e_install.mjs" \
  --phase install --url "http://127.0.0.1:$PORT" --workspace "$WS" --out "$RESULTS" || fail "install phase"
running="$(servers_of "$CS_PID")"
echo "$running" | sed 's/^/  server process: /'
echo "$running" | grep -q "globalStorage/citeline.citeline/server-venv/bin/citeline serve" \
  || fail "the running server is not the one installed into the extension's storage"
stop_code_server
step "install phase passed; code-server stopped"

# ---- 2. the same profile on a folder without a marker: no server ----------------------
start_code_server "$PLAIN" "$RUN/code-server-unmarked.log"
step "code-server on 127.0.0.1:$PORT (pid $CS_PID), folder $PLAIN (no citeline.toml, no .citeline/)"
NODE_PATH="$PREFIX/node_modules" timeout 600 node "$HERE/test/e2e/run_e2e_install.mjs" \
  --phase unmarked --url "http://127.0.0.1:$PORT" --workspace "$PLAIN" --out "$RESULTS" || fail "unmarked phase"
running="$(servers_of "$CS_PID")"
procs="$(ps -eo pgid=,args= | awk -v g="$CS_PID" '$1 == g' | wc -l)"
[ -z "$running" ] || fail "a server started for a folder without a marker: $running"
stop_code_server
# The extension did activate there (onStartupFinished) and chose to start nothing.
grep -rqs "No folder with citeline.toml" "$RUN/user-data/logs" \
  || fail "the extension did not activate in the window without a documents folder"
step "unmarked phase passed: $procs processes in code-server's group, no Citeline server"
[ ! -e "$PLAIN/.citeline" ] && [ ! -e "$PLAIN/citeline.toml" ] || fail "the unmarked folder was written to"

# ---- 3. the documents folder named in the user's settings: served without a marker ----
node -e '
const fs = require("fs"); const [file, docs] = process.argv.slice(1);
const s = JSON.parse(fs.readFileSync(file, "utf8")); s["citeline.folders"] = [docs];
fs.writeFileSync(file, JSON.stringify(s, null, 2));' "$RUN/user-data/User/settings.json" "$WS"
start_code_server "$PLAIN" "$RUN/code-server-named.log"
step "code-server on 127.0.0.1:$PORT (pid $CS_PID), folder $PLAIN, citeline.folders = [$WS]"
NODE_PATH="$PREFIX/node_modules" timeout 900 node "$HERE/test/e2e/run_e2e_install.mjs" \
  --phase named --url "http://127.0.0.1:$PORT" --workspace "$PLAIN" --out "$RESULTS" || fail "named phase"
running="$(servers_of "$CS_PID")"
echo "$running" | sed 's/^/  server process: /'
[ -n "$running" ] || fail "no server started for the folder named in citeline.folders"
step "named phase passed: the folder in citeline.folders is served"
[ ! -e "$PLAIN/.citeline" ] && [ ! -e "$PLAIN/citeline.toml" ] || fail "the unmarked folder was written to"
stop_code_server

# ---- 4. workspace folders added and removed while the window runs -----------------------
node -e '
const fs = require("fs"); const [file] = process.argv.slice(1);
const s = JSON.parse(fs.readFileSync(file, "utf8")); delete s["citeline.folders"];
fs.writeFileSync(file, JSON.stringify(s, null, 2));' "$RUN/user-data/User/settings.json"
WSFILE="$RUN/window.code-workspace"
printf '{ "folders": [ { "path": "%s" } ], "settings": {} }\n' "$PLAIN" > "$WSFILE"
start_code_server "$WSFILE" "$RUN/code-server-folders.log"
step "code-server on 127.0.0.1:$PORT (pid $CS_PID), workspace $WSFILE ($PLAIN only)"
NODE_PATH="$PREFIX/node_modules" timeout 900 node "$HERE/test/e2e/run_e2e_install.mjs" \
  --phase folders --url "http://127.0.0.1:$PORT" --workspace "$WSFILE" --add "$WS" \
  --pgid "$CS_PID" --logs "$RUN/user-data/logs" --out "$RESULTS" || fail "folders phase"
[ -z "$(servers_of "$CS_PID")" ] || fail "a server still runs after the documents folder was removed: $(servers_of "$CS_PID")"
step "folders phase passed: the added folder was served, the server stopped once it was removed"
stop_code_server

# ---- 5. the interpreter the Python extension selected, when it has Citeline -------------
PY="$REPO/.venv/bin/python"
"$PY" -c 'import citeline.cli' || fail "$PY has no Citeline"
(cd "$HERE/test/e2e/python-extension-api" && "$HERE/node_modules/.bin/vsce" package --no-dependencies \
  --allow-missing-repository --skip-license --out "$RUN/python-extension-api.vsix" >/dev/null) \
  || fail "could not package the Python extension API stand-in"
timeout 300 "$CS" "${CS_ARGS[@]}" --install-extension "$RUN/python-extension-api.vsix" >>"$RUN/install.log" 2>&1 \
  || { cat "$RUN/install.log"; fail "could not install the Python extension API stand-in"; }
node -e '
const fs = require("fs"); const [file, py] = process.argv.slice(1);
const s = JSON.parse(fs.readFileSync(file, "utf8")); s["python.defaultInterpreterPath"] = py;
fs.writeFileSync(file, JSON.stringify(s, null, 2));' "$RUN/user-data/User/settings.json" "$PY"
start_code_server "$WS" "$RUN/code-server-python.log"
step "code-server on 127.0.0.1:$PORT (pid $CS_PID), folder $WS, the Python extension's API selecting $PY"
NODE_PATH="$PREFIX/node_modules" timeout 900 node "$HERE/test/e2e/run_e2e_install.mjs" \
  --phase python --url "http://127.0.0.1:$PORT" --workspace "$WS" --out "$RESULTS" || fail "python phase"
running="$(servers_of "$CS_PID")"
echo "$running" | sed 's/^/  server process: /'
echo "$running" | grep -qF "$PY -m citeline.cli serve" || fail "the server does not run from the Python extension's interpreter $PY"
! echo "$running" | grep -q "server-venv" || fail "the extension's own server runs, not the Python extension's interpreter"
grep -rqs "the Python extension's interpreter has Citeline: $PY" "$RUN/user-data/logs" \
  || fail "the extension did not log the Python extension's interpreter"
step "python phase passed: the server runs from $PY"
echo "E2E INSTALL PASSED ($(( $(date +%s) - T0 )) s); screenshots in $RESULTS"

#!/usr/bin/env bash
# Installs what the end-to-end test needs, outside the repository, idempotently:
#   - code-server 4.100.3 (VS Code 1.100.3 in the browser) and playwright-core 1.65.1
#     into $CITELINE_E2E_PREFIX (default ~/.cache/citeline/vscode-e2e),
#   - Debian's chromium and ripgrep (and the headers code-server's native modules
#     build against) with apt-get.
#
#   bash scripts/setup-e2e.sh            prints the prefix on the last line of stdout
#
# Needs: Node 20 (code-server 4.100.x requires it), the npm registry, Debian's apt
# repositories, root (or sudo) for apt-get. Re-running when everything is present
# takes a few seconds. The first run takes ~3-4 minutes (native modules build).
#
# Adapted from the vscode-e2e recipe (MIT) that Citeline's developers use; the
# gotchas it works around are noted inline.
set -euo pipefail

PREFIX="${CITELINE_E2E_PREFIX:-$HOME/.cache/citeline/vscode-e2e}"
CODE_SERVER_VERSION=4.100.3
PLAYWRIGHT_CORE_VERSION=1.65.1
# What code-server 4.100.3's lib/vscode/npm-shrinkwrap.json locks for @vscode/ripgrep,
# and the ripgrep release its postinstall downloads:
RIPGREP_PKG_VERSION=1.15.11
RIPGREP_ASSET_VERSION=v13.0.0-10

log() { printf '[setup-e2e %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { printf '[setup-e2e] ERROR: %s\n' "$*" >&2; exit 1; }

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo none)
[ "$node_major" = 20 ] || die "code-server $CODE_SERVER_VERSION needs Node 20 (found: $node_major)"

# ---- 1. Debian packages ------------------------------------------------------
APT_PKGS="chromium ripgrep libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config python3 make g++ curl"
missing=""
for p in $APT_PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  command -v apt-get >/dev/null || die "missing packages:$missing (and no apt-get)"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  log "apt-get install:$missing"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086
  $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
command -v chromium >/dev/null || die "chromium is not installed"
command -v rg >/dev/null || die "ripgrep is not installed"

# ---- 2. npm packages into $PREFIX ---------------------------------------------
mkdir -p "$PREFIX"
PREFIX="$(cd "$PREFIX" && pwd)"
CS_DIR="$PREFIX/node_modules/code-server"

installed() {
  [ -f "$CS_DIR/package.json" ] &&
  [ "$(node -p "require('$CS_DIR/package.json').version")" = "$CODE_SERVER_VERSION" ] &&
  [ -x "$CS_DIR/lib/vscode/node_modules/@vscode/ripgrep/bin/rg" ] &&
  [ -e "$CS_DIR/lib/vscode/bin/remote-cli/code-server" ] &&
  [ -d "$CS_DIR/lib/vscode/extensions/node_modules/typescript" ] &&
  [ -f "$PREFIX/node_modules/playwright-core/package.json" ] &&
  [ "$(node -p "require('$PREFIX/node_modules/playwright-core/package.json').version")" = "$PLAYWRIGHT_CORE_VERSION" ]
}

if installed; then
  log "code-server $CODE_SERVER_VERSION and playwright-core $PLAYWRIGHT_CORE_VERSION already in $PREFIX"
else
  [ -f "$PREFIX/package.json" ] || printf '{ "name": "citeline-vscode-e2e", "private": true }\n' > "$PREFIX/package.json"

  # @vscode/ripgrep's postinstall downloads ripgrep from GitHub (not reachable from a
  # registry-only network), but first looks in $(os.tmpdir())/vscode-ripgrep-cache-<ver>/
  # for the tarball: seed that cache with Debian's rg and point TMPDIR at it.
  SEED_TMP="$PREFIX/.npm-tmp"
  case "$(uname -m)" in
    x86_64) ASSET="ripgrep-$RIPGREP_ASSET_VERSION-x86_64-unknown-linux-musl.tar.gz" ;;
    aarch64) ASSET="ripgrep-$RIPGREP_ASSET_VERSION-aarch64-unknown-linux-musl.tar.gz" ;;
    *) die "unsupported architecture $(uname -m)" ;;
  esac
  mkdir -p "$SEED_TMP/vscode-ripgrep-cache-$RIPGREP_PKG_VERSION"
  stage=$(mktemp -d)
  cp "$(command -v rg)" "$stage/rg"
  tar czf "$SEED_TMP/vscode-ripgrep-cache-$RIPGREP_PKG_VERSION/$ASSET" -C "$stage" rg
  rm -rf "$stage"

  log "npm install code-server@$CODE_SERVER_VERSION playwright-core@$PLAYWRIGHT_CORE_VERSION (native builds: a few minutes)"
  # unsafe_perm: code-server's postinstall refuses root otherwise.
  # yes: node-pty's install runs `npx node-gyp`, which npx refuses when npm's `yes` is false.
  # nodedir: build native modules against the local Node headers, no header download.
  nodedir=""
  [ -f /usr/include/node/node_version.h ] && nodedir=/usr
  (
    cd "$PREFIX"
    env npm_config_unsafe_perm=true npm_config_yes=true \
      ${nodedir:+npm_config_nodedir=$nodedir} \
      TMPDIR="$SEED_TMP" \
      npm install --no-audit --no-fund --loglevel=error \
        "code-server@$CODE_SERVER_VERSION" "playwright-core@$PLAYWRIGHT_CORE_VERSION" >&2
  )
  rm -rf "$SEED_TMP"
  installed || die "install finished but code-server/playwright-core are incomplete in $PREFIX"
fi

log "chromium: $(chromium --version 2>/dev/null | head -1)"
echo "$PREFIX"

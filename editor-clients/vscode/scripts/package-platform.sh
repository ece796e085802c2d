#!/usr/bin/env bash
# A platform-specific .vsix that carries the release wheelhouse, so that "Install"
# in the extension's offer sets the server up with no network and no compiler:
#
#   bash scripts/package-platform.sh linux-x64      -> dist/citeline-linux-x64.vsix
#
# Uses $CITELINE_WHEELHOUSE, else <repo>/dist/wheelhouse (built by scripts/release.sh
# when missing).  The plain `npm run package` .vsix carries no wheelhouse: its install
# offer asks for a wheelhouse folder instead.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
target="${1:?usage: package-platform.sh TARGET (e.g. linux-x64)}"
wheelhouse="${CITELINE_WHEELHOUSE:-$REPO/dist/wheelhouse}"
[ -f "$(ls "$wheelhouse"/citeline-*.whl 2>/dev/null | head -1)" ] || "$REPO/scripts/release.sh" "$wheelhouse"

cd "$HERE"
rm -rf wheelhouse
trap 'rm -rf "$HERE/wheelhouse"' EXIT
mkdir wheelhouse
cp -l "$wheelhouse"/*.whl wheelhouse/ 2>/dev/null || cp "$wheelhouse"/*.whl wheelhouse/
npm run --silent build -- --production
npx vsce package --no-dependencies --target "$target" --out "dist/citeline-$target.vsix" >&2
echo "$HERE/dist/citeline-$target.vsix"

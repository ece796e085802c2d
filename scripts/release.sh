#!/usr/bin/env bash
# Builds the release wheelhouse: everything `pip install citeline` needs, as wheels, so
# that a machine with no compiler and no network installs it in seconds:
#
#   scripts/release.sh [OUT]          (default OUT: dist/wheelhouse)
#   pip install --no-index --find-links dist/wheelhouse citeline
#
# - the citeline wheel (with its sample documents, so `citeline demo` works from it);
# - citeline-models: the default models ready to load (scripts/build_models_wheel.py);
# - llama-cpp-python, built once with the portable, AMX-safe flags of scripts/lib/llama.sh
#   (x86-64-v3: AVX2/FMA/F16C, no AVX-512, no AMX) and kept in ~/.cache/citeline/wheels;
# - every other dependency (and the team extra's driver) as the wheels PyPI publishes, at
#   the versions constraints.txt pins.
#
# Wheels for CPython 3.11 on Linux x86-64 (the Python that runs this script).  Needs the
# dev setup (scripts/setup.sh) and the package registries; the models wheel and the
# llama-cpp-python wheel are cached by their inputs, so a second run builds neither.
# Prints each artifact's size.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-dist/wheelhouse}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

[ -x .venv/bin/python ] || scripts/setup.sh >&2
python=.venv/bin/python

# shellcheck source=lib/llama.sh
source scripts/lib/llama.sh

rm -rf "$out" && mkdir -p "$out"

echo "release: citeline wheel" >&2
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
# From a clean copy of the tracked files: no local index, egg-info or build folder
# reaches the wheel.  The copy follows citeline/samples (a link to samples/).
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$build"
rm "$build/server/citeline/samples" && cp -r samples "$build/server/citeline/samples"
"$python" -m pip wheel --quiet --no-deps --no-build-isolation -w "$out" "$build" >&2

echo "release: citeline-models wheel" >&2
"$python" scripts/build_models_wheel.py --out "$out" >/dev/null

echo "release: llama-cpp-python wheel (portable flags)" >&2
export CMAKE_ARGS="${CITELINE_RELEASE_CMAKE_ARGS:-$(llama_release_cmake_args)}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
llama_dir="$(build_llama_wheel "$python")"
cp "$llama_dir"/llama_cpp_python-*.whl "$out/"

echo "release: the other dependencies" >&2
citeline_wheel="$(ls "$out"/citeline-*.whl)"
PIP_FIND_LINKS="$out" "$python" -m pip download --quiet --only-binary :all: \
  -c constraints.txt -d "$out" "${citeline_wheel}[team]" >&2

# Only wheels: a source archive would need a compiler at install time.
if ls "$out" | grep -v '\.whl$' >/dev/null; then
  echo "release: not a wheel: $(ls "$out" | grep -v '\.whl$' | tr '\n' ' ')" >&2
  exit 1
fi
(cd "$out" && sha256sum ./*.whl > SHA256SUMS)

echo "release: $out" >&2
for wheel in "$out"/citeline-*.whl "$out"/citeline_models-*.whl "$out"/llama_cpp_python-*.whl; do
  printf '  %-58s %6.1f MB\n' "$(basename "$wheel")" "$(($(stat -c %s "$wheel") / 1000))e-3" >&2
done
total=$(du -cb "$out"/*.whl | tail -1 | cut -f1)
printf '  %-58s %6.1f MB\n' "wheelhouse ($(ls "$out"/*.whl | wc -l) wheels)" "${total}e-6" >&2

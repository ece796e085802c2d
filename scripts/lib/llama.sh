# Sourced by scripts/setup.sh and scripts/release.sh: llama-cpp-python's version, the
# flags it is built with, and where the wheel built with them is kept.

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

# The flags of the release wheel (scripts/release.sh): the same instruction sets as
# llama_cmake_args on any AVX2-class x86-64 (x86-64-v3: Haswell, Zen and later), fixed
# rather than read from the building CPU, so the wheel runs wherever its README says.
llama_release_cmake_args() {
  local common="-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF"
  case "$(uname -m)" in
    x86_64 | amd64) ;;
    *) echo "$common"; return ;;
  esac
  local args="-DGGML_NATIVE=OFF"
  args+=" -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON"
  args+=" -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
  args+=" -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  echo "$args $common"
}

# The folder that holds the llama-cpp-python wheel built with $CMAKE_ARGS: pip's own
# wheel cache does not look at CMAKE_ARGS, so the wheel is kept per set of flags (a CPU
# with other instructions, or changed flags, builds its own, once).
llama_wheel_dir() {
  local key
  key="$(printf '%s' "$LLAMA_CPP_VERSION $CMAKE_ARGS" | sha256sum | cut -c1-12)"
  echo "${XDG_CACHE_HOME:-$HOME/.cache}/citeline/wheels/llama-cpp-python-$LLAMA_CPP_VERSION-$key"
}

# Builds the wheel into llama_wheel_dir unless it is there; $1: the python with pip.
build_llama_wheel() {
  local python="$1" wheelhouse
  wheelhouse="$(llama_wheel_dir)"
  if ! ls "$wheelhouse"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "building llama-cpp-python $LLAMA_CPP_VERSION (once for these flags, 10-25 minutes on 2 cores)…" >&2
    echo "  CMAKE_ARGS=$CMAKE_ARGS" >&2
    rm -rf "$wheelhouse.tmp" && mkdir -p "$wheelhouse.tmp"
    "$python" -m pip wheel --quiet --no-deps --no-cache-dir --no-binary llama-cpp-python \
      -w "$wheelhouse.tmp" "llama-cpp-python==$LLAMA_CPP_VERSION" >&2
    rm -rf "$wheelhouse" && mv "$wheelhouse.tmp" "$wheelhouse"
  fi
  echo "$wheelhouse"
}

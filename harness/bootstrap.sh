#!/bin/sh
# One entry point for a fresh Debian machine (the README's quick start and .ci/run):
#   harness/bootstrap.sh test    install what is missing (apt-get), build, run every test
#   harness/bootstrap.sh smoke   build, then run the main job: experiments/smoke.toml
#   harness/bootstrap.sh build   build only
# GPU tests skip cleanly on a machine without a CUDA device. Where .deps/usr exists (the GPU
# machine, see docs/harness.md) the header libraries come from there instead of apt.
set -eu
cd "$(dirname "$0")/.."

PKGS="cmake ninja-build g++ git xz-utils libeigen3-dev catch2 libcli11-dev libtomlplusplus-dev nlohmann-json3-dev python3 python3-matplotlib"

install_deps() {
  [ -d .deps/usr ] && return 0
  missing=""
  for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  if [ -n "$missing" ]; then
    echo "installing:$missing"
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
  fi
}

find_nvcc() {
  command -v nvcc >/dev/null 2>&1 && return 0
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    if [ -x "$d/nvcc" ]; then
      PATH="$d:$PATH"
      export PATH
      return 0
    fi
  done
  echo "bootstrap: no CUDA compiler (nvcc) found; install the CUDA toolkit (12.x or 13.x)" >&2
  exit 1
}

build() {
  install_deps
  find_nvcc
  extra=""
  [ -d .deps/usr ] && extra="-DCMAKE_PREFIX_PATH=$PWD/.deps/usr"
  cmake --preset default $extra
  cmake --build --preset default
}

case "${1:-test}" in
  build) build ;;
  test)
    build
    ctest --preset default
    ;;
  smoke)
    build
    ./build/harness/kbit-harness run experiments/smoke.toml
    ;;
  *)
    echo "usage: harness/bootstrap.sh test|smoke|build" >&2
    exit 2
    ;;
esac

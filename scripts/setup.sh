#!/usr/bin/env bash
# Installs every dependency of mimic from Debian 12's package archive.
# Non-interactive and idempotent; prints nothing unless something fails.
#   scripts/setup.sh           build and demo dependencies
#   scripts/setup.sh --test    also the engines the sweep tests start: a one-node Slurm cluster
#                              (slurm-wlm, munge) and a Dask LocalCluster (python3-distributed),
#                              clang-format for the format check and lld for the sanitizer build's
#                              links
#   scripts/setup.sh --bench   also PyTorch and OpenBLAS for the comparison benchmarks
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libsystemc-dev libeigen3-dev libboost-dev libsqlite3-dev sqlite3
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata python3-onnx
  pybind11-dev python3-dev python3-numpy python3-pytest
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev
  clang libclang-rt-14-dev libomp-dev
  libdnnl-dev ocl-icd-opencl-dev
)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(slurm-wlm munge python3-distributed python3-pandas clang-format lld)
fi
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(python3-torch python3-torchvision libopenblas0)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "setup: these packages are missing and installing them needs root: ${missing[*]}" >&2
  exit 1
fi

log=$(mktemp /tmp/mimic-setup.XXXXXX.log)
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "setup: apt-get failed installing: ${missing[*]} (log above, also in $log)" >&2
  exit 1
fi
rm -f "$log"

#!/usr/bin/env bash
# Installs the dependencies, builds mimic and runs every test; then builds the unit tests with
# AddressSanitizer + UndefinedBehaviorSanitizer and runs them again. Exit status 0 only if all pass.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
scripts/build.sh "$root/build"
echo "== tests (release build)"
ctest --test-dir build --output-on-failure --timeout 900 -j "$(nproc)"
echo "== unit tests under ASan+UBSan"
# -O1 -g1: the sanitizers' recommended optimization, line tables for their reports, and a build
# that fits CI's time (full -g on these template-heavy sources costs minutes on 2 cores).
scripts/build.sh "$root/build-asan" -DMIMIC_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DMIMIC_BUILD_BENCHMARKS=OFF -DMIMIC_BUILD_PYTHON=OFF \
  --target-unit-tests
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -L unit --output-on-failure --timeout 900 -j "$(nproc)"
echo "== all tests passed"

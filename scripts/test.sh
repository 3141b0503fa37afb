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
scripts/build.sh "$root/build-asan" -DMIMIC_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMIMIC_BUILD_BENCHMARKS=OFF -DMIMIC_BUILD_PYTHON=OFF --target-unit-tests
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -L unit --output-on-failure --timeout 900 -j "$(nproc)"
echo "== all tests passed"

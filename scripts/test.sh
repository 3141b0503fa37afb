#!/usr/bin/env bash
# Installs the dependencies, builds mimic and runs every test; then builds the unit tests and the
# fuzz targets with clang, AddressSanitizer + UndefinedBehaviorSanitizer, runs the unit tests again
# and every fuzzer for MIMIC_FUZZ_SECONDS (30) each. Exit status 0 only if all pass.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh --test
scripts/build.sh "$root/build"
echo "== tests (release build)"
ctest --test-dir build --output-on-failure --timeout 900 -j "$(nproc)"
echo "== unit tests under ASan+UBSan (clang), with the fuzz targets from the same build"
# One clang build serves both: -fsanitize=fuzzer-no-link instruments every library for libFuzzer,
# the unit tests link without libFuzzer's main, the fuzz targets with it.
# -O1 -g1: the sanitizers' recommended optimization, line tables for their reports, and a build
# that fits CI's time (full -g on these template-heavy sources costs minutes on 2 cores).
# MIMIC_TEST_PER_BINARY: each test binary runs its cases in one process (the release run above
# isolates every case; here an instrumented process start cost more than most cases).
# CMAKE_UNITY_BUILD: every target compiles its sources in batches of 8 per translation unit, which
# parses shared headers and instantiates shared templates once per batch, not once per file; it
# also keeps file-local names from clashing across files (this build fails if two do).
scripts/build.sh "$root/build-clang-asan" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DMIMIC_SANITIZE=ON -DMIMIC_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DMIMIC_BUILD_BENCHMARKS=OFF -DMIMIC_BUILD_PYTHON=OFF \
  -DMIMIC_TEST_PER_BINARY=ON -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 \
  --target-unit-tests --target-fuzzers
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-clang-asan -L unit --output-on-failure --timeout 900 -j "$(nproc)"
echo "== fuzz smoke: every fuzzer, a bounded time each (any crash, hang or OOM fails)"
FUZZ_BUILD_DIR="$root/build-clang-asan" FUZZ_JOBS="$(nproc)" scripts/fuzz.sh "${MIMIC_FUZZ_SECONDS:-30}"
echo "== all tests passed"

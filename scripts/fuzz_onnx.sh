#!/usr/bin/env bash
# Fuzzes the ONNX loading path (tests/fuzz/onnx_import_fuzzer.cpp) for a bounded time.
#   scripts/fuzz_onnx.sh [SECONDS=60] [BUILD_DIR=build-fuzz]
# Builds the target with clang (libFuzzer, ASan, UBSan), seeds the corpus with the ONNX test
# models (libonnx-testdata) and tests/fuzz/regressions, and runs libFuzzer. Exit status 0 when
# nothing was found; on a crash the input is in BUILD_DIR/fuzz-artifacts/: add it to
# tests/fuzz/regressions/ (the normal build replays those) and fix the bug.
set -euo pipefail
seconds=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${2:-"$root/build-fuzz"}
testdata=/usr/share/libonnx-testdata/data

if [[ ! -f "$dir/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DMIMIC_FUZZ=ON -DMIMIC_NATIVE=OFF -DMIMIC_BUILD_BENCHMARKS=OFF \
    -DMIMIC_BUILD_PYTHON=OFF >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log" >&2; exit 1; }
fi
cmake --build "$dir" --target onnx_import_fuzzer >"$dir.build.log" 2>&1 ||
  { grep -E "error" -A3 "$dir.build.log" | head -40 >&2; echo "fuzz: build failed, log in $dir.build.log" >&2; exit 1; }

corpus="$dir/fuzz-corpus"
mkdir -p "$corpus" "$dir/fuzz-artifacts"
if [[ -d "$testdata" ]]; then
  # Small models only: libFuzzer mutates better and faster on short inputs.
  find "$testdata" -name model.onnx -size -64k | while read -r model; do
    name=$(echo "$model" | sed "s|$testdata/||; s|/model.onnx||; s|/|_|g")
    cp -n "$model" "$corpus/$name.onnx"
  done
fi
cp -n "$root"/tests/fuzz/regressions/* "$corpus/" 2>/dev/null || true

export OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
"$dir/bin/onnx_import_fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=20 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$dir/fuzz-artifacts/" "$corpus"

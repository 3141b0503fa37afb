#!/usr/bin/env bash
# Fuzzes every kind of input a user hands mimic (tests/fuzz/*_fuzzer.cpp) with libFuzzer, ASan and
# UBSan, for a bounded time.
#   scripts/fuzz.sh [SECONDS=60] [FUZZER...]        (default: every fuzzer)
# Environment: FUZZ_BUILD_DIR (default build-clang-asan, the sanitizer build scripts/test.sh also
# uses), FUZZ_JOBS (fuzzers run at once, default 1), FUZZ_NICE (nice level, default 0).
# A crash, a sanitizer report, an input running over 10 s or a process over 2048 MB RSS is a
# finding: the input lands in BUILD_DIR/fuzz-artifacts/<fuzzer>/; add it to
# tests/fuzz/regressions/<fuzzer>/ (every build replays those) and fix the bug. Prints one line of
# libFuzzer's stats per fuzzer (runs, coverage); exit status 0 only when nothing was found.
set -euo pipefail
seconds=${1:-60}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${FUZZ_BUILD_DIR:-"$root/build-clang-asan"}
jobs=${FUZZ_JOBS:-1}
niceness=${FUZZ_NICE:-0}
all=(onnx_import chip_spec sweep_spec npy trace_db scalesim_files checkpoint)
fuzzers=("$@")
[[ ${#fuzzers[@]} -eq 0 ]] && fuzzers=("${all[@]}")
testdata=/usr/share/libonnx-testdata/data

if [[ ! -f "$dir/CMakeCache.txt" ]]; then
  mkdir -p "$dir"
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DMIMIC_SANITIZE=ON -DMIMIC_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DMIMIC_BUILD_BENCHMARKS=OFF -DMIMIC_BUILD_PYTHON=OFF \
    -DMIMIC_TEST_PER_BINARY=ON >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log" >&2; exit 1; }
fi
targets=()
for f in "${fuzzers[@]}"; do targets+=(--target "${f}_fuzzer"); done
cmake --build "$dir" "${targets[@]}" >"$dir.fuzz-build.log" 2>&1 ||
  { grep -E "error" -A3 "$dir.fuzz-build.log" | head -40 >&2; echo "fuzz: build failed, log in $dir.fuzz-build.log" >&2; exit 1; }

# Seeds: the committed corpus and regressions, plus small ONNX test models for onnx_import.
seed() {
  local f=$1 corpus="$dir/fuzz-corpus/$1"
  mkdir -p "$corpus" "$dir/fuzz-artifacts/$f"
  cp -n "$root/tests/fuzz/corpus/$f/"* "$root/tests/fuzz/regressions/$f/"* "$corpus/" 2>/dev/null || true
  if [[ $f == onnx_import && -d $testdata ]]; then
    find "$testdata" -name model.onnx -size -64k | while read -r model; do
      name=$(echo "$model" | sed "s|$testdata/||; s|/model.onnx||; s|/|_|g")
      cp -n "$model" "$corpus/$name.onnx"
    done
  fi
}

max_len() {
  case $1 in
    onnx_import) echo 65536 ;;
    trace_db) echo 262144 ;;
    *) echo 4096 ;;
  esac
}

run_one() {
  local f=$1 log="$dir/fuzz-logs/$1.log"
  OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
    nice -n "$niceness" "$dir/bin/${f}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len="$(max_len "$f")" -print_final_stats=1 -artifact_prefix="$dir/fuzz-artifacts/$f/" \
    "$dir/fuzz-corpus/$f" >"$log" 2>&1
}

summary() {
  local f=$1 rc=$2 log="$dir/fuzz-logs/$1.log"
  local runs cov ft
  runs=$(grep -o "stat::number_of_executed_units: [0-9]*" "$log" | tail -1 | awk '{print $2}')
  cov=$(grep -Eo "cov: [0-9]+" "$log" | tail -1 | awk '{print $2}')
  ft=$(grep -Eo "ft: [0-9]+" "$log" | tail -1 | awk '{print $2}')
  local result=ok
  if [[ $rc -ne 0 ]]; then
    result="FINDING (exit $rc): $(grep -E "^==[0-9]+==ERROR|SUMMARY|ALARM|out-of-memory|deadly signal" "$log" | head -2 | tr '\n' ' ')"
  fi
  printf "fuzz: %-12s %ss of %ss  runs=%s cov=%s ft=%s  %s\n" "$f" "$(($(date +%s) - started[$f]))" "$seconds" \
    "${runs:-?}" "${cov:-?}" "${ft:-?}" "$result"
  if [[ $rc -ne 0 ]]; then # where it happened and what reproduces it, for logs that keep only a tail
    grep -m 8 -E "^ +#[0-9]+ .* in mimic::" "$log" | sed 's/^ */fuzz:   /' || true
    grep -m 1 -E "Test unit written to" "$log" | sed 's/^/fuzz:   /' || true
  fi
}

mkdir -p "$dir/fuzz-logs"
for f in "${fuzzers[@]}"; do seed "$f"; done
status=0
pending=("${fuzzers[@]}")
declare -A pids=() started=()
while [[ ${#pending[@]} -gt 0 || ${#pids[@]} -gt 0 ]]; do
  while [[ ${#pending[@]} -gt 0 && ${#pids[@]} -lt $jobs ]]; do
    run_one "${pending[0]}" &
    pids[${pending[0]}]=$!
    started[${pending[0]}]=$(date +%s)
    pending=("${pending[@]:1}")
  done
  for f in "${!pids[@]}"; do
    if ! kill -0 "${pids[$f]}" 2>/dev/null; then
      rc=0
      wait "${pids[$f]}" || rc=$?
      unset "pids[$f]"
      summary "$f" "$rc"
      [[ $rc -ne 0 ]] && status=1
    fi
  done
  sleep 1
done
[[ $status -ne 0 ]] && echo "fuzz: findings: inputs in $dir/fuzz-artifacts/, logs in $dir/fuzz-logs/" >&2
exit $status

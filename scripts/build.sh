#!/usr/bin/env bash
# Configures and builds mimic. Usage:
#   scripts/build.sh [BUILD_DIR] [cmake args...] [--target-unit-tests] [--target-fuzzers]
# BUILD_DIR defaults to build/ (Release). --target-unit-tests builds only what the unit tests need,
# --target-fuzzers the libFuzzer targets (with -DMIMIC_FUZZ=ON); both together build both.
# Quiet unless the build fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-"$root/build"}
shift || true
target=()
cmake_args=()
for a in "$@"; do
  case "$a" in
    --target-unit-tests) target+=(--target unit_tests) ;;
    --target-fuzzers) target+=(--target fuzzers) ;;
    *) cmake_args+=("$a") ;;
  esac
done
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# A new build directory is configured; an existing one again when cmake arguments are given (a
# changed option then reaches it, as in a clean clone).
if [[ ! -f "$dir/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log" >&2; exit 1; }
elif [[ ${#cmake_args[@]} -gt 0 ]]; then
  cmake -S "$root" -B "$dir" "${cmake_args[@]}" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log" >&2; exit 1; }
fi
log="$dir.build.log"
if ! cmake --build "$dir" -j "$(nproc)" ${target[@]+"${target[@]}"} >"$log" 2>&1; then
  grep -E "error|Error" -A3 "$log" | head -60 >&2
  echo "build: failed, full log in $log" >&2
  exit 1
fi
# Make `import mimic` work for Debian's python3: a .pth file pointing at the build's package folder.
if [[ "$dir" == "$root/build" && -d "$dir/python/mimic" && -x /usr/bin/python3 ]]; then
  site=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
  if mkdir -p "$site" 2>/dev/null && echo "$dir/python" >"$site/mimic.pth" 2>/dev/null; then :; else
    echo "build: could not register $dir/python in $site (not root?); use PYTHONPATH=$dir/python" >&2
  fi
fi

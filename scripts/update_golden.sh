#!/usr/bin/env bash
# Regenerates the golden cycle counts (tests/golden/<preset>.json) from the current emulators, then
# shows what changed: review the diff and commit it with the timing change that caused it.
# Usage: scripts/update_golden.sh [build dir, default: build]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake --build "$build" --target golden_cycles_tests mimic-device
MIMIC_UPDATE_GOLDEN=1 ctest --test-dir "$build" -R 'Golden/' --output-on-failure
git --no-pager diff --stat -- tests/golden

#!/usr/bin/env bash
# Installs the dependencies, builds mimic and runs the main demo: ResNet-50 (batch 8) on every
# available device, each run recorded in one trace.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
scripts/build.sh "$root/build"
mimic=build/bin/mimic
echo "== devices"
$mimic devices
for device in cpu; do
  echo
  echo "== ResNet-50, batch 8, on $device"
  $mimic run --model resnet50 --batch 8 --device "$device"
done

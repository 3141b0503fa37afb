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
# Every run goes to one SQLite trace (started afresh), then an HTML report and a Perfetto timeline.
mkdir -p out
trace=out/demo-trace.db
rm -f "$trace" "$trace-wal" "$trace-shm"
for device in cpu; do
  echo
  echo "== ResNet-50, batch 8, on $device"
  $mimic run --model resnet50 --batch 8 --device "$device" --trace "$trace"
done
echo
echo "== trace"
$mimic trace list "$trace"
$mimic report "$trace" -o out/demo-report.html
$mimic trace export "$trace" --format chrome -o out/demo-timeline.json
echo
echo "trace:    $root/$trace (SQLite: mimic trace summary|diff|export, or sqlite3 and its views)"
echo "report:   $root/out/demo-report.html (open it in a browser; self-contained, no network)"
echo "timeline: $root/out/demo-timeline.json (open it in https://ui.perfetto.dev or chrome://tracing)"

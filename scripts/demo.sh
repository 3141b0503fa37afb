#!/usr/bin/env bash
# Installs the dependencies, builds mimic and runs the main demo: ResNet-50 (batch 8) on the cpu, an
# emulated TPU v4 and an emulated GC200 IPU (and a GPU when one is present), outputs compared with the
# cpu backend's; then a batch sweep of both emulators under a latency budget. Every run is recorded in
# one trace, with an HTML report and a Perfetto timeline.
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
devices=(cpu tpu-emu:v4 ipu-emu:gc200)
if $mimic devices --json | python3 -c 'import json, sys; sys.exit(not any(d["name"] == "cuda:0" and d["available"] for d in json.load(sys.stdin)))'; then
  devices+=(cuda:0)
fi
for device in "${devices[@]}"; do
  echo
  echo "== ResNet-50, batch 8, on $device"
  $mimic run --model resnet50 --batch 8 --device "$device" --trace "$trace"
done
echo
echo "== Which batch and layout meet a 5 ms latency budget? ResNet-50 on both emulators (timing only)"
$mimic sweep --model resnet50 --device tpu-emu:v4,ipu-emu:gc200 --layout nchw,nhwc --batch 1,2,...,64 --timing-only \
  --latency-budget 5ms -j "$(nproc)" --trace "$trace" --report out/demo-sweep.html
echo
echo "== trace"
$mimic trace list "$trace"
$mimic report "$trace" --run 2 -o out/demo-report.html   # run 2: ResNet-50 on tpu-emu:v4
$mimic trace export "$trace" --format chrome -o out/demo-timeline.json
echo
echo "trace:    $root/$trace (SQLite: mimic trace summary|diff|export, or sqlite3 and its views)"
echo "report:   $root/out/demo-report.html (open it in a browser; self-contained, no network)"
echo "sweep:    $root/out/demo-sweep.html (throughput, latency, roofline, recommended batch)"
echo "timeline: $root/out/demo-timeline.json (open it in https://ui.perfetto.dev or chrome://tracing)"

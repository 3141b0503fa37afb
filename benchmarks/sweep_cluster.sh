#!/usr/bin/env bash
# Overhead per point of `mimic sweep`'s executors against local processes, on this machine: a
# one-node Slurm cluster (tests/sweep/slurm_cluster.sh; needs root, slurm-wlm, munge) and a Dask
# LocalCluster (python3-distributed), each running the same POINTS points of the cheapest
# configuration (a 2-layer 64-wide MLP, timing only, on tpu-emu:v4; batches 1..POINTS). Writes
# benchmarks/results/sweep_cluster.md (and .json).
# Slurm's own cost per array task is measured apart, on PROBE_TASKS (100) tasks running /bin/true;
# PER_TASK ("10 100 500") lists the --points-per-task values timed.
# Usage: benchmarks/sweep_cluster.sh [BUILD_DIR] [POINTS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
points=${2:-1000}
probe=${PROBE_TASKS:-100}
per_tasks=${PER_TASK:-10 100 500}
mimic=$build/bin/mimic
source "$root/tests/sweep/slurm_cluster.sh"
work=$(mktemp -d /tmp/mimic-sweep-bench.XXXXXX)
trap 'slurm_cluster_stop; rm -rf "$work"' EXIT
slurm_cluster_start "$work/cluster"
cd "$work"
grid=(--model mlp --model-arg layers=2 --model-arg hidden=64 --model-arg in_features=64 --device tpu-emu:v4
      --batch "$(seq -s, 1 "$points")" --timing-only)
results=$work/results.txt
now() { date +%s.%N; }
# row NAME SECONDS [NOTE]: one measurement.
row() { echo "$1|$2|${3:-}" >>"$results"; echo "$1: $2 s ${3:-}" >&2; }
timed() {
  local name=$1 note=$2 start
  shift 2
  start=$(now)
  "$@" >"$work/out.txt" 2>&1 || { tail -n 5 "$work/out.txt" >&2; exit 1; }
  row "$name" "$(/usr/bin/python3 -c "print(round($(now) - $start, 2))")" "$note"
}
wait_queue_empty() { while [[ -n $(squeue -h -o %i) ]]; do sleep 0.2; done; }

# Slurm's own cost per array task on this node, whatever the task runs.
cat >true.sh <<'SH'
#!/bin/sh
exec /bin/true
SH
timed "slurm array of $probe /bin/true tasks" "sbatch --wait --array=0-$((probe - 1)): Slurm alone, per task" \
  sbatch --wait --array="0-$((probe - 1))" --output=/dev/null true.sh
timed "local -j 2" "processes on this machine, trace recorded" "$mimic" sweep "${grid[@]}" -j 2 --trace local.trace
for per_task in $per_tasks; do
  timed "slurm, $per_task point(s) per task" "$(((points + per_task - 1) / per_task)) array tasks, --poll 1s" \
    "$mimic" sweep "${grid[@]}" --executor slurm --dir "s$per_task" --points-per-task "$per_task" --poll 1s
done
# The submitting side's own costs, taken apart: submitting, one squeue poll of the whole array, and
# merging every task (collect after the array has run).
timed "slurm --no-wait submit, 10 points per task" "writes the point list and script, runs sbatch" \
  "$mimic" sweep "${grid[@]}" --executor slurm --dir nw --points-per-task 10 --no-wait
job=$(/usr/bin/python3 -c "import json; print(json.load(open('nw/sweep.json'))['rounds'][0]['job'])")
timed "squeue poll of a $(((points + 9) / 10))-task array" "squeue -h -r -j JOB -o %i, tasks pending or running" \
  squeue -h -r -j "$job" -o %i
wait_queue_empty
timed "collect: merge $(((points + 9) / 10)) finished tasks of 10 points" "one transaction per task into the sweep's trace" \
  "$mimic" sweep collect nw
# Merging costs what the runs' traces hold: a timing-only ResNet-50 run on tpu-emu:v4 records
# ~3,700 events (the MLP's ~40).
"$mimic" sweep --model resnet50 --device tpu-emu:v4 --batch "$(seq -s, 1 20)" --timing-only --executor slurm \
  --dir r50 --points-per-task 10 --no-wait >/dev/null 2>&1
wait_queue_empty
timed "collect: merge 2 finished tasks of 10 ResNet-50 points" \
  "$(sqlite3 r50/round-0/task-0/trace.db 'SELECT COUNT(*) / 10 FROM event') events per point" "$mimic" sweep collect r50
PYTHONPATH=$build/python /usr/bin/python3 "$root/benchmarks/sweep_cluster_dask.py" "$points" >>"$results"
/usr/bin/python3 - "$results" "$points" "$root" "$build" "$probe" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[3] + "/benchmarks")
import machine
rows = [line.rstrip("\n").split("|", 2) for line in open(sys.argv[1])]
n, probe = int(sys.argv[2]), int(sys.argv[5])
seconds = {name: float(s) for name, s, _ in rows}
local = seconds["local -j 2"]
info = machine.describe(sys.argv[4])
md = ["# Sweeps on a cluster: overhead per point of each executor", "",
      "Written by `benchmarks/sweep_cluster.sh` (as root): the same "
      f"{n} points of the cheapest configuration (2-layer 64-wide MLP, timing only, tpu-emu:v4, batches 1..{n}) "
      "run by each executor on this one machine: local processes (`-j 2`), a one-node Slurm cluster "
      "(slurmctld + slurmd, sched/builtin, no accounting) and a Dask LocalCluster (2 worker processes). "
      "Overhead per point = (wall time - local wall time) / points; for Dask, local is `mimic.sweep`'s own local executor from Python (no trace recorded), for Slurm `mimic sweep -j 2 --trace` (Slurm sweeps always merge a trace). The machine is shared with other builds: see its load average.", "", machine.markdown(info), "",
      "| executor | wall s | per point ms | overhead per point ms | what |", "|---|---|---|---|---|"]
for name, s, note in rows:
    whole_sweep = name.startswith(("local", "slurm,", "python", "dask,"))
    base = seconds["python mimic.sweep, jobs=2"] if name.startswith("dask") else local
    per = {True: f"{1000 * float(s) / n:.1f}", False: "-"}[whole_sweep]
    if "/bin/true" in name:
        per = f"{1000 * float(s) / probe:.1f} per task"
    if "collect" in name:
        per = f"{1000 * float(s) / (20 if 'ResNet' in name else n):.2f}"
    over = f"{1000 * (float(s) - base) / n:.1f}" if name.startswith(("slurm,", "dask,")) else "-"
    md.append(f"| {name} | {float(s):.2f} | {per} | {over} | {note} |")
md.append("")
json.dump({"machine": info, "points": n, "rows": [{"name": a, "seconds": float(b), "note": c} for a, b, c in rows]},
          open(sys.argv[3] + "/benchmarks/results/sweep_cluster.json", "w"), indent=2)
open(sys.argv[3] + "/benchmarks/results/sweep_cluster.md", "w").write("\n".join(md))
print("\n".join(md))
PY

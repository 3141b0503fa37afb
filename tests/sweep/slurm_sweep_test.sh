#!/usr/bin/env bash
# `mimic sweep --executor slurm` on a real one-node Slurm cluster started here (slurm_cluster.sh):
# the results equal the local executor's point for point; --sbatch options reach the job; a running
# task cancelled with scancel is retried; with --retries 0 a cancelled task's points are reported
# failed with Slurm's state and exit code (table and HTML report); --no-wait + `mimic sweep collect`
# gathers the sweep; --resume reruns only the failed, and skips points the local executor stored.
# Exit 77 (a CTest skip) with the reason when no cluster can be started (not root, no slurm-wlm).
# Usage: slurm_sweep_test.sh MIMIC_BINARY
set -euo pipefail
mimic=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/slurm_cluster.sh"
why=$(slurm_cluster_why_not)
if [[ -n "$why" ]]; then echo "SKIP: $why"; exit 77; fi
work=$(mktemp -d /tmp/mimic-slurm-test.XXXXXX)
cleanup() { slurm_cluster_stop; rm -rf "$work"; }
trap cleanup EXIT
slurm_cluster_start "$work/cluster" || { echo "SKIP: the one-node Slurm cluster could not start (above)"; exit 77; }
cd "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }
# 24 points: 2 devices x 6 batches x 2 layouts.
grid=(--model mlp --model-arg layers=2 --model-arg hidden=64 --model-arg in_features=64
      --device tpu-emu:v1,tpu-emu:v4 --batch 1,...,32 --layout nchw,nhwc --timing-only)
slurm=(--executor slurm --poll 0.3s)

# Points of two --json outputs equal, field by field except the host time each took.
same_points() {
  /usr/bin/python3 - "$1" "$2" "${3:-}" <<'PY'
import json, sys
def points(path):
    return {p["key"]: {k: v for k, v in p.items() if k != "host_seconds"} for p in json.load(open(path))["points"]}
a, b = points(sys.argv[1]), points(sys.argv[2])
if sys.argv[3] == "ok-only":
    b = {k: v for k, v in b.items() if v["status"] == "ok"}
    a = {k: v for k, v in a.items() if k in b}
if a != b or not a:
    key = next((k for k in a if a.get(k) != b.get(k)), None)
    fields = {f: (a[key].get(f), b[key].get(f)) for f in set(a[key]) | set(b.get(key) or {})
              if a[key].get(f) != (b.get(key) or {}).get(f)} if key else sorted(set(b) - set(a))[:1]
    sys.exit(f"points differ: {len(a)} vs {len(b)}; first difference: {key}: {fields}")
PY
}
job_of() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['rounds'][int(sys.argv[2])]['job'])" "$1" "$2"; }
wait_for_job() { for _ in $(seq 100); do [[ -s $1/sweep.json ]] && grep -q '"job"' "$1/sweep.json" && return; sleep 0.1; done; fail "no job in $1"; }
# Cancels one running task of the job; prints its index once Slurm reports it CANCELLED.
cancel_a_running_task() {
  local job=$1 task
  for _ in $(seq 200); do
    task=$(squeue -h -r -j "$job" -t R -o %i | head -n 1)
    if [[ -n "$task" ]]; then
      scancel "$task"
      sleep 0.3
      if scontrol -o show job "$task" | grep -q "JobState=CANCELLED"; then echo "${task#*_}"; return; fi
    fi
    sleep 0.05
  done
  fail "no running task of job $job could be cancelled"
}

echo "== local executor"
"$mimic" sweep "${grid[@]}" -j 2 --json local.json --trace local.trace >/dev/null 2>&1
"$mimic" sweep "${grid[@]}" "${slurm[@]}" --dir s0 --trace local.trace --resume >s0.out 2>&1
grep -q "24 of 24 points already done" s0.out && ! grep -q "submitted job" s0.out ||
  fail "a Slurm --resume of a sweep the local executor stored ran points again: $(head -n 2 s0.out)"

echo "== slurm: 6 tasks of 4 points, one cancelled while running, retried"
"$mimic" sweep "${grid[@]}" "${slurm[@]}" --dir s1 --points-per-task 4 --retries 1 --json s1.json \
  --sbatch=--time=10 --sbatch=--comment=mimic-test >s1.out 2>s1.err &
sweep_pid=$!
wait_for_job s1
job=$(job_of s1/sweep.json 0)
scontrol -o show job "$job" | grep -q "TimeLimit=00:10:00.*Comment=mimic-test" ||
  fail "the --sbatch options did not reach the job: $(scontrol -o show job "$job" | head -c 300)"
cancelled=$(cancel_a_running_task "$job")
wait "$sweep_pid" || fail "slurm sweep exited $? ($(tail -n 3 s1.err))"
grep -q "CANCELLED, exit code 0:15" "s1/round-0/task-$cancelled/failed" || fail "task $cancelled's Slurm state not recorded"
[[ -f s1/round-1/round.json ]] || fail "the cancelled task was not resubmitted"
same_points local.json s1.json
runs=$(sqlite3 s1/sweep.trace "SELECT COUNT(*) FROM sweep_point p JOIN run r ON r.id = p.run_id WHERE p.status = 'ok' AND r.status = 'done' AND r.last_event_rowid >= r.first_event_rowid")
[[ $runs -eq 24 ]] || fail "the sweep's trace holds $runs merged runs, expected 24"
echo "task $cancelled cancelled and retried; 24 points equal the local sweep's; 24 runs merged"

echo "== slurm --no-wait, a task cancelled with --retries 0, collect, then --resume"
"$mimic" sweep "${grid[@]}" "${slurm[@]}" --dir s2 --points-per-task 6 --retries 0 --no-wait --json s2.json \
  -o s2.html >s2.out 2>&1
grep -q "0 of 24 points done, 24 pending" s2.out || fail "--no-wait did not return at once: $(tail -n 2 s2.out)"
cancelled=$(cancel_a_running_task "$(job_of s2/sweep.json 0)")
for _ in $(seq 300); do
  "$mimic" sweep collect s2 >collect.out 2>&1 || fail "collect failed: $(tail -n 2 collect.out)"
  grep -q "pending" collect.out || break
  sleep 0.3
done
grep -q "pending" collect.out && fail "collect never finished: $(tail -n 2 collect.out)"
failed=$(/usr/bin/python3 -c "import json; print(sum(p['status'] == 'failed' and 'CANCELLED, exit code 0:15 (after 1 attempt)' in p['reason'] for p in json.load(open('s2.json'))['points']))")
[[ $failed -ge 1 ]] || fail "no point of cancelled task $cancelled reported failed with Slurm's state"
grep -q "failed" collect.out || fail "the table does not mark the failed points"
grep -q "CANCELLED, exit code 0:15" s2.html || fail "the HTML report does not say why points failed"
same_points local.json s2.json ok-only
"$mimic" sweep collect s2 >collect2.out 2>&1 && cmp -s <(grep -v recorded collect.out) <(grep -v recorded collect2.out) ||
  fail "collecting again changed the result"
"$mimic" sweep "${grid[@]}" "${slurm[@]}" --dir s2 --resume --retries 0 --json s2.json >resume.out 2>resume.err
grep -q "resuming sweep .*: $((24 - failed)) of 24 points already done" resume.err || fail "resume: $(head -n 2 resume.err)"
same_points local.json s2.json
echo "$failed points of cancelled task $cancelled reported failed, collected, then resumed: 24 points equal the local sweep's"
echo "PASS"

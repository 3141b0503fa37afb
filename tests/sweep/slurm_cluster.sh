# A one-node Slurm cluster on localhost for tests and benchmarks, sourced by them:
#   source tests/sweep/slurm_cluster.sh
#   slurm_cluster_start DIR || exit 77     # munged, slurmctld, slurmd in the foreground, all state in DIR
#   ...                                    # SLURM_CONF is exported: sbatch, squeue, mimic sweep see it
#   slurm_cluster_stop
# Needs root (slurmd runs jobs as their user), Debian's slurm-wlm and munge. On failure the start
# prints why on stderr and returns 1. Only the processes it started are stopped.

slurm_cluster_why_not() {
  [[ $(id -u) -eq 0 ]] || { echo "a Slurm cluster needs root (slurmd runs jobs as their owner), running as uid $(id -u)"; return; }
  for b in munged mungekey slurmctld slurmd sbatch squeue scancel scontrol sinfo; do
    command -v "$b" >/dev/null || { echo "$b is not installed (scripts/setup.sh --test installs slurm-wlm and munge)"; return; }
  done
}

slurm_free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

slurm_cluster_start() {
  local dir=$1 host cpus ctld_port d_port
  local why
  why=$(slurm_cluster_why_not)
  [[ -z "$why" ]] || { echo "$why" >&2; return 1; }
  host=$(hostname -s)
  cpus=$(nproc)
  ctld_port=$(slurm_free_port)
  d_port=$(slurm_free_port)
  mkdir -p "$dir/state" "$dir/spool"
  chmod 700 "$dir"
  mungekey --create --keyfile="$dir/munge.key" && chmod 400 "$dir/munge.key" || return 1
  cat >"$dir/slurm.conf" <<CONF
ClusterName=mimictest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MinJobAge=3600
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$dir/slurm.conf
  munged -F -f --key-file="$dir/munge.key" --socket="$dir/munge.sock" --pid-file="$dir/munged.pid" \
    --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" >"$dir/munged.out" 2>&1 &
  SLURM_CLUSTER_PIDS=($!)
  for _ in $(seq 50); do [[ -S "$dir/munge.sock" ]] && break; sleep 0.1; done
  slurmctld -D -i -f "$SLURM_CONF" >"$dir/slurmctld.out" 2>&1 &
  SLURM_CLUSTER_PIDS+=($!)
  slurmd -D -f "$SLURM_CONF" -N "$host" >"$dir/slurmd.out" 2>&1 &
  SLURM_CLUSTER_PIDS+=($!)
  for _ in $(seq 150); do
    [[ $(sinfo -h -o %T 2>/dev/null) == idle ]] && return 0
    sleep 0.2
  done
  echo "the one-node Slurm cluster did not come up in 30 s; its logs:" >&2
  tail -n 5 "$dir"/*.out "$dir"/*.log >&2
  slurm_cluster_stop
  return 1
}

slurm_cluster_stop() {
  # Jobs first (their slurmstepd processes end with them), then the daemons, newest first.
  scancel --quiet --user=root 2>/dev/null || true
  local i
  for ((i = ${#SLURM_CLUSTER_PIDS[@]} - 1; i >= 0; i--)); do
    kill "${SLURM_CLUSTER_PIDS[i]}" 2>/dev/null || true
    wait "${SLURM_CLUSTER_PIDS[i]}" 2>/dev/null || true
  done
  SLURM_CLUSTER_PIDS=()
}

#!/usr/bin/env bash
# Runs the README's two Quickstart commands on a fresh Debian 12 root, as a new user would.
#
# Builds a minimal Debian 12 (bookworm) root with debootstrap from the package archive apt already
# uses on this machine (read from apt's own configuration), copies the working tree into it (tracked
# files and untracked files git does not ignore, as a clone with the uncommitted changes would hold),
# and runs `./scripts/demo.sh` then `./scripts/test.sh` inside it with chroot, printing each
# command's exit status and time. Nothing installed on this machine by hand is visible in there.
#
#   scripts/fresh_machine_check.sh [--root DIR] [--only demo|test] [--keep]
#
#   --root DIR   where the fresh root is built (default /var/tmp/mimic-fresh-root); emptied first
#   --only CMD   run only one of the two commands
#   --keep       leave the root in place afterwards (to look around with chroot)
#
# The bare debootstrap result is cached as a tarball beside the root (DIR.base.tar.gz) so that a
# second check skips the download; delete it to start from the archive again. Needs root. Not part
# of .ci/run (it takes a while): run it before resolving work that touches dependencies or builds.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
root=/var/tmp/mimic-fresh-root
only=""
keep=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --root) root=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fresh_machine_check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$only" in ""|demo|test) ;; *) echo "fresh_machine_check: --only takes demo or test, got '$only'" >&2; exit 2 ;; esac
if [[ $(id -u) -ne 0 ]]; then
  echo "fresh_machine_check: needs root (debootstrap, chroot and mounts)" >&2
  exit 1
fi
if ! command -v debootstrap >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null ||
    { echo "fresh_machine_check: could not install debootstrap" >&2; exit 1; }
fi

# The archive this machine's apt uses: one line per repository as "URI SUITE".
mapfile -t repos < <(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Created-By: Packages' |
  sort -u | grep -E ' bookworm(-updates|-security)?$' || true)
main_uri=""
for r in "${repos[@]}"; do
  [[ "${r#* }" == bookworm ]] && main_uri=${r% *}
done
if [[ -z "$main_uri" ]]; then
  echo "fresh_machine_check: apt on this machine has no bookworm repository (run apt-get update?)" >&2
  exit 1
fi

mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
  # Fuzz findings outlive the root: their inputs and logs are what reproduces them.
  local found="$root/root/mimic/build-clang-asan"
  if compgen -G "$found/fuzz-artifacts/*/*" >/dev/null; then
    rm -rf "$root.fuzz" && mkdir -p "$root.fuzz"
    cp -r "$found/fuzz-artifacts" "$found/fuzz-logs" "$root.fuzz/" 2>/dev/null || true
    echo "fresh_machine_check: fuzz findings kept in $root.fuzz/"
  fi
  if [[ $keep -eq 0 ]]; then rm -rf --one-file-system "$root"; fi
}
trap cleanup EXIT
mount_in() { # mount_in TARGET ARGS...: mounts inside the root and remembers it for the cleanup
  local target="$root$1"
  shift
  mkdir -p "$target"
  mount "$@" "$target"
  mounted+=("$target")
}

step() { printf '== %s\n' "$*"; }
base="$root.base.tar.gz"
rm -rf --one-file-system "$root"
mkdir -p "$root"
start=$SECONDS
if [[ ! -f "$base" ]]; then
  step "debootstrap bookworm (minbase) from $main_uri"
  log="$root.debootstrap.log"
  debootstrap --variant=minbase --make-tarball="$base.part" bookworm "$root/../$(basename "$root").dl" "$main_uri" >"$log" 2>&1 ||
    { tail -20 "$log" >&2; echo "fresh_machine_check: debootstrap --make-tarball failed (log: $log)" >&2; exit 1; }
  rm -rf "$root/../$(basename "$root").dl"
  mv "$base.part" "$base"
fi
step "unpack the fresh root into $root"
debootstrap --variant=minbase --unpack-tarball="$base" bookworm "$root" "$main_uri" >"$root.debootstrap.log" 2>&1 ||
  { tail -20 "$root.debootstrap.log" >&2; echo "fresh_machine_check: debootstrap failed (log: $root.debootstrap.log)" >&2; exit 1; }
for r in "${repos[@]}"; do
  echo "deb ${r% *} ${r#* } main"
done >"$root/etc/apt/sources.list"
cp /etc/resolv.conf "$root/etc/resolv.conf"
echo "   $(( SECONDS - start )) s; apt sources: ${#repos[@]} repositories from this machine's apt"

mount_in /proc -t proc proc
mount_in /sys -t sysfs sysfs
mount_in /dev --bind /dev
mount_in /dev/pts --bind /dev/pts
mount_in /dev/shm -t tmpfs -o size=4g tmpfs
mount_in /tmp -t tmpfs -o size=8g tmpfs
# A booted Debian 12 has its cgroup hierarchy mounted (by systemd); a chroot must be given it.
# slurmd, started by the Slurm sweep test, refuses to start without it.
mount_in /sys/fs/cgroup --rbind /sys/fs/cgroup

step "copy the working tree (tracked and untracked, not ignored) to /root/mimic"
mkdir -p "$root/root/mimic"
(cd "$src" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) |
  tar -xf - -C "$root/root/mimic"

run_in_root() { # run_in_root NAME COMMAND: runs the command in the root's clean environment
  local name=$1 cmd=$2 t0=$SECONDS rc=0
  step "$name: $cmd"
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "cd /root/mimic && $cmd" </dev/null >"$root.$name.log" 2>&1 || rc=$?
  local dt=$(( SECONDS - t0 ))
  tail -n 40 "$root.$name.log"
  echo "   (whole output: $root.$name.log)"
  results+=("$(printf '%-5s %-20s exit %d  %dm%02ds' "$name" "$cmd" "$rc" $((dt / 60)) $((dt % 60)))")
  return "$rc"
}
results=()
status=0
if [[ -z "$only" || "$only" == demo ]]; then run_in_root demo ./scripts/demo.sh || status=1; fi
if [[ -z "$only" || "$only" == test ]]; then run_in_root test ./scripts/test.sh || status=1; fi

step "fresh Debian 12 results"
printf '%s\n' "${results[@]}"
if [[ $status -eq 0 ]]; then echo "fresh_machine_check: passed"; else echo "fresh_machine_check: FAILED"; fi
exit $status

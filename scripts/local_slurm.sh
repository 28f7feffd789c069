#!/usr/bin/env bash
# A single-node Slurm cluster in a folder of its own, on this machine (issue 55; docs/scale-out.md): to try
# `attnlab-cli ... --slurm N --submit` without a cluster, for scripts/bench_slurm.sh, and for tst_slurm
# (tests/support/slurm_cluster.h runs this script). Debian 12's slurm-wlm and munge (scripts/install_packages.sh);
# runs as root (slurmd starts jobs as their users). Everything lives in DIR: the munge key and socket, slurm.conf,
# state, spool, logs, pid files; the daemons listen on 127.0.0.1 at ports free when it starts.
#   scripts/local_slurm.sh start DIR [CPUS]   starts munged, slurmctld -D and slurmd -D in the background and waits
#                                             (up to WAIT s, default 120) until sinfo shows the node idle;
#                                             CPUS: the node's, default 2. Then: export SLURM_CONF=DIR/slurm.conf
#   scripts/local_slurm.sh stop DIR           cancels the jobs still there, stops the three daemons (their pid
#                                             files); DIR is left for its logs
# The settings, from Slurm 22.05's slurm.conf(5), slurmctld(8), slurmd(8) and munged(8) (SchedMD/slurm
# doc/man; dun/munge src/munged/munged.8):
#  - AuthInfo=socket=PATH: the munged socket of this cluster, for the daemons and the commands alike;
#  - SlurmctldHost=NAME(127.0.0.1), SlurmctldPort and SlurmdPort: the controller on 127.0.0.1 and free ports;
#  - NodeName=attnlab-node NodeAddr=127.0.0.1 CPUs=N with `slurmd -N attnlab-node`: one node, whatever the host is
#    called; SlurmdParameters=config_overrides: the configured CPUs win over what slurmd finds (16 cores: still N);
#    RealMemory: the machine's (its default, 1 MiB, refuses every --mem: "Requested node configuration is not
#    available");
#  - ProctrackType=proctrack/linuxproc, TaskPlugin=task/none: no cgroups (a plain container has none to give);
#  - SelectType=select/cons_tres with CR_CPU: one CPU a task by default, N tasks at once;
#  - SchedulerType=sched/builtin: a job starts as soon as it can, no backfill pass to wait for;
#  - no accounting (accounting_storage/none, so no sacct): jobs are followed with squeue and `scontrol show job`,
#    which keeps an ended job MinJobAge seconds.
set -euo pipefail
command=${1:?usage: scripts/local_slurm.sh start|stop DIR [CPUS]}
dir=${2:?usage: scripts/local_slurm.sh start|stop DIR [CPUS]}
cpus=${3:-2}
WAIT=${WAIT:-120}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
export SLURM_CONF="$dir/slurm.conf"
export PATH="$PATH:/usr/sbin:/sbin"
daemons=(munged slurmctld slurmd)

# A TCP port of 127.0.0.1 nothing listens on now (the kernel's choice for port 0).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

last_logs() {
  for f in "$dir"/munge/munged.log "$dir"/slurmctld.log "$dir"/slurmd.log "$dir"/*.out; do
    [ -f "$f" ] && { echo "--- $f"; tail -n 15 "$f"; }
  done >&2
}

write_config() {
  local host memory
  host=$(hostname -s 2>/dev/null || echo localhost)
  memory=$(($(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) / 1024)) # MiB: what --mem may ask of the node
  cat >"$SLURM_CONF" <<EOF
ClusterName=attnlablocal
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=600
NodeName=attnlab-node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=attnlab-node Default=YES MaxTime=INFINITE State=UP
EOF
}

# Runs a daemon in the background, its output in DIR/NAME.out, its pid in DIR/NAME.started.
launch() {
  local name=$1
  shift
  setsid "$@" >"$dir/$name.out" 2>&1 </dev/null &
  echo $! >"$dir/$name.started"
}

start() {
  [ "$(id -u)" -eq 0 ] || { echo "local_slurm.sh: the daemons start as root only" >&2; exit 1; }
  for p in munged slurmctld slurmd sinfo; do
    command -v "$p" >/dev/null || { echo "local_slurm.sh: $p not found (apt-get install slurm-wlm munge)" >&2; exit 1; }
  done
  mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
  chmod 755 "$dir" "$dir/munge"  # munged: the socket's folders must let every user through
  head -c 1024 /dev/urandom >"$dir/munge/munge.key"
  chmod 400 "$dir/munge/munge.key"
  write_config
  local m="$dir/munge"
  # --force: DIR may lie in a folder only its owner enters (mktemp -d: 0700), where munged refuses a socket that
  # other users could not reach ("execute permissions for all required"); here root is the one user of it.
  launch munged munged -F --force --socket="$m/munge.socket" --key-file="$m/munge.key" --pid-file="$m/munged.pid" \
    --log-file="$m/munged.log" --seed-file="$m/munged.seed"
  local waited=0
  until [ -S "$m/munge.socket" ]; do
    ((waited++ < 200)) || { echo "local_slurm.sh: munged made no socket" >&2; last_logs; stop; exit 1; }
    sleep 0.1
  done
  launch slurmctld slurmctld -D -c -i
  launch slurmd slurmd -D -N attnlab-node
  local state="" t0=$SECONDS
  while ((SECONDS - t0 < WAIT)); do
    for d in "${daemons[@]}"; do
      kill -0 "$(cat "$dir/$d.started")" 2>/dev/null || { echo "local_slurm.sh: $d ended" >&2; last_logs; stop; exit 1; }
    done
    state=$(sinfo -h -N -o %t 2>/dev/null || true)
    [ "$state" = idle ] && { echo "export SLURM_CONF=$SLURM_CONF"; return 0; }
    sleep 0.25
  done
  echo "local_slurm.sh: the node was not idle after $WAIT s (sinfo: ${state:-nothing})" >&2
  last_logs
  stop
  exit 1
}

# Only the processes this script started, by the pids it wrote.
stop() {
  if [ -f "$dir/slurmctld.started" ] && kill -0 "$(cat "$dir/slurmctld.started")" 2>/dev/null; then
    local jobs
    jobs=$(squeue -h -o %A 2>/dev/null || true)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      scancel $jobs 2>/dev/null || true
      for _ in $(seq 1 60); do [ -z "$(squeue -h -o %A 2>/dev/null || true)" ] && break; sleep 0.25; done
    fi
  fi
  for d in slurmd slurmctld munged; do
    local f="$dir/$d.started"
    [ -f "$f" ] || continue
    local pid
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$f"
  done
}

case "$command" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: scripts/local_slurm.sh start|stop DIR [CPUS]" >&2; exit 2 ;;
esac

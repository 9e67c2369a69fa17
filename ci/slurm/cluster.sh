#!/usr/bin/env bash
# cluster.sh - start/stop a throwaway single-node Slurm cluster living entirely in DIR.
#
#   ci/slurm/cluster.sh start DIR   create DIR, start munged + slurmctld + slurmd (as the
#                                   current user), write DIR/slurm.conf and DIR/env
#                                   ("export SLURM_CONF=DIR/slurm.conf"), wait until the node
#                                   is idle, print "slurm: up (...)" and exit 0.  If Slurm
#                                   cannot start here, print one line
#                                   "SKIPPED: slurm cannot start here: <reason>", clean up
#                                   what was started, and exit 3.
#   ci/slurm/cluster.sh stop DIR    scancel this cluster's jobs, then kill the daemons recorded
#                                   in DIR/pids/*.pid (only if their command line still mentions
#                                   DIR), wait for them, exit 0 (also if they were already gone).
#
# Nothing under /etc or /var is read for configuration or written: key, sockets, state,
# spool, pid and log files are all under DIR.  Needs slurm-wlm (22.05) and munge.
# SLURM_START_DEADLINE (default 60) bounds the wait for the node to become idle.
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
DIR="" PIDS=""
START_DEADLINE=${SLURM_START_DEADLINE:-60}
export PATH=$PATH:/usr/sbin:/sbin

# pid of a daemon we started, if it is still alive and still ours (cmdline mentions DIR).
our_pid() {
  local f=$PIDS/$1.pid pid cmdline
  [[ -s $f ]] || return 1
  pid=$(<"$f")
  cmdline=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 1
  [[ $cmdline == *"$DIR"* ]] || return 1
  echo "$pid"
}

# session ids of slurmstepd processes (job steps) that still have a file open under DIR
leftover_step_sessions() {
  local p fd
  for p in $(pgrep -x slurmstepd || true); do
    for fd in /proc/"$p"/fd/*; do
      if [[ $(readlink "$fd" 2>/dev/null) == "$DIR/"* ]]; then awk '{ print $6 }' "/proc/$p/stat"; break; fi
    done
  done | sort -u
}

any_alive() { local p; for p; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }

stop_all() {
  local name pid i pids=() sid
  [[ -n $DIR && -d $PIDS ]] || return 0
  # cancel jobs while the controller is still up, so no job step outlives the cluster
  if our_pid slurmctld >/dev/null && [[ -s $DIR/slurm.conf ]]; then
    SLURM_CONF=$DIR/slurm.conf scancel --user="$(id -un)" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      [[ -z $(leftover_step_sessions) ]] && break
      sleep 0.2
    done
  fi
  for sid in $(leftover_step_sessions); do pkill -KILL -s "$sid" || true; done
  for name in slurmd slurmctld munged; do
    if pid=$(our_pid "$name"); then kill -TERM "$pid" 2>/dev/null && pids+=("$pid"); fi
    # munged last: let the slurm daemons shut down while munge still answers
    if [[ $name == slurmctld || $name == munged ]]; then
      for ((i = 0; i < 100; i++)); do
        any_alive "${pids[@]}" || break
        sleep 0.1
      done
    fi
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -f "$PIDS"/*.pid
}

skip() { # skip REASON [LOG...]: one line (last errors of the first non-empty LOG), clean up, exit 3
  local msg=$1 f tail_; shift
  for f; do
    [[ -s $f ]] || continue
    tail_=$(grep -E 'error|fatal|Error' "$f" | grep -v -E 'pmix|PMIx|MPI:|state file|backup state' | tail -n 3) ||
      tail_=$(tail -n 5 "$f")
    msg+=" | $(basename "$f"): $(tr '\n' ' ' <<<"$tail_" | tr -s ' ')"
    break
  done
  trap - ERR
  stop_all
  echo "SKIPPED: slurm cannot start here: $msg"
  exit 3
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { # first free port >= $1, not equal to $2
  local p=$1
  while [[ $p == "${2:-}" ]] || ! port_free "$p"; do p=$((p + 1)); done
  echo "$p"
}

# start NAME LOGFILE CMD...: run a daemon in the foreground of a new session, record its pid.
start_daemon() {
  local name=$1 log=$2; shift 2
  setsid "$@" >>"$DIR/log/$name.out" 2>&1 </dev/null &
  echo $! >"$PIDS/$name.pid"
  sleep 0.3
  our_pid "$name" >/dev/null || skip "$name exited at start-up" "$log" "$DIR/log/$name.out"
}

do_start() {
  local b
  for b in munged slurmctld slurmd sinfo sbatch scontrol; do
    command -v "$b" >/dev/null || skip "$b not found in PATH"
  done
  if our_pid slurmctld >/dev/null || our_pid slurmd >/dev/null || our_pid munged >/dev/null; then
    # not ours to clean up: no skip()
    echo "SKIPPED: slurm cannot start here: a cluster is already running in $DIR (run: $0 stop $DIR)"
    exit 3
  fi
  local user host ncpu memmb ctld_port slurmd_port
  user=$(id -un); host=$(hostname -s 2>/dev/null || uname -n); host=${host%%.*}; ncpu=$(nproc)
  memmb=$(awk '/^MemTotal:/ { m = int($2 / 1024 / 2); print (m > 256 ? m : 256) }' /proc/meminfo)
  mkdir -p "$PIDS" "$DIR/log" "$DIR/munge" "$DIR/state" "$DIR/spool" "$DIR/run"
  chmod 0755 "$DIR/munge"  # key stays 0400; socket dir must be searchable

  # --- munge: private key, socket, pid, log and seed files under DIR/munge
  local mk=$DIR/munge/munge.key msock=$DIR/munge/munge.socket
  rm -f "$mk"
  dd if=/dev/urandom of="$mk" bs=1 count=1024 status=none
  chmod 0400 "$mk"
  # --force: munged otherwise refuses a socket path with a non-world-searchable parent
  # (e.g. a 0700 mktemp dir) and, as root, other "insecure" setups; all files here are private.
  start_daemon munged "$DIR/log/munged.out" munged --foreground --force \
    --socket="$msock" --key-file="$mk" --pid-file="$DIR/munge/munged.pid" \
    --log-file="$DIR/munge/munged.log" --seed-file="$DIR/munge/munged.seed"
  local i
  for ((i = 0; i < 50; i++)); do [[ -S $msock ]] && break; sleep 0.1; done
  [[ -S $msock ]] || skip "munged socket $msock did not appear" "$DIR/log/munged.out"

  # --- slurm.conf, plus an empty plugstack.conf (else /etc/slurm/plugstack.conf is read) and
  # a cgroup.conf: slurmd 22.05 always loads a cgroup plugin, and "autodetect" picks cgroup/v2
  # on a unified host, which wants systemd/dbus (or a writable /sys/fs/cgroup) to make a
  # slurmstepd.scope.  22.05 has no CgroupPlugin=disabled; cgroup/v1's init() does nothing,
  # and with proctrack/linuxproc + task/none nothing else calls into it.
  ctld_port=$(free_port 16817)
  slurmd_port=$(free_port $((ctld_port + 1)) "$ctld_port")
  : >"$DIR/plugstack.conf"
  echo 'CgroupPlugin=cgroup/v1' >"$DIR/cgroup.conf"
  cat >"$DIR/slurm.conf" <<EOF
# generated by $0 for a throwaway test cluster
ClusterName=ci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$msock
CredType=cred/munge
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$DIR/plugstack.conf
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
MinJobAge=3600
SchedulerParameters=batch_sched_delay=0
SlurmdTimeout=60
NodeName=$host NodeAddr=127.0.0.1 CPUs=$ncpu RealMemory=$memmb State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  echo "export SLURM_CONF=$DIR/slurm.conf" >"$DIR/env"
  export SLURM_CONF=$DIR/slurm.conf

  # --- daemons, in the foreground of their own sessions (so $! is the daemon's pid)
  start_daemon slurmctld "$DIR/log/slurmctld.log" slurmctld -D -c -i -f "$SLURM_CONF"
  start_daemon slurmd "$DIR/log/slurmd.log" slurmd -D -f "$SLURM_CONF"

  local state="" t0=$SECONDS
  while ((SECONDS - t0 < START_DEADLINE)); do
    our_pid slurmctld >/dev/null || skip "slurmctld exited" "$DIR/log/slurmctld.log" "$DIR/log/slurmctld.out"
    our_pid slurmd >/dev/null || skip "slurmd exited" "$DIR/log/slurmd.log" "$DIR/log/slurmd.out"
    state=$(sinfo -h -o %t 2>/dev/null | head -n 1) || true
    [[ $state == idle ]] && break
    sleep 0.5
  done
  [[ $state == idle ]] || skip "node not idle after ${START_DEADLINE}s (state '${state:-none}')" "$DIR/log/slurmd.log"
  echo "slurm: up (node $host, $ncpu cpus, ctld port $ctld_port, slurmd port $slurmd_port, SLURM_CONF=$SLURM_CONF)"
}

[[ $# -eq 2 ]] || usage
case $1 in
  start)
    set -E
    trap 'skip "unexpected failure at line $LINENO: $BASH_COMMAND"' ERR
    mkdir -p "$2"
    DIR=$(cd "$2" && pwd -P) PIDS=$DIR/pids
    do_start ;;
  stop)
    [[ -d $2 ]] || exit 0
    DIR=$(cd "$2" && pwd -P) PIDS=$DIR/pids
    stop_all ;;
  *) usage ;;
esac

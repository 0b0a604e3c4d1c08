# A real one-node Slurm cluster for one test, sourced by tests/slurm/*.sh:
# munged, slurmctld and slurmd as root with their own key, socket, config,
# state and log under a temporary directory, on free ports. The node declares
# SLURM_TEST_CPUS CPUs (default 8) whatever the machine has
# (SlurmdParameters=config_overrides). slurm_start exits 77 with the reason
# when the packages are missing or we are not root; an EXIT trap always
# stops the daemons (and every job's process) and removes the directory.
# Commands reach this cluster through SLURM_CONF, which slurm_start exports.
# Finished jobs are recorded in $SLURM_TEST_DIR/log/jobcomp.txt (jobcomp/
# filetxt: what sacct would show needs slurmdbd and a database).

slurm_skip() { echo "SKIP: $*"; exit 77; }

slurm_require() {
  [[ $(id -u) == 0 ]] || slurm_skip "the Slurm tests start munged, slurmctld and slurmd as root"
  local missing=()
  for c in munged slurmctld slurmd srun salloc sbatch scontrol scancel sinfo; do
    command -v "$c" >/dev/null || [[ -x /usr/sbin/$c ]] || missing+=("$c")
  done
  ((${#missing[@]} == 0)) ||
    slurm_skip "not installed: ${missing[*]} (Debian: apt-get install slurmctld slurmd slurm-client munge)"
}

slurm_free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 20000))
    ss -Hltn "sport = :$port" 2>/dev/null | grep -q . || { echo "$port"; return; }
  done
}

slurm_stop() {
  local status=$?
  set +e
  if [[ -n ${SLURM_TEST_DIR:-} && -d $SLURM_TEST_DIR ]]; then
    # Jobs first (slurmd kills their steps), then the daemons by their pids.
    [[ -n ${SLURM_CONF:-} ]] && scancel --full --quiet --user=root 2>/dev/null
    local pid
    for f in ctld.pid d.pid munged.pid; do
      pid=$(cat "$SLURM_TEST_DIR/$f" 2>/dev/null) && [[ -n $pid ]] && kill "$pid" 2>/dev/null
    done
    for _ in $(seq 50); do
      local alive=0
      for f in ctld.pid d.pid munged.pid; do
        pid=$(cat "$SLURM_TEST_DIR/$f" 2>/dev/null) && [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && alive=1
      done
      ((alive)) || break
      sleep 0.1
    done
    for f in ctld.pid d.pid munged.pid; do
      pid=$(cat "$SLURM_TEST_DIR/$f" 2>/dev/null) && [[ -n $pid ]] && kill -9 "$pid" 2>/dev/null
    done
    # slurmstepd of a killed slurmd: found by our config path on its command line? No: by the spool dir.
    for pid in $(pgrep -f "slurmstepd.*" 2>/dev/null); do
      grep -qs "$SLURM_TEST_DIR" "/proc/$pid/environ" "/proc/$pid/cmdline" && kill -9 "$pid" 2>/dev/null
    done
    if ((status != 0 && status != 77)) && [[ -n ${SLURM_TEST_VERBOSE_FAILURE:-1} ]]; then
      echo "--- slurmctld log (tail)"; tail -15 "$SLURM_TEST_DIR/log/ctld.log" 2>/dev/null
      echo "--- slurmd log (tail)"; tail -15 "$SLURM_TEST_DIR/log/d.log" 2>/dev/null
    fi
    rm -rf "$SLURM_TEST_DIR"
  fi
  exit "$status"
}

slurm_start() {
  slurm_require
  SLURM_TEST_DIR=$(mktemp -d /tmp/trainrun-slurm.XXXXXX)
  trap slurm_stop EXIT
  trap 'exit 130' INT TERM HUP
  local d=$SLURM_TEST_DIR node cpus=${SLURM_TEST_CPUS:-8}
  node=$(hostname -s)
  mkdir -p "$d"/{state,spool,log,munge}
  chmod 700 "$d" "$d/munge"
  dd if=/dev/urandom bs=1 count=1024 of="$d/munge/munge.key" status=none
  chmod 400 "$d/munge/munge.key"
  munged --force --socket="$d/munge/sock" --key-file="$d/munge/munge.key" --pid-file="$d/munged.pid" \
    --log-file="$d/log/munged.log" --seed-file="$d/munge/seed" ||
    { cat "$d/log/munged.log"; echo "FAIL: munged did not start"; exit 1; }
  local ctld_port d_port
  ctld_port=$(slurm_free_port)
  d_port=$(slurm_free_port)
  cat > "$d/slurm.conf" <<CONF
ClusterName=trainrun-test
SlurmctldHost=$node
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/sock
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/ctld.pid
SlurmdPidFile=$d/d.pid
JobCompType=jobcomp/filetxt
JobCompLoc=$d/log/jobcomp.txt
SlurmctldLogFile=$d/log/ctld.log
SlurmdLogFile=$d/log/d.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
KillWait=${SLURM_TEST_KILLWAIT:-5}
MinJobAge=600
SlurmdParameters=config_overrides
NodeName=$node CPUs=$cpus Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=2000 State=UNKNOWN
PartitionName=p Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  export SLURM_CONF=$d/slurm.conf
  /usr/sbin/slurmctld -c -f "$SLURM_CONF" || { echo "FAIL: slurmctld did not start"; exit 1; }
  /usr/sbin/slurmd -f "$SLURM_CONF" || { echo "FAIL: slurmd did not start"; exit 1; }
  local state=""
  for _ in $(seq 150); do
    state=$(sinfo -h -N -o %t 2>/dev/null | head -1)
    [[ $state == idle ]] && break
    sleep 0.2
  done
  [[ $state == idle ]] || { echo "FAIL: the node is '$state', not idle, after 30 s"; exit 1; }
  echo "slurm: one node '$node' with $cpus CPUs is idle ($d)"
}

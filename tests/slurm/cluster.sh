# A real one-node Slurm cluster for one test, sourced by tests/slurm/*.sh:
# munged, slurmctld and slurmd as root with their own key, socket, config,
# state and log under a temporary directory, on free ports. The node declares
# SLURM_TEST_CPUS CPUs (default 8) whatever the machine has
# (SlurmdParameters=config_overrides). slurm_start exits 77 with the reason
# when the packages are missing or we are not root; an EXIT trap always
# stops the daemons (and every job's process) and removes the directory.
# SLURM_TEST_CGROUP=1 confines every step to its cgroup, SLURM_TEST_GPUS=N
# gives the node N stand-in GPUs (both below).
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

# The entries of /tmp that hold the project's tree and the build directory
# (meson runs tests from it), e.g. "ci" for a clone in /tmp/ci.
slurm_tmp_tops() {
  local repo
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
  for path in "$repo" "$(pwd -P)"; do
    [[ $path == /tmp/?* ]] && { path=${path#/tmp/}; echo "${path%%/*}"; }
  done | sort -u | tr '\n' ' '
}

# A port no socket uses, below the kernel's ephemeral range (a connection's
# local port there made slurmctld's bind fail with "Address already in
# use" once), and not $1 (the port already picked for the other daemon).
slurm_free_port() {
  local port first
  read -r first _ < /proc/sys/net/ipv4/ip_local_port_range
  ((first > 11000)) || first=32768
  while :; do
    port=$((10000 + RANDOM % (first - 10000)))
    [[ $port == "${1:-}" ]] && continue
    ss -Htan "sport = :$port" 2>/dev/null | grep -q . || { echo "$port"; return; }
  done
}

slurm_stop() {
  local status=$?
  set +e
  if [[ -n ${SLURM_TEST_DIR:-} && -d $SLURM_TEST_DIR ]]; then
    # The test's command (its `timeout` passes the signal on), the jobs
    # (slurmd kills their steps), then the daemons by their pids.
    [[ -n ${SLURM_TEST_RUNNING:-} ]] && kill "$SLURM_TEST_RUNNING" 2>/dev/null
    [[ -n ${SLURM_CONF:-} ]] && scancel --full --quiet --user=root 2>/dev/null
    # Everything else of this cluster at once, however it ended: the daemons
    # (their command lines name our directory), slurmstepd, srun, salloc and
    # every task (their environments hold SLURM_CONF=our directory). SIGKILL,
    # because meson's SIGKILL may follow its SIGTERM within a second.
    local pid
    for _ in 1 2 3; do
      for pid in /proc/[0-9]*; do
        pid=${pid#/proc/}
        [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
        grep -qsF "$SLURM_TEST_DIR" "/proc/$pid/cmdline" "/proc/$pid/environ" && kill -9 "$pid" 2>/dev/null
      done
      sleep 0.1
    done
    # The step cgroups slurmd made (SLURM_TEST_CGROUP): their processes are
    # gone, so the empty directories go too; rmdir leaves any in use.
    if [[ -n ${SLURM_TEST_CGROUP:-} ]]; then
      for dir in /sys/fs/cgroup/*/"slurm_$(hostname -s)" /sys/fs/cgroup/*/slurm_h[0-9]*; do
        [[ -d $dir ]] && find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
      done
    fi
    if [[ -n ${SLURM_TEST_NETNS:-} ]]; then
      for ns in $SLURM_TEST_NETNS; do ip netns del "$ns" 2>/dev/null; done
      ip link del "$slurm_bridge" 2>/dev/null
    fi
    if ((status != 0 && status != 77)) && [[ -n ${SLURM_TEST_VERBOSE_FAILURE:-1} ]]; then
      echo "--- slurmctld log (tail)"; tail -15 "$SLURM_TEST_DIR/log/ctld.log" 2>/dev/null
      for f in "$SLURM_TEST_DIR"/log/d*.log; do echo "--- $f (tail)"; tail -15 "$f"; done
    fi
    rm -rf "$SLURM_TEST_DIR"
  fi
  exit "$status"
}

slurm_start() {
  slurm_require
  # Not under /tmp: the nodes of a two-node cluster get a /tmp of their own.
  SLURM_TEST_DIR=$(mktemp -d /var/tmp/trainrun-slurm.XXXXXX)
  trap slurm_stop EXIT
  trap 'exit 130' INT TERM HUP
  local d=$SLURM_TEST_DIR node cpus=${SLURM_TEST_CPUS:-8} nodes=${SLURM_TEST_NODES:-1} ctld_host
  node=$(hostname -s)
  ctld_host=$node
  ((nodes == 1)) || slurm_make_hosts "$nodes"
  mkdir -p "$d"/{state,spool,log,munge}
  chmod 700 "$d" "$d/munge"
  dd if=/dev/urandom bs=1 count=1024 of="$d/munge/munge.key" status=none
  chmod 400 "$d/munge/munge.key"
  munged --force --socket="$d/munge/sock" --key-file="$d/munge/munge.key" --pid-file="$d/munged.pid" \
    --log-file="$d/log/munged.log" --seed-file="$d/munge/seed" ||
    { cat "$d/log/munged.log"; echo "FAIL: munged did not start"; exit 1; }
  local slurm_proctrack=proctrack/linuxproc slurm_task_plugin=task/none
  if [[ -n ${SLURM_TEST_CGROUP:-} ]]; then slurm_cgroup_conf; fi
  local ctld_port d_port
  ctld_port=$(slurm_free_port)
  d_port=$(slurm_free_port "$ctld_port")
  cat > "$d/slurm.conf" <<CONF
ClusterName=trainrun-test
SlurmctldHost=$ctld_host
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/sock
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/ctld.pid
SlurmdPidFile=$d/d-%n.pid
JobCompType=jobcomp/filetxt
JobCompLoc=$d/log/jobcomp.txt
SlurmctldLogFile=$d/log/ctld.log
SlurmdLogFile=$d/log/d-%n.log
ProctrackType=${slurm_proctrack}
TaskPlugin=${slurm_task_plugin}
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
KillWait=${SLURM_TEST_KILLWAIT:-5}
MinJobAge=600
SlurmdParameters=config_overrides
CONF
  local shape="CPUs=$cpus Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=2000 State=UNKNOWN"
  if [[ -n ${SLURM_TEST_CGROUP:-} ]]; then
    shape="$(/usr/sbin/slurmd -C | grep -oE '(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=[0-9]+' |
      tr '\n' ' ')RealMemory=2000 State=UNKNOWN"
    cpus=$(grep -oE 'CPUs=[0-9]+' <<<"$shape" | cut -d= -f2)
  fi
  if [[ -n ${SLURM_TEST_GPUS:-} ]]; then slurm_fake_gpus "$SLURM_TEST_GPUS"; shape+=" Gres=gpu:$SLURM_TEST_GPUS"; fi
  if ((nodes == 1)); then
    echo "NodeName=$node $shape" >> "$d/slurm.conf"
  else
    for ((i = 1; i <= nodes; ++i)); do echo "NodeName=h$i NodeAddr=$slurm_net.$((i + 1)) $shape" >> "$d/slurm.conf"; done
    node="h[1-$nodes]"
  fi
  echo "PartitionName=p Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES" >> "$d/slurm.conf"
  mkdir -p "$d/spool/$(hostname -s)"
  for ((i = 1; i <= nodes; ++i)); do mkdir -p "$d/spool/h$i"; done
  export SLURM_CONF=$d/slurm.conf
  /usr/sbin/slurmctld -c -f "$SLURM_CONF" || { echo "FAIL: slurmctld did not start"; exit 1; }
  if ((nodes == 1)); then
    /usr/sbin/slurmd -f "$SLURM_CONF" || { echo "FAIL: slurmd did not start"; exit 1; }
  else
    # nsenter, not `ip netns exec`: that remounts /sys, hiding the cgroups slurmd wants.
    for ((i = 1; i <= nodes; ++i)); do
      # Its own /tmp too, as a real node has: Slurm's PMIx plugin makes
      # /tmp/spmix_appdir_UID_JOB.STEP on every node of a step.
      # The project's tree stays visible, as a shared file system would keep it
      # on a real cluster, even when it lies under /tmp (a clone in /tmp/ci).
      mkdir -p "$d/outer-tmp-h$i"
      nsenter --net="/run/netns/srn$i" unshare --uts --mount sh -c "mount --make-rprivate / &&
        mount --bind /tmp $d/outer-tmp-h$i && mount -t tmpfs tmpfs /tmp &&
        for top in $(slurm_tmp_tops); do mkdir -p /tmp/\$top && mount --bind $d/outer-tmp-h$i/\$top /tmp/\$top; done &&
        hostname h$i && exec /usr/sbin/slurmd -N h$i -f $SLURM_CONF" ||
        { tail -5 "$d/log/d-h$i.log"; echo "FAIL: slurmd h$i did not start"; exit 1; }
    done
  fi
  local state=""
  for _ in $(seq 150); do
    state=$(sinfo -h -N -o %t 2>/dev/null | sort -u | tr '\n' ' ')
    [[ $state == "idle " ]] && break
    sleep 0.2
  done
  [[ $state == "idle " ]] || { echo "FAIL: the nodes are '$state', not idle, after 30 s"; exit 1; }
  echo "slurm: $nodes node(s) '$node' with $cpus CPUs each are idle ($d)"
}

# SLURM_TEST_CGROUP=1: every step confined as a production cluster does
# (task/cgroup with ConstrainCores and ConstrainDevices, under cgroup v1), on
# a node that declares the machine's real CPUs (cpusets need real ones).
slurm_cgroup_conf() {
  [[ -d /sys/fs/cgroup/cpuset && -d /sys/fs/cgroup/devices ]] || slurm_skip "no cgroup v1 cpuset and devices controllers"
  cat > "$d/cgroup.conf" <<CONF
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
ConstrainCores=yes
ConstrainDevices=yes
CONF
  slurm_proctrack=proctrack/cgroup
  slurm_task_plugin=task/cgroup,task/affinity
}

# SLURM_TEST_GPUS=N: the node has N "GPUs" (GresTypes=gpu), character
# devices with NVIDIA's major number that no driver serves, so that Slurm
# allocates and confines them and sets CUDA_VISIBLE_DEVICES as on a GPU node.
slurm_fake_gpus() {
  mkdir -p "$d/dev"
  for ((i = 0; i < $1; ++i)); do mknod "$d/dev/nvidia$i" c 195 "$i"; done
  echo "GresTypes=gpu" >> "$d/slurm.conf"
  echo "Name=gpu File=$d/dev/nvidia[0-$(($1 - 1))]" > "$d/gres.conf"
}

# SLURM_TEST_NODES=N (N > 1): hosts h1..hN, each a network namespace on a
# bridge ($slurm_net.2 ...; this machine is $slurm_net.1) with its own
# slurmd and hostname. The file system is shared, so are the binaries.
slurm_bridge=br-trslurm
slurm_net=10.231.0
slurm_make_hosts() {
  command -v ip >/dev/null && command -v nsenter >/dev/null || slurm_skip "two-node Slurm tests need ip and nsenter"
  ip link del "$slurm_bridge" 2>/dev/null || true  # left by a test that was killed -9
  ip link add "$slurm_bridge" type bridge || slurm_skip "cannot create a bridge (no CAP_NET_ADMIN?)"
  SLURM_TEST_NETNS=" "  # from now on slurm_stop removes the bridge
  ip addr add "$slurm_net.1/24" dev "$slurm_bridge"
  ip link set "$slurm_bridge" up
  for ((i = 1; i <= $1; ++i)); do
    ip netns del "srn$i" 2>/dev/null || true  # the same; a deleted namespace's veth
    ip link del "vsrn$i" 2>/dev/null || true  # lingers a moment after it
    ip netns add "srn$i"
    SLURM_TEST_NETNS+=" srn$i"
    ip link add "vsrn$i" type veth peer name eth0 netns "srn$i"
    ip link set "vsrn$i" master "$slurm_bridge"
    ip link set "vsrn$i" up
    ip -n "srn$i" addr add "$slurm_net.$((i + 1))/24" dev eth0
    ip -n "srn$i" link set eth0 up
    ip -n "srn$i" link set lo up
  done
  ctld_host="$(hostname -s)($slurm_net.1)"
}

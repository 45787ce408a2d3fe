#!/usr/bin/env bash
# cluster.sh - a real, throw-away SLURM cluster on one Linux machine, for ptrun's SLURM integration tests.
#
# Debian's slurm-wlm (22.05) + munge. Every daemon runs in a network namespace this script creates:
#
#   netns ${P}sw : Linux bridge "br0" = the switch (no IP)
#   netns ${P}h0 : host "head"  ${SUBNET}.10/24  slurmctld + munged; the login node where "run" runs clients
#   netns ${P}hI : host "nodeI" ${SUBNET}.(10+I)/24, I = 1..N, one slurmd -N nodeI each (own IP, own hostname)
#
# No namespace has a default route, so nothing can leave ${SUBNET}.0/24; in the root namespace an
# "unreachable ${SUBNET}.0/24" route (tagged proto 178) makes a mistaken use from outside fail at once.
# /etc/netns/${P}hI/hosts lets head/node1..nodeN resolve inside the hosts. munged is private (own key and
# socket in the state dir); slurmd spool/pid/log paths are per node via %n. The namespaces share the
# machine's filesystem, so binaries and job output files are visible on every node.
#
# Usage:
#   cluster.sh up N        bring up head + node1..nodeN (1 <= N <= 32); installs slurmctld slurmd slurm-client
#                          munge with apt-get (--no-install-recommends) when missing. Tears down a previous
#                          cluster with the same prefix first. Returns when every node is idle and the
#                          controller's main scheduler has run (so an sbatch starts at once).
#   cluster.sh down        cancel jobs, stop every daemon it started (by pid files), kill what is left in its
#                          namespaces, delete namespaces, route, /etc/netns dirs, state dir. Idempotent.
#   cluster.sh run CMD...  run a SLURM client (sbatch, srun, salloc, squeue, scancel, scontrol, sinfo, ...) on
#                          the head host with SLURM_CONF set, in the current directory; exit status = CMD's
#   cluster.sh status      print the state dir, daemons and sinfo;   cluster.sh dir   print the state dir
#   cluster.sh conf        print the SLURM_CONF path
#
# Environment:
#   PTSLURM_DIR         state dir (config etc/slurm.conf, logs log/, spool, pids). Default: a fresh
#                       mktemp dir, recorded in /run/${P}slurm.dir so that run/down find it without the knob
#   PTSLURM_PREFIX      namespace-name prefix                              (default "pts-")
#   PTSLURM_SUBNET      private IPv4 /24, "10.78.0" or "10.78.0.0/24"     (default 10.78.0)
#   PTSLURM_CPUS        CPUs declared per node (default: nproc; more than the hardware is fine)
#   PTSLURM_GPUS        fake GPUs per node (default 0): Gres=gpu:K backed by dummy char devices (like
#                       /dev/null), so --gpus-per-node=K sets CUDA_VISIBLE_DEVICES, SLURM_GPUS_ON_NODE, ...
#   PTSLURM_CTL_PORT    slurmctld port (default 26817);  PTSLURM_SLURMD_PORT  slurmd port (default 26818)
#   PTSLURM_TIMEOUT     seconds any single wait may take (default 60)
#   PTSLURM_NO_INSTALL=1  never run apt-get (exit 77 when the packages are missing)
#   Two clusters at once need different PTSLURM_PREFIX *and* PTSLURM_SUBNET (and state dirs).
#
# Exit codes: 0 ok, 1 error, 2 usage, 77 = cannot run here (not root, no network namespaces, packages
# missing and not installable). Needs root, iproute2, util-linux (unshare).
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"

P="${PTSLURM_PREFIX:-pts-}"
TIMEOUT="${PTSLURM_TIMEOUT:-60}"
PROTO=178                               # tag of our root-namespace route: "down" deletes only that one
SW="${P}sw"
DIRFILE="/run/${P}slurm.dir"            # where "up" recorded the state dir

die() { echo "cluster.sh: $*" >&2; exit 1; }
skip() { echo "cluster.sh: skip: $*" >&2; exit 77; }
usage() {
  local text; text="$(sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//')"
  if [ "${1:-2}" = 0 ]; then echo "$text"; else echo "$text" >&2; fi
  exit "${1:-2}"
}
[[ "$P" =~ ^[A-Za-z0-9_.-]{1,30}$ ]] || die "PTSLURM_PREFIX '$P': use 1-30 of [A-Za-z0-9_.-]"
[[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "PTSLURM_TIMEOUT must be a positive integer"

T0=$EPOCHREALTIME
now_ms() { local t="${EPOCHREALTIME/[.,]/}"; echo $((10#$t / 1000)); }
log() { local t="${EPOCHREALTIME/[.,]/}" s="${T0/[.,]/}"; printf '[cluster.sh %5d ms] %s\n' $(((10#$t - 10#$s) / 1000)) "$*"; }
# wait_for SECONDS WHAT CMD...: poll CMD (every 0.1 s) until it succeeds, at most SECONDS;
# CMD exiting with 2 means "will never succeed": give up at once
wait_for() {
  local secs="$1" what="$2" rc; shift 2
  local end=$(($(now_ms) + secs * 1000))
  while :; do
    rc=0; "$@" || rc=$?
    [ "$rc" = 0 ] && return 0
    [ "$rc" = 2 ] && { echo "cluster.sh: gave up waiting for $what" >&2; return 1; }
    [ "$(now_ms)" -lt "$end" ] || { echo "cluster.sh: timed out after ${secs}s waiting for $what" >&2; return 1; }
    sleep 0.1
  done
}

# ---- state ---------------------------------------------------------------------------------------
DIR=""
find_dir() {   # the state dir: $PTSLURM_DIR, else the one "up" recorded
  if [ -n "${PTSLURM_DIR:-}" ]; then DIR="$PTSLURM_DIR"
  elif [ -r "$DIRFILE" ]; then DIR="$(cat "$DIRFILE")"
  else DIR=""; fi
}
SUBNET="${PTSLURM_SUBNET:-10.78.0}"
NNODES=0
load_state() {   # values "up" used win over the environment
  [ -n "$DIR" ] && [ -r "$DIR/cluster.state" ] || return 0
  local k v
  while IFS='=' read -r k v; do
    case "$k" in SUBNET) SUBNET="$v" ;; NNODES) NNODES="$v" ;; esac
  done < "$DIR/cluster.state"
}
check_subnet() {
  SUBNET="${SUBNET%/24}"
  [[ "$SUBNET" =~ ^[0-9]+\.[0-9]+\.[0-9]+\.0$ ]] && SUBNET="${SUBNET%.0}"
  [[ "$SUBNET" =~ ^(10\.[0-9]{1,3}|172\.(1[6-9]|2[0-9]|3[01])|192\.168)\.[0-9]{1,3}$ ]] ||
    die "PTSLURM_SUBNET '$SUBNET': give a private /24 (10.x.y, 172.16-31.x, 192.168.x)"
  local o; for o in ${SUBNET//./ }; do [ "$o" -le 255 ] || die "PTSLURM_SUBNET '$SUBNET': octet $o > 255"; done
}

ns_of() { echo "${P}h$1"; }
ip_of() { echo "${SUBNET}.$((10 + $1))"; }
name_of() { if [ "$1" = 0 ]; then echo head; else echo "node$1"; fi; }
our_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${P//./\\.}(h[0-9]+|sw)$" || true; }
ns_pids() { local ns; for ns in "$@"; do ip netns pids "$ns" 2>/dev/null || true; done | grep -vx "$$" || true; }
no_pids() { [ -z "$(ns_pids "$@")" ]; }

# on_host I CMD...: run CMD on host I (its netns, its own UTS namespace with hostname head/nodeI)
on_host() {
  local i="$1"; shift
  # shellcheck disable=SC2016  # $PTS_HOSTNAME and $@ are expanded by the inner sh
  PTS_HOSTNAME="$(name_of "$i")" ip netns exec "$(ns_of "$i")" unshare --uts -- \
    /bin/sh -c 'echo "$PTS_HOSTNAME" > /proc/sys/kernel/hostname && unset PTS_HOSTNAME && exec "$@"' sh "$@"
}

need_root() {
  command -v ip >/dev/null || skip "needs iproute2 (the ip command)"
  command -v unshare >/dev/null || skip "needs util-linux (the unshare command)"
  [ "$(id -u)" = 0 ] || skip "needs root (network namespaces, daemons as root); running as uid $(id -u)"
}

# ---- down ----------------------------------------------------------------------------------------
# pid_alive FILE REGEX: the pid in FILE is running and its comm matches REGEX (never signal a reused pid)
pid_of() {
  local f="$1" re="$2" pid
  [ -r "$f" ] || return 1
  pid="$(cat "$f" 2>/dev/null)"; [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  grep -qE "^($re)" "/proc/$pid/comm" 2>/dev/null || return 1
  echo "$pid"
}
all_gone() { local p; for p in "$@"; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
queue_empty() { [ -z "$(SLURM_CONF="$DIR/etc/slurm.conf" on_host 0 timeout 5 squeue -h -o %i 2>/dev/null)" ]; }

cmd_down() {
  find_dir; load_state; check_subnet
  local -a nss pids=()
  mapfile -t nss < <(our_namespaces)
  if [ -n "$DIR" ] && [ -d "$DIR" ]; then
    # 1. cancel every job and wait (bounded) until the queue is empty, so slurmstepds clean up themselves
    if pid_of "$DIR/pids/slurmctld" slurmctld >/dev/null && [ -e "/run/netns/$(ns_of 0)" ]; then
      SLURM_CONF="$DIR/etc/slurm.conf" on_host 0 timeout 10 scancel --full --user=root >/dev/null 2>&1 || true
      wait_for 10 "jobs to end" queue_empty 2>/dev/null || true
    fi
    # 2. daemons, by our pid files: TERM all at once, wait (bounded), KILL stragglers
    local f p
    for f in "$DIR"/pids/*; do
      [ -e "$f" ] || continue
      p="$(pid_of "$f" 'slurmd|slurmctld|munged|slurmstepd')" && { kill -TERM "$p" 2>/dev/null || true; pids+=("$p"); }
    done
    if [ "${#pids[@]}" -gt 0 ] && ! wait_for 15 "daemons to exit" all_gone "${pids[@]}" 2>/dev/null; then
      kill -KILL "${pids[@]}" 2>/dev/null || true
      wait_for 5 "killed daemons to go" all_gone "${pids[@]}" || true
    fi
  fi
  # 3. anything still running in OUR namespaces (orphaned job tasks, slurmstepd): TERM, bounded wait, KILL
  if [ "${#nss[@]}" -gt 0 ]; then
    mapfile -t pids < <(ns_pids "${nss[@]}")
    if [ "${#pids[@]}" -gt 0 ]; then
      kill -TERM "${pids[@]}" 2>/dev/null || true
      if ! wait_for 3 "processes to exit" no_pids "${nss[@]}" 2>/dev/null; then
        mapfile -t pids < <(ns_pids "${nss[@]}")
        [ "${#pids[@]}" -eq 0 ] || kill -KILL "${pids[@]}" 2>/dev/null || true
        wait_for 5 "killed processes to go" no_pids "${nss[@]}" || true
      fi
    fi
    local ns
    for ns in "${nss[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  fi
  local d
  for d in /etc/netns/"${P}"h* /etc/netns/"${SW}"; do
    [[ -e "$d" && "${d#/etc/netns/}" =~ ^${P//./\\.}(h[0-9]+|sw)$ ]] && rm -rf "$d"
  done
  rmdir /etc/netns 2>/dev/null || true     # only when empty (no other harness uses it)
  while ip route del unreachable "${SUBNET}.0/24" proto $PROTO 2>/dev/null; do :; done
  # 4. the state dir: only one that "up" made (it holds our marker), never an arbitrary directory
  if [ -n "$DIR" ] && [ -f "$DIR/cluster.state" ]; then rm -rf "$DIR"; fi
  rm -f "$DIRFILE"
  return 0
}

# ---- up ------------------------------------------------------------------------------------------
have_packages() {
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null &&
    command -v srun >/dev/null && command -v munged >/dev/null && command -v munge >/dev/null
}
install_packages() {
  have_packages && return 0
  [ "${PTSLURM_NO_INSTALL:-0}" = 1 ] && skip "slurmctld/slurmd/slurm-client/munge not installed (PTSLURM_NO_INSTALL=1)"
  command -v apt-get >/dev/null || skip "slurmctld/slurmd/slurm-client/munge not installed and no apt-get"
  log "installing slurmctld slurmd slurm-client munge (apt-get, --no-install-recommends)"
  local out
  if ! out="$( { timeout 300 apt-get update -qq &&
                 DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends \
                   slurmctld slurmd slurm-client munge; } 2>&1)"; then
    skip "cannot install slurmctld slurmd slurm-client munge with apt-get: $(tail -n 1 <<<"$out")"
  fi
  have_packages || skip "slurm packages installed but commands missing"
  log "installed"
}

check_free() {   # refuse a subnet the machine already routes (a real network), except our own guard
  local r
  r="$(ip -4 route show table all match "${SUBNET}.0/24"; ip -4 route show table all root "${SUBNET}.0/24")"
  r="$(grep -vE '^(default|unreachable|broadcast) ' <<<"$r" | grep -v "proto $PROTO" || true)"
  [ -z "$r" ] || die "PTSLURM_SUBNET ${SUBNET}.0/24 overlaps a route of this machine: '$(head -1 <<<"$r")'; choose another"
}

links_ready() {
  local i
  for i in "$@"; do
    ip -n "$SW" link show "h$i" 2>/dev/null | grep -q 'state UP' || return 1
    bridge -n "$SW" link show dev "h$i" 2>/dev/null | grep -q 'state forwarding' || return 1
    ip -n "$(ns_of "$i")" link show eth0 2>/dev/null | grep -q 'LOWER_UP' || return 1
  done
}

net_up() {   # head (0) + hosts 1..N
  local n="$1" i ns
  ip route add unreachable "${SUBNET}.0/24" proto $PROTO 2>/dev/null || true
  ip netns add "$SW"
  ip -n "$SW" link set lo up
  ip -n "$SW" link add br0 type bridge stp_state 0 mcast_snooping 0
  ip -n "$SW" link set br0 up
  local hosts="127.0.0.1 localhost"$'\n'"::1 localhost ip6-localhost ip6-loopback"$'\n'
  for ((i = 0; i <= n; i++)); do hosts+="$(ip_of "$i") $(name_of "$i")"$'\n'; done
  for ((i = 0; i <= n; i++)); do
    ns="$(ns_of "$i")"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip link add name eth0 netns "$ns" type veth peer name "h$i" netns "$SW"
    ip -n "$SW" link set "h$i" master br0
    ip -n "$SW" link set "h$i" up
    ip -n "$ns" addr add "$(ip_of "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    mkdir -p "/etc/netns/$ns" 2>/dev/null || mkdir -p "/etc/netns/$ns"   # another harness's down may rmdir /etc/netns
    printf '%s' "$hosts" > "/etc/netns/$ns/hosts"
  done
  wait_for 10 "links to come up" links_ready $(seq 0 "$n")
}

# start_daemon NAME HOST CMD...: CMD runs in the foreground on HOST, detached (own session, stdio to a log);
# its pid (ip netns exec, unshare and sh all exec, so $! is the daemon itself) goes to $DIR/pids/NAME
start_daemon() {
  local name="$1" host="$2"; shift 2
  # shellcheck disable=SC2016  # $PTS_HOSTNAME and $@ are expanded by the inner sh
  PTS_HOSTNAME="$(name_of "$host")" setsid ip netns exec "$(ns_of "$host")" unshare --uts -- \
    /bin/sh -c 'echo "$PTS_HOSTNAME" > /proc/sys/kernel/hostname && unset PTS_HOSTNAME && exec "$@"' sh "$@" \
    </dev/null >"$DIR/log/$name.out" 2>&1 &
  echo $! > "$DIR/pids/$name"
}
daemon_died() {   # daemon_died: print which of our daemons is gone (non-zero when all alive); a daemon
  # still on its way (this script's fork, setsid, ip netns exec, unshare, sh: a loaded machine shows each) is alive
  local f
  for f in "$DIR"/pids/*; do
    if ! pid_of "$f" 'slurmd|slurmctld|munged|bash|sh|unshare|ip|setsid|cluster.sh' >/dev/null; then basename "$f"; return 0; fi
  done
  return 1
}
show_logs() {
  local f
  for f in "$DIR"/log/*; do
    [ -s "$f" ] || continue
    [[ "$f" == *.out && -s "${f%.out}.log" ]] && continue   # -D daemons print their log file on stderr too
    echo "---- $f (last lines)" >&2
    grep -vE 'Unauthorized credential|Replayed credential' "$f" | tail -n 8 >&2 || true
  done
}

SINFO=""
nodes_idle() {
  SINFO="$(SLURM_CONF="$DIR/etc/slurm.conf" on_host 0 timeout 5 sinfo -h -N -o '%N %t' 2>/dev/null || true)"
  [ "$(awk '$2 == "idle"' <<<"$SINFO" | wc -l)" -ge "$NNODES" ]
}
up_check() {    # nodes idle, or fail fast when a daemon died
  local d
  if d="$(daemon_died)"; then echo "cluster.sh: daemon $d died" >&2; return 2; fi
  nodes_idle
}
scheduler_ran() {   # slurmctld's main scheduler ran its first cycle (sdiag "Main schedule statistics")
  local n
  n="$(SLURM_CONF="$DIR/etc/slurm.conf" on_host 0 timeout 5 sdiag 2>/dev/null |
       awk '/^Main schedule statistics/ {m = 1} m && /Total cycles:/ {print $3; exit}')"
  [ -n "$n" ] && [ "$n" -ge 1 ]
}

cmd_up() {
  local n="${1:-}"
  [[ "$n" =~ ^[1-9][0-9]?$ ]] && [ "$n" -le 32 ] || { echo "usage: $0 up N  (1 <= N <= 32)" >&2; exit 2; }
  [ $# -le 1 ] || { echo "usage: $0 up N" >&2; exit 2; }
  local cpus="${PTSLURM_CPUS:-$(nproc)}" gpus="${PTSLURM_GPUS:-0}"
  local ctl_port="${PTSLURM_CTL_PORT:-26817}" d_port="${PTSLURM_SLURMD_PORT:-26818}"
  [[ "$cpus" =~ ^[1-9][0-9]*$ ]] || die "PTSLURM_CPUS must be a positive integer"
  [[ "$gpus" =~ ^[0-9]+$ ]] && [ "$gpus" -le 16 ] || die "PTSLURM_GPUS must be 0..16"
  [[ "$ctl_port" =~ ^[1-9][0-9]*$ && "$d_port" =~ ^[1-9][0-9]*$ && "$ctl_port" -lt 65536 && "$d_port" -lt 65536 &&
     "$ctl_port" != "$d_port" ]] || die "PTSLURM_CTL_PORT / PTSLURM_SLURMD_PORT: two different ports 1..65535"
  need_root
  local probe="${P}probe$$" err
  if ! err="$(ip netns add "$probe" 2>&1)"; then skip "network namespaces not permitted here ('ip netns add': $err)"; fi
  ip netns del "$probe" 2>/dev/null || true
  if ! err="$(unshare --uts true 2>&1)"; then skip "UTS namespaces not permitted here (unshare --uts: $err)"; fi
  install_packages

  cmd_down                          # a previous cluster with this prefix
  SUBNET="${PTSLURM_SUBNET:-10.78.0}"; check_subnet; check_free
  NNODES="$n"
  if [ -n "${PTSLURM_DIR:-}" ]; then
    DIR="$PTSLURM_DIR"
    [ ! -e "$DIR" ] || [ -z "$(ls -A "$DIR")" ] || [ -f "$DIR/cluster.state" ] ||
      die "PTSLURM_DIR $DIR exists and is not empty (and not a cluster.sh state dir)"
    rm -rf "$DIR"; mkdir -p "$DIR"
  else
    DIR="$(mktemp -d /tmp/ptrun-slurm.XXXXXX)"
  fi
  DIR="$(cd "$DIR" && pwd)"
  printf 'SUBNET=%s\nNNODES=%s\nPREFIX=%s\n' "$SUBNET" "$NNODES" "$P" > "$DIR/cluster.state"
  echo "$DIR" > "$DIRFILE"
  trap 'rc=$?; if [ $rc != 0 ]; then trap - EXIT; show_logs; echo "cluster.sh: up failed (rc=$rc), tearing down" >&2; cmd_down >/dev/null 2>&1 || true; fi' EXIT

  mkdir -p "$DIR"/{etc,state,spool,run,log,pids,munge/key,dev}
  chmod 755 "$DIR" "$DIR/munge"; chmod 700 "$DIR/munge/key"
  local i
  for ((i = 1; i <= n; i++)); do mkdir -p "$DIR/spool/node$i"; done   # slurmd wants its spool dir first

  net_up "$n"
  log "network: head $(ip_of 0), node1..node$n $(ip_of 1)..$(ip_of "$n") (netns ${P}h0..${P}h$n)"

  # munged: private key and socket (the socket's directory must be 0755)
  mungekey -c -k "$DIR/munge/key/munge.key" >/dev/null 2>&1 ||
    dd if=/dev/urandom of="$DIR/munge/key/munge.key" bs=1 count=128 status=none
  chmod 600 "$DIR/munge/key/munge.key"
  local sock="$DIR/munge/munge.sock"
  start_daemon munged 0 munged -F --socket="$sock" --key-file="$DIR/munge/key/munge.key" \
    --log-file="$DIR/log/munged.log" --pid-file="$DIR/run/munged.pid" --seed-file="$DIR/munge/key/munged.seed"
  wait_for 10 "munged's socket" test -S "$sock"
  munge -S "$sock" -n </dev/null | unmunge -S "$sock" >/dev/null || die "munge self-test failed"

  # slurm.conf
  local nodes addrs="" gresline="" grestypes=""
  if [ "$n" = 1 ]; then nodes=node1; else nodes="node[1-$n]"; fi
  for ((i = 1; i <= n; i++)); do addrs+="${addrs:+,}$(ip_of "$i")"; done
  if [ "$gpus" -gt 0 ]; then
    local k
    for ((k = 0; k < gpus; k++)); do mknod "$DIR/dev/nvidia$k" c 1 3; done   # same device as /dev/null
    gresline="Gres=gpu:$gpus"; grestypes="GresTypes=gpu"
    if [ "$gpus" = 1 ]; then echo "Name=gpu File=$DIR/dev/nvidia0"; else echo "Name=gpu File=$DIR/dev/nvidia[0-$((gpus - 1))]"; fi > "$DIR/etc/gres.conf"
  fi
  cat > "$DIR/etc/slurm.conf" <<EOF
# generated by ptrun tests/slurm/cluster.sh ($n node(s), netns prefix $P, subnet ${SUBNET}.0/24)
ClusterName=ptrun
SlurmctldHost=head($(ip_of 0))
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MailProg=/bin/true
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=60
Waittime=0
MessageTimeout=10
TCPTimeout=2
$grestypes
NodeName=$nodes NodeAddr=$addrs CPUs=$cpus Sockets=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=1024 $gresline State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  # slurmd 22.05 always loads a cgroup plugin; "autodetect" fails under `ip netns exec` (a fresh /sys without
  # /sys/fs/cgroup). cgroup/v1 initialises without a mount; nothing uses it with linuxproc + task/none.
  echo "CgroupPlugin=cgroup/v1" > "$DIR/etc/cgroup.conf"
  echo "export SLURM_CONF=$DIR/etc/slurm.conf" > "$DIR/env.sh"
  export SLURM_CONF="$DIR/etc/slurm.conf"

  start_daemon slurmctld 0 slurmctld -D -i -f "$SLURM_CONF"
  for ((i = 1; i <= n; i++)); do start_daemon "slurmd-node$i" "$i" slurmd -D -f "$SLURM_CONF" -N "node$i"; done
  log "started munged + slurmctld on head, slurmd on node1..node$n"

  local rc=0
  wait_for "$TIMEOUT" "node1..node$n to be idle" up_check || rc=$?
  if [ "$rc" != 0 ]; then echo "$SINFO" >&2; exit 1; fi
  log "nodes idle: $(tr '\n' ' ' <<<"$SINFO")"
  # a batch job submitted before the main scheduler's first cycle (~2-3 s after start) waits for it
  wait_for "$TIMEOUT" "slurmctld's first scheduling cycle" scheduler_ran || exit 1
  trap - EXIT
  log "cluster ready: SLURM_CONF=$SLURM_CONF (state dir $DIR)"
}

# ---- run / status --------------------------------------------------------------------------------
need_cluster() {
  find_dir; load_state; check_subnet
  [ -n "$DIR" ] && [ -f "$DIR/cluster.state" ] || die "no cluster (run: $0 up N)"
  [ -e "/run/netns/$(ns_of 0)" ] || die "no cluster: netns $(ns_of 0) missing (run: $0 up N)"
}
cmd_run() {
  [ $# -ge 1 ] || { echo "usage: $0 run CMD..." >&2; exit 2; }
  need_root; need_cluster
  export SLURM_CONF="$DIR/etc/slurm.conf"
  # exec all the way down (ip netns exec, unshare and sh exec too): the client is this very process, so
  # its exit status and signals (a caller's timeout) need no forwarding
  # shellcheck disable=SC2016
  PTS_HOSTNAME="head" exec ip netns exec "$(ns_of 0)" unshare --uts -- \
    /bin/sh -c 'echo "$PTS_HOSTNAME" > /proc/sys/kernel/hostname && unset PTS_HOSTNAME && exec "$@"' sh "$@"
}
cmd_status() {
  need_cluster
  echo "state dir: $DIR  (SLURM_CONF=$DIR/etc/slurm.conf, $NNODES node(s), subnet ${SUBNET}.0/24, prefix $P)"
  local f p
  for f in "$DIR"/pids/*; do
    if p="$(pid_of "$f" 'slurmd|slurmctld|munged')"; then echo "$(basename "$f"): pid $p"; else echo "$(basename "$f"): not running"; fi
  done
  SLURM_CONF="$DIR/etc/slurm.conf" on_host 0 timeout 10 sinfo -N -o '%N %t %c %G' || true
}

sub="${1:-}"; shift || true
case "$sub" in
  up) cmd_up "$@" ;;
  down) [ $# -eq 0 ] || usage; need_root; cmd_down ;;
  run) cmd_run "$@" ;;
  status) cmd_status ;;
  dir) find_dir; [ -n "$DIR" ] && [ -f "$DIR/cluster.state" ] || die "no cluster"; echo "$DIR" ;;
  conf) find_dir; [ -n "$DIR" ] && [ -f "$DIR/cluster.state" ] || die "no cluster"; echo "$DIR/etc/slurm.conf" ;;
  -h|--help|help) usage 0 ;;
  *) usage ;;
esac

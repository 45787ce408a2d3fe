#!/usr/bin/env bash
# netns-hosts.sh - emulate N hosts on one Linux machine with network namespaces (ptrun multi-host tests).
#
# Topology (everything lives in namespaces this script creates; nothing is bridged to a real NIC):
#
#   netns ${P}sw : Linux bridge "br0" = the switch (no IP, multicast snooping off)
#   netns ${P}h0 : optional host "head" (up N --head)   eth0 = ${SUBNET}.10/24, ${SUBNET6}10/64
#   netns ${P}hI : host I = 1..N, hostname ${HOSTPFX}I   eth0 = ${SUBNET}.(10+I)/24, ${SUBNET6}(10+I)/64
#   each host's eth0 is one end of a veth pair; the other end ("hI") is a port of br0 in ${P}sw.
#
# Hosts have lo up and NO default route: they reach only the emulated subnets and their own loopback.
# In the ROOT namespace "unreachable" routes for both subnets (tagged "proto 177") make a command run
# outside the namespaces by mistake fail at once (EHOSTUNREACH) instead of leaving through a real NIC.
# /etc/netns/${P}hI/hosts (ip netns exec bind-mounts it over /etc/hosts) lists every emulated host:
# "nodeI"/"head" resolve to the IPv4 address only, "nodeI-v6"/"head-v6" to the IPv6 (ULA) address.
#
# Usage:
#   netns-hosts.sh up N [--head]    create hosts 1..N (+ host 0 "head"); removes a previous set first
#   netns-hosts.sh down             remove everything it created (kills processes left in its namespaces,
#                                   deletes namespaces, root-namespace routes, /etc/netns dirs); idempotent
#   netns-hosts.sh exec I CMD...    run CMD on host I: ip netns exec + unshare --uts, hostname = host's name
#   netns-hosts.sh nsexec I CMD...  same without the private hostname
#   netns-hosts.sh ip I | ip6 I | name I | ns I    print host I's IPv4 / IPv6 address / hostname / netns
#   netns-hosts.sh cut I | heal I   pull / plug host I's cable (switch-side veth down / up)
#   netns-hosts.sh block I J        drop all traffic between hosts I and J (IPv4+IPv6, both directions;
#                                   nftables rules inside host I; installs Debian's nftables if missing)
#   netns-hosts.sh unblock I        remove every block rule of host I
#   netns-hosts.sh status           one line per host: address, name, cable, block, process count
#
# Environment:
#   PTNS_PREFIX     namespace-name prefix            (default "ptt-")
#   PTNS_SUBNET     private IPv4 /24: "10.77.0" or "10.77.0.0/24"           (default 10.77.0)
#   PTNS_SUBNET6    ULA IPv6 /64: "fd77::" or "fd77:0:0:5::/64"             (default fd77::)
#   PTNS_HOSTPFX    hostname prefix                  (default "node")
#   PTNS_TIMEOUT    seconds any single wait may take (default 10)
#   PTNS_KILL_GRACE seconds "down" gives processes after SIGTERM before SIGKILL (default 3)
#   PTNS_NO_INSTALL=1  never run apt-get (block then exits 77 when nft is missing)
#   Two sets of hosts at once need different PTNS_PREFIX *and* subnets.
#
# Exit codes: 0 ok, 1 error, 2 usage, 77 = cannot run here (not root, namespaces not permitted, no nft).
# Needs root (CAP_NET_ADMIN + CAP_SYS_ADMIN), iproute2, util-linux (unshare).
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"

P="${PTNS_PREFIX:-ptt-}"
HOSTPFX="${PTNS_HOSTPFX:-node}"
TIMEOUT="${PTNS_TIMEOUT:-10}"
GRACE="${PTNS_KILL_GRACE:-3}"
SUBNET="${PTNS_SUBNET:-10.77.0}"
SUBNET6="${PTNS_SUBNET6:-fd77::}"
SW="${P}sw"
STATEFILE="/run/${P}netns-hosts.state"   # what "up" used (subnets, names, hosts), read by the other commands
PROTO=177                                # tag of our root-namespace routes: "down" deletes only those
NFT_TABLE=ptns
V6=1
HOSTS=""

die() { echo "netns-hosts: $*" >&2; exit 1; }
skip() { echo "netns-hosts: $*" >&2; exit 77; }
usage() {   # usage [EXIT]: the header above, on stdout for help (exit 0), else on stderr (exit 2)
  local text; text="$(sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//')"
  if [ "${1:-2}" = 0 ]; then echo "$text"; else echo "$text" >&2; fi
  exit "${1:-2}"
}

[[ "$P" =~ ^[A-Za-z0-9_.-]{1,40}$ ]] || die "PTNS_PREFIX '$P': use 1-40 of [A-Za-z0-9_.-]"
[[ "$HOSTPFX" =~ ^[A-Za-z][A-Za-z0-9-]{0,30}$ ]] || die "PTNS_HOSTPFX '$HOSTPFX' is not a valid hostname prefix"
[[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "PTNS_TIMEOUT must be a positive integer"
[[ "$GRACE" =~ ^[1-9][0-9]*$ ]] || die "PTNS_KILL_GRACE must be a positive integer"

load_state() {   # values "up" used win over the environment, so ip/down/... agree with the running set
  [ -r "$STATEFILE" ] || return 0
  local k v
  while IFS='=' read -r k v; do
    case "$k" in
      SUBNET) SUBNET="$v" ;; SUBNET6) SUBNET6="$v" ;; HOSTPFX) HOSTPFX="$v" ;; HOSTS) HOSTS="$v" ;; V6) V6="$v" ;;
    esac
  done < "$STATEFILE"
}

check_subnets() {
  SUBNET="${SUBNET%/24}"
  [[ "$SUBNET" =~ ^[0-9]+\.[0-9]+\.[0-9]+\.0$ ]] && SUBNET="${SUBNET%.0}"
  [[ "$SUBNET" =~ ^(10\.[0-9]{1,3}|172\.(1[6-9]|2[0-9]|3[01])|192\.168)\.[0-9]{1,3}$ ]] ||
    die "PTNS_SUBNET '$SUBNET': give a private /24 (10.x.y, 172.16-31.x, 192.168.x)"
  local o; for o in ${SUBNET//./ }; do [ "$o" -le 255 ] || die "PTNS_SUBNET '$SUBNET': octet $o > 255"; done
  SUBNET6="${SUBNET6%/64}"
  [[ "$SUBNET6" =~ ^f[cdCD][0-9a-fA-F]{2}(:[0-9a-fA-F]{1,4}){0,3}::$ ]] ||
    die "PTNS_SUBNET6 '$SUBNET6': give a ULA /64 prefix ending in '::' (fd77::, fd77:0:0:5::)"
}

ns_of() { echo "${P}h$1"; }
ip_of() { echo "${SUBNET}.$((10 + $1))"; }
ip6_of() { echo "${SUBNET6}$((10 + $1))"; }
name_of() { if [ "$1" = 0 ]; then echo head; else echo "${HOSTPFX}$1"; fi; }
our_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${P//./\\.}(h[0-9]+|sw)$" || true; }
need_index() { [[ "${1:-}" =~ ^[0-9]+$ ]] || die "bad host index '${1:-}'"; }
need_host() {
  need_index "$1"
  [ -e "/run/netns/$(ns_of "$1")" ] || die "host $1 does not exist (netns $(ns_of "$1"); run: $0 up N)"
}

now_ms() { local t="${EPOCHREALTIME/[.,]/}"; echo $((10#$t / 1000)); }
# wait_for WHAT CMD...: poll CMD until it succeeds, at most $TIMEOUT seconds
wait_for() {
  local what="$1"; shift
  local end=$(($(now_ms) + TIMEOUT * 1000))
  until "$@"; do
    [ "$(now_ms)" -lt "$end" ] || { echo "netns-hosts: timed out after ${TIMEOUT}s waiting for $what" >&2; return 1; }
    sleep 0.02
  done
}

need_root() {
  command -v ip >/dev/null || skip "needs iproute2 (the ip command)"
  [ "$(id -u)" = 0 ] || skip "needs root: network namespaces (ip netns add, veth, bridge) need root; running as uid $(id -u)"
}

ns_pids() { local ns; for ns in "$@"; do ip netns pids "$ns" 2>/dev/null || true; done | grep -vx "$$" || true; }
no_pids() { [ -z "$(ns_pids "$@")" ]; }

cmd_down() {
  load_state; check_subnets
  local -a nss pids
  mapfile -t nss < <(our_namespaces)
  if [ "${#nss[@]}" -gt 0 ]; then
    # processes still running in OUR namespaces: TERM, wait (bounded), then KILL
    mapfile -t pids < <(ns_pids "${nss[@]}")
    if [ "${#pids[@]}" -gt 0 ]; then
      kill -TERM "${pids[@]}" 2>/dev/null || true
      if ! TIMEOUT="$GRACE" wait_for "processes to exit" no_pids "${nss[@]}" 2>/dev/null; then
        mapfile -t pids < <(ns_pids "${nss[@]}")
        [ "${#pids[@]}" -eq 0 ] || kill -KILL "${pids[@]}" 2>/dev/null || true
        wait_for "killed processes to go" no_pids "${nss[@]}" || true
      fi
    fi
    local ns
    for ns in "${nss[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  fi
  local d
  for d in /etc/netns/"${P}"h* /etc/netns/"${SW}"; do
    [[ -e "$d" && "${d#/etc/netns/}" =~ ^${P//./\\.}(h[0-9]+|sw)$ ]] && rm -rf "$d"
  done
  rmdir /etc/netns 2>/dev/null || true     # only when empty (no other set uses it)
  # (/run/netns itself, iproute2's mount point for all namespaces, stays: unmounting it would race with
  #  other users' "ip netns add")
  while ip route del unreachable "${SUBNET}.0/24" proto $PROTO 2>/dev/null; do :; done
  while ip -6 route del unreachable "${SUBNET6}/64" proto $PROTO 2>/dev/null; do :; done
  rm -f "$STATEFILE"
}

# refuse subnets the machine already routes (a real network), except the default route and guards
check_free() {
  local r
  r="$(ip -4 route show table all match "${SUBNET}.0/24"; ip -4 route show table all root "${SUBNET}.0/24")"
  r="$(grep -vE '^(default|unreachable|broadcast) ' <<<"$r" | grep -v "proto $PROTO" || true)"
  [ -z "$r" ] || die "PTNS_SUBNET ${SUBNET}.0/24 overlaps a route of this machine: '$(head -1 <<<"$r")'; choose another"
  [ "$V6" = 1 ] || return 0
  r="$(ip -6 route show table all match "${SUBNET6}/64" 2>/dev/null; ip -6 route show table all root "${SUBNET6}/64" 2>/dev/null)"
  r="$(grep -vE '^(default|unreachable|multicast) ' <<<"$r" | grep -v "proto $PROTO" || true)"
  [ -z "$r" ] || die "PTNS_SUBNET6 ${SUBNET6}/64 overlaps a route of this machine: '$(head -1 <<<"$r")'; choose another"
}

links_ready() {   # every bridge port forwarding, every host's eth0 with carrier
  local i
  for i in "$@"; do
    ip -n "$SW" link show "h$i" 2>/dev/null | grep -q 'state UP' || return 1
    bridge -n "$SW" link show dev "h$i" 2>/dev/null | grep -q 'state forwarding' || return 1
    ip -n "$(ns_of "$i")" link show eth0 2>/dev/null | grep -q 'LOWER_UP' || return 1
  done
}
link_cut() { ! ip -n "$(ns_of "$1")" link show eth0 2>/dev/null | grep -q 'LOWER_UP'; }

cmd_up() {
  local n="${1:-}"; shift || true
  if ! [[ "$n" =~ ^[1-9][0-9]{0,2}$ ]] || [ "$n" -gt 200 ]; then echo "usage: $0 up N [--head]  (1 <= N <= 200)" >&2; exit 2; fi
  local head=0
  while [ $# -gt 0 ]; do case "$1" in --head) head=1 ;; *) echo "up: unknown option '$1'" >&2; exit 2 ;; esac; shift; done
  need_root
  command -v unshare >/dev/null || skip "needs util-linux (the unshare command)"
  # can we create namespaces at all?  (containers without CAP_SYS_ADMIN: no)
  local probe="${P}probe$$" err
  if ! err="$(ip netns add "$probe" 2>&1)"; then
    skip "needs root: network namespaces: 'ip netns add' is not permitted here ($err)"
  fi
  ip netns del "$probe" 2>/dev/null || true
  check_subnets                               # the environment's subnets: valid before anything changes
  cmd_down                                    # a previous set with this prefix (uses its state file)
  SUBNET="${PTNS_SUBNET:-10.77.0}"; SUBNET6="${PTNS_SUBNET6:-fd77::}"; HOSTPFX="${PTNS_HOSTPFX:-node}"; V6=1
  check_subnets
  [ -e /proc/net/if_inet6 ] || { V6=0; echo "netns-hosts: kernel without IPv6: IPv4 only" >&2; }
  check_free

  trap 'echo "netns-hosts: up failed, cleaning up" >&2; trap - ERR; cmd_down >/dev/null 2>&1 || true; exit 1' ERR
  local idx=() i
  [ "$head" = 1 ] && idx+=(0)
  for ((i = 1; i <= n; i++)); do idx+=("$i"); done
  HOSTS="${idx[*]}"
  printf 'SUBNET=%s\nSUBNET6=%s\nHOSTPFX=%s\nHOSTS=%s\nV6=%s\n' "$SUBNET" "$SUBNET6" "$HOSTPFX" "$HOSTS" "$V6" > "$STATEFILE"

  # guard routes in the root namespace (may already exist: another set on the same subnet; then not ours)
  ip route add unreachable "${SUBNET}.0/24" proto $PROTO 2>/dev/null || true
  [ "$V6" = 1 ] && { ip -6 route add unreachable "${SUBNET6}/64" proto $PROTO 2>/dev/null || true; }

  ip netns add "$SW"
  ip -n "$SW" link set lo up
  ip -n "$SW" link add br0 type bridge stp_state 0 mcast_snooping 0
  ip -n "$SW" link set br0 up

  local hostsfile; hostsfile="$(mktemp)"
  { echo "127.0.0.1 localhost"; echo "::1 localhost ip6-localhost ip6-loopback"
    for i in "${idx[@]}"; do echo "$(ip_of "$i") $(name_of "$i")"; done
    if [ "$V6" = 1 ]; then for i in "${idx[@]}"; do echo "$(ip6_of "$i") $(name_of "$i")-v6"; done; fi
  } > "$hostsfile"
  for i in "${idx[@]}"; do
    local ns; ns="$(ns_of "$i")"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip link add name eth0 netns "$ns" type veth peer name "h$i" netns "$SW"
    ip -n "$SW" link set "h$i" master br0
    ip -n "$SW" link set "h$i" up
    ip -n "$ns" addr add "$(ip_of "$i")/24" dev eth0
    # nodad: usable at once (no ~1-2 s "tentative" state)
    [ "$V6" = 1 ] && ip -n "$ns" addr add "$(ip6_of "$i")/64" dev eth0 nodad
    ip -n "$ns" link set eth0 up
    mkdir -p "/etc/netns/$ns" 2>/dev/null || mkdir -p "/etc/netns/$ns"   # another set's down may rmdir /etc/netns
    cp "$hostsfile" "/etc/netns/$ns/hosts"
  done
  rm -f "$hostsfile"
  wait_for "links to come up" links_ready "${idx[@]}"
  trap - ERR
  cmd_status
}

cmd_exec() {
  need_host "${1:-}"; local i="$1"; shift
  [ $# -ge 1 ] || { echo "usage: $0 exec I CMD..." >&2; exit 2; }
  # own UTS namespace so that hostname / gethostname() give the emulated host's name
  # shellcheck disable=SC2016  # ($HOSTNAME and $@ are expanded by that inner sh)
  HOSTNAME="$(name_of "$i")" exec ip netns exec "$(ns_of "$i")" unshare --uts -- \
    /bin/sh -c 'echo "$HOSTNAME" > /proc/sys/kernel/hostname && exec "$@"' sh "$@"
}

cmd_nsexec() {
  need_host "${1:-}"; local i="$1"; shift
  [ $# -ge 1 ] || { echo "usage: $0 nsexec I CMD..." >&2; exit 2; }
  exec ip netns exec "$(ns_of "$i")" "$@"
}

cmd_cut() {
  need_host "${1:-}"
  ip -n "$SW" link set "h$1" down
  wait_for "host $1's carrier to drop" link_cut "$1"
  echo "host $1 ($(name_of "$1")) cut"
}
cmd_heal() {
  need_host "${1:-}"
  ip -n "$SW" link set "h$1" up
  wait_for "host $1's link to come back" links_ready "$1"
  echo "host $1 ($(name_of "$1")) healed"
}

ensure_nft() {
  command -v nft >/dev/null && return 0
  [ "${PTNS_NO_INSTALL:-0}" = 1 ] && skip "needs nft for block (apt-get install --no-install-recommends nftables; PTNS_NO_INSTALL=1 is set)"
  command -v apt-get >/dev/null || skip "needs nft for block (package nftables) and there is no apt-get"
  echo "netns-hosts: installing nftables (apt-get --no-install-recommends)" >&2
  local apt=(timeout 300 apt-get -q -y -o DPkg::Lock::Timeout=120 install --no-install-recommends nftables)
  if ! DEBIAN_FRONTEND=noninteractive "${apt[@]}" >&2; then
    timeout 300 apt-get -q -o DPkg::Lock::Timeout=120 update >&2 || true
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" >&2 || skip "needs nft for block: installing nftables failed"
  fi
  command -v nft >/dev/null || skip "needs nft for block: nftables installed but no nft command"
}

cmd_block() {
  need_host "${1:-}"; need_host "${2:-}"
  local i="$1" j="$2"
  [ "$i" != "$j" ] || die "block: I and J must differ"
  ensure_nft
  {
    echo "add table inet $NFT_TABLE"
    echo "add chain inet $NFT_TABLE input { type filter hook input priority 0; }"
    echo "add chain inet $NFT_TABLE output { type filter hook output priority 0; }"
    echo "add rule inet $NFT_TABLE input ip saddr $(ip_of "$j") drop"
    echo "add rule inet $NFT_TABLE output ip daddr $(ip_of "$j") drop"
    if [ "$V6" = 1 ]; then
      echo "add rule inet $NFT_TABLE input ip6 saddr $(ip6_of "$j") drop"
      echo "add rule inet $NFT_TABLE output ip6 daddr $(ip6_of "$j") drop"
    fi
  } | ip netns exec "$(ns_of "$i")" nft -f -
  echo "host $i ($(name_of "$i")) <-> host $j ($(name_of "$j")) blocked"
}
cmd_unblock() {
  need_host "${1:-}"
  if command -v nft >/dev/null; then
    ip netns exec "$(ns_of "$1")" nft delete table inet $NFT_TABLE 2>/dev/null || true
  fi
  echo "host $1 ($(name_of "$1")) unblocked"
}

cmd_status() {
  local i any=0
  for i in $HOSTS; do
    any=1
    local ns sw blk=- np
    ns="$(ns_of "$i")"
    if [ ! -e "/run/netns/$ns" ]; then printf '%-3s netns=%s missing\n' "$i" "$ns"; continue; fi
    sw="$(ip -n "$SW" -br link show "h$i" 2>/dev/null | awk '{print $2}')"
    if command -v nft >/dev/null; then
      if ip netns exec "$ns" nft list table inet $NFT_TABLE >/dev/null 2>&1; then blk=blocked; else blk=none; fi
    fi
    np="$(ns_pids "$ns" | wc -l)"
    printf '%-3s netns=%-10s name=%-8s ip=%-14s ip6=%-16s cable=%-5s block=%-7s procs=%s\n' \
      "$i" "$ns" "$(name_of "$i")" "$(ip_of "$i")" "$([ "$V6" = 1 ] && ip6_of "$i" || echo -)" "${sw:-?}" "$blk" "$np"
  done
  [ "$any" = 1 ] || echo "no hosts (prefix ${P})"
}

sub="${1:-}"; shift || true
case "$sub" in
  up) cmd_up "$@" ;;
  down) need_root; cmd_down ;;
  exec) need_root; load_state; check_subnets; cmd_exec "$@" ;;
  nsexec) need_root; load_state; check_subnets; cmd_nsexec "$@" ;;
  cut) need_root; load_state; check_subnets; cmd_cut "$@" ;;
  heal) need_root; load_state; check_subnets; cmd_heal "$@" ;;
  block) need_root; load_state; check_subnets; cmd_block "$@" ;;
  unblock) need_root; load_state; check_subnets; cmd_unblock "$@" ;;
  status) need_root; load_state; check_subnets; cmd_status ;;
  ip) load_state; check_subnets; need_index "${1:-}"; ip_of "$1" ;;
  ip6) load_state; check_subnets; need_index "${1:-}"; [ "$V6" = 1 ] || die "no IPv6 on these hosts"; ip6_of "$1" ;;
  name) load_state; check_subnets; need_index "${1:-}"; name_of "$1" ;;
  ns) need_index "${1:-}"; ns_of "$1" ;;
  -h | --help | help) usage 0 ;;
  *) usage ;;
esac

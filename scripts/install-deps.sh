#!/usr/bin/env bash
# Installs every Debian package ptrun builds, tests and benchmarks with. Idempotent: a no-op
# (under a second) when everything is present. Needs root (or sudo) on Debian bookworm.
set -euo pipefail

build_pkgs=(cmake g++ make pkg-config libcli11-dev libboost-dev libboost-filesystem-dev
            libspdlog-dev libfmt-dev catch2 nlohmann-json3-dev
            libssl-dev)  # HTTPS to etcd (libssl.a and libcrypto.a, linked statically)
test_pkgs=(python3-torch clang libclang-rt-14-dev iproute2 procps man-db groff-base hyperfine
           util-linux nftables slurmctld slurmd slurm-client munge
           openmpi-bin libopenmpi-dev  # bench/allreduce compares with MPI_Allreduce
           mpich  # Hydra's mpiexec.hydra (test_mpirun); Open MPI stays mpirun/mpicc (priority 50 > 40)
           debootstrap  # the Debian 13 root with PyTorch 2.6 (scripts/torch2-root.sh)
           python3-wheel python3-venv binutils  # the wheel (python/make_wheel.py) and its test
           elfutils gdb  # eu-stack and gdb: the hang watchdog's native stacks (tests/unit/watchdog)
           mold  # links the sanitizer trees' unit-test binaries (scripts/test.sh): ~3x faster than ld.bfd
           clang-format  # scripts/check-format.sh
           python3-prometheus-client prometheus  # /metrics parsed and scraped (test_status)
           python3-matplotlib  # bench/plot.py draws bench/RESULTS.md's scale curves into PNGs
           etcd-server etcd-client openssl  # real etcd members, etcdctl and test certificates (tests/unit/etcd)
           openssh-server openssh-client)  # an sshd on each namespaced host (tests/hosts/test_hosts_ssh.py)
extra_pkgs=("$@")

missing=()
for p in "${build_pkgs[@]}" "${test_pkgs[@]}" "${extra_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >/dev/null
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
# Debian's prometheus starts a server for the machine where systemd runs; the tests start their
# own on a free port, so that one is stopped and left off.
if command -v systemctl >/dev/null && systemctl is-enabled prometheus >/dev/null 2>&1; then
  $sudo systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
# Debian's etcd-server starts a member on 2379 likewise; the tests start theirs on free ports.
if command -v systemctl >/dev/null && systemctl is-enabled etcd >/dev/null 2>&1; then
  $sudo systemctl disable --now etcd >/dev/null 2>&1 || true
fi
# Debian's openssh-server starts sshd on port 22 (systemd, or invoke-rc.d without it); the tests
# start their own inside namespaces, so one installed here is stopped and left off. An sshd
# installed before this script ran is left alone.
if [[ " ${missing[*]} " == *" openssh-server "* ]]; then
  if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    $sudo systemctl disable --now ssh >/dev/null 2>&1 || true
  elif [ -x /etc/init.d/ssh ]; then
    $sudo /etc/init.d/ssh stop >/dev/null 2>&1 || true
    $sudo update-rc.d ssh disable >/dev/null 2>&1 || true
  fi
fi

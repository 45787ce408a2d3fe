#!/usr/bin/env bash
# Runs one command inside the Debian 13 root made by scripts/torch2-root.sh, in a private mount
# namespace that disappears with the command, leaving nothing mounted or written behind:
#
#   scripts/torch2-run.sh [--root DIR] [--bind PATH]... -- COMMAND [ARGS...]
#
# The root is seen through an overlay whose writes go to a private tmpfs (the cached root never
# changes), with /proc, a private /dev/shm, the host's /etc/hosts (so the host name resolves as it
# does outside), and each --bind PATH mounted at the same path (a test's temp dir, the build tree).
# The command keeps the caller's environment, network namespace (127.0.0.1 is shared with the
# host) and process id (every step execs), so a launcher's signals and exit codes pass through.
# It starts in the current directory when that lies under a --bind, else in /.
# Exit codes: the command's; 1 when the root is missing or cannot be entered; 2 bad usage.
set -euo pipefail

fail() { echo "torch2-run: $*" >&2; exit 1; }
usage() { echo "usage: $0 [--root DIR] [--bind PATH]... -- COMMAND [ARGS...]" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
inside=0
root=""
binds=()
while [ $# -gt 0 ]; do
  case "$1" in
    --inside) inside=1; shift ;;  # internal: already in the private namespace
    --root) [ $# -ge 2 ] || usage; root=$2; shift 2 ;;
    --bind) [ $# -ge 2 ] || usage
            path=$(realpath -e -- "$2" 2>/dev/null) || fail "--bind $2: no such path"
            binds+=("$path"); shift 2 ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
[ $# -gt 0 ] || usage

if [ -z "$root" ]; then
  root=$("$here/torch2-root.sh" --check) ||
    fail "no Debian 13 root yet: make it with scripts/torch2-root.sh"
fi
[ -x "$root/usr/bin/python3" ] || fail "$root is not a Debian root made by scripts/torch2-root.sh"
mnt=$(dirname "$root")/mnt

if [ "$inside" -eq 0 ]; then
  [ "$(id -u)" -eq 0 ] || fail "entering the root needs root (mount namespace, chroot)"
  [ -d "$mnt" ] || fail "$mnt is missing (scripts/torch2-root.sh makes it)"
  args=(--inside --root "$root")
  for b in "${binds[@]}"; do args+=(--bind "$b"); done
  exec unshare --mount --propagation private -- "$0" "${args[@]}" -- "$@"
fi

# Private namespace from here on: every mount below vanishes when the command exits.
mount -t tmpfs -o mode=755 ptrun-torch2 "$mnt"
mkdir "$mnt/upper" "$mnt/work" "$mnt/root"
mount -t overlay overlay -o "lowerdir=$root,upperdir=$mnt/upper,workdir=$mnt/work" "$mnt/root" ||
  fail "cannot mount an overlay over $root (does the kernel have overlayfs?)"
r=$mnt/root
mount -t proc proc "$r/proc"
mount -t tmpfs -o mode=1777,nosuid,nodev shm "$r/dev/shm"
mount --bind /etc/hosts "$r/etc/hosts"
wd=/
for b in "${binds[@]}"; do
  if [ -d "$b" ]; then mkdir -p "$r$b"; else mkdir -p "$(dirname "$r$b")"; touch "$r$b"; fi
  mount --rbind "$b" "$r$b"
  case "$PWD/" in "$b"/*) wd=$PWD ;; esac
done
exec unshare --root="$r" --wd="$wd" -- "$@"

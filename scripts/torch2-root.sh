#!/usr/bin/env bash
# Makes (once) the throw-away Debian 13 (trixie) root that gives the tests and benchmarks a real
# PyTorch 2.x (Debian's python3-torch 2.6: TCPStore client and server, torchrun, gloo) and prints
# its path. Idempotent and cached: a ready root is reused in well under a second.
#
#   scripts/torch2-root.sh            # make or reuse the root; print it (the only line on stdout)
#   scripts/torch2-root.sh --check    # print the root if it is ready, else exit 1; never make it
#
# Where: $PTRUN_TORCH2_CACHE (default /var/cache/ptrun/torch2-trixie), outside any checkout, so
# every clone on the machine (and a later CI run) shares it. Layout: root/ (the system), mnt/ (an
# empty directory scripts/torch2-run.sh mounts on in its private namespace), ready (the stamp).
# The archive is the one this machine's apt uses (its Debian origin, from `apt-get indextargets`);
# nothing else is contacted. Needs root, debootstrap, and about 2 GB of disk.
# Exit codes: 0 ready; 1 cannot be made (the message says why); 2 bad usage.
set -euo pipefail

suite=trixie
# What the root holds beyond minbase: torch (with torchrun) and venv (pip, for the wheel test).
packages=python3-torch,python3-venv
stamp_text="suite=$suite packages=$packages layout=1"
cache=${PTRUN_TORCH2_CACHE:-/var/cache/ptrun/torch2-trixie}

fail() { echo "torch2-root: $*" >&2; exit 1; }

ready() { [ -f "$cache/ready" ] && [ "$(cat "$cache/ready")" = "$stamp_text" ]; }

case "${1:-}" in
  "") ;;
  --check) ready && { echo "$cache/root"; exit 0; }; exit 1 ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

ready && { echo "$cache/root"; exit 0; }

[ "$(id -u)" -eq 0 ] || fail "making the root needs root (debootstrap, chroot); it is not made yet in $cache"
command -v debootstrap >/dev/null ||
  fail "debootstrap is not installed (scripts/install-deps.sh installs it)"
command -v unshare >/dev/null || fail "unshare (util-linux) is not installed"

# The Debian archive apt already uses: a 'deb' source whose origin and label are Debian and whose
# release is a plain codename (not -security, -updates or -backports).
archive=$(apt-get indextargets --format '$(ORIGIN) $(LABEL) $(RELEASE) $(REPO_URI)' \
            'Created-By: Packages' 2>/dev/null |
          awk '$1 == "Debian" && $2 == "Debian" && $3 !~ /-/ { print $4; exit }')
[ -n "$archive" ] ||
  fail "apt's sources name no Debian archive (apt-get indextargets lists no Debian origin); run 'apt-get update' or add one"

mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9  # one maker at a time; the others find it ready afterwards
ready && { echo "$cache/root"; exit 0; }

keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || fail "no Debian archive keyring at $keyring (package debian-archive-keyring)"
scratch="$cache/root.new"
# A failed attempt may have left a partial tree; it holds no mounts (see below).
rm -rf --one-file-system "$scratch" "$cache/root"
mkdir -p "$cache/mnt"
echo "torch2-root: debootstrap $suite from $archive into $cache (once; a few minutes)" >&2
start=$(date +%s)
# In a private mount namespace: whatever debootstrap mounts in the target (proc, sys) goes away
# with it, even when it fails half-way. A second attempt absorbs one transient archive error.
for attempt in 1 2; do
  if unshare --mount --propagation private \
       debootstrap --variant=minbase --include="$packages" --keyring="$keyring" \
         "$suite" "$scratch" "$archive" >"$cache/debootstrap.log" 2>&1; then
    break
  fi
  tail -n 15 "$cache/debootstrap.log" >&2
  rm -rf --one-file-system "$scratch"
  [ "$attempt" -eq 1 ] || fail "debootstrap $suite from $archive failed twice (log: $cache/debootstrap.log)"
  echo "torch2-root: debootstrap failed; trying once more" >&2
done
rm -rf "$scratch"/var/cache/apt/archives/*.deb "$scratch"/var/lib/apt/lists/*_Packages
mv "$scratch" "$cache/root"

here=$(cd "$(dirname "$0")" && pwd)
if ! version=$("$here/torch2-run.sh" --root "$cache/root" -- \
                 python3 -c 'import torch; print(torch.__version__)' 2>&1); then
  fail "the new root's torch does not import: $version"
fi
echo "$stamp_text" >"$cache/ready"
echo "torch2-root: ready in $(( $(date +%s) - start )) s: torch $version, $(du -sh --one-file-system "$cache/root" | cut -f1)" >&2
echo "$cache/root"

#!/usr/bin/env bash
# in_root.sh ROOT CMD...: CMD chrooted into ROOT in a mount namespace of its own, with /proc
# mounted and apt's download cache (LG_DEPLOY_CACHE/apt-archives) shared across runs; the
# mounts end with the command, so there is no cleanup to forget. The network namespace is the
# host's: apt reaches the Debian archive, and the gateway's loopback ports are the host's
# loopback. Every step execs the next, so the caller's $! is CMD's own pid.
set -euo pipefail
root=${1:?usage: in_root.sh ROOT CMD...}; shift
cache=${LG_DEPLOY_CACHE:-/var/cache/livegate-test}/apt-archives
mkdir -p "$cache/partial"
exec unshare --mount --propagation private sh -ec '
  root=$1 cache=$2; shift 2
  mount -t proc proc "$root/proc"
  mount --bind "$cache" "$root/var/cache/apt/archives"
  exec chroot "$root" "$@"' sh "$root" "$cache" "$@"

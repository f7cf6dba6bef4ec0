#!/usr/bin/env bash
# Installs every Debian 12 package livegate needs to build, run and test. Idempotent: when all
# packages are present it only checks (well under a second). Uses sudo when not root.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git curl ca-certificates
  libwebsockets-dev libwebsockets-evlib-ev libev-dev libmicrohttpd-dev libjansson-dev libhttp-parser-dev libjwt-dev
  check libsubunit-dev libssl-dev
  libhiredis-dev redis-server
  valgrind procps util-linux
  clang libclang-rt-14-dev
)
if [[ "${LG_SETUP_BENCH:-0}" == 1 ]]; then
  packages+=(nginx libnginx-mod-nchan)
fi

missing=()
for p in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
echo "setup: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2

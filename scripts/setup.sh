#!/usr/bin/env bash
# Installs the Debian 12 packages livegate needs. Idempotent: when all are present it only
# checks (well under a second). Uses sudo when not root.
#   scripts/setup.sh            to build and run the gateway (scripts/run.sh)
#   scripts/setup.sh --package  that, and what scripts/package.sh needs for the .deb
#   scripts/setup.sh --test     everything scripts/test.sh needs (the tests' own tools)
set -euo pipefail
mode=${1:-run}
case "$mode" in run|--package|--test) ;; *) echo "usage: setup.sh [--package|--test]" >&2; exit 2 ;; esac

# Building and running the gateway.
packages=(
  build-essential cmake pkg-config
  libwebsockets-dev libwebsockets-evlib-ev libev-dev libmicrohttpd-dev libjansson-dev libyajl-dev libhttp-parser-dev
  libhiredis-dev libssl-dev zlib1g-dev libcurl4-openssl-dev liburing-dev
  libjemalloc-dev # the gateway's allocator (src/main.c says why)
)
if [[ "$mode" != run ]]; then
  # scripts/package.sh: dpkg-shlibdeps (the package's library Depends), which CPack runs on
  # the ELF files that file(1) finds.
  packages+=(dpkg-dev file)
fi
if [[ "$mode" == --test ]]; then
  packages+=(
    git curl ca-certificates
    check libsubunit-dev libjwt-dev
    openssl # the openssl command: scripts/mint_token.sh, which the auth tests run
    redis-server redis-sentinel # the store and failover tests start them
    valgrind procps util-linux
    clang libclang-rt-14-dev
    # promtool, which tests/integration/test_metrics.c runs on GET /metrics: Debian ships it
    # only in the (large) prometheus package
    prometheus
    # tests/deploy: groff checks the man page, systemd-analyze the unit; mmdebstrap makes the
    # clean Debian root the package is installed in and the images' base; podman (with runc:
    # crun refuses this kind of machine's hybrid cgroups) builds and runs the images, and
    # tests/deploy/compose_pod.py reads compose.yml with python3-yaml
    groff-base systemd mmdebstrap podman runc python3-yaml
  )
  # The client tests (tests/browser): headless Chromium, nginx in front of the gateway, Node.js
  # with npm for playwright-core and the linters. A Node that is already there (another build
  # of it, with its own npm) is used as it is: Debian's npm would conflict with it.
  packages+=(chromium nginx)
  # tests/browser/test_deflate.mjs: the second permessage-deflate client, Python's websockets
  packages+=(python3-websockets)
  command -v node >/dev/null || packages+=(nodejs)
  command -v npm >/dev/null || packages+=(npm)
  if [[ "${LG_SETUP_BENCH:-0}" == 1 ]]; then
    packages+=(libnginx-mod-nchan)
  fi
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

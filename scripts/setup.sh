#!/usr/bin/env bash
# Installs every Debian 12 package livegate needs to build, run and test. Idempotent: when all
# packages are present it only checks (well under a second). Uses sudo when not root.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git curl ca-certificates
  libwebsockets-dev libwebsockets-evlib-ev libev-dev libmicrohttpd-dev libjansson-dev libyajl-dev libhttp-parser-dev libjwt-dev
  libjemalloc-dev # the gateway's allocator (src/main.c says why)
  check libsubunit-dev libssl-dev
  openssl # the openssl command: scripts/mint_token.sh, which the auth tests run
  libhiredis-dev redis-server redis-sentinel # the failover tests start sentinels
  valgrind procps util-linux
  clang libclang-rt-14-dev
  # promtool, which tests/integration/test_metrics.c runs on GET /metrics: Debian ships it only
  # in the (large) prometheus package
  prometheus
)
# The client tests (tests/browser): headless Chromium, nginx in front of the gateway, Node.js
# with npm for playwright-core and the linters. A Node that is already there (another build of
# it, with its own npm) is used as it is: Debian's npm would conflict with it.
packages+=(chromium nginx)
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
if [[ "${LG_SETUP_BENCH:-0}" == 1 ]]; then
  packages+=(libnginx-mod-nchan)
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

#!/usr/bin/env bash
# The image and the compose stack (issue 35), built and run with Debian's podman: the base
# image from the Debian archive (docker/base.sh: mmdebstrap, podman import), docker/Dockerfile
# and docker/services.Dockerfile built with apt inside using the Debian archive, then
#  - the gateway's image run as it ships (its own command and configuration, user livegate) in
#    a network namespace with only loopback: the page and livegate.js (the source files byte
#    for byte), its HEALTHCHECK healthy, a publish reaching a subscriber, exit 0 on stop;
#  - compose.yml's three services (tests/deploy/compose_pod.py says why not podman-compose):
#    nginx in front of the gateway with docs/deploy/nginx.conf, the gateway's events in
#    Redis: livegate.js and a publish + subscribe through nginx, the topic's stream in Redis.
# Every request is made with curl inside the containers' own namespace, to 127.0.0.1.
# Skipped (with the reason) where podman cannot run a container; needs root.
# Time: ~4 min cold (apt downloads to a shared cache, the package build), ~1 min warm.
# Usage: test_image.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
[[ $(id -u) == 0 ]] || skip "test_image.sh needs root (podman's rootful storage and runtime)"
command -v podman >/dev/null || skip "podman is not installed (scripts/setup.sh --test installs it)"

tmp=$(mktemp -d)
project=lgtest$$
single=${project}_single
cleanup() {
  podman rm -f -t 5 "$single" >/dev/null 2>&1 || true
  "$here/compose_pod.py" down "$src/docker/compose.yml" "$project" || true
  rm -rf "$tmp"
}
trap cleanup EXIT
# runc, not crun: crun refuses a host whose cgroup v2 hierarchy has controllers beside the v1
# ones (hybrid), as some machines here do. And no ulimit above the hard ones this process
# has: podman's defaults (1048576 descriptors) need CAP_SYS_RESOURCE, which a sandbox may lack.
hard=$(ulimit -Hn)
printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=4096:4096"]\n' "$hard" "$hard" >"$tmp/containers.conf"
command -v runc >/dev/null && printf '[engine]\nruntime = "runc"\n' >>"$tmp/containers.conf"
export CONTAINERS_CONF=$tmp/containers.conf

"$src/docker/base.sh" localhost/debian:12
probe=$(podman run --rm --network none localhost/debian:12 echo ok 2>&1) \
  || skip "podman cannot run a container here: $probe"

# apt's downloads are shared with test_deb.sh's root (lib.sh), so a second build downloads
# nothing; podman's layer cache keeps the build packages across source changes.
mkdir -p "$deploy_cache/apt-archives/partial"
"$here/compose_pod.py" build "$src/docker/compose.yml" \
  -v "$deploy_cache/apt-archives:/var/cache/apt/archives" >"$tmp/build.log" 2>&1 \
  || { tail -50 "$tmp/build.log"; fail "the images did not build"; }
echo "ok: the images built (localhost/livegate-livegate, -nginx, -redis)"

# inside CONTAINER CMD...: CMD inside the running container.
inside() { podman exec "$@"; }
# fetch CONTAINER URL FILE: URL's body into FILE; the answer must be 200.
fetch() {
  local status
  status=$(inside "$1" curl -s -o /tmp/lg-fetch -w '%{http_code}' "$2")
  [[ "$status" == 200 ]] || fail "$2 answered $status"
  inside "$1" cat /tmp/lg-fetch >"$3"
}

# The gateway's image as it ships.
start_gateway "$tmp/single.log" podman run --rm --pull=never --name "$single" --network none localhost/livegate-livegate:latest
[[ $(inside "$single" id -un) == livegate ]] || fail "the image does not run as livegate"
for page in livegate.js index.html; do
  fetch "$single" "http://127.0.0.1:8080/$page" "$tmp/$page"
  cmp "$src/static/$page" "$tmp/$page" || fail "the image's /$page is not static/$page"
done
podman healthcheck run "$single" || fail "the image's HEALTHCHECK"
CURL="podman exec $single curl" pubsub http://127.0.0.1:8080 http://127.0.0.1:8081 image
stop_gateway
GW_PID=
echo "ok: the image ran, served, published and stopped cleanly"

# compose.yml's three services.
"$here/compose_pod.py" up "$src/docker/compose.yml" "$project" >"$tmp/containers"
gw=${project}_livegate redis=${project}_redis nginx=${project}_nginx
for ((i = 0; i < 100; i++)); do
  [[ $(inside "$redis" redis-cli ping 2>/dev/null) == PONG ]] && break
  sleep 0.1
done
[[ $(inside "$redis" redis-cli ping) == PONG ]] || fail "Redis did not answer"
for ((i = 0; i < 100; i++)); do
  inside "$nginx" test -e /run/nginx.pid 2>/dev/null && inside "$gw" curl -sf -o /dev/null http://127.0.0.1:80/live/livegate.js && break
  sleep 0.1
done
podman healthcheck run "$gw" || fail "the gateway's HEALTHCHECK in the compose stack"
fetch "$gw" http://127.0.0.1:80/live/livegate.js "$tmp/nginx-livegate.js"
cmp "$src/static/livegate.js" "$tmp/nginx-livegate.js" || fail "/live/livegate.js through nginx"
CURL="podman exec $gw curl" pubsub http://127.0.0.1:80/live http://127.0.0.1:8081 composed
inside "$redis" redis-cli --scan --pattern 'livegate:*' | grep -q composed \
  || fail "the topic is not in Redis: $(inside "$redis" redis-cli --scan --pattern '*' | head)"
echo "ok: compose.yml's gateway, nginx and Redis: livegate.js and publish + subscribe through nginx, the topic in Redis"

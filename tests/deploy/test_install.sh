#!/usr/bin/env bash
# `cmake --install` into a temporary prefix (issue 35): every file where GNUInstallDirs puts
# it, the man page in step with --help, and the installed binary, started from an unrelated
# working directory with the installed configuration, serving the installed page and
# livegate.js (the source files byte for byte) and carrying a publish to a subscriber.
# Usage: test_install.sh BUILD_DIR   (ctest: deploy/install)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: test_install.sh BUILD_DIR}" && pwd)
. "$here/lib.sh"

tmp=$(mktemp -d)
trap '[[ -n "${GW_PID:-}" ]] && kill "$GW_PID" 2>/dev/null; rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log"

for f in bin/livegate share/livegate/static/index.html share/livegate/static/livegate.js \
         etc/livegate/livegate.json share/man/man8/livegate.8 share/doc/livegate/README.md \
         share/doc/livegate/copyright share/doc/livegate/configuration.md \
         share/doc/livegate/operations.md lib/systemd/system/livegate.service; do
  [[ -f "$prefix/$f" ]] || fail "cmake --install left out $f"
done
[[ -x "$prefix/bin/livegate" ]] || fail "bin/livegate is not executable"
cmp "$src/config/livegate.json" "$prefix/etc/livegate/livegate.json" || fail "etc/livegate/livegate.json"
# The unit names the binary and configuration of the prefix the build was configured for.
grep -qx "ExecStart=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")/bin/livegate --config .*/livegate/livegate.json" \
  "$prefix/lib/systemd/system/livegate.service" || fail "the unit's ExecStart"

# The man page: every option --help lists, and groff has nothing to say about the roff.
help=$("$prefix/bin/livegate" --help)
for opt in $(grep -oE -- '--[a-z-]+' <<<"$help" | sort -u); do
  grep -qF -- "$(sed 's/-/\\-/g' <<<"$opt")" "$prefix/share/man/man8/livegate.8" \
    || fail "livegate.8 does not document $opt"
done
if command -v groff >/dev/null; then
  warnings=$(groff -man -Tutf8 -ww -z "$prefix/share/man/man8/livegate.8" 2>&1)
  [[ -z "$warnings" ]] || fail "groff: $warnings"
fi

# Started from elsewhere: the static files are found by the compiled-in data directory, or
# (this prefix is not the configured one) the same directory relative to the binary.
mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere"
start_gateway "$tmp/gw.log" "$prefix/bin/livegate" --config "$prefix/etc/livegate/livegate.json" \
  --public 127.0.0.1:0 --control 127.0.0.1:0 --workers 1
for page in livegate.js index.html; do
  status=$(curl -s -o "$tmp/$page" -w '%{http_code}' "$GW_PUBLIC/$page")
  [[ "$status" == 200 ]] || fail "/$page answered $status"
  cmp "$src/static/$page" "$tmp/$page" || fail "/$page is not static/$page"
done
status=$(curl -s -o "$tmp/root" -w '%{http_code}' "$GW_PUBLIC/")
[[ "$status" == 200 ]] && cmp -s "$src/static/index.html" "$tmp/root" || fail "/ is not the dashboard"
echo "ok: the installed gateway serves /, /index.html and /livegate.js from $prefix/share/livegate/static"
pubsub "$GW_PUBLIC" "$GW_CONTROL" installed
stop_gateway
GW_PID=
grep -q 'static_dir' "$tmp/gw.log" && fail "the gateway warned about its static files: $(cat "$tmp/gw.log")"
echo "ok: cmake --install into $prefix"

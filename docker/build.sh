#!/usr/bin/env bash
# The build stage of docker/Dockerfile, also run outside Docker by tests/browser/test_docker.mjs:
# installs the Debian packages with scripts/setup.sh (the README's), builds build/livegate in
# Release mode into a fresh build directory, and installs into DESTDIR (default /opt/livegate):
#   DESTDIR/bin/livegate, DESTDIR/static/ (the page, livegate.js), DESTDIR/etc/*.json,
#   DESTDIR/runtime-packages.txt (the Debian packages that hold the shared libraries the
#   binary has loaded once started, found in /proc/PID/maps and by dpkg -S: what the runtime
#   stage installs, and nothing else).
# Usage: docker/build.sh [BUILD_DIR]   (BUILD_DIR default: build-docker)
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${DESTDIR:-/opt/livegate}
build=${1:-build-docker}

./scripts/setup.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DLG_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target livegate >/dev/null

rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/etc"
install -m 0755 "$build/livegate" "$dest/bin/livegate"
cp -r static "$dest/static"
install -m 0644 docker/livegate.json docker/livegate-compose.json "$dest/etc/"

# Each shared library the running binary has mapped (ldd would miss what it loads with
# dlopen: libwebsockets' libev plugin), mapped to the Debian package that holds it.
log=$(mktemp)
"$dest/bin/livegate" --public 127.0.0.1:0 --control 127.0.0.1:0 --workers 1 >"$log" 2>&1 &
pid=$!
for _ in $(seq 200); do grep -q 'listening public=' "$log" && break; sleep 0.05; done
grep -q 'listening public=' "$log" || { cat "$log" >&2; kill "$pid"; exit 1; }
libs=$(awk '$6 ~ /\.so/ { print $6 }' "/proc/$pid/maps" | sort -u)
kill -TERM "$pid"
wait "$pid"
rm -f "$log"
for lib in $libs; do
  dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null \
    || dpkg -S "${lib#/usr}" 2>/dev/null \
    || { echo "build.sh: no Debian package holds $lib" >&2; exit 1; }
done | cut -d: -f1 | sort -u | grep -v '^libc6$' > "$dest/runtime-packages.txt"
echo "build.sh: $dest/bin/livegate; runtime packages: $(tr '\n' ' ' < "$dest/runtime-packages.txt")"

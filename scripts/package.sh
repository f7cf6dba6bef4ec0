#!/usr/bin/env bash
# Builds the Debian package (CPack's DEB generator, packaging/install.cmake) from a Release
# build of the gateway alone, configured for the prefix /usr and the configuration in /etc.
# Prints the path of the .deb. Needs dpkg-dev (dpkg-shlibdeps: the library dependencies), which
# scripts/setup.sh --test installs.
# Usage: scripts/package.sh [BUILD_DIR]   (default build-deb)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-deb}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DLG_WERROR=ON -DLG_BUILD_TESTS=OFF \
      -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_SYSCONFDIR=/etc >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
(cd "$build" && cpack -G DEB >cpack.log 2>&1) || { cat "$build/cpack.log" >&2; exit 1; }
ls "$PWD/$build"/livegate_*.deb

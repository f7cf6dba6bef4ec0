#!/usr/bin/env bash
# The build stage of docker/Dockerfile: the Debian package of a Release build
# (scripts/package.sh, into a fresh build directory), copied to OUT. The packages it needs
# come from `scripts/setup.sh --package`, which the Dockerfile runs in a layer before.
# Usage: docker/build.sh OUT.deb
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: docker/build.sh OUT.deb}
deb=$(./scripts/package.sh build-docker)
cp "$deb" "$out"
echo "build.sh: $out"

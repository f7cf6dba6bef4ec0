#!/usr/bin/env bash
# Makes the Debian 12 base image the Dockerfiles start from (${BASE}:12, BASE default
# localhost/debian) from the Debian archive, for machines that reach no image registry:
# a minbase root made by mmdebstrap (cached as a tarball, tests/deploy/lib.sh), imported with
# podman. Idempotent: an existing image is kept. Usage: docker/base.sh [IMAGE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/deploy/lib.sh"
image=${1:-localhost/debian:12}
podman image exists "$image" && exit 0
tarball=$(debian_root_tarball)
podman import --quiet --change 'CMD ["/bin/bash"]' "$tarball" "$image" >/dev/null
echo "base.sh: $image from $tarball"

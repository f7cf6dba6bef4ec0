#!/usr/bin/env bash
# Sets up, builds and runs the gateway with its default configuration (in-memory store, no
# other service). Extra arguments go to livegate, e.g. ./scripts/run.sh --workers 1
# It installs only what building and running need: the tests' tools come with scripts/test.sh,
# and this build leaves the tests out (LG_BUILD_TESTS=OFF; scripts/test.sh turns them back on).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLG_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target livegate >/dev/null
exec build/livegate --config config/livegate.json "$@"

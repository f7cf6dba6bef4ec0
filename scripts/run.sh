#!/usr/bin/env bash
# Sets up, builds and runs the gateway with its default configuration (in-memory store, no
# other service). Extra arguments go to livegate, e.g. ./scripts/run.sh --workers 1
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target livegate >/dev/null
exec build/livegate --config config/livegate.json "$@"

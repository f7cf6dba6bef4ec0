#!/usr/bin/env bash
# Runs one tests/browser test file with Node's test runner (ctest calls it: tests/CMakeLists.txt).
# Node 20 and 21 get the browser's WebSocket with --experimental-websocket; Node 22+ has it by
# default; Node 18 (Debian 12's nodejs) has none, and test_node.mjs checks the client leaves it out.
set -euo pipefail
cd "$(dirname "$0")"
major=$(node -p 'process.versions.node.split(".")[0]')
flags=()
if (( major >= 20 && major < 22 )); then flags+=(--experimental-websocket); fi
exec node "${flags[@]}" --test --test-reporter=spec "$@"

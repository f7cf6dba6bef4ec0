#!/usr/bin/env bash
# Runs unit tests and integration tests under valgrind (memcheck): each unit test binary itself,
# and the gateway that each integration test starts (through a wrapper given as LG_BINARY).
# Any memcheck error or definite leak fails the run. Not part of .ci/run (it takes minutes and
# valgrind's slowdown would bend the timing-bound tests); run it before calling a memory or
# threading change done. Usage: scripts/valgrind.sh [build dir (build)]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[[ -x $build/livegate ]] || { echo "valgrind.sh: build $build first" >&2; exit 2; }
# The gateway is linked with jemalloc (src/main.c): memcheck replaces its malloc as it does libc's.
vg=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
    --soname-synonyms=somalloc=libjemalloc.so*)
wrapper=$(mktemp)
trap 'rm -f "$wrapper"' EXIT
printf '#!/bin/sh\nexec %s %s "$@"\n' "${vg[*]}" "$PWD/$build/livegate" >"$wrapper"
chmod +x "$wrapper"

units=(test_hub test_store test_subscriber test_history test_client_ring test_inbox test_config
       test_auth test_ws_message test_publish_parse test_cursor test_event test_control
       test_client_publish_queue test_ws_deflate test_ws_inflate test_presence test_tags)
integration=(test_smoke test_sse test_ws test_poll test_admin test_authorization test_metrics
             test_control_deadline test_resume test_scaling_sys test_control_api test_lifecycle
             test_overload test_start test_history_api test_reload test_client_publish
             test_deltas test_ws_compression test_presence_api test_filter
             test_hooks test_presence_redis test_batched_writes)
failed=0
for t in "${units[@]}"; do
  if CK_TIMEOUT_MULTIPLIER=10 timeout 600 "${vg[@]}" "$build/tests/$t" >"/tmp/livegate-vg-$t.log" 2>&1; then
    echo "valgrind: unit/$t clean"
  else
    echo "valgrind: unit/$t FAILED (/tmp/livegate-vg-$t.log)"; failed=1
  fi
done
for t in "${integration[@]}"; do
  if LG_BINARY=$wrapper LG_SOURCE_DIR=$PWD timeout 600 "$build/tests/$t" \
       >"/tmp/livegate-vg-$t.log" 2>&1; then
    echo "valgrind: integration/$t clean (the gateway under memcheck)"
  else
    echo "valgrind: integration/$t FAILED (/tmp/livegate-vg-$t.log)"; failed=1
  fi
done
exit $failed

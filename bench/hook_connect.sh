#!/usr/bin/env bash
# bench/hook_connect.sh - what the subscribe hook costs a connect (issue 33): SSE connect rate
# of livegate with auth and no hook, with a subscribe hook whose backend answers in 1 ms
# (every subscribe asks it: subscribe_hook.cache_ms 0), and with the hook and its cache
# (one question, then answers from the cache), as ratios to the run without the hook.
#
#   bench/hook_connect.sh [--subscribers N (2000)] [--reps R (3)] [--transport sse|ws (sse)]
#                         [--delay-ms D (1)]
#   bench/hook_connect.sh --smoke      200 subscribers, one rep: the script works (no figure
#                                      to compare)
#
# Every run starts a fresh livegate (bench/lib.sh: pinned, --workers 1) with an HS256 key, and
# lg_loadgen connects N subscribers (--connect-concurrency 256, no events), each with the same
# access_token=<token>, so the variants send the same bytes and differ only in the hook. The
# backend is lg_hook_backend (bench/hook_backend.c), answering {"allow":true} after D ms.
# Variants alternate within a rep; the figure is the median over the reps. Prints one JSON
# line per run, then:
#   hook_connect sse N: connect_per_s off X, hook Y (ratio Y/X), cached Z (ratio Z/X)
#   hook_connect sse N: server cpu us per connect off X, hook Y (ratio Y/X), cached Z (ratio Z/X)
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

subs=2000 reps=3 transport=sse delay=1
args=()
for a in "$@"; do
    if [ "$a" = --smoke ]; then subs=200 reps=1; else args+=("$a"); fi
done
lgb_tool_options hook_connect.sh 19 subscribers=subs reps=reps transport=transport \
    delay-ms=delay -- "${args[@]}"

lgb_tool_setup hookbench
lgb_configure && cmake --build "$LGB_BUILD" --target lg_hook_backend >>"$LGB_BUILD_LOG" 2>&1 ||
    { lgb_log "cannot build lg_hook_backend (see $LGB_BUILD_LOG)"; exit 1; }
"$LGB_BUILD/bench/lg_hook_backend" --delay-ms "$delay" >"$work/backend.port" &
backend_pid=$!
trap 'kill $backend_pid 2>/dev/null; wait $backend_pid 2>/dev/null; lgb_stop; rm -rf "$work"' EXIT
for _ in $(seq 50); do [ -s "$work/backend.port" ] && break; sleep 0.1; done
port=$(head -1 "$work/backend.port")
[ -n "$port" ] || { lgb_log "lg_hook_backend did not start"; exit 1; }

secret=bench-secret-0123456789abcdef
hook="\"url\":\"http://127.0.0.1:$port/hook\",\"topics\":[\"*\"],\"max_pending\":4096"
printf '{"auth":{"hs256_secret":"%s"}}\n' "$secret" >"$work/off.json"
printf '{"auth":{"hs256_secret":"%s"},"subscribe_hook":{%s,"cache_ms":0}}\n' "$secret" "$hook" >"$work/hook.json"
printf '{"auth":{"hs256_secret":"%s"},"subscribe_hook":{%s,"cache_ms":60000}}\n' "$secret" "$hook" >"$work/cached.json"
token=$("$LGB_ROOT/scripts/mint_token.sh" -s "$secret" -S '*' -t 3600)

: >"$work/all.jsonl"
for ((rep = 1; rep <= reps; rep++)); do
    for variant in off hook cached; do
        name=connect_${transport}_${subs}_hook_${variant}
        args="--transport $transport --subscribers $subs --events 0 --settle-ms 100 --connect-concurrency 256 --sub-query access_token=$token"
        line=$(LGB_LG_CONFIG=$work/$variant.json lgb_run_one livegate "$name" "$args" "$lg" "$work/run" "$lgbin")
        printf '%s\n' "$line" | tee -a "$work/all.jsonl"
        lgb_log "$(lgb_summary_line "$line") connect_per_s=$(lgb_field "$line" connect_per_s)"
    done
done

figure() { lgb_connect_figure "$work/all.jsonl" "connect_${transport}_${subs}_hook_$1" "$2"; }
awk -v t="$transport" -v n="$subs" \
    -v a="$(figure off rate)" -v b="$(figure hook rate)" -v c="$(figure cached rate)" \
    -v x="$(figure off cpu)" -v y="$(figure hook cpu)" -v z="$(figure cached cpu)" 'BEGIN {
    if (a == "" || a == 0 || b == "" || c == "") {
        print "hook_connect: a variant had no run without failures"; exit 1 }
    printf "hook_connect %s %d: connect_per_s off %.0f, hook %.0f (ratio %.3f), cached %.0f (ratio %.3f)\n",
        t, n, a, b, b / a, c, c / a
    if (x == "" || x == 0 || y == "" || z == "") {
        print "hook_connect: server cpu per connect not measured (a run too short to sample)"; exit 0 }
    printf "hook_connect %s %d: server cpu us per connect off %.1f, hook %.1f (ratio %.3f), cached %.1f (ratio %.3f)\n",
        t, n, x, y, y / x, z, z / x }'

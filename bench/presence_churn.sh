#!/usr/bin/env bash
# bench/presence_churn.sh - presence under churn (issue 33): N anonymous SSE clients join and
# leave one presence topic (room/churn, a rule with "presence" and "occupancy_events"), each
# holding its stream a random 0.5x..1.5x of --hold-ms and reconnecting at once, for --seconds;
# one more stream observes the topic. Reports the gateway's CPU (utime + stime, /proc, one
# worker pinned like every scenario), the connects per second, and the coalesced event rate:
# the join, leave and occupancy notices the observer got per second (at most three a second
# whatever the churn) and the batches and notices the gateway counted.
#
#   bench/presence_churn.sh [--clients N] [--seconds S] [--hold-ms MS]   (5000, 20, 2000)
#   bench/presence_churn.sh --smoke                                     (200 clients, 4 s)
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

clients=5000 seconds=20 hold=2000
if [ "${1:-}" = --smoke ]; then
    clients=200 seconds=4 hold=500
    shift
fi
lgb_tool_options presence_churn.sh 13 clients=clients seconds=seconds hold-ms=hold -- "$@"

churn=$LGB_BUILD/bench/lg_presence_churn
if ! { lgb_configure && cmake --build "$LGB_BUILD" --target lg_presence_churn >>"$LGB_BUILD_LOG" 2>&1; }; then
    mkdir -p "$LGB_BUILD/bench"
    ${CC:-cc} -O2 -std=gnu11 -Wall -o "$churn" "$LGB_BENCH/presence_churn.c" || exit 1
fi
lgbin=$(lgb_livegate_bin)
[ -n "$lgbin" ] || { lgb_log "no livegate binary (build it, or set LIVEGATE=path)"; exit 1; }
work=$(mktemp -d /tmp/lgchurn.XXXXXX)
trap 'lgb_stop; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

cat >"$work/presence.json" <<JSON
{"topic_rules":[{"match":"room/*","presence":true,"presence_max_members":$((clients + 1)),
 "occupancy_events":true}]}
JSON
lgb_start_livegate "$work/run" "$lgbin" "$work/presence.json" || exit 1
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
t0=$(cpu_ticks "$LGB_SRV_PID")
out=$( (ulimit -n "$(ulimit -Hn)"; lgb_pin "$LGB_GEN_CPU" "$churn" --port "$LGB_SUB_PORT" \
    --clients "$clients" --seconds "$seconds" --hold-ms "$hold") )
t1=$(cpu_ticks "$LGB_SRV_PID")
stats=$(lgb_lg_stats "$LGB_PUB_PORT")
lgb_stop
[ -n "$out" ] || { lgb_log "lg_presence_churn printed nothing"; exit 1; }
stat_of() { printf '%s' "$stats" | grep -o "\"$1\":[0-9]*" | cut -d: -f2; }
hz=$(getconf CLK_TCK)
awk -v t=$((t1 - t0)) -v hz="$hz" -v s="$seconds" -v out="$out" \
    -v batches="$(stat_of presence_batches)" -v sent="$(stat_of presence_notices_sent)" 'BEGIN {
    cpu = t / hz
    sub(/}$/, "", out)
    printf "%s,\"server_cpu_s\":%.2f,\"server_cpu_pct\":%.1f,\"presence_batches\":%s,\"presence_notices_sent\":%s}\n",
        out, cpu, 100 * cpu / s, batches == "" ? "null" : batches, sent == "" ? "null" : sent
}'

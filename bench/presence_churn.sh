#!/usr/bin/env bash
# bench/presence_churn.sh - presence under churn (issue 33): N anonymous SSE clients join and
# leave one presence topic (room/churn, a rule with "presence" and "occupancy_events"), each
# holding its stream a random 0.5x..1.5x of --hold-ms and reconnecting at once, for --seconds;
# one more stream observes the topic. Reports the gateway's CPU (utime + stime, /proc, one
# worker pinned like every scenario), the connects per second, and the coalesced event rate:
# per type the join, leave, occupancy and resync notices the observer got and their rate over
# the time it listened (one batch a second whatever the churn), the members they named, and
# the batches, notices, resyncs and unlisted members the gateway counted. Fails (exit 1) when
# the observer's figures are not valid (no stream, a stream ended or stalled early, no join).
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

# Every client is listed: the bound leaves room for all of them and the observer, and its table
# (twice the bound) for the members gone whose leave is still owed (up to three ticks of churn).
max_members=$((clients + 1 + 3000 * clients / hold))
[ "$max_members" -le 100000 ] || max_members=100000
cat >"$work/presence.json" <<JSON
{"topic_rules":[{"match":"room/*","presence":true,"presence_max_members":$max_members,
 "occupancy_events":true}]}
JSON
lgb_start_livegate "$work/run" "$lgbin" "$work/presence.json" || exit 1
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
t0=$(cpu_ticks "$LGB_SRV_PID")
out=$( (ulimit -n "$(ulimit -Hn)"; lgb_pin "$LGB_GEN_CPU" "$churn" --port "$LGB_SUB_PORT" \
    --clients "$clients" --seconds "$seconds" --hold-ms "$hold") )
rc=$?
t1=$(cpu_ticks "$LGB_SRV_PID")
stats=$(lgb_lg_stats "$LGB_PUB_PORT")
lgb_stop
[ -n "$out" ] || { lgb_log "lg_presence_churn printed nothing (exit $rc)"; exit 1; }
stat_of() { # the counter's value, or null when the stats did not answer
    local v
    v=$(printf '%s' "$stats" | grep -o "\"$1\":[0-9]*" | cut -d: -f2)
    printf '%s' "${v:-null}"
}
hz=$(getconf CLK_TCK)
awk -v t=$((t1 - t0)) -v hz="$hz" -v s="$seconds" -v out="$out" \
    -v gateway="$(for k in presence_batches presence_notices_sent presence_resyncs_sent \
        presence_unlisted clients_disconnected_slow; do printf ',"%s":%s' "$k" "$(stat_of "$k")"; done)" 'BEGIN {
    cpu = t / hz
    sub(/}$/, "", out)
    printf "%s,\"server_cpu_s\":%.2f,\"server_cpu_pct\":%.1f%s}\n", out, cpu, 100 * cpu / s, gateway
}'
if [ "$rc" != 0 ]; then
    lgb_log "presence churn FAILED: lg_presence_churn exited $rc ($(lgb_field "$out" observer_error))"
    exit 1
fi

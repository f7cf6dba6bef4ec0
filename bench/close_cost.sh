#!/usr/bin/env bash
# bench/close_cost.sh - what a mass disconnect costs the server: N SSE subscribers connect, then
# all close at once; the figure is the server's CPU time from the moment all N are connected to
# the moment it counts none (every thread's run time, /proc/PID/task/*/schedstat), per close.
#
#   bench/close_cost.sh                                 2,000 subscribers, 3 reps, bench's livegate
#   bench/close_cost.sh --subscribers 2000 --reps 5 --config FILE BIN_A BIN_B
#
# Binaries given are run in turn each rep (the order alternating), each pinned as
# bench/compare.sh pins livegate, with --config FILE when given. Prints one line per run: the
# binary, the soft descriptor limit the server runs with, and the close cost; exits 1 when a
# run failed (not every subscriber connected, or the server did not start). What it shows:
# Debian's lws scans a table of one slot per allowed descriptor at every close
# (docs/performance.md, "One million connections").
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

subs=2000 reps=3 config=
bins=()
while [ $# -gt 0 ]; do
    case $1 in
    --subscribers) subs=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) bins+=("$1"); shift ;;
    esac
done
[ ${#bins[@]} -gt 0 ] || bins=("$(lgb_livegate_bin)")
[ -n "${bins[0]}" ] || { lgb_log "no livegate binary"; exit 1; }
loadgen=$(lgb_loadgen) || exit 1

# The run time of every thread of pid, in nanoseconds.
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d", s }'; }

# Wait (at most 20 s) until the server counts n SSE clients.
wait_clients() {
    local n=$1 i
    for ((i = 0; i < 400; i++)); do
        [[ $(lgb_lg_stats "$LGB_PUB_PORT") == *"\"clients_sse\":$n,"* ]] && return 0
        sleep 0.05
    done
    return 1
}

# One run of binary $1: prints "BIN soft_limit=S close_us_per_conn=C".
one_run() {
    local bin=$1 dir
    dir=$(mktemp -d)
    lgb_start_livegate "$dir" "$bin" "$config" || return 1
    local soft
    soft=$(awk '/^Max open files/ { print $4 }' /proc/"$LGB_SRV_PID"/limits)
    lgb_pin_argv "$LGB_GEN_CPU"
    "${LGB_PIN[@]}" "$loadgen" --target livegate --host "$LGB_HOST" --sub-port "$LGB_SUB_PORT" \
        --pub-port "$LGB_PUB_PORT" --label close_cost --max-runtime 60 --quiet --transport sse \
        --subscribers "$subs" --events 0 --settle-ms 100 --idle-ms 1000 >/dev/null 2>&1 &
    local gen=$! t0 t1
    if ! wait_clients "$subs"; then
        lgb_log "$bin: not all $subs subscribers connected"; wait "$gen"; lgb_stop; return 1
    fi
    t0=$(cpu_ns "$LGB_SRV_PID")
    wait "$gen"
    wait_clients 0 || lgb_log "$bin: clients still counted after the generator exited"
    t1=$(cpu_ns "$LGB_SRV_PID")
    lgb_stop
    rm -rf "$dir"
    awk -v b="$bin" -v s="$soft" -v d=$((t1 - t0)) -v n="$subs" \
        'BEGIN { printf "%s soft_limit=%s close_us_per_conn=%.1f\n", b, s, d / n / 1000 }'
}

failed=0
for ((r = 0; r < reps; r++)); do
    for ((i = 0; i < ${#bins[@]}; i++)); do
        one_run "${bins[(i + r) % ${#bins[@]}]}" || failed=1
    done
done
exit $failed

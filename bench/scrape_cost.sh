#!/usr/bin/env bash
# bench/scrape_cost.sh - what GET /metrics costs the gateway (issue 13: a scrape every 100 ms
# during the fan-out benchmark must cost less than 5 % of the fan-out rate).
#
#   bench/scrape_cost.sh [--scrapes N] [--reps R]
#
# 1. CPU per scrape: a fresh livegate (one worker, pinned like every scenario) with 1000 SSE
#    subscribers on one topic answers N (5000) scrapes over one keep-alive connection; the
#    server's CPU time (utime + stime, /proc) over them divided by N. At one scrape per 100 ms
#    that is 10 x this per second of a core: the share of a CPU-bound fan-out it takes.
# 2. The fan-out pair: bench/run.sh's fanout_sse_1k_max and fanout_sse_1k_max_scrape100ms
#    (the same load with GET /metrics every 100 ms), R reps (11) alternating, and the ratio of
#    their median deliveries_per_s. On a busy machine this ratio is noisier than the 5 % it
#    judges; figure 1 is the robust one.
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

scrapes=5000 reps=11
lgb_tool_options scrape_cost.sh 15 scrapes=scrapes reps=reps -- "$@"
lgb_tool_setup scrape

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

lgb_start_livegate "$work/cpu" "$lgbin" || exit 1
# 1000 idle subscribers make the exposition what it is under the fan-out (it does not list
# clients, so their number changes only the gauges' values)
lgb_pin "$LGB_GEN_CPU" "$lg" --target livegate --host "$LGB_HOST" --sub-port "$LGB_SUB_PORT" \
    --pub-port "$LGB_PUB_PORT" --transport sse --subscribers 1000 --events 0 --settle-ms 500 \
    --idle-ms $((scrapes / 2 + 3000)) --quiet >"$work/idle.json" 2>"$work/idle.err" &
gen=$!
sleep 2
bytes=$(curl -s "http://$LGB_HOST:$LGB_PUB_PORT/metrics" | wc -c)
t0=$(cpu_ticks "$LGB_SRV_PID") w0=$(date +%s.%N)
lgb_pin "$LGB_GEN_CPU" curl -s -o /dev/null "http://$LGB_HOST:$LGB_PUB_PORT/metrics?n=[1-$scrapes]"
t1=$(cpu_ticks "$LGB_SRV_PID") w1=$(date +%s.%N)
kill "$gen" 2>/dev/null; wait "$gen" 2>/dev/null
lgb_stop
hz=$(getconf CLK_TCK)
awk -v t=$((t1 - t0)) -v hz="$hz" -v n="$scrapes" -v b="$bytes" -v w0="$w0" -v w1="$w1" 'BEGIN {
    us = t / hz * 1e6 / n
    printf "per scrape: %.0f us of server CPU (%d scrapes of %d bytes in %.1f s; %d ticks at %d Hz)\n", us, n, b, w1 - w0, t, hz
    printf "one scrape every 100 ms: %.3f %% of one core\n", us * 10 / 1e6 * 100
}' | tee "$work/cpu.txt" >&2

"$LGB_BENCH/run.sh" --scenarios fanout_sse_1k_max,fanout_sse_1k_max_scrape100ms --reps "$reps" \
    --out "$work/pair.jsonl" >/dev/null

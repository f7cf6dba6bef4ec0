#!/usr/bin/env bash
# bench/mixed_check.sh - the mixed-transport delivery check (ctest integration/mixed_1000).
#
#   bench/mixed_check.sh [LIVEGATE [LG_LOADGEN]]     (defaults: build/livegate, build/bench/lg_loadgen)
#
# Starts LIVEGATE on 127.0.0.1 port 0 (public and control) with --workers 2, reads the ports
# from its "listening public=H:P control=H:P" line, runs
#   lg_loadgen --transport mixed --subscribers 1000 --topics 10 --rate 2000 --events 200
# (subscribers split evenly over SSE, WebSocket and long-poll; every topic gets all three),
# stops the server with SIGTERM, and passes only when the server exits 0 and the report says
# every subscriber connected, every event was acknowledged, deliveries == expected, and lost,
# duplicated, reordered and invalid are 0, in total and for each transport, and no long-poll
# connection had to be reopened (poll_reconnects: the server keeps them alive between polls).
# Environment: LG_MIXED_SUBS, LG_MIXED_TOPICS, LG_MIXED_RATE, LG_MIXED_EVENTS override the
# numbers (the defaults are the issue's; the ASan build keeps them). Every wait is bounded:
# 20 s for the server to start, --max-runtime 50 s for the generator, 15 s for the shutdown.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lgbin=${1:-$root/build/livegate}
loadgen=${2:-$root/build/bench/lg_loadgen}
subs=${LG_MIXED_SUBS:-1000}
topics=${LG_MIXED_TOPICS:-10}
rate=${LG_MIXED_RATE:-2000}
events=${LG_MIXED_EVENTS:-200}

say() { printf 'mixed_check: %s\n' "$*" >&2; }
for b in "$lgbin" "$loadgen"; do
    [ -x "$b" ] || { say "not executable: $b"; exit 2; }
done

. "$root/bench/check_lib.sh"
check_start_livegate "$lgbin" '{"log_level": "info"}' 2 || exit 1
say "livegate pid $check_srv public=$check_pub control=$check_ctl; $subs subscribers (mixed), $topics topics, $rate events/s, $events events/topic"

t0=$SECONDS
"$loadgen" --transport mixed --host "${check_pub%:*}" --sub-port "${check_pub##*:}" --pub-port "${check_ctl##*:}" \
    --subscribers "$subs" --topics "$topics" --rate "$rate" --events "$events" \
    --settle-ms 1000 --drain-ms 20000 --max-runtime 50 --server-pid "$check_srv" --label mixed_1000 \
    >"$check_work/report.json" 2>"$check_work/loadgen.err"
lrc=$?
report=$(cat "$check_work/report.json")
say "lg_loadgen exit $lrc after $((SECONDS - t0)) s"
cat "$check_work/loadgen.err" >&2

check_stop_livegate

# ---- verdict (flat JSON, awk only) --------------------------------------------------------
# section JSON NAME: the text of the per-transport object NAME
section() {
    printf '%s\n' "$1" | awk -v k="\"$2\":{" '{
        p = index($0, "\"per_transport\":"); if (!p) exit
        s = substr($0, p); i = index(s, k); if (!i) exit
        s = substr(s, i + length(k)); print substr(s, 1, index(s, "}")) }'
}

fail=0
bad() { say "FAIL: $*"; fail=1; }
[ "$check_alive" = 1 ] || bad "livegate died during the run"
[ "$check_status" = 0 ] || bad "livegate exit status after SIGTERM: $check_status (want 0)"
if [ -z "$report" ]; then
    bad "no report from lg_loadgen (exit $lrc)"
else
    [ "$lrc" = 0 ] || bad "lg_loadgen exit $lrc"
    want_pub=$((topics * events))
    want_exp=$((subs * events))
    for kv in "conns_made=$subs" "conns_failed=0" "sub_disconnects=0" "published=$want_pub" \
        "publish_failed=0" "expected_deliveries=$want_exp" "deliveries=$want_exp" "lost=0" \
        "duplicated=0" "reordered=0" "invalid=0" "gaps=0" "resets=0" "aborted=false" "drained=true" \
        "poll_reconnects=0" "poll_errors=0"; do
        k=${kv%%=*} w=${kv#*=} v=$(check_field "$report" "${kv%%=*}")
        [ "$v" = "$w" ] || bad "$k = ${v:-missing} (want $w)"
    done
    for x in sse ws poll; do
        sec=$(section "$report" "$x")
        [ -n "$sec" ] || { bad "no per_transport.$x in the report"; continue; }
        n=$(check_field "{$sec" subscribers)
        [ -n "$n" ] && [ "$n" -gt 0 ] || bad "$x: no subscribers"
        for k in lost duplicated reordered conns_failed sub_disconnects; do
            v=$(check_field "{$sec" "$k")
            [ "$v" = 0 ] || bad "$x.$k = ${v:-missing} (want 0)"
        done
        e=$(check_field "{$sec" expected_deliveries) d=$(check_field "{$sec" deliveries)
        [ -n "$e" ] && [ "$e" = "$d" ] || bad "$x: deliveries $d != expected $e"
        say "$x: subscribers $n deliveries $d/$e lost $(check_field "{$sec" lost) dup $(check_field "{$sec" duplicated) reord $(check_field "{$sec" reordered) p99 $(check_field "{$sec" lat_p99_us) us"
    done
fi

if [ $fail = 0 ]; then
    say "PASS: $(check_field "$report" deliveries) deliveries, 0 lost/duplicated/reordered, livegate exited 0"
    exit 0
fi
say "report: $report"
say "livegate log (last 20 lines):"
grep -v 'adopt_socket_readbuf' "$check_work/livegate.log" | tail -n 20 >&2
exit 1

#!/usr/bin/env bash
# bench/deflate_check.sh - the load generator's permessage-deflate verification, against a real
# gateway (ctest integration/ws_deflate_loadgen).
#
#   bench/deflate_check.sh [LIVEGATE [LG_LOADGEN]]   (defaults: build/livegate, build/bench/lg_loadgen)
#
# Starts LIVEGATE on 127.0.0.1 port 0 with websocket.compression.enabled, then runs lg_loadgen
# twice: 200 WebSocket subscribers on 2 topics, 100 events of ~1 KB of JSON per topic
# (--payload-bytes 1000), closed loop:
#  1. --ws-deflate (offer with server_no_context_takeover): every subscriber must have it
#     answered, every event must arrive compressed and be verified through the shared cache
#     (ws_inflate_path "cache", cache hits > 0, at least one miss per published event, none
#     inflated per connection);
#  2. --ws-deflate-offer browser (what browsers offer): no promise of no context takeover, so
#     every message is inflated by its own connection's inflater and the cache is never used.
# Both must show every event on every connection: deliveries == expected, and lost, duplicated,
# reordered, invalid and stream errors 0. Passes when both do and livegate exits 0 on SIGTERM.
# Every wait is bounded: 20 s for the server to start, --max-runtime 40 s per run, 15 s for the
# shutdown.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lgbin=${1:-$root/build/livegate}
loadgen=${2:-$root/build/bench/lg_loadgen}
subs=200 topics=2 events=100

say() { printf 'deflate_check: %s\n' "$*" >&2; }
for b in "$lgbin" "$loadgen"; do
    [ -x "$b" ] || { say "not executable: $b"; exit 2; }
done

. "$root/bench/check_lib.sh"
check_start_livegate "$lgbin" '{"log_level": "info", "websocket": {"compression": {"enabled": true}}}' 1 || exit 1

fail=0
bad() { say "FAIL: $*"; fail=1; }
want() { # REPORT RUN KEY VALUE
    local v
    v=$(check_field "$1" "$3")
    [ "$v" = "$4" ] || bad "$2: $3 = ${v:-missing} (want $4)"
}
more() { # REPORT RUN KEY THAN: the field is greater than THAN
    local v
    v=$(check_field "$1" "$3")
    [ -n "$v" ] && [ "$v" -gt "$4" ] || bad "$2: $3 = ${v:-missing} (want > $4)"
}

# run NAME OFFER-ARGS...: one lg_loadgen run; its report in $report
run() {
    local name=$1
    shift
    "$loadgen" --transport ws --host "${check_pub%:*}" --sub-port "${check_pub##*:}" --pub-port "${check_ctl##*:}" \
        --subscribers "$subs" --topics "$topics" --rate max --events "$events" --payload-bytes 1000 \
        --settle-ms 200 --drain-ms 15000 --max-runtime 40 --server-pid "$check_srv" --label "$name" "$@" \
        >"$check_work/$name.json" 2>"$check_work/$name.err"
    local lrc=$?
    report=$(cat "$check_work/$name.json")
    cat "$check_work/$name.err" >&2
    if [ -z "$report" ]; then
        bad "$name: no report from lg_loadgen (exit $lrc)"
        return
    fi
    [ "$lrc" = 0 ] || bad "$name: lg_loadgen exit $lrc"
    local published=$((topics * events)) expected=$((subs * events))
    for kv in "conns_made=$subs" "conns_failed=0" "sub_disconnects=0" "published=$published" \
        "expected_deliveries=$expected" "deliveries=$expected" "lost=0" "duplicated=0" \
        "reordered=0" "invalid=0" "stream_errors=0" "aborted=false" "drained=true" \
        "ws_deflate_negotiated=$subs" "ws_compressed_messages=$expected"; do
        want "$report" "$name" "${kv%%=*}" "${kv#*=}"
    done
    say "$name: $(check_field "$report" deliveries) deliveries, path $(check_field "$report" ws_inflate_path)," \
        "cache hits $(check_field "$report" ws_inflate_cache_hits) misses $(check_field "$report" ws_inflate_cache_misses)," \
        "inflated per connection $(check_field "$report" ws_inflated_per_connection)"
}

run no_takeover --ws-deflate
if [ -n "$report" ]; then
    want "$report" no_takeover ws_deflate_no_context_takeover "$subs"
    want "$report" no_takeover ws_inflate_path cache
    want "$report" no_takeover ws_inflated_per_connection 0
    more "$report" no_takeover ws_inflate_cache_hits 0
    # every distinct compressed event is inflated at least once
    more "$report" no_takeover ws_inflate_cache_misses $((topics * events - 1))
fi
run browser --ws-deflate-offer browser
if [ -n "$report" ]; then
    want "$report" browser ws_deflate_no_context_takeover 0
    want "$report" browser ws_inflate_path per_connection
    want "$report" browser ws_inflate_cache_hits 0
    want "$report" browser ws_inflate_cache_misses 0
    want "$report" browser ws_inflated_per_connection $((subs * events))
fi

check_stop_livegate
[ "$check_alive" = 1 ] || bad "livegate died during the runs"
[ "$check_status" = 0 ] || bad "livegate exit status after SIGTERM: $check_status (want 0)"

if [ $fail = 0 ]; then
    say "PASS: both offers, every event verified on every connection, 0 lost/duplicated/reordered"
    exit 0
fi
say "livegate log (last 20 lines):"
tail -n 20 "$check_work/livegate.log" >&2
exit 1

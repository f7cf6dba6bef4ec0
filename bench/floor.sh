#!/usr/bin/env bash
# bench/floor.sh - the per-user and paced fan-out scenarios against livegate, Nchan and
# lg_floor, the cheapest server this machine can run for them (bench/floor_server.c).
#
#   bench/floor.sh                   users_sse_15k and users_ws_15k, 5 reps (about 8 min)
#   bench/floor.sh --reps 3 --scenarios users_ws_15k
#   bench/floor.sh --scenarios fanout_sse_5k_10hz,fanout_ws_5k_10hz   (about 2 min)
#   bench/floor.sh --batch 32 --scenarios fanout_sse_1k_max,fanout_ws_1k_max
#                                    lg_floor --batch 32: the floor under a fan-out at max
#                                    rate, where a send per delivery is not enough (see
#                                    floor_server.c); without it lg_floor sends synchronously
#   bench/floor.sh --no-install      do not apt-get install nginx + libnginx-mod-nchan
#   bench/floor.sh --table FILE      the table of an earlier run's results file
#   bench/floor.sh --smoke           lg_floor alone, 100 subscribers per transport for a second,
#                                    on 100 topics and on one, and again with --batch 8: exits 1
#                                    unless every event arrived once and in order
#                                    (scripts/test.sh runs it, so the tool cannot rot unseen)
#
# Each rep runs every scenario on the three servers, the order rotating from rep to rep, each
# on a fresh server pinned to CPU 0 with lg_loadgen on CPU 1, the scenario's arguments exactly
# as bench/compare.sh runs them (livegate with its default configuration). Prints per scenario
# the medians of server CPU, p50 and p99, the worst rep's lost / duplicated / reordered, and the
# CPU and p99 ratios livegate/Nchan, floor/Nchan and livegate/floor; writes the raw lines to
# bench/results/floor-<date>.jsonl. What the floor says: a CPU or latency target below
# floor/Nchan cannot be met by any one-core server on this machine, and livegate/floor is
# livegate's own overhead.
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

# floor_table FILE: the medians and ratios of a results file (one JSON line per run)
floor_table() {
    awk "$LGB_AWK_RESULTS"'
    function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "n/a" : sprintf("%.2f", a / b) }
    {
        sc = getf($0, "scenario"); tg = getf($0, "target")
        if (getf($0, "error") != "") { errs[sc, tg]++; next }
        if (!(sc in seen)) { seen[sc] = 1; order[++ns] = sc }
        split("server_cpu_pct lat_p50_us lat_p99_us publish_per_s deliveries_per_s", f, " ")
        for (j = 1; j <= 5; j++) { v = getf($0, f[j]); if (v != "" && v != "null") val[sc, tg, f[j], ++cnt[sc, tg, f[j]]] = v + 0 }
        bad = getf($0, "lost") + getf($0, "duplicated") + getf($0, "reordered")
        if (bad >= worstbad[sc, tg]) { worstbad[sc, tg] = bad; worst[sc, tg] = getf($0, "lost") " / " getf($0, "duplicated") " / " getf($0, "reordered") }
    }
    END {
        print "| scenario | server | CPU % | p50 us | p99 us | publishes/s | deliveries/s | lost / dup / reord (worst) |"
        print "|---|---|---:|---:|---:|---:|---:|---|"
        for (s = 1; s <= ns; s++) {
            sc = order[s]
            for (t = 1; t <= 3; t++) {
                tg = t == 1 ? "livegate" : t == 2 ? "nchan" : "floor"
                printf "| %s | %s |", sc, tg
                for (j = 1; j <= 5; j++) {
                    m[tg, f[j]] = median(sc SUBSEP tg SUBSEP f[j])
                    printf " %s |", m[tg, f[j]] == "" ? "n/a" : m[tg, f[j]]
                }
                printf " %s%s |\n", worst[sc, tg], errs[sc, tg] ? " (" errs[sc, tg] " failed)" : ""
            }
            printf "\n%s CPU: livegate/nchan %s, floor/nchan %s, livegate/floor %s\n", sc,
                ratio(m["livegate", "server_cpu_pct"], m["nchan", "server_cpu_pct"]),
                ratio(m["floor", "server_cpu_pct"], m["nchan", "server_cpu_pct"]),
                ratio(m["livegate", "server_cpu_pct"], m["floor", "server_cpu_pct"])
            printf "%s p99: livegate/nchan %s, floor/nchan %s, livegate/floor %s\n", sc,
                ratio(m["livegate", "lat_p99_us"], m["nchan", "lat_p99_us"]),
                ratio(m["floor", "lat_p99_us"], m["nchan", "lat_p99_us"]),
                ratio(m["livegate", "lat_p99_us"], m["floor", "lat_p99_us"])
            printf "%s deliveries/s: livegate/nchan %s, floor/nchan %s, livegate/floor %s\n\n", sc,
                ratio(m["livegate", "deliveries_per_s"], m["nchan", "deliveries_per_s"]),
                ratio(m["floor", "deliveries_per_s"], m["nchan", "deliveries_per_s"]),
                ratio(m["livegate", "deliveries_per_s"], m["floor", "deliveries_per_s"])
        }
    }' "$1"
}

reps=5 only="users_sse_15k,users_ws_15k" install=1 smoke=0
while [ $# -gt 0 ]; do
    case $1 in
    --reps) reps=$2; shift ;;
    --scenarios) only=$2; shift ;;
    --no-install) install=0 ;;
    --smoke) smoke=1 ;;
    --batch) export LGB_FLOOR_BATCH=$2; shift ;;
    --table) floor_table "$2"; exit ;;
    -h | --help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "floor.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

lg=$(lgb_loadgen) || { lgb_log "cannot build lg_loadgen"; exit 1; }
floor=$(lgb_floor_bin)
[ -n "$floor" ] || { lgb_log "cannot build lg_floor (see $LGB_BUILD_LOG)"; exit 1; }
work=$(mktemp -d /tmp/lgbench-floor.XXXXXX)
trap 'lgb_stop; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

if [ $smoke = 1 ]; then
    failed=0
    for batch in "" 8; do
    for transport in sse ws; do
        for topics in 100 1; do
            line=$(LGB_FLOOR_BATCH=$batch lgb_run_one floor "floor_${transport}_100_on_$topics${batch:+_batch$batch}" \
                "--transport $transport --subscribers 100 --topics $topics --pub-conns 1 --rate 200 --duration 1 \
                --settle-ms 100" "$lg" "$work/run" "$floor")
            lgb_log "smoke $(lgb_summary_line "$line")"
            # a paced second publishes 199 or 200 events: every one acknowledged must reach each
            # of its topic's subscribers (lost counts those that did not)
            published=$(lgb_field "$line" published)
            [ "${published:-0}" -ge 150 ] &&
                [ "$(lgb_field "$line" deliveries)" -ge $((published * 100 / topics)) ] &&
                [ "$(lgb_field "$line" lost)$(lgb_field "$line" duplicated)$(lgb_field "$line" reordered)" = 000 ] ||
                failed=1
        done
    done
    done
    [ $failed = 0 ] && echo "floor smoke: ok (every event once and in order, SSE and WebSocket, with and without --batch)" || echo "floor smoke: FAILED"
    exit $failed
fi

lgb_nchan_available "$install" || { lgb_log "nginx + libnginx-mod-nchan missing"; exit 1; }
lgbin=$(lgb_livegate_bin)
[ -n "$lgbin" ] || { lgb_log "cannot build livegate (see $LGB_BUILD_LOG)"; exit 1; }

scen=$(lgb_scenarios_full | awk -F'|' -v only=",$only," 'index(only, "," $1 ",")')
[ -n "$scen" ] || { lgb_log "no scenario selected"; exit 2; }
mkdir -p "$LGB_BENCH/results"
out=$LGB_BENCH/results/floor-$(date -u +%Y%m%d-%H%M%S).jsonl
: >"$out"

targets=(livegate nchan floor)
for ((rep = 1; rep <= reps; rep++)); do
    while IFS='|' read -r name _tsel args _figs; do
        for ((i = 0; i < 3; i++)); do
            tg=${targets[$(((i + rep) % 3))]}
            bin=$lgbin
            [ "$tg" = floor ] && bin=$floor
            line=$(lgb_run_one "$tg" "$name" "$args" "$lg" "$work/run" "$bin")
            [ "$tg" = floor ] && [ -n "${LGB_FLOOR_BATCH:-}" ] && line="{\"floor_batch\":$LGB_FLOOR_BATCH,${line#\{}"
            echo "$line" >>"$out"
            lgb_log "rep $rep $(lgb_summary_line "$line")"
        done
    done <<<"$scen"
done

floor_table "$out"
echo "raw results: $out"

#!/usr/bin/env bash
# bench/compare.sh - livegate vs nginx + Nchan, same scenarios, same machine, one run.
#
#   bench/compare.sh                 full comparison: every scenario x 3 reps, < 15 min
#   bench/compare.sh --quick         the smoke scenarios once (about a minute)
#   bench/compare.sh --reps 5 --scenarios fanout_sse_1k_max,idle_ws_10k
#   bench/compare.sh --no-install    do not apt-get install nginx + libnginx-mod-nchan
#
# Installs nginx + libnginx-mod-nchan when missing (apt-get, as root), builds lg_loadgen and
# livegate, then for each rep and scenario runs livegate and Nchan back to back (the order
# alternates), each on a fresh server pinned to CPU 0 with lg_loadgen pinned to CPU 1. Nchan
# runs under a private prefix in a temp dir (bench/nchan/gen-conf.sh); the system nginx config
# is never touched. livegate runs with its default configuration (bench/README.md, "Scenario
# rules"). Prints a markdown table (scenario, figure, livegate, nchan, livegate/nchan; medians
# over the reps, plus per scenario the worst rep's lost / duplicated / reordered and the offered
# publish rate beside the achieved one), the isolation ratio p99(isolation_sndbuf16k_q256_stalled)
# / p99(isolation_sndbuf16k_q256_base) per server, and writes every raw result plus the table to
# bench/results/<date>.json.
# If livegate cannot be built or started, its column reads n/a and Nchan still runs.
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

reps=3 mode=full only="" install=1 targets="livegate nchan"
budget=${LGB_BUDGET_S:-840} # stop starting new runs after this many seconds (15 min bound)
lgb_side_options compare.sh 19 "$@"
[ $mode = quick ] && mode=smoke # compare.sh's quick run is its smoke scenario set
t0=$SECONDS

# ---- Nchan ---------------------------------------------------------------------------------
if [[ " $targets " == *" nchan "* ]] && ! lgb_nchan_available "$install"; then
    lgb_log "nginx + libnginx-mod-nchan unavailable: Nchan column will be n/a"
    targets=${targets/nchan/}
fi

# ---- builds --------------------------------------------------------------------------------
lg=$(lgb_loadgen) || { lgb_log "cannot build lg_loadgen"; exit 1; }
lgbin=""
if [[ " $targets " == *" livegate "* ]]; then
    lgbin=$(lgb_livegate_bin)
    if [ -z "$lgbin" ]; then
        lgb_log "no livegate binary (cmake build failed?): livegate column will be n/a"
        targets=${targets/livegate/}
    fi
fi
[ -n "${targets// /}" ] || { lgb_log "nothing to compare"; exit 1; }
lgb_log "build done in $((SECONDS - t0)) s; loadgen=$lg livegate=${lgbin:-none}"

work=$(mktemp -d /tmp/lgbench-cmp.XXXXXX)
cleanup() { lgb_stop; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
all=$work/all.jsonl
: >"$all"

if [ $mode = smoke ]; then scen=$(lgb_scenarios_smoke); else scen=$(lgb_scenarios_full); fi
[ -n "$only" ] && scen=$(printf '%s\n' "$scen" | awk -F'|' -v only=",$only," 'index(only, "," $1 ",")')
[ -n "$scen" ] || { lgb_log "no scenario selected"; exit 2; }

# ---- runs: rep-major, alternating the server order --------------------------------------
stopped_early=0 k=0
for ((rep = 1; rep <= reps; rep++)); do
    while IFS='|' read -r name tsel args _figs; do
        [ -n "$name" ] || continue
        k=$((k + 1))
        for tg in $(lgb_alternate $k "$targets"); do
            [ "$tsel" = all ] || [ "$tsel" = "$tg" ] || continue
            if [ $((SECONDS - t0)) -ge "$budget" ]; then stopped_early=1; break 3; fi
            lgb_record_run $rep "$(lgb_run_one "$tg" "$name" "$args" "$lg" "$work/run" "$lgbin")" "$all"
        done
    done <<<"$scen"
done
[ $stopped_early = 1 ] && lgb_log "time budget ($budget s) reached: medians use the reps completed"

# ---- table ---------------------------------------------------------------------------------
# One block per scenario: its figures (median over the reps), publish_per_s labelled with the
# offered rate (added when a scenario that published does not list it), then
# "lost / dup / reord" (the worst rep of each server: a loss in one rep is not hidden by the
# median) and, when any connection failed, "failed conns" (subscribers / stalled / idle), and when
# a reconnect storm's client never had its first event, that count (worst rep).
spec=$(printf '%s\n' "$scen" | awk -F'|' 'NF >= 4 { printf "%s=%s;", $1, $4 }')
table_json=$work/table.json
table_md=$(awk -v spec="$spec" -v tj="$table_json" "$LGB_AWK_RESULTS"'
function fmt(v) {
    if (v == "") return "n/a"
    if (v == int(v) || v >= 100 || v <= -100) return sprintf("%.0f", v)
    return sprintf("%.2f", v)
}
# A connect figure is taken while the generator connects, the others while it publishes and
# reads: each is marked by the load of the generator over its own phase.
function bound(sc, tg, f) { return f ~ /^connect_/ ? lgcbound[sc, tg] : lgbound[sc, tg] }
function marks(sc, tg, f) {
    return (bound(sc, tg, f) ? " LG" : "") (busy[sc, tg] ? " busy" : "") (err[sc, tg] ? " err" : "")
}
function worst(sc, tg, f) { return runs[sc, tg] ? wmax[sc, tg, f] + 0 : "" }
function jv(v) { return v == "" ? "null" : v }
function jrow(sc, f, agg, l, n, ratio, extra) {
    printf "%s{\"scenario\":\"%s\",\"figure\":\"%s\",\"agg\":\"%s\",\"livegate\":%s,\"nchan\":%s,\"ratio\":%s,\"livegate_runs\":%d,\"nchan_runs\":%d,\"livegate_loadgen_bound\":%s,\"nchan_loadgen_bound\":%s,\"livegate_host_busy\":%s,\"nchan_host_busy\":%s%s}", \
        jfirst ? "" : ",", sc, f, agg, jv(l), jv(n), ratio, runs[sc, "livegate"], runs[sc, "nchan"], \
        bound(sc, "livegate", f) ? "true" : "false", bound(sc, "nchan", f) ? "true" : "false", \
        busy[sc, "livegate"] ? "true" : "false", busy[sc, "nchan"] ? "true" : "false", extra > tj
    jfirst = 0
}
function row(sc, label) {
    printf "| %s | %s |", shown[sc] ? "" : sc, label
    shown[sc] = 1
}
BEGIN {
    ns = split(spec, parts, ";")
    for (i = 1; i <= ns; i++) {
        if (parts[i] == "") continue
        split(parts[i], kv, "="); order[++nsc] = kv[1]; figs[kv[1]] = kv[2]
    }
    nchk = split("lost duplicated reordered conns_failed stalled_failed idle_failed storm_reconnect_failed published", chk, " ")
}
{
    sc = getf($0, "scenario"); tg = getf($0, "target")
    if (getf($0, "error") != "") { err[sc, tg]++; next }
    runs[sc, tg]++
    if (getf($0, "loadgen_bound") == "true") lgbound[sc, tg] = 1
    if (getf($0, "loadgen_connect_bound") == "true") lgcbound[sc, tg] = 1
    oc = getf($0, "other_cpu_pct"); if (oc != "" && oc != "null" && oc + 0 > 50) busy[sc, tg] = 1
    o = getf($0, "offered_rate"); if (o != "" && !(sc in offered)) offered[sc] = o
    for (i = 1; i <= nchk; i++) {
        v = getf($0, chk[i]) + 0
        if (!((sc, tg, chk[i]) in wmax) || v > wmax[sc, tg, chk[i]]) wmax[sc, tg, chk[i]] = v
    }
    nodeliv = getf($0, "deliveries") + 0 == 0
    nf = split(figs[sc] " publish_per_s", fl, " ")
    for (i = 1; i <= nf; i++) {
        if (nodeliv && fl[i] ~ /^lat_/) continue # no delivery: no latency (the JSON says 0)
        v = getf($0, fl[i])
        if (v != "" && v != "null") { key = sc SUBSEP tg SUBSEP fl[i]; c = ++cnt[key]; val[key, c] = v + 0 }
    }
}
END {
    print "| scenario | figure | livegate | nchan | livegate/nchan |"
    print "|---|---|---:|---:|---:|"
    printf "[" > tj
    jfirst = 1
    for (s = 1; s <= nsc; s++) {
        sc = order[s]
        if (!runs[sc, "livegate"] && !runs[sc, "nchan"] && !err[sc, "livegate"] && !err[sc, "nchan"]) continue
        list = figs[sc]
        pub = wmax[sc, "livegate", "published"] + wmax[sc, "nchan", "published"]
        if (pub > 0 && (" " list " ") !~ / publish_per_s /) list = list " publish_per_s"
        nf = split(list, fl, " ")
        for (i = 1; i <= nf; i++) {
            f = fl[i]
            l = median(sc SUBSEP "livegate" SUBSEP f); n = median(sc SUBSEP "nchan" SUBSEP f)
            ratio = "n/a"
            if (l != "" && n != "" && n != 0) ratio = sprintf("%.2f", l / n)
            else if (l != "" && n != "" && l == 0 && n == 0) ratio = "="
            label = f
            extra = ""
            if (f == "publish_per_s") {
                of = (sc in offered) ? offered[sc] : ""
                label = f " (offered " (of == "" ? "?" : of == "max" ? "max" : fmt(of + 0) "/s") ")"
                extra = ",\"offered_rate\":" (of == "" ? "null" : of == "max" ? "\"max\"" : of + 0)
            }
            row(sc, label)
            printf " %s%s | %s%s | %s |\n", fmt(l), marks(sc, "livegate", f), fmt(n), marks(sc, "nchan", f), ratio
            jrow(sc, f, "median", l, n, (ratio == "n/a" || ratio == "=") ? "null" : ratio, extra)
        }
        # correctness: worst rep
        for (t = 1; t <= 2; t++) {
            tg = t == 1 ? "livegate" : "nchan"
            cell[tg] = runs[sc, tg] ? sprintf("%d / %d / %d", worst(sc, tg, "lost"), worst(sc, tg, "duplicated"), worst(sc, tg, "reordered")) : "n/a"
            if (runs[sc, tg] && worst(sc, tg, "lost") + worst(sc, tg, "duplicated") + worst(sc, tg, "reordered") > 0) cell[tg] = "**" cell[tg] "**"
            fails[tg] = worst(sc, tg, "conns_failed") + worst(sc, tg, "stalled_failed") + worst(sc, tg, "idle_failed")
            fcell[tg] = runs[sc, tg] ? sprintf("%d / %d / %d", worst(sc, tg, "conns_failed"), worst(sc, tg, "stalled_failed"), worst(sc, tg, "idle_failed")) : "n/a"
        }
        row(sc, "lost / dup / reord (worst rep)")
        printf " %s%s | %s%s | |\n", cell["livegate"], marks(sc, "livegate", ""), cell["nchan"], marks(sc, "nchan", "")
        for (k = 1; k <= 3; k++) {
            f = k == 1 ? "lost" : k == 2 ? "duplicated" : "reordered"
            jrow(sc, f, "max", worst(sc, "livegate", f), worst(sc, "nchan", f), "null", "")
        }
        if (fails["livegate"] + fails["nchan"] > 0) {
            row(sc, "failed conns: subs / stalled / idle (worst rep)")
            printf " %s | %s | |\n", fcell["livegate"], fcell["nchan"]
            jrow(sc, "conns_failed", "max", worst(sc, "livegate", "conns_failed"), worst(sc, "nchan", "conns_failed"), "null", "")
        }
        f = "storm_reconnect_failed" # clients of a reconnect storm that never had their first event
        if (worst(sc, "livegate", f) + worst(sc, "nchan", f) > 0) {
            row(sc, "storm clients without a first event (worst rep)")
            printf " %s | %s | |\n", runs[sc, "livegate"] ? worst(sc, "livegate", f) : "n/a", runs[sc, "nchan"] ? worst(sc, "nchan", f) : "n/a"
            jrow(sc, f, "max", worst(sc, "livegate", f), worst(sc, "nchan", f), "null", "")
        }
    }
    printf "]" > tj
}' "$all")

echo
echo "## livegate vs Nchan ($(date -u +%Y-%m-%dT%H:%MZ), $mode, median of $reps)"
echo
echo "$table_md"
echo
echo "Medians over the reps, except \"lost / dup / reord\" and \"failed conns\": the worst rep (bold when"
echo "not 0 / 0 / 0). publish_per_s = publishes acknowledged per second (achieved), beside the offered"
echo "rate (--rate; max = closed loop). livegate runs with its default configuration unless the"
echo "scenario names a setting (isolation_sndbuf16k_q256_*: bench/livegate/isolation.json;"
echo "*_deflate: bench/livegate/deflate.json, and Nchan with nchan_deflate_message_for_websocket)."
[ -n "${LGB_LG_CONFIG:-}" ] &&
    echo "NOTE: LGB_LG_CONFIG=$LGB_LG_CONFIG replaced livegate's defaults in every other scenario."
echo "LG = a run was load-generator-bound (lg_loadgen above 80 % of its core while the figure was"
echo "taken: connecting for connect_*, publishing and reading for the rest); busy = other"
echo "processes used more than half a core during a run (figure disturbed); err = a run failed."
echo "Latencies in microseconds; bytes_per_conn = server RSS growth / connections."

# ---- isolation (issues 4 and 5): healthy p99 with 100 stalled subscribers / without ------------
iso_json="" iso_any=0
for tg in $targets; do
    l=$(lgb_isolation_line "$all" "$tg")
    [ -n "$l" ] || continue
    [ $iso_any = 0 ] && echo
    iso_any=1
    echo "$l"
    iso_json="$iso_json${iso_json:+,}\"$l\""
done
if [ $iso_any = 1 ]; then
    echo "(stalled = SO_RCVBUF 4096, never read. livegate runs the pair with a 16 KiB send buffer and a"
    echo "256-event client queue (bench/livegate/isolation.json) and applies its default drop-oldest"
    echo "policy to them; Nchan has no slow-consumer policy: nginx keeps their unsent messages queued"
    echo "until send_timeout, 60 s by default, longer than the run.)"
fi

# ---- results file --------------------------------------------------------------------------
resdir=$LGB_BENCH/results
mkdir -p "$resdir"
stamp=$(date -u +%Y%m%d-%H%M%S)
res=$resdir/$stamp.json
{
    printf '{"date":"%s","mode":"%s","reps":%d,"stopped_early":%s,"elapsed_s":%d,' \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$mode" "$reps" "$([ $stopped_early = 1 ] && echo true || echo false)" \
        "$((SECONDS - t0))"
    printf '"host":{"nproc":%d,"kernel":"%s","fd_hard_limit":"%s","nginx":"%s","nchan":"%s","livegate":"%s","server_cpu":%s,"loadgen_cpu":%s},' \
        "$(nproc)" "$(uname -r)" "$(ulimit -Hn)" "$(nginx -v 2>&1 | sed 's/.*\///')" \
        "$(dpkg-query -W -f='${Version}' libnginx-mod-nchan 2>/dev/null)" "${lgbin:+$(git -C "$LGB_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}" \
        "$LGB_SRV_CPU" "$LGB_GEN_CPU"
    printf '"livegate_config_override":"%s",' "${LGB_LG_CONFIG:-}"
    printf '"isolation":[%s],"table":' "$iso_json"
    cat "$table_json"
    printf ',"runs":['
    awk 'NR > 1 { printf "," } { printf "%s", $0 }' "$all"
    printf ']}\n'
} >"$res"
lgb_log "results: $res ($((SECONDS - t0)) s)"

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
# is never touched. Prints a markdown table (figure, livegate, nchan, livegate/nchan; medians
# over the reps), the isolation ratio p99(isolation_stalled) / p99(isolation_base) per server,
# and writes every raw result plus the table to bench/results/<date>.json.
# If livegate cannot be built or started, its column reads n/a and Nchan still runs.
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

reps=3 mode=full only="" install=1 targets="livegate nchan"
budget=${LGB_BUDGET_S:-840} # stop starting new runs after this many seconds (15 min bound)
while [ $# -gt 0 ]; do
    case $1 in
    --quick | --smoke) mode=smoke; reps=1 ;;
    --reps) reps=$2; shift ;;
    --scenarios) only=$2; shift ;;
    --no-install) install=0 ;;
    --nchan-only) targets=nchan ;;
    --livegate-only) targets=livegate ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
t0=$SECONDS

# ---- Nchan ---------------------------------------------------------------------------------
module=${NCHAN_MODULE:-/usr/lib/nginx/modules/ngx_nchan_module.so}
if [[ " $targets " == *" nchan "* ]] && { ! command -v nginx >/dev/null || [ ! -f "$module" ]; }; then
    if [ $install = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        lgb_log "installing nginx + libnginx-mod-nchan"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q nginx libnginx-mod-nchan >/dev/null ||
            { apt-get update -q >/dev/null && apt-get install -y -q nginx libnginx-mod-nchan >/dev/null; }
    fi
    if ! command -v nginx >/dev/null || [ ! -f "$module" ]; then
        lgb_log "nginx + libnginx-mod-nchan unavailable: Nchan column will be n/a"
        targets=${targets/nchan/}
    fi
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
        order=$targets
        [ $((k % 2)) = 0 ] && order=$(echo "$targets" | awk '{for (i = NF; i > 0; i--) printf "%s ", $i}')
        for tg in $order; do
            [ "$tsel" = all ] || [ "$tsel" = "$tg" ] || continue
            if [ $((SECONDS - t0)) -ge "$budget" ]; then stopped_early=1; break 3; fi
            line=$(lgb_run_one "$tg" "$name" "$args" "$lg" "$work/run" "$lgbin")
            line="{\"rep\":$rep,${line#\{}"
            echo "$line" >>"$all"
            lgb_log "rep $rep $(lgb_summary_line "$line")"
        done
    done <<<"$scen"
done
[ $stopped_early = 1 ] && lgb_log "time budget ($budget s) reached: medians use the reps completed"

# ---- table ---------------------------------------------------------------------------------
spec=$(printf '%s\n' "$scen" | awk -F'|' 'NF >= 4 { printf "%s=%s;", $1, $4 }')
table_json=$work/table.json
table_md=$(awk -v spec="$spec" -v tj="$table_json" '
function getf(line, k,   i, s, n) {
    i = index(line, "\"" k "\":"); if (!i) return ""
    s = substr(line, i + length(k) + 3)
    if (substr(s, 1, 1) == "\"") { s = substr(s, 2); return substr(s, 1, index(s, "\"") - 1) }
    n = match(s, /[,}]/); return substr(s, 1, n - 1)
}
function median(key,   n, i, j, t, a) {
    n = cnt[key]; if (!n) return ""
    for (i = 1; i <= n; i++) a[i] = val[key, i]
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    if (n % 2) return a[(n + 1) / 2]
    return (a[n / 2] + a[n / 2 + 1]) / 2
}
function fmt(v) {
    if (v == "") return "n/a"
    if (v == int(v) || v >= 100 || v <= -100) return sprintf("%.0f", v)
    return sprintf("%.2f", v)
}
BEGIN {
    ns = split(spec, parts, ";")
    for (i = 1; i <= ns; i++) {
        if (parts[i] == "") continue
        split(parts[i], kv, "="); order[++nsc] = kv[1]; figs[kv[1]] = kv[2]
    }
}
{
    sc = getf($0, "scenario"); tg = getf($0, "target")
    if (getf($0, "error") != "") { err[sc, tg]++; next }
    runs[sc, tg]++
    if (getf($0, "loadgen_bound") == "true") lgbound[sc, tg] = 1
    oc = getf($0, "other_cpu_pct"); if (oc != "" && oc != "null" && oc + 0 > 50) busy[sc, tg] = 1
    nf = split(figs[sc], fl, " ")
    for (i = 1; i <= nf; i++) {
        v = getf($0, fl[i])
        if (v != "" && v != "null") { key = sc SUBSEP tg SUBSEP fl[i]; c = ++cnt[key]; val[key, c] = v + 0 }
    }
}
END {
    print "| figure | livegate | nchan | livegate/nchan |"
    print "|---|---:|---:|---:|"
    printf "[" > tj
    first = 1
    for (s = 1; s <= nsc; s++) {
        sc = order[s]; nf = split(figs[sc], fl, " ")
        for (i = 1; i <= nf; i++) {
            f = fl[i]
            l = median(sc SUBSEP "livegate" SUBSEP f); n = median(sc SUBSEP "nchan" SUBSEP f)
            ratio = "n/a"
            if (l != "" && n != "" && n != 0) ratio = sprintf("%.2f", l / n)
            else if (l != "" && n != "" && l == 0 && n == 0) ratio = "="
            ml = (lgbound[sc, "livegate"] ? " LG" : "") (busy[sc, "livegate"] ? " busy" : "") (err[sc, "livegate"] ? " err" : "")
            mn = (lgbound[sc, "nchan"] ? " LG" : "") (busy[sc, "nchan"] ? " busy" : "") (err[sc, "nchan"] ? " err" : "")
            printf "| %s.%s | %s%s | %s%s | %s |\n", sc, f, fmt(l), ml, fmt(n), mn, ratio
            printf "%s{\"scenario\":\"%s\",\"figure\":\"%s\",\"livegate\":%s,\"nchan\":%s,\"ratio\":%s,\"livegate_runs\":%d,\"nchan_runs\":%d,\"livegate_loadgen_bound\":%s,\"nchan_loadgen_bound\":%s,\"livegate_host_busy\":%s,\"nchan_host_busy\":%s}", \
                first ? "" : ",", sc, f, l == "" ? "null" : l, n == "" ? "null" : n, \
                (ratio == "n/a" || ratio == "=") ? "null" : ratio, runs[sc, "livegate"], runs[sc, "nchan"], \
                lgbound[sc, "livegate"] ? "true" : "false", lgbound[sc, "nchan"] ? "true" : "false", \
                busy[sc, "livegate"] ? "true" : "false", busy[sc, "nchan"] ? "true" : "false" > tj
            first = 0
        }
    }
    printf "]" > tj
}' "$all")

echo
echo "## livegate vs Nchan ($(date -u +%Y-%m-%dT%H:%MZ), $mode, median of $reps)"
echo
echo "$table_md"
echo
echo "LG = a run was load-generator-bound (lg_loadgen above 80 % of its core); busy = other"
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
    echo "(stalled = SO_RCVBUF 4096, never read. livegate applies its drop-oldest ring policy to them"
    echo "(bench/livegate/isolation.json); Nchan has no slow-consumer policy: nginx keeps their unsent"
    echo "messages queued until send_timeout, 60 s by default, longer than the run.)"
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
    printf '"isolation":[%s],"table":' "$iso_json"
    cat "$table_json"
    printf ',"runs":['
    awk 'NR > 1 { printf "," } { printf "%s", $0 }' "$all"
    printf ']}\n'
} >"$res"
lgb_log "results: $res ($((SECONDS - t0)) s)"

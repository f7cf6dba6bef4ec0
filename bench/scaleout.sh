#!/usr/bin/env bash
# bench/scaleout.sh - scale-out over Redis (issue 30): two livegate nodes over one redis-server
# against two nginx + Nchan nodes over one redis-server, same loads, alternating, median of 3.
#
#   bench/scaleout.sh                 every scenario x 3 reps (about 20 min)
#   bench/scaleout.sh --quick         smaller loads, both sides, once (about a minute)
#   bench/scaleout.sh --smoke         a few hundred subscribers, livegate (and Nchan when its
#                                     module is installed): exits 1 on any lost, duplicated or
#                                     reordered event or failed connection (scripts/test.sh)
#   bench/scaleout.sh --reps 5 --scenarios users_sse_10k_2000hz,ingest_1conn_max
#   bench/scaleout.sh --livegate-only | --nchan-only | --no-install
#
# Each run starts a fresh redis-server (loopback, no persistence) and two fresh nodes on it:
# livegate with its default configuration plus a "redis" section (url only), or nginx + Nchan
# with nchan_redis_url / nchan_use_redis on (bench/nchan/gen-conf.sh). Servers and Redis are
# pinned to LGB_SRV_CPU, the load generators to LGB_GEN_CPU (bench/lib.sh). Subscribers are
# split over both nodes by topic (or all on node B), one publisher connection on node A.
# Subscribers past what one generator process may open (20,000 files) are idle ones, held by a
# second lg_loadgen that is connected before the measured one starts. Prints a markdown table
# (per scenario and side: medians over the reps, the worst rep's lost / dup / reord, CPU of
# node A, node B and redis-server over the measured window, and the livegate/Nchan ratios) and
# writes it with every raw run to bench/results/scaleout-<date>.json.
# Ports: LGB_SO_PORT (18520) .. +9 on 127.0.0.1. Binaries: LIVEGATE, LG_LOADGEN (bench/lib.sh).
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

so_base=${LGB_SO_PORT:-18520}
SO_A_SUB=$so_base SO_A_PUB=$((so_base + 1)) SO_B_SUB=$((so_base + 2)) SO_B_PUB=$((so_base + 3))
SO_REDIS=$((so_base + 9))

# ---------------------------------------------------------------- scenarios
# NAME|SUBSCRIBERS ON (ab: split by topic over both nodes, b: node B, -: none)|IDLE|ARGS
# IDLE = idle SSE subscribers, each on a topic of its own, split over both nodes and held by a
# second generator process: the opentopics_* series keeps the published load fixed (1,000
# active per-user subscribers at 500/s) and adds idle open topics, so what grows from row to row
# is only the number of open topics. Every run: one publisher connection on node A. The fan-out
# drains for up to 40 s: a node that fans out slowly (Nchan: ~100k deliveries/s) must show as a
# low rate, not as lost events.
so_scenarios_full() {
    cat <<'EOF'
users_sse_10k_1000hz|ab|0|--transport sse --subscribers 10000 --topics 10000 --rate 1000 --duration 5 --connect-concurrency 512
users_sse_10k_2000hz|ab|0|--transport sse --subscribers 10000 --topics 10000 --rate 2000 --duration 5 --connect-concurrency 512
users_ws_10k_1000hz|ab|0|--transport ws --subscribers 10000 --topics 10000 --rate 1000 --duration 5 --connect-concurrency 512
users_ws_10k_2000hz|ab|0|--transport ws --subscribers 10000 --topics 10000 --rate 2000 --duration 5 --connect-concurrency 512
fanout_sse_1k_on_b_max|b|0|--transport sse --subscribers 1000 --topics 1 --rate max --events 2000 --duration 3 --drain-ms 40000
ingest_1conn_max|-|0|--subscribers 0 --topics 1 --rate max --duration 3
opentopics_1k_active1k_sse_500hz|ab|0|--transport sse --subscribers 1000 --topics 1000 --rate 500 --duration 5
opentopics_5k_active1k_sse_500hz|ab|4000|--transport sse --subscribers 1000 --topics 1000 --rate 500 --duration 5
opentopics_20k_active1k_sse_500hz|ab|19000|--transport sse --subscribers 1000 --topics 1000 --rate 500 --duration 5
EOF
}

so_scenarios_quick() {
    cat <<'EOF'
users_sse_2k_1000hz|ab|0|--transport sse --subscribers 2000 --topics 2000 --rate 1000 --duration 1.5 --connect-concurrency 512
users_ws_2k_1000hz|ab|0|--transport ws --subscribers 2000 --topics 2000 --rate 1000 --duration 1.5 --connect-concurrency 512
fanout_sse_200_on_b_max|b|0|--transport sse --subscribers 200 --topics 1 --rate max --events 500 --duration 1
ingest_1conn_max|-|0|--subscribers 0 --topics 1 --rate max --duration 1
opentopics_2k_active500_sse_250hz|ab|1500|--transport sse --subscribers 500 --topics 500 --rate 250 --duration 1.5
EOF
}

so_scenarios_smoke() {
    cat <<'EOF'
users_ws_200_200hz|ab|0|--transport ws --subscribers 200 --topics 200 --rate 200 --duration 1 --settle-ms 100
fanout_sse_100_on_b_max|b|0|--transport sse --subscribers 100 --topics 1 --rate max --events 100 --settle-ms 100
opentopics_300_active200_sse_200hz|ab|100|--transport sse --subscribers 200 --topics 200 --rate 200 --duration 1 --settle-ms 100
EOF
}

# ---------------------------------------------------------------- processes of one run
so_pids=() # everything this run started, stopped in reverse order (so_stop_all)

so_track() { so_pids+=("$1"); }

so_stop_all() {
    local i
    for ((i = ${#so_pids[@]} - 1; i >= 0; i--)); do
        LGB_SRV_PID=${so_pids[i]}
        lgb_stop
    done
    so_pids=()
}

so_start_redis() { # DIR: a fresh redis-server on SO_REDIS, pinned beside the servers
    lgb_check_free "$SO_REDIS" || return 1
    lgb_pin_argv "$LGB_SRV_CPU"
    (exec "${LGB_PIN[@]}" redis-server --port "$SO_REDIS" --bind "$LGB_HOST" --save '' \
        --appendonly no --dir "$1") >"$1/redis.log" 2>&1 &
    SO_REDIS_PID=$!
    so_track "$SO_REDIS_PID"
    lgb_wait_port "$SO_REDIS" 5 "$SO_REDIS_PID" || { lgb_log "redis-server did not start"; return 1; }
}

so_redis_clients() { redis-cli -h "$LGB_HOST" -p "$SO_REDIS" info clients 2>/dev/null |
    awk -F: '/^connected_clients:/ { print $2 + 0 }'; }

# so_start_node SIDE DIR SUB_PORT PUB_PORT: one node on the run's Redis; sets SO_NODE_PID (the
# process whose CPU is measured: livegate, or the nginx worker)
so_start_node() {
    local side=$1 dir=$2 i
    mkdir -p "$dir"
    if [ "$side" = livegate ]; then
        printf '{"redis": {"url": "redis://%s:%d"}}\n' "$LGB_HOST" "$SO_REDIS" >"$dir/livegate.json"
        LGB_LG_PUB=$3 LGB_LG_CTL=$4 lgb_start_livegate "$dir" "$lgbin" "$dir/livegate.json" || return 1
        so_track "$LGB_SRV_PID"
        for ((i = 0; i < 100; i++)); do # ready = Redis reachable too
            curl -fs --max-time 1 "http://$LGB_HOST:$4/readyz" >/dev/null && break
            sleep 0.05
        done
        [ $i -lt 100 ] || { lgb_log "livegate on $4 never became ready"; return 1; }
    else
        NCHAN_REDIS_URL=redis://$LGB_HOST:$SO_REDIS LGB_NC_SUB=$3 LGB_NC_PUB=$4 lgb_start_nchan "$dir" ||
            return 1
        so_track "$LGB_SRV_PID"
    fi
    SO_NODE_PID=$LGB_MEASURE_PIDS
}

# so_start_idle SIDE DIR N: the second generator, N idle subscribers over both nodes; waits
# (bounded) until it holds them
so_start_idle() {
    local i
    lgb_pin_argv "$LGB_GEN_CPU"
    (ulimit -n "$(ulimit -Hn)"
        exec "${LGB_PIN[@]}" "$lg" --target "$1" --host "$LGB_HOST" --sub-port "$SO_A_SUB,$SO_B_SUB" \
            --subscribers 0 --events 0 --idle "$3" --connect-concurrency 512 --settle-ms 0 \
            --idle-ms $((${LGB_MAX_RUNTIME:-90} * 1000)) --max-runtime $((${LGB_MAX_RUNTIME:-90} + 30)) \
            --ready-file "$2/idle.ready" --label idle_helper --quiet) >"$2/idle.json" 2>"$2/idle.err" &
    SO_IDLE_PID=$!
    so_track "$SO_IDLE_PID"
    for ((i = 0; i < 1200; i++)); do
        [ -s "$2/idle.ready" ] && return 0
        kill -0 "$SO_IDLE_PID" 2>/dev/null || break
        sleep 0.05
    done
    lgb_log "the idle generator did not connect: $(tail -n 2 "$2/idle.err" | tr '\n' ' ')"
    return 1
}

so_run_error() { # NAME SIDE WHAT: the run's error line; stops what it started
    printf '{"scenario":"%s","target":"%s","error":"%s"}\n' "$1" "$2" "$3"
    so_stop_all
}

# so_run_one SIDE NAME ON IDLE ARGS DIR: one run; prints its JSON line (or a JSON error)
so_run_one() {
    local side=$1 name=$2 on=$3 idle=$4 args=$5 dir=$6 pa pb out subs
    trap 'so_stop_all; exit 130' INT TERM # called as $(so_run_one): its processes are its own to stop
    rm -rf "$dir"; mkdir -p "$dir"
    so_start_redis "$dir" || { so_run_error "$name" "$side" "redis-server did not start"; return 1; }
    so_start_node "$side" "$dir/a" "$SO_A_SUB" "$SO_A_PUB" || { so_run_error "$name" "$side" "node A did not start"; return 1; }
    pa=$SO_NODE_PID
    so_start_node "$side" "$dir/b" "$SO_B_SUB" "$SO_B_PUB" || { so_run_error "$name" "$side" "node B did not start"; return 1; }
    pb=$SO_NODE_PID
    if [ "$idle" -gt 0 ]; then
        so_start_idle "$side" "$dir" "$idle" || { so_run_error "$name" "$side" "idle generator did not connect"; return 1; }
    fi
    case $on in ab) subs=$SO_A_SUB,$SO_B_SUB ;; b) subs=$SO_B_SUB ;; *) subs=$SO_A_SUB ;; esac
    # shellcheck disable=SC2086
    out=$(ulimit -n "$(ulimit -Hn)"; lgb_pin "$LGB_GEN_CPU" "$lg" --target "$side" --host "$LGB_HOST" \
        --sub-port "$subs" --pub-port "$SO_A_PUB" --pub-conns 1 --server-pid "$pa,$pb,$SO_REDIS_PID" \
        --label "$name" --max-runtime "${LGB_MAX_RUNTIME:-90}" --quiet $args 2>"$dir/loadgen.err")
    local rc=$? clients
    clients=$(so_redis_clients)
    so_stop_all # the idle generator prints its report on SIGTERM
    if [ -z "$out" ]; then
        printf '{"scenario":"%s","target":"%s","error":"loadgen rc=%s: %s"}\n' "$name" "$side" "$rc" \
            "$(tail -n 2 "$dir/loadgen.err" | tr '\n"\\' '   ')"
        return 1
    fi
    local extra=",\"redis_clients\":${clients:-null},\"idle_helper\":$idle"
    if [ "$idle" -gt 0 ]; then
        local ij k v
        ij=$(tail -n 1 "$dir/idle.json")
        for k in idle_made idle_failed idle_closed; do
            v=$(lgb_field "$ij" "$k")
            extra="$extra,\"helper_$k\":${v:-null}"
        done
    fi
    out=${out%\}}
    printf '{"scenario":"%s",%s%s}\n' "$name" "${out#\{}" "$extra"
}

# ---------------------------------------------------------------- table
# so_table JSONL TABLE_JSON: the markdown table of the runs (medians over the reps; lost / dup /
# reord and failed connections from the worst rep), and the same rows as a JSON array in
# TABLE_JSON. Redis CPU per publish = redis-server CPU seconds over the measured window /
# publishes acknowledged.
so_table() {
    awk -v tj="$2" "$LGB_AWK_RESULTS"'
    function fmt(v) { return v == "" ? "n/a" : (v >= 100 || v == int(v)) ? sprintf("%.0f", v) : sprintf("%.2f", v) }
    function jv(v) { return v == "" ? "null" : v }
    function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "" : sprintf("%.2f", a / b) }
    function worst(sc, tg, f) { return wmax[sc, tg, f] + 0 }
    BEGIN {
        nf = split("publish_per_s deliveries_per_s lat_p50_us lat_p99_us server_cpu_pct_1 server_cpu_pct_2 server_cpu_pct_3 server_cpu_pct redis_us_per_publish", F, " ")
        split("publish_per_s deliveries_per_s lat_p50_us lat_p99_us node_a_cpu_pct node_b_cpu_pct redis_cpu_pct cpu_pct_sum redis_cpu_us_per_publish", JN, " ")
        nw = split("lost duplicated reordered gaps conns_failed helper_idle_failed helper_idle_closed", W, " ")
    }
    {
        sc = getf($0, "scenario"); tg = getf($0, "target")
        if (!(sc in seen)) { seen[sc] = 1; order[++ns] = sc }
        if (getf($0, "error") != "") { err[sc, tg]++; next }
        runs[sc, tg]++
        if (getf($0, "loadgen_bound") == "true") bound[sc, tg] = 1
        offered[sc] = getf($0, "offered_rate")
        pub = getf($0, "published") + 0
        rs = getf($0, "server_cpu_s_3")
        line = $0
        if (pub > 0 && rs != "" && rs != "null") line = substr($0, 1, length($0) - 1) ",\"redis_us_per_publish\":" (rs * 1e6 / pub) "}"
        nodeliv = getf($0, "deliveries") + 0 == 0
        for (i = 1; i <= nf; i++) {
            if (nodeliv && F[i] ~ /^(lat_|deliveries)/) continue
            v = getf(line, F[i])
            if (v != "" && v != "null") { key = sc SUBSEP tg SUBSEP F[i]; val[key, ++cnt[key]] = v + 0 }
        }
        for (i = 1; i <= nw; i++) { v = getf($0, W[i]) + 0; if (v > wmax[sc, tg, W[i]]) wmax[sc, tg, W[i]] = v }
    }
    END {
        print "| scenario | server | offered/s | publish/s | deliveries/s | lost / dup / reord | p50 us | p99 us | node A % | node B % | Redis % | sum % | Redis us/publish |"
        print "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"
        printf "[" > tj
        sep = ""
        for (s = 1; s <= ns; s++) {
            sc = order[s]
            for (t = 1; t <= 2; t++) {
                tg = t == 1 ? "livegate" : "nchan"
                if (!runs[sc, tg] && !err[sc, tg]) continue
                cell = sprintf("%d / %d / %d", worst(sc, tg, "lost"), worst(sc, tg, "duplicated"), worst(sc, tg, "reordered"))
                if (worst(sc, tg, "lost") + worst(sc, tg, "duplicated") + worst(sc, tg, "reordered")) cell = "**" cell "**"
                if (worst(sc, tg, "gaps")) cell = cell ", " worst(sc, tg, "gaps") " gaps"
                failed = worst(sc, tg, "conns_failed") + worst(sc, tg, "helper_idle_failed") + worst(sc, tg, "helper_idle_closed")
                if (failed) cell = cell ", " failed " conns failed"
                if (err[sc, tg]) cell = cell ", " err[sc, tg] " runs failed"
                if (bound[sc, tg]) cell = cell ", LG"
                printf "| %s | %s | %s |", sc, tg, offered[sc] == "max" ? "max" : fmt(offered[sc] + 0)
                printf "%s%s{\"scenario\":\"%s\",\"target\":\"%s\",\"runs\":%d,\"failed_runs\":%d,\"offered_rate\":%s", sep, "", sc, tg, runs[sc, tg], err[sc, tg], offered[sc] == "max" ? "\"max\"" : jv(offered[sc]) > tj
                sep = ","
                for (i = 1; i <= nf; i++) {
                    m[tg, i] = median(sc SUBSEP tg SUBSEP F[i])
                    printf " %s |%s", fmt(m[tg, i]), i == 2 ? " " cell " |" : ""
                    printf ",\"%s\":%s", JN[i], jv(m[tg, i]) > tj
                }
                printf "\n"
                for (i = 1; i <= nw; i++) printf ",\"%s\":%d", W[i], worst(sc, tg, W[i]) > tj
                printf ",\"loadgen_bound\":%s}", bound[sc, tg] ? "true" : "false" > tj
            }
            if (!runs[sc, "livegate"] || !runs[sc, "nchan"]) continue
            printf "| %s | livegate/nchan | |", sc
            printf "%s{\"scenario\":\"%s\",\"target\":\"livegate/nchan\"", sep, sc > tj
            for (i = 1; i <= nf; i++) {
                r = ratio(m["livegate", i], m["nchan", i])
                printf " %s |%s", r == "" ? "n/a" : r, i == 2 ? " |" : ""
                printf ",\"%s\":%s", JN[i], jv(r) > tj
            }
            printf "\n"
            printf "}" > tj
        }
        printf "]" > tj
    }' "$1"
}

# so_smoke_verdict JSONL: 0 when every run published, lost, duplicated and reordered nothing and
# made every connection; prints the offending runs
so_smoke_verdict() {
    awk "$LGB_AWK_RESULTS"'
    {
        bad = getf($0, "error") != "" || getf($0, "published") + 0 == 0
        n = split("lost duplicated reordered conns_failed helper_idle_failed helper_idle_closed", f, " ")
        for (i = 1; i <= n; i++) bad = bad || getf($0, f[i]) + 0 > 0
        if (bad) { print "scaleout smoke: FAILED " getf($0, "target") " " getf($0, "scenario") ": " substr($0, 1, 300); failed = 1 }
    }
    END { exit failed }' "$1"
}

# ---------------------------------------------------------------- main
reps=3 mode=full only="" install=1 targets="livegate nchan"
lgb_side_options scaleout.sh 25 "$@"
[ $mode = smoke ] && install=0 # the smoke runs in CI: it never installs anything
t0=$SECONDS
command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
    { lgb_log "redis-server / redis-cli missing (scripts/setup.sh --test installs them)"; exit 1; }
if [[ " $targets " == *" nchan "* ]] && ! lgb_nchan_available "$install"; then
    targets=${targets/nchan/}
    if [ $mode = smoke ]; then
        echo "scaleout smoke: nginx's nchan module is absent: livegate only (LG_SETUP_BENCH=1 scripts/setup.sh --test installs it)"
    else
        lgb_log "nginx + libnginx-mod-nchan unavailable: livegate only"
    fi
fi
lg=$(lgb_loadgen) || { lgb_log "cannot build lg_loadgen"; exit 1; }
lgbin=""
if [[ " $targets " == *" livegate "* ]]; then
    lgbin=$(lgb_livegate_bin)
    [ -n "$lgbin" ] || { lgb_log "no livegate binary (build it, or set LIVEGATE=path)"; targets=${targets/livegate/}; }
fi
[ -n "${targets// /}" ] || { lgb_log "nothing to run"; exit 1; }

work=$(mktemp -d /tmp/lgbench-scaleout.XXXXXX)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
all=$work/all.jsonl
: >"$all"

scen=$(so_scenarios_$mode)
[ -n "$only" ] && scen=$(printf '%s\n' "$scen" | awk -F'|' -v only=",$only," 'index(only, "," $1 ",")')
[ -n "$scen" ] || { lgb_log "no scenario selected"; exit 2; }

# rep-major, the side that goes first alternating from run to run
k=0
for ((rep = 1; rep <= reps; rep++)); do
    while IFS='|' read -r name on idle args; do
        k=$((k + 1))
        for side in $(lgb_alternate $k "$targets"); do
            lgb_record_run $rep "$(so_run_one "$side" "$name" "$on" "$idle" "$args" "$work/run")" "$all"
        done
    done <<<"$scen"
done

if [ $mode = smoke ]; then
    so_smoke_verdict "$all" || exit 1
    echo "scaleout smoke: ok ($(echo $targets | tr ' ' '+') over Redis, two nodes: every event once and in order)"
    exit 0
fi

echo
echo "## Scale-out over Redis: livegate vs Nchan, two nodes each ($(date -u +%Y-%m-%dT%H:%MZ), $mode, median of $reps)"
echo
so_table "$all" "$work/table.json"
echo
echo "Medians over the reps; lost / dup / reord and failed connections: the worst rep (LG = the load"
echo "generator was above 80 % of its core). CPU in % of one core over the measured window"
echo "(publish + drain), from /proc/PID/stat: node A (publisher's node), node B, redis-server, and"
echo "their sum. At max rate the latencies are each server's backlog, not its delivery latency."

resdir=$LGB_BENCH/results
mkdir -p "$resdir"
res=$resdir/scaleout-$(date -u +%Y%m%d-%H%M%S).json
{
    printf '{"date":"%s","mode":"%s","reps":%d,"elapsed_s":%d,' \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$mode" "$reps" "$((SECONDS - t0))"
    printf '"host":{"nproc":%d,"kernel":"%s","fd_hard_limit":"%s","redis":"%s","nginx":"%s","nchan":"%s","livegate":"%s","server_cpu":%s,"loadgen_cpu":%s},' \
        "$(nproc)" "$(uname -r)" "$(ulimit -Hn)" "$(redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/')" \
        "$(nginx -v 2>&1 | sed 's/.*\///')" "$(dpkg-query -W -f='${Version}' libnginx-mod-nchan 2>/dev/null)" \
        "${lgbin:+$(git -C "$LGB_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}" "$LGB_SRV_CPU" "$LGB_GEN_CPU"
    printf '"table":'
    cat "$work/table.json"
    printf ',"runs":['
    awk 'NR > 1 { printf "," } { printf "%s", $0 }' "$all"
    printf ']}\n'
} >"$res"
lgb_log "results: $res ($((SECONDS - t0)) s)"

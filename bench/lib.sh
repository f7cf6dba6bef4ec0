# bench/lib.sh - shared by bench/run.sh and bench/compare.sh (source it; bash only).
# shellcheck shell=bash
#
# Server control (livegate and nginx+Nchan on loopback, each pinned to one core), the scenario
# table, and the JSON helpers (plain awk, so a clean Debian without jq or python works).

LGB_ROOT=${LGB_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
LGB_BENCH=$LGB_ROOT/bench
LGB_BUILD=${LGB_BUILD:-$LGB_ROOT/build}
LGB_HOST=127.0.0.1
LGB_SRV_CPU=${LGB_SRV_CPU:-0}   # the server under test
LGB_GEN_CPU=${LGB_GEN_CPU:-1}   # lg_loadgen
# ports: livegate public/control, nchan sub/pub
LGB_LG_PUB=${LGB_LG_PUB:-18480}
LGB_LG_CTL=${LGB_LG_CTL:-18481}
LGB_NC_SUB=${LGB_NC_SUB:-18490}
LGB_NC_PUB=${LGB_NC_PUB:-18491}

lgb_log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

lgb_pin() { # lgb_pin CPU cmd... : taskset when the host has that CPU, else plain
    local cpu=$1; shift
    if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -gt "$cpu" ]; then
        taskset -c "$cpu" "$@"
    else
        "$@"
    fi
}

# lgb_pin_argv CPU: sets LGB_PIN to the argv prefix that pins a command to CPU (empty if unable),
# for use with exec so that $! is the server's own pid.
lgb_pin_argv() {
    LGB_PIN=()
    if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -gt "$1" ]; then LGB_PIN=(taskset -c "$1"); fi
}

lgb_port_open() { (exec 3<>"/dev/tcp/$LGB_HOST/$1") 2>/dev/null; }

lgb_wait_port() { # PORT TIMEOUT_S PID
    local i
    for ((i = 0; i < $2 * 20; i++)); do
        lgb_port_open "$1" && return 0
        [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null && return 1
        sleep 0.05
    done
    return 1
}

lgb_check_free() { # PORT...
    local p
    for p in "$@"; do
        if lgb_port_open "$p"; then
            lgb_log "port $p is already in use on $LGB_HOST; set LGB_LG_PUB/LGB_LG_CTL/LGB_NC_SUB/LGB_NC_PUB"
            return 1
        fi
    done
}

# lgb_nchan_available INSTALL: 0 when nginx and its Nchan module are there; with INSTALL 1, as
# root with apt-get, installs nginx + libnginx-mod-nchan first when either is missing
lgb_nchan_available() {
    local module=${NCHAN_MODULE:-/usr/lib/nginx/modules/ngx_nchan_module.so}
    command -v nginx >/dev/null && [ -f "$module" ] && return 0
    if [ "$1" = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        lgb_log "installing nginx + libnginx-mod-nchan"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q nginx libnginx-mod-nchan >/dev/null ||
            { apt-get update -q >/dev/null && apt-get install -y -q nginx libnginx-mod-nchan >/dev/null; }
    fi
    command -v nginx >/dev/null && [ -f "$module" ]
}

# ---------------------------------------------------------------- building

LGB_BUILD_LOG=${LGB_BUILD_LOG:-/tmp/lgbench-build.log}

lgb_configure() {
    [ -f "$LGB_BUILD/CMakeCache.txt" ] && return 0
    cmake -S "$LGB_ROOT" -B "$LGB_BUILD" -DCMAKE_BUILD_TYPE=Release >>"$LGB_BUILD_LOG" 2>&1
}

# Builds (incrementally) and prints the path of lg_loadgen; $LG_LOADGEN overrides.
lgb_loadgen() {
    if [ -n "${LG_LOADGEN:-}" ]; then
        [ -x "$LG_LOADGEN" ] && echo "$LG_LOADGEN"
        return
    fi
    local lg=$LGB_BUILD/bench/lg_loadgen
    if lgb_configure && cmake --build "$LGB_BUILD" --target lg_loadgen >>"$LGB_BUILD_LOG" 2>&1; then
        echo "$lg"
        return 0
    fi
    # the top-level build may be broken while src/ is being edited: build the client alone
    lgb_log "cmake build of lg_loadgen failed (see $LGB_BUILD_LOG); compiling it directly"
    mkdir -p "$LGB_BUILD/bench"
    ${CC:-cc} -O2 -std=gnu11 -Wall -o "$lg" "$LGB_BENCH/loadgen.c" "$LGB_BENCH/lg_util.c" \
        "$LGB_BENCH/ws_inflate.c" -lm -lz >&2 || return 1
    echo "$lg"
}

# Builds (incrementally) and prints the path of lg_floor (bench/floor_server.c), or nothing.
lgb_floor_bin() {
    local b=$LGB_BUILD/bench/lg_floor
    if lgb_configure && cmake --build "$LGB_BUILD" --target lg_floor >>"$LGB_BUILD_LOG" 2>&1 && [ -x "$b" ]; then
        echo "$b"
    fi
    return 0
}

# Builds (incrementally) and prints the path of livegate, or nothing; $LIVEGATE overrides.
lgb_livegate_bin() {
    if [ -n "${LIVEGATE:-}" ]; then
        [ -x "$LIVEGATE" ] && echo "$LIVEGATE"
        return 0
    fi
    local b=$LGB_BUILD/livegate
    if ! { lgb_configure && cmake --build "$LGB_BUILD" --target livegate -j"$(nproc)" >>"$LGB_BUILD_LOG" 2>&1; }; then
        if [ -x "$b" ]; then
            lgb_log "livegate build failed (see $LGB_BUILD_LOG); using the existing $b"
        else
            lgb_log "livegate build failed (see $LGB_BUILD_LOG)"
            return 0
        fi
    fi
    [ -x "$b" ] && echo "$b"
    return 0
}

# ---------------------------------------------------------------- servers
# lgb_start TARGET WORKDIR: starts a fresh server, sets LGB_SRV_PID (the process to stop),
# LGB_MEASURE_PIDS (processes whose RSS/CPU are reported), LGB_SUB_PORT, LGB_PUB_PORT.

# livegate runs with its built-in defaults: no --config, unless LGB_LG_CONFIG names a file (an
# override for every scenario, empty by default) or the scenario names its own file
# (@LGCFG=FILE@, for scenarios about a setting, which is then in the scenario's name). A config
# that does not start is an error: the run never falls back to another configuration.
lgb_start_livegate() { # DIR BIN [CONFIG]: CONFIG (a scenario's own file) overrides LGB_LG_CONFIG
    local dir=$1 bin=$2 cfg=${LGB_LG_CONFIG:-}
    [ -n "${3:-}" ] && cfg=$3
    mkdir -p "$dir"
    lgb_check_free "$LGB_LG_PUB" "$LGB_LG_CTL" || return 1
    local sargs=(--public "$LGB_HOST:$LGB_LG_PUB" --control "$LGB_HOST:$LGB_LG_CTL" --workers 1)
    if [ -n "$cfg" ]; then
        [ -f "$cfg" ] || { lgb_log "livegate config $cfg not found"; return 1; }
        sargs+=(--config "$cfg")
    fi
    : >"$dir/livegate.log"
    lgb_pin_argv "$LGB_SRV_CPU"
    # the log (stderr; info level by default) goes to the run dir, never to the terminal
    (ulimit -n "$(ulimit -Hn)"; exec "${LGB_PIN[@]}" "$bin" "${sargs[@]}") >>"$dir/livegate.log" 2>&1 &
    LGB_SRV_PID=$!
    local i
    for ((i = 0; i < 200; i++)); do
        # ready when both listeners accept (the port check does not depend on the log level)
        if lgb_port_open "$LGB_LG_PUB" && lgb_port_open "$LGB_LG_CTL"; then
            LGB_MEASURE_PIDS=$LGB_SRV_PID
            LGB_SUB_PORT=$LGB_LG_PUB
            LGB_PUB_PORT=$LGB_LG_CTL
            return 0
        fi
        kill -0 "$LGB_SRV_PID" 2>/dev/null || break
        sleep 0.05
    done
    lgb_log "livegate did not start${cfg:+ (--config $cfg)}: $(tail -n 3 "$dir/livegate.log" | tr '\n' ' ')"
    kill "$LGB_SRV_PID" 2>/dev/null; wait "$LGB_SRV_PID" 2>/dev/null
    LGB_SRV_PID=
    return 1
}

lgb_start_nchan() {
    local dir=$1
    lgb_check_free "$LGB_NC_SUB" "$LGB_NC_PUB" || return 1
    "$LGB_BENCH/nchan/gen-conf.sh" "$dir" "$LGB_NC_SUB" "$LGB_NC_PUB" "$LGB_HOST" >/dev/null || return 1
    lgb_pin_argv "$LGB_SRV_CPU"
    (exec "${LGB_PIN[@]}" nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log") >"$dir/nginx.out" 2>&1 &
    LGB_SRV_PID=$!
    if ! lgb_wait_port "$LGB_NC_SUB" 10 "$LGB_SRV_PID" || ! lgb_wait_port "$LGB_NC_PUB" 5 "$LGB_SRV_PID"; then
        lgb_log "nginx did not start: $(tail -n 3 "$dir/error.log" "$dir/nginx.out" 2>/dev/null | tr '\n' ' ')"
        lgb_stop
        return 1
    fi
    local w i
    for ((i = 0; i < 100; i++)); do
        w=$(pgrep -P "$LGB_SRV_PID" | tr '\n' ',' | sed 's/,$//')
        [ -n "$w" ] && break
        sleep 0.05
    done
    LGB_MEASURE_PIDS=${w:-$LGB_SRV_PID} # the worker does the work; the master stays idle
    LGB_SUB_PORT=$LGB_NC_SUB
    LGB_PUB_PORT=$LGB_NC_PUB
}

# lgb_start_floor DIR BIN: lg_floor on the Nchan ports (it speaks Nchan's URLs), pinned like
# the servers it is the floor of; with LGB_FLOOR_BATCH=W set, lg_floor --batch W.
lgb_start_floor() {
    local dir=$1 bin=$2 batch=()
    [ -n "${LGB_FLOOR_BATCH:-}" ] && batch=(--batch "$LGB_FLOOR_BATCH")
    lgb_check_free "$LGB_NC_SUB" "$LGB_NC_PUB" || return 1
    lgb_pin_argv "$LGB_SRV_CPU"
    (ulimit -n "$(ulimit -Hn)"; exec "${LGB_PIN[@]}" "$bin" "$LGB_NC_SUB" "$LGB_NC_PUB" "${batch[@]}") >"$dir/floor.log" 2>&1 &
    LGB_SRV_PID=$!
    if ! lgb_wait_port "$LGB_NC_SUB" 5 "$LGB_SRV_PID" || ! lgb_wait_port "$LGB_NC_PUB" 5 "$LGB_SRV_PID"; then
        lgb_log "lg_floor did not start: $(tail -n 3 "$dir/floor.log" | tr '\n' ' ')"
        lgb_stop
        return 1
    fi
    LGB_MEASURE_PIDS=$LGB_SRV_PID
    LGB_SUB_PORT=$LGB_NC_SUB
    LGB_PUB_PORT=$LGB_NC_PUB
}

# lgb_lg_stats PORT: livegate's GET /v1/stats body (one JSON object), or nothing (bounded: 3 s)
lgb_lg_stats() {
    local body
    body=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1" || exit 1
        printf "GET /v1/stats HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" "$0" >&3
        cat <&3' "$LGB_HOST" "$1" 2>/dev/null | tr -d '\r' | awk 'b { print } /^$/ { b = 1 }')
    case $body in "{"*"}") [[ $body != *$'\n'* ]] && printf '%s' "$body" ;; esac
}

lgb_stop() {
    [ -n "${LGB_SRV_PID:-}" ] || return 0
    kill -TERM "$LGB_SRV_PID" 2>/dev/null
    local i
    for ((i = 0; i < 100; i++)); do
        kill -0 "$LGB_SRV_PID" 2>/dev/null || break
        sleep 0.05
    done
    kill -KILL "$LGB_SRV_PID" 2>/dev/null
    wait "$LGB_SRV_PID" 2>/dev/null
    LGB_SRV_PID=
}

# ---------------------------------------------------------------- scenarios
# One line per scenario: NAME|TARGETS|LOADGEN ARGS|FIGURES
# TARGETS: "all" or "livegate" (Nchan has no batch publish).
# @MAXCONN@ = 19400 (livegate's default limits.max_connections), capped at the fd hard limit
# (at most 20000) - 20; both servers get the same number (lgb_maxconn).
# Rules (bench/README.md, "Scenario rules"):
# * livegate runs with its DEFAULT configuration. A scenario about a setting names its own file
#   with @LGCFG=FILE@ (livegate runs it with --config bench/livegate/FILE; Nchan ignores it),
#   and the setting is in the scenario's name (isolation_sndbuf16k_q256_*).
# * one publisher connection (--pub-conns 1), the shape of a backend, unless the name says
#   otherwise (ingest_8conn, ingest_batch100_8conn, topics_sse_5k_1k_8conn and _batch100).
# * every scenario that publishes lists publish_per_s (achieved; the table shows the offered
#   rate beside it); lost / duplicated / reordered are shown for every scenario (compare.sh).
# FIGURES are the JSON fields shown in the comparison table.
# keepalive_ws_15k_40s: 15,000 WebSocket subscribers, one topic each, held for 40 s at 10
# publishes/s: longer than websocket.ping_interval_ms (30 s), so every connection's keepalive
# (a ping and its pong) falls inside the run and its cost shows in server_cpu_pct and lat_max_us.
# isolation_sndbuf16k_q256_base / _stalled (issues 4 and 5): the same 1000 healthy SSE
# subscribers on one topic at 100 events/s for 10 s (1000 events), without and with 100 stalled
# subscribers (lg_loadgen --stalled: SO_RCVBUF 4096, never read). livegate runs them with
# bench/livegate/isolation.json (socket_send_buffer_bytes 16384, client_queue.max_events 256),
# so the stalled clients reach its drop-oldest ring policy within the run. The figure is
# lat_p99_us(stalled) / lat_p99_us(base), target <= 1.5 (lgb_isolation_line).
# storm_sse_10k (issue 32): 10,000 SSE subscribers on one topic get 5 events; all close at once,
# 5 more are published while they are away, then all reconnect with Last-Event-ID (512
# handshakes at a time, as the other large connect phases). The figure is the time from the
# start of the reconnect to the last client's first event (storm_last_first_event_us), target
# <= 0.7x Nchan's; each client must get exactly the 5 it missed (lost / dup / reord).

lgb_scenarios_full() {
    cat <<'EOF'
idle_sse_10k|all|--transport sse --subscribers 10000 --events 0 --settle-ms 1000 --idle-ms 2000|conns_made connect_per_s bytes_per_conn server_cpu_idle_pct
idle_ws_10k|all|--transport ws --subscribers 10000 --events 0 --settle-ms 1000 --idle-ms 2000|conns_made connect_per_s bytes_per_conn server_cpu_idle_pct
fanout_sse_1k_max|all|--transport sse --subscribers 1000 --pub-conns 1 --rate max --events 1000 --duration 2|deliveries_per_s publish_per_s lat_p50_us lat_p99_us server_cpu_us_per_delivery
fanout_ws_1k_max|all|--transport ws --subscribers 1000 --pub-conns 1 --rate max --events 1000 --duration 2|deliveries_per_s publish_per_s lat_p50_us lat_p99_us server_cpu_us_per_delivery
fanout_sse_5k_max|all|--transport sse --subscribers 5000 --pub-conns 1 --rate max --events 200 --duration 2|deliveries_per_s publish_per_s lat_p50_us lat_p99_us server_cpu_us_per_delivery
fanout_ws_5k_max|all|--transport ws --subscribers 5000 --pub-conns 1 --rate max --events 200 --duration 2|deliveries_per_s publish_per_s lat_p50_us lat_p99_us server_cpu_us_per_delivery
fanout_sse_1k_max_stalled100|all|--transport sse --subscribers 1000 --stalled 100 --pub-conns 1 --rate max --events 8000 --duration 5|deliveries_per_s publish_per_s lat_p50_us lat_p99_us server_cpu_us_per_delivery stalled_made
fanout_ws_1k_max_stalled100|all|--transport ws --subscribers 1000 --stalled 100 --pub-conns 1 --rate max --events 8000 --duration 5|deliveries_per_s publish_per_s lat_p50_us lat_p99_us server_cpu_us_per_delivery stalled_made
fanout_sse_5k_max_stalled100|all|--transport sse --subscribers 5000 --stalled 100 --pub-conns 1 --rate max --events 200 --duration 2|deliveries_per_s publish_per_s lat_p50_us lat_p99_us server_cpu_us_per_delivery stalled_made
fanout_ws_5k_max_stalled100|all|--transport ws --subscribers 5000 --stalled 100 --pub-conns 1 --rate max --events 200 --duration 2|deliveries_per_s publish_per_s lat_p50_us lat_p99_us server_cpu_us_per_delivery stalled_made
fanout_sse_1k_150hz|all|--transport sse --subscribers 1000 --pub-conns 1 --rate 150 --duration 3|publish_per_s deliveries_per_s lat_p50_us lat_p99_us lat_max_us server_cpu_pct
fanout_ws_1k_150hz|all|--transport ws --subscribers 1000 --pub-conns 1 --rate 150 --duration 3|publish_per_s deliveries_per_s lat_p50_us lat_p99_us lat_max_us server_cpu_pct
fanout_sse_1k_1000hz|all|--transport sse --subscribers 1000 --pub-conns 1 --rate 1000 --duration 3|publish_per_s deliveries_per_s lat_p50_us lat_p99_us lat_max_us server_cpu_pct
fanout_ws_1k_1000hz|all|--transport ws --subscribers 1000 --pub-conns 1 --rate 1000 --duration 3|publish_per_s deliveries_per_s lat_p50_us lat_p99_us lat_max_us server_cpu_pct
fanout_sse_5k_150hz|all|--transport sse --subscribers 5000 --pub-conns 1 --rate 150 --duration 3|publish_per_s deliveries_per_s lat_p50_us lat_p99_us lat_max_us server_cpu_pct
fanout_ws_5k_150hz|all|--transport ws --subscribers 5000 --pub-conns 1 --rate 150 --duration 3|publish_per_s deliveries_per_s lat_p50_us lat_p99_us lat_max_us server_cpu_pct
fanout_sse_1k_10hz|all|--transport sse --subscribers 1000 --pub-conns 1 --rate 10 --duration 3|publish_per_s lat_p50_us lat_p99_us lat_max_us server_cpu_pct
fanout_ws_1k_10hz|all|--transport ws --subscribers 1000 --pub-conns 1 --rate 10 --duration 3|publish_per_s lat_p50_us lat_p99_us lat_max_us server_cpu_pct
fanout_sse_5k_10hz|all|--transport sse --subscribers 5000 --pub-conns 1 --rate 10 --duration 3|publish_per_s lat_p50_us lat_p99_us lat_max_us server_cpu_pct
fanout_ws_5k_10hz|all|--transport ws --subscribers 5000 --pub-conns 1 --rate 10 --duration 3|publish_per_s lat_p50_us lat_p99_us lat_max_us server_cpu_pct
topics_sse_5k_1k|all|--transport sse --subscribers 5000 --topics 1000 --pub-conns 1 --rate max --events 20 --duration 3|publish_per_s deliveries_per_s lat_p99_us server_cpu_us_per_delivery
topics_sse_5k_1k_8conn|all|--transport sse --subscribers 5000 --topics 1000 --pub-conns 8 --rate max --events 20 --duration 3|publish_per_s deliveries_per_s lat_p99_us server_cpu_us_per_delivery
users_sse_15k|all|--transport sse --subscribers 15000 --topics 15000 --pub-conns 1 --rate 2000 --duration 5 --connect-concurrency 512|publish_per_s server_cpu_pct lat_p50_us lat_p99_us lat_max_us
users_ws_15k|all|--transport ws --subscribers 15000 --topics 15000 --pub-conns 1 --rate 2000 --duration 5 --connect-concurrency 512|publish_per_s server_cpu_pct lat_p50_us lat_p99_us lat_max_us
keepalive_ws_15k_40s|all|--transport ws --subscribers 15000 --topics 15000 --pub-conns 1 --rate 10 --duration 40 --connect-concurrency 512|publish_per_s server_cpu_pct lat_p99_us lat_max_us ws_pings connect_per_s
idle19k_active100_1khz|all|--transport sse --idle 19000 --subscribers 100 --topics 1 --pub-conns 1 --rate 1000 --duration 5 --settle-ms 1000 --connect-concurrency 512|publish_per_s lat_p50_us lat_p99_us lat_max_us server_cpu_pct idle_made
poll_1k_50hz|all|--transport poll --subscribers 1000 --pub-conns 1 --rate 50 --duration 3|publish_per_s deliveries_per_s lat_p50_us lat_p99_us lat_max_us server_cpu_us_per_delivery poll_reconnects
poll_1k_max|all|--transport poll --subscribers 1000 --pub-conns 1 --rate max --events 1000 --duration 2|deliveries_per_s publish_per_s lat_p50_us lat_p99_us server_cpu_us_per_delivery poll_reconnects
ingest_1conn|all|--subscribers 0 --topics 1 --pub-conns 1 --rate max --duration 2|publish_per_s pub_lat_p50_us pub_lat_p99_us server_cpu_us_per_publish
ingest_8conn|all|--subscribers 0 --topics 8 --pub-conns 8 --rate max --duration 2|publish_per_s pub_lat_p50_us pub_lat_p99_us server_cpu_us_per_publish
ingest_batch100_8conn|livegate|--subscribers 0 --topics 8 --pub-conns 8 --batch 100 --rate max --duration 2|publish_per_s publish_req_per_s pub_lat_p99_us server_cpu_us_per_publish
topics_sse_5k_1k_8conn_batch100|livegate|--transport sse --subscribers 5000 --topics 1000 --pub-conns 8 --batch 100 --rate max --events 200 --duration 3|publish_per_s deliveries_per_s lat_p99_us server_cpu_us_per_delivery
maxconn_sse|all|--transport sse --subscribers @MAXCONN@ --pub-conns 1 --events 1 --settle-ms 1000 --connect-concurrency 512|conns_made bytes_per_conn lat_max_us publish_per_s
isolation_sndbuf16k_q256_base|all|--transport sse --subscribers 1000 --topics 1 --pub-conns 1 --rate 100 --duration 10 --events 1000 @LGCFG=isolation.json@|publish_per_s lat_p50_us lat_p99_us lat_max_us
isolation_sndbuf16k_q256_stalled|all|--transport sse --subscribers 1000 --stalled 100 --topics 1 --pub-conns 1 --rate 100 --duration 10 --events 1000 @LGCFG=isolation.json@|publish_per_s lat_p50_us lat_p99_us lat_max_us stalled_made
storm_sse_10k|all|--transport sse --subscribers 10000 --topics 1 --pub-conns 1 --rate max --events 5 --reconnect-storm 5 --settle-ms 1000 --connect-concurrency 512|storm_last_first_event_us storm_first_event_p50_us storm_first_event_p99_us storm_reconnect_failed storm_server_cpu_s
fanout_sse_1k_max_scrape100ms|livegate|--transport sse --subscribers 1000 --pub-conns 1 --rate max --events 1000 --duration 2 @SCRAPE=100@|deliveries_per_s publish_per_s lat_p99_us server_cpu_us_per_delivery scrapes
fanout_ws_1k_max_1kb|all|--transport ws --subscribers 1000 --pub-conns 1 --rate max --events 1000 --duration 2 --payload-bytes 1000|deliveries_per_s publish_per_s lat_p50_us lat_p99_us server_cpu_us_per_delivery bytes_rx_per_delivery
fanout_ws_1k_max_1kb_deflate|all|--transport ws --subscribers 1000 --pub-conns 1 --rate max --events 1000 --duration 2 --payload-bytes 1000 --ws-deflate @LGCFG=deflate.json@ @NCHAN_DEFLATE@|deliveries_per_s publish_per_s lat_p50_us lat_p99_us server_cpu_us_per_delivery bytes_rx_per_delivery ws_compressed_messages
fanout_ws_1k_500hz_1kb|livegate|--transport ws --subscribers 1000 --pub-conns 1 --rate 500 --duration 3 --payload-bytes 1000|publish_per_s deliveries_per_s lat_p99_us server_cpu_us_per_delivery bytes_rx_per_delivery
fanout_ws_1k_500hz_1kb_deflate|livegate|--transport ws --subscribers 1000 --pub-conns 1 --rate 500 --duration 3 --payload-bytes 1000 --ws-deflate @LGCFG=deflate.json@|publish_per_s deliveries_per_s lat_p99_us server_cpu_us_per_delivery bytes_rx_per_delivery ws_compressed_messages
idle_ws_10k_deflate|all|--transport ws --subscribers 10000 --events 0 --settle-ms 1000 --idle-ms 2000 --ws-deflate @LGCFG=deflate.json@ @NCHAN_DEFLATE@|conns_made connect_per_s bytes_per_conn server_cpu_idle_pct ws_deflate_negotiated
EOF
}

lgb_scenarios_smoke() {
    cat <<'EOF'
idle_sse_200|all|--transport sse --subscribers 200 --events 0 --settle-ms 100 --idle-ms 100|conns_made bytes_per_conn
fanout_sse_100|all|--transport sse --subscribers 100 --pub-conns 1 --rate max --events 50 --settle-ms 100|deliveries_per_s publish_per_s lat_p99_us
fanout_ws_100|all|--transport ws --subscribers 100 --pub-conns 1 --rate max --events 50 --settle-ms 100|deliveries_per_s publish_per_s lat_p99_us
fanout_ws_100_20hz|all|--transport ws --subscribers 100 --pub-conns 1 --rate 20 --duration 1 --settle-ms 100|publish_per_s lat_p99_us
topics_sse_200_20|all|--transport sse --subscribers 200 --topics 20 --pub-conns 1 --rate max --events 20 --settle-ms 100|publish_per_s deliveries_per_s
idle100_active20_50hz|all|--transport sse --idle 100 --subscribers 20 --topics 1 --pub-conns 1 --rate 50 --duration 1 --settle-ms 100|publish_per_s lat_p99_us idle_made
poll_50|all|--transport poll --subscribers 50 --pub-conns 1 --rate 20 --duration 1 --settle-ms 100|publish_per_s deliveries_per_s lat_p99_us
ingest_8conn|all|--subscribers 0 --topics 8 --pub-conns 8 --rate max --duration 0.5 --settle-ms 0|publish_per_s
ingest_batch10_2conn|livegate|--subscribers 0 --topics 2 --pub-conns 2 --batch 10 --rate max --duration 0.5 --settle-ms 0|publish_per_s
isolation_sndbuf16k_q256_base|all|--transport sse --subscribers 100 --topics 1 --pub-conns 1 --rate 50 --duration 1 --settle-ms 100 @LGCFG=isolation.json@|publish_per_s lat_p99_us
isolation_sndbuf16k_q256_stalled|all|--transport sse --subscribers 100 --stalled 10 --topics 1 --pub-conns 1 --rate 50 --duration 1 --settle-ms 100 @LGCFG=isolation.json@|publish_per_s lat_p99_us stalled_made
storm_sse_200|all|--transport sse --subscribers 200 --topics 1 --pub-conns 1 --rate max --events 5 --reconnect-storm 5 --settle-ms 100|storm_last_first_event_us storm_first_event_p99_us storm_reconnect_failed
fanout_ws_100_1kb|all|--transport ws --subscribers 100 --pub-conns 1 --rate max --events 50 --settle-ms 100 --payload-bytes 1000|deliveries_per_s server_cpu_us_per_delivery bytes_rx_per_delivery
fanout_ws_100_1kb_deflate|all|--transport ws --subscribers 100 --pub-conns 1 --rate max --events 50 --settle-ms 100 --payload-bytes 1000 --ws-deflate @LGCFG=deflate.json@ @NCHAN_DEFLATE@|deliveries_per_s server_cpu_us_per_delivery bytes_rx_per_delivery ws_compressed_messages
idle_ws_200_deflate|all|--transport ws --subscribers 200 --events 0 --settle-ms 100 --idle-ms 100 --ws-deflate @LGCFG=deflate.json@ @NCHAN_DEFLATE@|conns_made bytes_per_conn ws_deflate_negotiated
EOF
}

# the subscriber count of maxconn_sse: livegate's default limits.max_connections (19400), capped
# so that both servers fit the fd hard limit (at most 20000: nginx's worker_rlimit_nofile); the
# generator needs N+6 fds, the server N+~15
LGB_MAXCONN_DEFAULT=${LGB_MAXCONN_DEFAULT:-19400}
lgb_maxconn() {
    local h n=$LGB_MAXCONN_DEFAULT
    h=$(ulimit -Hn)
    [ "$h" = unlimited ] && h=20000
    [ "$h" -gt 20000 ] && h=20000
    [ $((h - 20)) -lt "$n" ] && n=$((h - 20))
    echo "$n"
}

# lgb_run_one TARGET NAME ARGS LOADGEN WORKDIR [BIN] : starts a fresh server, runs the scenario,
# stops the server; prints the JSON line (with "scenario" added), or a JSON error object.
# TARGET livegate (BIN: its binary), nchan, or floor (BIN: lg_floor, driven as Nchan is).
lgb_run_one() {
    local target=$1 name=$2 args=$3 lg=$4 dir=$5 lgbin=${6:-} scfg="" scrape_ms="" dialect=$1
    [ "$target" = floor ] && dialect=nchan
    args=${args//@MAXCONN@/$(lgb_maxconn)}
    if [[ $args =~ @SCRAPE=([0-9]+)@ ]]; then # GET /metrics every N ms during the run
        scrape_ms=${BASH_REMATCH[1]}
        args=${args//"${BASH_REMATCH[0]}"/}
    fi
    if [[ $args =~ @LGCFG=([^@ ]+)@ ]]; then
        scfg=$LGB_BENCH/livegate/${BASH_REMATCH[1]}
        args=${args//"${BASH_REMATCH[0]}"/}
    fi
    local nchan_deflate=0 # @NCHAN_DEFLATE@: Nchan compresses for WebSocket (gen-conf.sh)
    if [[ $args == *@NCHAN_DEFLATE@* ]]; then
        nchan_deflate=1
        args=${args//@NCHAN_DEFLATE@/}
    fi
    rm -rf "$dir"; mkdir -p "$dir"
    local started=1
    if [ "$target" = livegate ]; then
        lgb_start_livegate "$dir" "$lgbin" "$scfg" || started=0
    elif [ "$target" = floor ]; then
        lgb_start_floor "$dir" "$lgbin" || started=0
    else
        NCHAN_DEFLATE=$nchan_deflate lgb_start_nchan "$dir" || started=0
    fi
    if [ $started = 0 ]; then
        printf '{"scenario":"%s","target":"%s","error":"server did not start"}\n' "$name" "$target"
        return 1
    fi
    sleep 0.1
    local out rc scraper=""
    if [ -n "$scrape_ms" ]; then
        lgb_scraper "$LGB_PUB_PORT" "$scrape_ms" "$dir/scrape.stop" "$dir/scrape.count" &
        scraper=$!
        # On the generator's core: the scraper's own work must not be charged to the server's.
        if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -gt "$LGB_GEN_CPU" ]; then
            taskset -p -c "$LGB_GEN_CPU" "$scraper" >/dev/null
        fi
    fi
    # shellcheck disable=SC2086
    out=$(ulimit -n "$(ulimit -Hn)"; lgb_pin "$LGB_GEN_CPU" "$lg" --target "$dialect" --host "$LGB_HOST" \
        --sub-port "$LGB_SUB_PORT" --pub-port "$LGB_PUB_PORT" --server-pid "$LGB_MEASURE_PIDS" \
        --label "$name" --max-runtime "${LGB_MAX_RUNTIME:-90}" --quiet $args 2>"$dir/loadgen.err")
    rc=$?
    if [ -n "$scraper" ]; then
        : >"$dir/scrape.stop"
        wait "$scraper" 2>/dev/null
        [ -n "$out" ] && out="${out%\}},\"scrapes\":$(cat "$dir/scrape.count" 2>/dev/null || echo 0)}"
    fi
    local stats=""
    if ! kill -0 "$LGB_SRV_PID" 2>/dev/null; then
        lgb_log "$target died during $name"
    elif [ "$target" = livegate ] && [ -n "$out" ]; then
        stats=$(lgb_lg_stats "$LGB_PUB_PORT") # the server's own counters (drops, gaps, queue depth)
    fi
    lgb_stop
    if [ -z "$out" ]; then
        printf '{"scenario":"%s","target":"%s","error":"loadgen rc=%s: %s"}\n' "$name" "$target" "$rc" \
            "$(tail -n 2 "$dir/loadgen.err" | tr '\n"\\' '   ')"
        return 1
    fi
    # server_stats goes last, so the flat readers find the generator's fields first
    [ -n "$stats" ] && out="${out%\}},\"server_stats\":$stats}"
    [ "$target" = floor ] && out=${out/\"target\":\"nchan\"/\"target\":\"floor\"}
    printf '{"scenario":"%s",%s\n' "$name" "${out#\{}"
}

# ---------------------------------------------------------------- JSON (flat fields, awk)

# lgb_field JSONLINE FIELD -> value (numbers/true/false/null; strings without quotes)
lgb_field() {
    printf '%s\n' "$1" | awk -v k="\"$2\":" '{
        i = index($0, k); if (!i) { print ""; exit }
        s = substr($0, i + length(k));
        if (substr(s, 1, 1) == "\"") { s = substr(s, 2); j = index(s, "\""); print substr(s, 1, j - 1); exit }
        n = match(s, /[,}]/); print substr(s, 1, n - 1) }'
}

# awk functions shared by the scripts that tabulate result lines: getf(line, key) reads a flat
# JSON field; median(key) is the median of val[key, 1..cnt[key]] (numbers: store them as v + 0).
# Use as awk "$LGB_AWK_RESULTS"'<program>'.
LGB_AWK_RESULTS='
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
'

# Human summary of one result line (one awk process).
lgb_summary_line() {
    printf '%s\n' "$1" | awk '
    function getf(k,   i, s, n) {
        i = index($0, "\"" k "\":"); if (!i) return ""
        s = substr($0, i + length(k) + 3)
        if (substr(s, 1, 1) == "\"") { s = substr(s, 2); return substr(s, 1, index(s, "\"") - 1) }
        n = match(s, /[,}]/); return substr(s, 1, n - 1)
    }
    {
        nf = split("scenario target conns_made conns_failed published deliveries lost duplicated reordered " \
                   "offered_rate publish_per_s deliveries_per_s lat_p50_us lat_p99_us lat_max_us bytes_per_conn " \
                   "server_cpu_pct loadgen_cpu_pct other_cpu_pct loadgen_bound stalled_made idle_made idle_failed " \
                   "storm_clients storm_last_first_event_us storm_reconnect_failed events_dropped_overflow " \
                   "ws_inflate_path ws_inflate_cache_hits ws_inflated_messages error", f, " ")
        out = ""
        for (i = 1; i <= nf; i++) {
            v = getf(f[i])
            if (v == "" || v == "null") continue
            if ((f[i] == "stalled_made" || f[i] == "idle_made" || f[i] == "idle_failed" || f[i] ~ /^storm_(clients|reconnect_failed)$/ || f[i] == "events_dropped_overflow") && v == 0) continue
            if (f[i] ~ /^ws_inflate/ && getf("ws_inflate_path") == "none") continue # no compressed message
            out = out f[i] "=" v " "
        }
        print out
    }'
}

# lgb_scraper PORT MS STOPFILE COUNTFILE: GET /metrics every MS ms until STOPFILE exists (at
# most LGB_MAX_RUNTIME s), counting the complete answers (200) into COUNTFILE. Each scrape reads
# the whole exposition (the cost being measured) with curl: bash's own /dev/tcp reads a socket a
# byte at a time, about a quarter of a core at 10 scrapes/s, while a curl per scrape costs a few
# ms. The caller pins it to the generator's core.
lgb_scraper() {
    local port=$1 ms=$2 stop=$3 count=$4 n=0 end=$((SECONDS + ${LGB_MAX_RUNTIME:-90}))
    local pause line
    pause=$(awk -v m="$ms" 'BEGIN { printf "%.3f", m / 1000 }')
    exec 4<> <(:) # never written: read -t on it is a sleep without a fork
    while [ ! -e "$stop" ] && [ $SECONDS -lt $end ]; do
        [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
            "http://$LGB_HOST:$port/metrics")" = 200 ] && n=$((n + 1))
        echo "$n" >"$count"
        read -r -t "$pause" -u 4 line
    done
    exec 4<&-
}

# lgb_side_options TOOL HELP_END "$@": the options of the tools that run livegate against Nchan
# (compare.sh, scaleout.sh). Sets the caller's mode (--quick: quick, --smoke: smoke; both set
# reps to 1), reps, only (--scenarios), install (--no-install: 0) and targets (--livegate-only,
# --nchan-only); -h/--help prints lines 2..HELP_END of the script; anything else exits 2.
lgb_side_options() {
    local tool=$1 help_end=$2
    shift 2
    while [ $# -gt 0 ]; do
        case $1 in
        --quick) mode=quick; reps=1 ;;
        --smoke) mode=smoke; reps=1 ;;
        --reps) reps=$2; shift ;;
        --scenarios) only=$2; shift ;;
        --no-install) install=0 ;;
        --nchan-only) targets=nchan ;;
        --livegate-only) targets=livegate ;;
        -h | --help) sed -n "2,${help_end}p" "$0"; exit 0 ;;
        *) echo "$tool: unknown option $1" >&2; exit 2 ;;
        esac
        shift
    done
}

# lgb_alternate K TARGETS: TARGETS as given for an odd K, reversed for an even one, so the side
# that runs first alternates from run to run
lgb_alternate() {
    if (($1 % 2)); then echo "$2"; else echo "$2" | awk '{ for (i = NF; i > 0; i--) printf "%s ", $i }'; fi
}

# lgb_record_run REP LINE FILE: appends a run's JSON line, with its rep, to FILE and logs its summary
lgb_record_run() {
    local line="{\"rep\":$1,${2#\{}"
    echo "$line" >>"$3"
    lgb_log "rep $1 $(lgb_summary_line "$line")"
}

# lgb_tool_options TOOL HELP_END OPTION=VAR ... -- "$@": the option loop of a bench/*.sh tool
# whose options all take a value. "--OPTION value" sets the caller's VAR; -h/--help prints
# lines 2..HELP_END of the script (its header); anything else is an error (exit 2).
lgb_tool_options() {
    local tool=$1 help_end=$2
    shift 2
    local -A var_of=()
    while [ "$1" != -- ]; do
        var_of[--${1%%=*}]=${1#*=}
        shift
    done
    shift
    while [ $# -gt 0 ]; do
        case $1 in
        -h | --help) sed -n "2,${help_end}p" "$0"; exit 0 ;;
        esac
        if [ -z "${var_of[$1]:-}" ] || [ $# -lt 2 ]; then
            echo "$tool: unknown option or missing value: $1" >&2
            exit 2
        fi
        printf -v "${var_of[$1]}" %s "$2"
        shift 2
    done
}

# lgb_tool_setup NAME: what a bench/*.sh tool needs before its runs: lg (the load generator),
# lgbin (the livegate binary) and work (a private temp dir, removed with the servers at exit).
lgb_tool_setup() {
    lg=$(lgb_loadgen) || { lgb_log "cannot build lg_loadgen"; exit 1; }
    lgbin=$(lgb_livegate_bin)
    [ -n "$lgbin" ] || { lgb_log "no livegate binary (build it, or set LIVEGATE=path)"; exit 1; }
    work=$(mktemp -d "/tmp/lg$1.XXXXXX")
    trap 'lgb_stop; rm -rf "$work"' EXIT
    trap 'exit 130' INT TERM
}

# The awk that the figure lines below share: median(sc) of val[sc, 1..cnt[sc]].
LGB_AWK_MEDIAN='
    function median(sc,   n, i, j, t, a) {
        n = cnt[sc]; if (!n) return ""
        for (i = 1; i <= n; i++) a[i] = val[sc, i]
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }'

# lgb_scrape_line JSONL: the scrape-cost figure, deliveries_per_s of fanout_sse_1k_max_scrape100ms
# over fanout_sse_1k_max (medians over reps), target >= 0.95 (a scrape every 100 ms costs
# < 5 % of the fan-out rate). Prints nothing unless both ran.
lgb_scrape_line() {
    awk "$LGB_AWK_MEDIAN"'
    function getf(line, k,   i, s, n) {
        i = index(line, "\"" k "\":"); if (!i) return ""
        s = substr(line, i + length(k) + 3)
        n = match(s, /[,}]/); return substr(s, 1, n - 1)
    }
    {
        sc = getf($0, "scenario"); gsub(/"/, "", sc)
        if (sc != "fanout_sse_1k_max" && sc != "fanout_sse_1k_max_scrape100ms") next
        if (getf($0, "error") != "") next
        v = getf($0, "deliveries_per_s"); if (v == "" || v == "null") next
        val[sc, ++cnt[sc]] = v + 0
        if (sc ~ /scrape/) scrapes += getf($0, "scrapes") + 0
    }
    END {
        b = median("fanout_sse_1k_max"); s = median("fanout_sse_1k_max_scrape100ms")
        if (b == "" || s == "" || b == 0) exit
        printf "scrape cost: fan-out %d deliveries/s alone, %d with GET /metrics every 100 ms (%d scrapes), ratio %.3f (target >= 0.95; %d+%d reps)\n", \
            b, s, scrapes, s / b, cnt["fanout_sse_1k_max"], cnt["fanout_sse_1k_max_scrape100ms"]
    }' "$1"
}

# lgb_isolation_line JSONL TARGET: the isolation figure from each pair of scenarios
# isolation*_base / isolation*_stalled (today isolation_sndbuf16k_q256_base and _stalled) run
# on TARGET in JSONL (medians over reps; failed runs skipped), one line per pair:
# "PAIR TARGET: p99 base X us, p99 with N stalled Y us, ratio R (target <= 1.5 ...)".
# Prints nothing for a pair that lacks either result.
lgb_isolation_line() {
    awk -v tg="$2" "$LGB_AWK_MEDIAN"'
    function getf(line, k,   i, s, n) {
        i = index(line, "\"" k "\":"); if (!i) return ""
        s = substr(line, i + length(k) + 3)
        if (substr(s, 1, 1) == "\"") { s = substr(s, 2); return substr(s, 1, index(s, "\"") - 1) }
        n = match(s, /[,}]/); return substr(s, 1, n - 1)
    }
    {
        sc = getf($0, "scenario")
        if (sc !~ /^isolation/ || sc !~ /_(base|stalled)$/) next
        if (getf($0, "target") != tg || getf($0, "error") != "") next
        v = getf($0, "lat_p99_us"); if (v == "" || v == "null") next
        pair = sc; sub(/_(base|stalled)$/, "", pair)
        if (!(pair in seen)) { seen[pair] = 1; pairs[++np] = pair }
        val[sc, ++cnt[sc]] = v + 0
        lost[pair] += getf($0, "lost") + 0
        if (sc ~ /_stalled$/) { st[pair] = getf($0, "stalled_made"); dr[pair] = getf($0, "events_dropped_overflow") }
    }
    END {
        for (k = 1; k <= np; k++) {
            p = pairs[k]
            b = median(p "_base"); s = median(p "_stalled")
            if (b == "" || s == "") continue
            r = b > 0 ? sprintf("%.2f", s / b) : "n/a"
            printf "%s %s: p99 base %d us, p99 with %s stalled %d us, ratio %s (target <= 1.5; %d+%d reps", \
                p, tg, b, st[p] == "" ? "?" : st[p], s, r, cnt[p "_base"], cnt[p "_stalled"]
            if (lost[p]) printf "; LOST %d", lost[p]
            if (dr[p] != "") printf "; last stalled run: server dropped %s events for slow clients", dr[p]
            printf ")\n"
        }
    }' "$1"
}

# lgb_connect_figure JSONL SCENARIO rate|cpu: over SCENARIO's runs in JSONL without failed
# connections, the median connect_per_s (rate), or the server's CPU time per connection in us
# (cpu: server_cpu_connect_pct x connect_s / connections, which other load on the machine
# disturbs less than the rate). Prints nothing when no run qualifies.
lgb_connect_figure() {
    local l
    grep "\"scenario\":\"$2\"" "$1" |
        while read -r l; do
            [ "$(lgb_field "$l" conns_failed)" = 0 ] || continue
            if [ "$3" = rate ]; then
                lgb_field "$l" connect_per_s
            else
                awk -v p="$(lgb_field "$l" server_cpu_connect_pct)" -v s="$(lgb_field "$l" connect_s)" \
                    -v n="$(lgb_field "$l" conns_made)" 'BEGIN { printf "%.2f\n", p / 100 * s / n * 1e6 }'
            fi
        done | sort -n | awk '{v[NR] = $1} END {if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'
}

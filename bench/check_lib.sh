# bench/check_lib.sh - what the delivery checks run by ctest (mixed_check.sh, deflate_check.sh)
# share: a gateway started on ports of its choosing, its cleanup, and a flat-JSON field reader.
# Sourced; the caller sets `say` (its log line) and `set -uo pipefail` first.
#
#   check_start_livegate BIN CONFIG_JSON WORKERS
#       writes CONFIG_JSON to a fresh work dir ($check_work), starts BIN on 127.0.0.1 port 0
#       (public and control) and waits up to 20 s for its "listening public=H:P control=H:P"
#       line: then $check_srv is its pid and $check_pub / $check_ctl its addresses. On failure
#       it prints the log's tail and returns 1. The EXIT trap kills the server and removes the
#       work dir.
#   check_stop_livegate
#       SIGTERM to the server, then up to 15 s for it to exit: sets $check_alive (1: it was
#       still running when stopped) and $check_status (its exit status, or "timeout").
#   check_field JSON KEY
#       the first "KEY": value in JSON (strings without their quotes; totals come before any
#       nested object in the generator's report).

check_work=$(mktemp -d /tmp/lgcheck.XXXXXX)
check_srv="" check_pub="" check_ctl=""
check_cleanup() {
    if [ -n "$check_srv" ] && kill -0 "$check_srv" 2>/dev/null; then
        kill -KILL "$check_srv" 2>/dev/null
        wait "$check_srv" 2>/dev/null
    fi
    rm -rf "$check_work"
}
trap check_cleanup EXIT
trap 'exit 130' INT TERM

check_start_livegate() {
    local bin=$1 cfg=$2 workers=$3 line i
    # a thousand subscribers need more than the usual soft limit of 1024 descriptors
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    printf '%s\n' "$cfg" >"$check_work/livegate.json"
    "$bin" --config "$check_work/livegate.json" --public 127.0.0.1:0 --control 127.0.0.1:0 \
        --workers "$workers" >"$check_work/livegate.out" 2>"$check_work/livegate.log" &
    check_srv=$!
    for ((i = 0; i < 400; i++)); do # 20 s
        line=$(grep -m1 -o 'listening public=[^ ]* control=[^ ]*' "$check_work/livegate.log" 2>/dev/null)
        if [ -n "$line" ]; then
            check_pub=${line#*public=}; check_pub=${check_pub%% *}
            check_ctl=${line##*control=}
            return 0
        fi
        kill -0 "$check_srv" 2>/dev/null || break
        sleep 0.05
    done
    say "livegate did not report its ports; its log:"
    tail -n 20 "$check_work/livegate.log" >&2
    return 1
}

check_field() {
    printf '%s\n' "$1" | awk -v k="\"$2\":" '{
        i = index($0, k); if (!i) { print ""; exit }
        s = substr($0, i + length(k)); n = match(s, /[,}]/); s = substr(s, 1, n - 1)
        gsub(/"/, "", s); print s }'
}

check_stop_livegate() {
    local i
    check_alive=1 check_status=""
    kill -0 "$check_srv" 2>/dev/null || check_alive=0
    kill -TERM "$check_srv" 2>/dev/null
    for ((i = 0; i < 300; i++)); do # 15 s
        if ! kill -0 "$check_srv" 2>/dev/null; then
            wait "$check_srv"
            check_status=$?
            break
        fi
        sleep 0.05
    done
    if [ -z "$check_status" ]; then
        say "livegate did not exit within 15 s of SIGTERM"
        check_status=timeout
    fi
    check_srv=""
}

#!/usr/bin/env bash
# bench/auth_connect.sh - what verifying a token costs a connect (issue 12): SSE connect rate
# of livegate without auth, with HS256 and with RS256 tokens, as ratios to the run without.
#
#   bench/auth_connect.sh [--subscribers N (2000)] [--reps R (3)] [--transport sse|ws (sse)]
#
# Every run starts a fresh livegate (bench/lib.sh: pinned, --workers 1) and lg_loadgen connects
# N subscribers (--connect-concurrency 256, no events). Each one carries the same
# access_token=<token> (minted by scripts/mint_token.sh, valid for the run; the gateway without
# auth ignores it), so the three variants send the same bytes and differ only in the
# verification. Variants alternate within a rep; the figure is the median connect_per_s over
# the reps. Prints one JSON line per run, then:
#   auth_connect sse N: connect_per_s none X, hs256 Y (ratio Y/X), rs256 Z (ratio Z/X)
#   auth_connect sse N: server cpu us per connect none X, hs256 Y (ratio Y/X), rs256 Z (ratio Z/X)
# A rate ratio >= 0.5 (a CPU ratio <= 2) means verifying costs no more than the connect itself.
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

subs=2000 reps=3 transport=sse
lgb_tool_options auth_connect.sh 14 subscribers=subs reps=reps transport=transport -- "$@"

lgb_tool_setup authbench

secret=bench-secret-0123456789abcdef
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/rsa.key" 2>/dev/null
openssl pkey -in "$work/rsa.key" -pubout -out "$work/rsa.pub"
echo '{}' >"$work/none.json"
printf '{"auth":{"hs256_secret":"%s"}}\n' "$secret" >"$work/hs256.json"
printf '{"auth":{"rs256_public_key_file":"%s"}}\n' "$work/rsa.pub" >"$work/rs256.json"
mint="$LGB_ROOT/scripts/mint_token.sh"
hs_token=$("$mint" -s "$secret" -S '*' -t 3600)
rs_token=$("$mint" -k "$work/rsa.key" -S '*' -t 3600)

: >"$work/all.jsonl"
for ((rep = 1; rep <= reps; rep++)); do
    for variant in none hs256 rs256; do
        token=$hs_token
        [ $variant = rs256 ] && token=$rs_token
        name=connect_${transport}_${subs}_auth_${variant}
        args="--transport $transport --subscribers $subs --events 0 --settle-ms 100 --connect-concurrency 256 --sub-query access_token=$token"
        line=$(LGB_LG_CONFIG=$work/$variant.json lgb_run_one livegate "$name" "$args" "$lg" "$work/run" "$lgbin")
        printf '%s\n' "$line" | tee -a "$work/all.jsonl"
        lgb_log "$(lgb_summary_line "$line") connect_per_s=$(lgb_field "$line" connect_per_s)"
    done
done

figure() { lgb_connect_figure "$work/all.jsonl" "connect_${transport}_${subs}_auth_$1" "$2"; }
awk -v t="$transport" -v n="$subs" \
    -v a="$(figure none rate)" -v b="$(figure hs256 rate)" -v c="$(figure rs256 rate)" \
    -v x="$(figure none cpu)" -v y="$(figure hs256 cpu)" -v z="$(figure rs256 cpu)" 'BEGIN {
    if (a == "" || a == 0 || b == "" || c == "") {
        print "auth_connect: a variant had no run without failures"; exit 1 }
    printf "auth_connect %s %d: connect_per_s none %.0f, hs256 %.0f (ratio %.3f), rs256 %.0f (ratio %.3f)\n",
        t, n, a, b, b / a, c, c / a
    if (x == "" || x == 0 || y == "" || z == "") {
        print "auth_connect: server cpu per connect not measured (a run too short to sample)"; exit 0 }
    printf "auth_connect %s %d: server cpu us per connect none %.1f, hs256 %.1f (ratio %.3f), rs256 %.1f (ratio %.3f)\n",
        t, n, x, y, y / x, z, z / x }'

#!/usr/bin/env bash
# bench/run.sh - run the standard benchmark scenarios against livegate (or Nchan).
#
#   bench/run.sh                      full scenarios against build/livegate, one pass
#   bench/run.sh --smoke              CI smoke: small numbers, < 20 s, no thresholds
#   bench/run.sh --target nchan       the same scenarios against nginx + Nchan
#   bench/run.sh --scenarios a,b      only these (see --list)
#   bench/run.sh --reps 3 --out f.jsonl
#
# Each scenario starts a fresh server pinned to CPU $LGB_SRV_CPU (0) and runs lg_loadgen pinned
# to CPU $LGB_GEN_CPU (1). One JSON object per run goes to stdout (and --out), a one-line
# summary per run to stderr (and, after isolation_sndbuf16k_q256_base + _stalled, the ratio of
# their healthy-subscriber p99). Exit status: 0 when every run produced a result, 1 otherwise.
# livegate runs with its default configuration, except scenarios about a setting (named so).
# Environment: LIVEGATE (binary), LG_LOADGEN (binary), LGB_BUILD (build dir, default build/),
# LGB_LG_CONFIG (livegate --config file for every scenario; empty = defaults), LGB_* ports and
# CPUs (see bench/lib.sh).
set -uo pipefail
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

mode=full target=livegate only="" reps=1 out=""
while [ $# -gt 0 ]; do
    case $1 in
    --smoke | --quick) mode=smoke ;;
    --target) target=$2; shift ;;
    --scenarios) only=$2; shift ;;
    --reps) reps=$2; shift ;;
    --out) out=$2; shift ;;
    --list) lgb_scenarios_full; echo; lgb_scenarios_smoke; exit 0 ;;
    -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
case $target in livegate | nchan) ;; *) echo "run.sh: --target livegate|nchan" >&2; exit 2 ;; esac

lg=$(lgb_loadgen) || { lgb_log "cannot build lg_loadgen"; exit 1; }
lgbin=""
if [ "$target" = livegate ]; then
    lgbin=$(lgb_livegate_bin)
    [ -n "$lgbin" ] || { lgb_log "no livegate binary (build it, or set LIVEGATE=path)"; exit 1; }
else
    if ! command -v nginx >/dev/null || [ ! -f "${NCHAN_MODULE:-/usr/lib/nginx/modules/ngx_nchan_module.so}" ]; then
        lgb_log "nginx + libnginx-mod-nchan are not installed (bench/compare.sh installs them)"
        exit 1
    fi
fi

work=$(mktemp -d /tmp/lgbench.XXXXXX)
cleanup() { lgb_stop; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
[ -n "$out" ] && : >"$out"
: >"$work/all.jsonl"

if [ $mode = smoke ]; then scen=$(lgb_scenarios_smoke); else scen=$(lgb_scenarios_full); fi
start=$SECONDS fail=0
for ((rep = 1; rep <= reps; rep++)); do
    while IFS='|' read -r name targets args _figs; do
        [ -n "$name" ] || continue
        if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then continue; fi
        [ "$targets" = all ] || [ "$targets" = "$target" ] || continue
        line=$(lgb_run_one "$target" "$name" "$args" "$lg" "$work/run" "$lgbin") || fail=1
        line="{\"rep\":$rep,${line#\{}"
        echo "$line"
        echo "$line" >>"$work/all.jsonl"
        [ -n "$out" ] && echo "$line" >>"$out"
        lgb_log "$(lgb_summary_line "$line")"
    done <<<"$scen"
done
iso=$(lgb_isolation_line "$work/all.jsonl" "$target")
[ -n "$iso" ] && lgb_log "$iso"
scrape=$(lgb_scrape_line "$work/all.jsonl")
[ -n "$scrape" ] && lgb_log "$scrape"
lgb_log "done in $((SECONDS - start)) s"
exit $fail

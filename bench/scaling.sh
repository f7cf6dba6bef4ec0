#!/usr/bin/env bash
# bench/scaling.sh - capacity with the Redis store (docs/scaling.md, "Capacity"): the same
# fan-out and ingest loads against
#   memory_1node  one node, the in-memory store (the baseline: ratio 1.00)
#   redis_1node   one node, the Redis store (redis-server on loopback)
#   redis_2nodes  two nodes over one Redis: subscribers on node B, publisher on node A
# and prints publish_per_s and deliveries_per_s of each as a ratio to memory_1node.
#   bench/scaling.sh [--quick]     (--quick: smaller loads, a few seconds each)
# Environment: LIVEGATE, LG_LOADGEN (binaries; default build/livegate, build/bench/lg_loadgen),
# LGB_SC_PORT (first of the loopback ports used, default 18500). Every load is bounded in
# count and time; everything listens on 127.0.0.1 only and is stopped at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
livegate=${LIVEGATE:-$root/build/livegate}
loadgen=${LG_LOADGEN:-$root/build/bench/lg_loadgen}
base=${LGB_SC_PORT:-18500}
subs=1000 events=1000 ingest_s=2
if [[ ${1:-} == --quick ]]; then subs=200 events=200 ingest_s=1; fi
for b in "$livegate" "$loadgen"; do
  [[ -x $b ]] || { echo "scaling.sh: $b missing (cmake --build build)" >&2; exit 1; }
done
command -v redis-server >/dev/null || { echo "scaling.sh: redis-server missing" >&2; exit 1; }

dir=$(mktemp -d /tmp/lg-scaling-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

wait_port() { # wait_port PORT: until something listens (<= 5 s)
  for _ in $(seq 1 250); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.02
  done
  echo "scaling.sh: nothing listens on $1" >&2; return 1
}

redis_port=$((base + 9))
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
  >"$dir/redis.log" 2>&1 &
pids+=($!)
wait_port "$redis_port"

node() { # node NAME PUBLIC CONTROL CONFIG_JSON: start livegate, record its pid
  echo "$4" >"$dir/$1.json"
  "$livegate" --config "$dir/$1.json" --public 127.0.0.1:"$2" --control 127.0.0.1:"$3" \
    >"$dir/$1.log" 2>&1 &
  pids+=($!)
  wait_port "$3"
  for _ in $(seq 1 250); do # ready = Redis reachable too
    curl -fs "http://127.0.0.1:$3/readyz" >/dev/null && return 0
    sleep 0.02
  done
  echo "scaling.sh: node $1 never became ready" >&2; return 1
}

stop_nodes() {
  for p in "${pids[@]:1}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=("${pids[0]}")
}

field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$2" | head -1; }

run_case() { # run_case NAME SUB_PORT PUB_PORT: fan-out then ingest; prints "name pub del"
  local fan ing
  fan=$("$loadgen" --target livegate --sub-port "$2" --pub-port "$3" --transport sse \
        --subscribers "$subs" --pub-conns 1 --rate max --events "$events" --duration 2 \
        --label "$1_fanout" 2>>"$dir/loadgen.log" | tail -1)
  ing=$("$loadgen" --target livegate --pub-port "$3" --subscribers 0 --topics 1 --pub-conns 1 \
        --rate max --duration "$ingest_s" --label "$1_ingest" 2>>"$dir/loadgen.log" | tail -1)
  echo "$1 $(field publish_per_s "$ing") $(field deliveries_per_s "$fan") \
$(field lost "$fan") $(field duplicated "$fan") $(field reordered "$fan")"
}

redis_cfg() { echo "{\"redis\": {\"url\": \"redis://127.0.0.1:$redis_port\", \"key_prefix\": \"$1:\"}}"; }
results=()
node mem $((base)) $((base + 1)) '{}'
results+=("$(run_case memory_1node $((base)) $((base + 1)))")
stop_nodes
node r1 $((base + 2)) $((base + 3)) "$(redis_cfg r1)"
results+=("$(run_case redis_1node $((base + 2)) $((base + 3)))")
stop_nodes
node ra $((base + 4)) $((base + 5)) "$(redis_cfg r2)"
node rb $((base + 6)) $((base + 7)) "$(redis_cfg r2)"
results+=("$(run_case redis_2nodes $((base + 6)) $((base + 5)))") # subscribe on B, publish on A
stop_nodes

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "?" }'; }
read -r _ base_pub base_del _ <<<"${results[0]}"
printf '| setup | ingest publish/s | ratio | fan-out deliveries/s | ratio | lost/dup/reordered |\n'
printf '|---|---|---|---|---|---|\n'
for r in "${results[@]}"; do
  read -r name pub del lost dup reord <<<"$r"
  printf '| %s | %s | %s | %s | %s | %s/%s/%s |\n' "$name" "${pub:-?}" \
    "$(ratio "${pub:-0}" "${base_pub:-0}")" \
    "${del:-?}" \
    "$(ratio "${del:-0}" "${base_del:-0}")" \
    "${lost:-?}" "${dup:-?}" "${reord:-?}"
done

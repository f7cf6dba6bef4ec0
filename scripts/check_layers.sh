#!/usr/bin/env bash
# The module map of docs/architecture.md, checked: every #include "x.h" in src/<layer>/ names
# a header of that layer or of one below it, and the module graph (x.c + x.h = module x; an
# edge for each include of another module's header) has no cycle. Exits 1 naming what breaks.
#   scripts/check_layers.sh [SRC_DIR]
set -euo pipefail
src=${1:-"$(dirname "$0")/../src"}
declare -A allowed=(
  [util]="util"
  [metrics]="util metrics"
  [proto]="util metrics proto"
  [config]="util metrics proto config"
  [store]="util metrics proto store"
  [core]="util metrics proto config store core"
  [public]="util metrics proto config store core public"
  [control]="util metrics proto config store core control"
  [app]="util metrics proto config store core public control app"
)
# Modules in more than one file pair: the config loader reads the settings table
# (config_table, config_setting) and the topic_rules section through one another, so the four
# are one node of the map; so are the files of a worker (worker, worker_sweep, worker_admin) and the
# header they share, the hub's (hub, hub_admin, hub_remote, hub_internal), a connection's
# (conn, conn_report) and the Redis store's (store_redis, redis_tail, store_redis_internal).
declare -A part_of=([config_setting]=config [topic_rules]=config [config_table]=config
                  [worker_internal]=worker [worker_sweep]=worker [worker_admin]=worker
                  [hub_internal]=hub [hub_admin]=hub [hub_remote]=hub [conn_report]=conn
                  [store_redis_internal]=store_redis [redis_tail]=store_redis)
module_name() { local m=${1%.*}; echo "${part_of[$m]:-$m}"; }
declare -A layer_of
for f in "$src"/*.h "$src"/*/*.h; do
  [[ -e $f ]] || continue
  d=$(basename "$(dirname "$f")")
  [[ $f == "$src"/*.h && $(dirname "$f") == "$src" ]] && d=app
  layer_of[$(basename "$f")]=$d
done
bad=0
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
for f in "$src"/*.[ch] "$src"/*/*.[ch]; do
  d=$(basename "$(dirname "$f")")
  [[ $(dirname "$f") == "$src" ]] && d=app
  [[ -n ${allowed[$d]:-} ]] || { echo "layering: $f is in no known layer ($d)"; bad=1; continue; }
  module=$(module_name "$(basename "$f")")
  while read -r inc; do
    target=${layer_of[$inc]:-}
    [[ -n $target ]] || { echo "layering: $f includes $inc, which is not in src/"; bad=1; continue; }
    if [[ " ${allowed[$d]} " != *" $target "* ]]; then
      echo "layering: $f ($d) includes $inc ($target): an upward arrow"
      bad=1
    fi
    dep=$(module_name "$inc")
    [[ $dep != "$module" ]] && echo "$module $dep" >>"$edges"
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done
if ! tsort "$edges" >/dev/null 2>"$edges.err"; then
  echo "layering: the module graph has a cycle:"; cat "$edges.err"; bad=1
fi
rm -f "$edges.err"
[[ $bad == 0 ]] && echo "layering: ${#layer_of[@]} headers in 9 layers, no upward include, no cycle"
exit $bad

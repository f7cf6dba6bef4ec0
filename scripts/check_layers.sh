#!/usr/bin/env bash
# The module map of docs/architecture.md, checked, in includes and in calls:
#  - every #include "x.h" in src/<layer>/ names a header of that layer or of one below it, and
#    the module graph of includes (x.c + x.h = module x) has no cycle;
#  - given the object files of the build (OBJECTS: the .o of every src/ file; their paths name
#    src/<layer>/<file>.c), no function calls a function of a layer above its own (nm: a symbol
#    one object leaves undefined and another defines in its text), and the module graph of
#    calls has no cycle. A call through a function pointer (a table passed down) is no symbol
#    reference, so it is allowed; taking a function's address by name counts as a call.
# Exits 1 naming what breaks.
#   scripts/check_layers.sh [SRC_DIR [OBJECTS...]]
#   scripts/check_layers.sh --map SRC_DIR OBJECTS...   print the call map (docs/architecture.md)
set -euo pipefail
map=0
if [[ ${1:-} == --map ]]; then map=1; shift; fi
src=${1:-"$(dirname "$0")/../src"}
shift || true
objects=("$@")
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
layers_in_order="app public control core store config proto metrics util"
# Modules in more than one file pair: the config loader reads the settings table
# (config_table, config_setting) and the topic_rules section through one another, so the four
# are one node of the map; so are the files of a worker (worker, worker_sweep, worker_admin,
# worker_timers) and the header they share, the hub's (hub, hub_admin, hub_presence, hub_remote,
# hub_internal, client_publish), the control port's (control, control_admin, control_auth, control_publish,
# control_status, metrics, sharing control_internal), a connection base's (conn,
# conn_report), the plain HTTP transport's (transport_http, static_files), the token
# verifier's (auth, auth_jwks, sharing auth_internal) and the Redis store's (store_redis,
# redis_feed, redis_presence, store_redis_internal).
declare -A part_of=([config_setting]=config [topic_rules]=config [config_table]=config
                  [worker_internal]=worker [worker_sweep]=worker [worker_admin]=worker
                  [worker_timers]=worker
                  [hub_internal]=hub [hub_admin]=hub [hub_presence]=hub [hub_remote]=hub
                  [client_publish]=hub [conn_report]=conn
                  [control_internal]=control [control_admin]=control [control_auth]=control
                  [control_publish]=control [control_status]=control [metrics]=control
                  [static_files]=transport_http [auth_jwks]=auth [auth_internal]=auth
                  [store_redis_internal]=store_redis [redis_feed]=store_redis
                  [hooks_internal]=hooks [webhooks]=hooks [conn_hook]=conn
                  [redis_presence]=store_redis)
# The module of file $1, in REPLY (no subshell: this runs for every include and object).
module_of() { local m=${1%.*}; REPLY=${part_of[$m]:-$m}; }
declare -A layer_of
for f in "$src"/*.h "$src"/*/*.h; do
  [[ -e $f ]] || continue
  d=$(basename "$(dirname "$f")")
  [[ $f == "$src"/*.h && $(dirname "$f") == "$src" ]] && d=app
  layer_of[$(basename "$f")]=$d
done
bad=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- includes ----------------------------------------------------------------------------
for f in "$src"/*.[ch] "$src"/*/*.[ch]; do
  d=$(basename "$(dirname "$f")")
  [[ $(dirname "$f") == "$src" ]] && d=app
  [[ -n ${allowed[$d]:-} ]] || { echo "layering: $f is in no known layer ($d)"; bad=1; continue; }
  module_of "${f##*/}"; module=$REPLY
  while read -r inc; do
    target=${layer_of[$inc]:-}
    [[ -n $target ]] || { echo "layering: $f includes $inc, which is not in src/"; bad=1; continue; }
    if [[ " ${allowed[$d]} " != *" $target "* ]]; then
      echo "layering: $f ($d) includes $inc ($target): an upward arrow"
      bad=1
    fi
    module_of "$inc"
    [[ $REPLY != "$module" ]] && echo "$module $REPLY" >>"$tmp/includes"
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done
touch "$tmp/includes"
if ! tsort "$tmp/includes" >/dev/null 2>"$tmp/err"; then
  echo "layering: the module graph of includes has a cycle:"; cat "$tmp/err"; bad=1
fi

# ---- calls -------------------------------------------------------------------------------
# An object's layer, module and source file from its path (.../src/<layer>/<file>.c.o, or
# .../src/<file>.c.o), in layer, module and file.
object_place() {
  local rel=${1##*/src/}
  file=${rel%.o}
  if [[ $rel == */* ]]; then layer=${rel%%/*}; else layer=app; fi
  module_of "${file##*/}"; module=$REPLY
}
calls=0
if ((${#objects[@]})); then
  declare -A def_layer def_module def_file
  for o in "${objects[@]}"; do
    object_place "$o"
    while read -r _ type sym; do
      [[ $type == [TW] ]] || continue
      def_layer[$sym]=$layer def_module[$sym]=$module def_file[$sym]=$file
    done < <(nm -g --defined-only "$o")
  done
  for o in "${objects[@]}"; do
    object_place "$o"
    [[ -n ${allowed[$layer]:-} ]] || { echo "layering: $o is in no known layer ($layer)"; bad=1; continue; }
    while read -r _ sym; do
      target=${def_layer[$sym]:-}
      [[ -n $target ]] || continue # a library's
      calls=$((calls + 1))
      if [[ " ${allowed[$layer]} " != *" $target "* ]]; then
        echo "layering: $file ($layer) calls $sym (${def_file[$sym]}, $target): an upward call"
        bad=1
      fi
      dep=${def_module[$sym]}
      [[ $dep != "$module" ]] && echo "$module $dep" >>"$tmp/calls"
      echo "$layer $module $dep" >>"$tmp/map"
    done < <(nm -u "$o")
  done
  touch "$tmp/calls" "$tmp/map"
  sort -u -o "$tmp/calls" "$tmp/calls"
  if ! tsort "$tmp/calls" >/dev/null 2>"$tmp/err"; then
    echo "layering: the module graph of calls has a cycle:"; cat "$tmp/err"; bad=1
  fi
  if ((map)); then
    # Per layer, top first: each module and the modules it calls (other than itself).
    for l in $layers_in_order; do
      sort -u "$tmp/map" | while read -r ml mod dep; do
        [[ $ml == "$l" ]] || continue
        [[ $dep == "$mod" ]] && dep=""
        echo "$mod $dep"
      done | sort -u | awk -v l="$l" '{if (!($1 in d)) {o[++n] = $1; d[$1] = ""}
                                       if ($2 != "") d[$1] = d[$1] " " $2}
                                      END {for (i = 1; i <= n; i++)
                                             printf "%-8s %-16s ->%s\n", l, o[i], d[o[i]]}'
    done
    exit $bad
  fi
fi
if [[ $bad == 0 ]]; then
  echo -n "layering: ${#layer_of[@]} headers in 9 layers, no upward include, no cycle"
  if ((${#objects[@]})); then
    echo "; ${#objects[@]} objects, $calls calls between them, none upward, no cycle"
  else
    echo " (calls not checked: no object files given)"
  fi
fi
exit $bad

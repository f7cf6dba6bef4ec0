#!/usr/bin/env bash
# gen-conf.sh PREFIX SUB_PORT PUB_PORT [HOST] - write PREFIX/nginx.conf for the Nchan baseline
# (over Redis with NCHAN_REDIS_URL, below).
# Start it with:  nginx -p PREFIX -c PREFIX/nginx.conf -e PREFIX/error.log   (runs in the foreground)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=${1:?usage: gen-conf.sh PREFIX SUB_PORT PUB_PORT [HOST]}
sub_port=${2:?sub port}
pub_port=${3:?pub port}
host=${4:-127.0.0.1}
case $host in 127.*) ;; *) echo "gen-conf.sh: only 127.0.0.0/8 addresses" >&2; exit 2 ;; esac
module=${NCHAN_MODULE:-/usr/lib/nginx/modules/ngx_nchan_module.so}
[ -f "$module" ] || { echo "gen-conf.sh: $module missing (apt-get install libnginx-mod-nchan)" >&2; exit 2; }
# NCHAN_REDIS_URL=redis://127.x.x.x:PORT: channels kept in that Redis (the nodes that share it
# form one cluster: bench/scaleout.sh); unset: in Nchan's shared memory, one node
redis=""
if [ -n "${NCHAN_REDIS_URL:-}" ]; then
    case $NCHAN_REDIS_URL in redis://127.*) ;; *) echo "gen-conf.sh: NCHAN_REDIS_URL must be redis://127.x.x.x:PORT" >&2; exit 2 ;; esac
    redis="nchan_redis_url \"$NCHAN_REDIS_URL\"; nchan_use_redis on;"
fi
# NCHAN_DEFLATE=1: messages compressed once for the WebSocket subscribers that negotiated
# permessage-deflate (nchan_deflate_message_for_websocket), with livegate's default level and
# window (websocket.compression.level 6, max_window_bits 15)
deflate="" deflate_loc=""
if [ "${NCHAN_DEFLATE:-0}" = 1 ]; then
    deflate="nchan_permessage_deflate_compression_level 6; nchan_permessage_deflate_compression_window 15; nchan_permessage_deflate_compression_memlevel 8;"
    deflate_loc="nchan_deflate_message_for_websocket on;"
fi
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
sed -e "s|@PREFIX@|$prefix|g" -e "s|@REDIS@|$redis|" -e "s|@DEFLATE@|$deflate|" -e "s|@DEFLATE_LOC@|$deflate_loc|g" -e "s|@MODULE@|$module|g" -e "s|@HOST@|$host|g" \
    -e "s|@SUB_PORT@|$sub_port|g" -e "s|@PUB_PORT@|$pub_port|g" \
    -e "s|@SHM@|${NCHAN_SHM:-512M}|g" -e "s|@WORKER_CONN@|${NCHAN_WORKER_CONNECTIONS:-21400}|g" -e "s|@BUFLEN@|${NCHAN_BUFLEN:-100000}|g" \
    "$here/nginx.conf.in" > "$prefix/nginx.conf"
echo "$prefix/nginx.conf"

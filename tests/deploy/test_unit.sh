#!/usr/bin/env bash
# The systemd unit as configured (BUILD_DIR/livegate.service, packaging/livegate.service.in):
# what issue 35 asks of it, and a LimitNOFILE that holds the default connection limits with
# the descriptors src/app.c keeps for itself at the most workers, so that the gateway never
# caps them under systemd. systemd-analyze verify runs on the installed unit in test_deb.sh,
# where the paths it names exist (a clean Debian 12 root with the package).
# Usage: test_unit.sh BUILD_DIR   (ctest: deploy/unit)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: test_unit.sh BUILD_DIR}" && pwd)
. "$here/lib.sh"
unit=$build/livegate.service

for line in 'Type=notify' 'User=livegate' 'Group=livegate' 'ExecReload=/bin/kill -HUP $MAINPID' \
            'ProtectSystem=strict' 'NoNewPrivileges=yes' 'PrivateTmp=yes' 'RestartPreventExitStatus=2' \
            'WantedBy=multi-user.target'; do
  grep -qxF -- "$line" "$unit" || fail "$unit has no line $line"
done

config=$("$build/livegate" --print-config)
setting() { grep -oE "\"$1\": *[0-9]+" <<<"$config" | grep -oE '[0-9]+$'; }
const() { sed -nE "s/^#define $1 ([0-9]+)u?$/\\1/p" "$2"; }
need=$(( $(setting max_connections) + $(setting control_max_connections) \
         + $(const FIXED_DESCRIPTORS "$src/src/app.c") \
         + $(const DESCRIPTORS_PER_WORKER "$src/src/app.c") * $(const LG_MAX_WORKERS "$src/src/config/config.h") ))
limit=$(sed -n 's/^LimitNOFILE=//p' "$unit")
[[ "$limit" == "$need" ]] || fail "LimitNOFILE=$limit; the default limits need exactly $need"
echo "ok: $unit (LimitNOFILE=$limit)"

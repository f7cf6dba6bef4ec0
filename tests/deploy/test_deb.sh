#!/usr/bin/env bash
# The Debian package (issue 35) in a clean Debian 12 root: scripts/package.sh builds the .deb;
# a fresh minbase root (lib.sh) gets the package's Depends from the Debian archive with apt,
# then the package with dpkg -i. Checked there: the system user livegate, the conffile (an edit
# to it survives a reinstall), `systemd-analyze verify` on the installed unit with the root's
# own systemd, and the packaged binary run as livegate in the chroot, on loopback: the page and
# livegate.js from /usr/share/livegate/static (the source files byte for byte), a publish
# reaching a subscriber, a clean exit on SIGTERM.
# Needs root, mmdebstrap, dpkg-dev and the Debian archive (scripts/setup.sh --test).
# Time: ~1 min for the package build, ~1 min for the root (cached after), ~1 min for apt.
# Usage: test_deb.sh [DEB]   (default: built by scripts/package.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
[[ $(id -u) == 0 ]] || skip "test_deb.sh needs root (chroot, dpkg -i into the root)"

deb=${1:-$("$src/scripts/package.sh")}
tarball=$(debian_root_tarball)
root=$(mktemp -d /var/tmp/livegate-deb-root.XXXXXX)
trap '[[ -n "${GW_PID:-}" ]] && kill "$GW_PID" 2>/dev/null; rm -rf --one-file-system "$root"' EXIT
tar -xf "$tarball" -C "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/tmp/livegate.deb"

# The package's Depends with apt (and systemd, for systemd-analyze and its targets), then the
# package itself with dpkg, which fails if anything it needs is missing.
depends=$(dpkg-deb -f "$deb" Depends | sed -E 's/ *\([^)]*\)//g; s/,/ /g')
in_root "$root" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  --no-install-recommends $depends systemd man-db" >"$root/tmp/apt.log" 2>&1 || { cat "$root/tmp/apt.log"; fail "apt-get in the root"; }
in_root "$root" dpkg -i /tmp/livegate.deb >"$root/tmp/dpkg.log" 2>&1 || { cat "$root/tmp/dpkg.log"; fail "dpkg -i"; }
[[ $(in_root "$root" dpkg-query -W -f='${Status}' livegate) == "install ok installed" ]] || fail "livegate not installed"

# The user and the conffile.
user=$(in_root "$root" getent passwd livegate) || fail "no user livegate"
IFS=: read -r _ _ uid _ _ home shell <<<"$user"
(( uid < 1000 )) && [[ "$shell" == /usr/sbin/nologin && "$home" == /nonexistent ]] || fail "livegate is no system user: $user"
in_root "$root" getent group livegate >/dev/null || fail "no group livegate"
in_root "$root" dpkg-query -W -f='${Conffiles}\n' livegate | grep -qE '^ /etc/livegate/livegate.json [0-9a-f]{32}$' \
  || fail "/etc/livegate/livegate.json is no conffile"
cmp "$src/config/livegate.json" "$root/etc/livegate/livegate.json" || fail "/etc/livegate/livegate.json"
sed -i 's/"log_level": "info"/"log_level": "warn"/' "$root/etc/livegate/livegate.json"
in_root "$root" dpkg -i --force-confold /tmp/livegate.deb >"$root/tmp/dpkg.log" 2>&1 || { cat "$root/tmp/dpkg.log"; fail "dpkg -i again"; }
grep -q '"log_level": "warn"' "$root/etc/livegate/livegate.json" || fail "a reinstall overwrote the edited conffile"
echo "ok: dpkg -i into a clean Debian 12 root; user livegate (uid $uid), conffile kept on reinstall"

# The unit, verified against the root's systemd (its targets, the commands it runs); its
# Documentation= man page, with the root's man (systemd-analyze would ask the host's).
verify=$(systemd-analyze verify --man=no --root="$root" livegate.service 2>&1) || fail "systemd-analyze verify: $verify"
[[ -z "$verify" ]] || fail "systemd-analyze verify: $verify"
[[ $(in_root "$root" man -w 8 livegate) == /usr/share/man/man8/livegate.8* ]] || fail "man -w 8 livegate"
echo "ok: systemd-analyze verify livegate.service; man 8 livegate"

# The packaged binary as the unit runs it (user, configuration), on loopback ports.
log=$(mktemp)
start_gateway "$log" "$here/in_root.sh" "$root" setpriv --reuid=livegate --regid=livegate --clear-groups \
  /usr/bin/livegate --config /etc/livegate/livegate.json --public 127.0.0.1:0 --control 127.0.0.1:0 --workers 1
[[ $(ps -o uid= -p "$GW_PID" | tr -d ' ') == "$uid" ]] \
  || fail "the gateway does not run as livegate"
tmp=$(mktemp -d)
for page in livegate.js index.html; do
  status=$(curl -s -o "$tmp/$page" -w '%{http_code}' "$GW_PUBLIC/$page")
  [[ "$status" == 200 ]] || fail "/$page answered $status"
  cmp "$src/static/$page" "$tmp/$page" || fail "/$page is not static/$page"
done
rm -rf "$tmp"
pubsub "$GW_PUBLIC" "$GW_CONTROL" packaged
stop_gateway
GW_PID=
rm -f "$log"
echo "ok: the package's livegate in a clean Debian 12 root"

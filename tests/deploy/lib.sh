# shellcheck shell=bash
# lib.sh - what the deployment tests (tests/deploy/test_*.sh) share: bounded waits on a log or
# an output file, and one publish + subscribe round trip with curl against a running gateway.
# Every wait polls a condition with a bounded number of tries; every address is loopback.

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 0; }

# wait_grep FILE REGEX [TRIES (x 0.1 s, default 300)]: until FILE has a line matching REGEX.
wait_grep() {
  local file=$1 re=$2 tries=${3:-300}
  for ((i = 0; i < tries; i++)); do
    grep -qE -- "$re" "$file" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "no line matching '$re' in $file after $tries tries; it holds:" >&2
  cat "$file" >&2 2>/dev/null || true
  return 1
}

# publish CONTROL_BASE TOPIC DATA: a publish that must be answered 201; prints the event's id.
publish() {
  local answer
  answer=$(${CURL:-curl} -s -w '\n%{http_code}' -d "$3" "$1/v1/topics/$2/events")
  [[ "${answer##*$'\n'}" == 201 ]] || fail "publish on $1 answered ${answer##*$'\n'}, not 201"
  sed -nE 's/.*"id":"([^"]+)".*/\1/p' <<<"${answer%$'\n'*}"
}

# pubsub PUBLIC_BASE CONTROL_BASE TOPIC: a first event on TOPIC, an SSE subscriber resuming
# after it (Last-Event-ID: so the second event reaches it however soon it is published, in
# any store), then a second publish, which the subscriber must receive exactly. Both bases
# are http://127.0.0.1:PORT[/PATH]. `CURL` may name a wrapper (a command inside a container).
pubsub() {
  local pub=$1 ctl=$2 topic=$3 out first second
  first=$(publish "$ctl" "$topic" "before $topic")
  [[ "$first" == "$topic@"*":1" ]] || fail "the first publish on $topic got the id '$first'"
  out=$(mktemp)
  ${CURL:-curl} -sN --max-time 20 -H "Last-Event-ID: $first" "$pub/sse?topic=$topic" >"$out" &
  local sub=$!
  wait_grep "$out" '^retry: ' 200 || { kill "$sub" 2>/dev/null; fail "no SSE stream from $pub"; }
  second=$(publish "$ctl" "$topic" "hello $topic")
  wait_grep "$out" "^data: hello $topic\$" 200 || { kill "$sub" 2>/dev/null; fail "the event never reached the subscriber"; }
  kill "$sub" 2>/dev/null || true
  wait "$sub" 2>/dev/null || true
  # The event's frame, byte for byte (its id and data; the default type has no "event:" line), and nothing of the first one.
  grep -qzF "id: $second"$'\n'"data: hello $topic"$'\n\n' "$out" \
    && ! grep -q "before $topic" "$out" \
    || { cat "$out" >&2; fail "the SSE frame is not the published event $second"; }
  rm -f "$out"
  echo "ok: publish + subscribe on $topic through $pub"
}

# start_gateway LOG CMD...: runs CMD (a livegate with --public/--control 127.0.0.1:0) in the
# background with its output in LOG; sets GW_PID, GW_PUBLIC and GW_CONTROL (http://HOST:PORT)
# from its startup line.
start_gateway() {
  local log=$1; shift
  "$@" >"$log" 2>&1 &
  GW_PID=$!
  wait_grep "$log" 'listening public=' 300 || fail "the gateway did not start: $*"
  local line
  line=$(grep -m1 'listening public=' "$log")
  GW_PUBLIC=http://$(sed -E 's/.*public=([^ ]+).*/\1/' <<<"$line")
  GW_CONTROL=http://$(sed -E 's/.*control=([^ ]+).*/\1/' <<<"$line")
}

# stop_gateway: SIGTERM, then the exit status must be 0 (a clean drain).
stop_gateway() {
  kill -TERM "$GW_PID"
  local rc=0
  wait "$GW_PID" || rc=$?
  [[ $rc == 0 ]] || fail "the gateway exited $rc on SIGTERM"
}

# The Debian 12 minbase root the package and image tests start from, made once by mmdebstrap
# from the Debian archive (about a minute) and kept as a tarball in LG_DEPLOY_CACHE (default
# /var/cache/livegate-test); every test unpacks a fresh copy, so each run starts clean.
# Prints the tarball's path.
deploy_cache=${LG_DEPLOY_CACHE:-/var/cache/livegate-test}
debian_root_tarball() {
  local tarball=$deploy_cache/bookworm-minbase.tar
  if [[ ! -s "$tarball" ]]; then
    mkdir -p "$deploy_cache" && rm -rf "$tarball.part" || return 1
    echo "making $tarball with mmdebstrap (once)" >&2
    mmdebstrap --quiet --variant=minbase --format=tar bookworm "$tarball.part" \
      "deb http://deb.debian.org/debian bookworm main" \
      "deb http://deb.debian.org/debian bookworm-updates main" \
      "deb http://deb.debian.org/debian-security bookworm-security main" >&2 || return 1
    mv "$tarball.part" "$tarball" || return 1
  fi
  echo "$tarball"
}

# in_root ROOT CMD...: in_root.sh, which says how.
in_root() { "$(dirname "${BASH_SOURCE[0]}")/in_root.sh" "$@"; }

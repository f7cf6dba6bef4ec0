#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz, clang) and runs each for a bounded time:
#   scripts/fuzz.sh [seconds per harness, default 20] [harness ...]
# Seeds come from tests/fuzz/corpus/<name>, and every input in tests/fuzz/regressions/<name>
# (crashes found earlier) must still pass. New corpus entries and crash reproducers go to a
# temporary directory, never into the repository; a crash fails the run and prints the path
# of its input, to be copied into tests/fuzz/regressions/<name>/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DLG_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzzers >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
  for f in tests/fuzz/fuzz_*.c; do n=$(basename "$f" .c); names+=("${n#fuzz_}"); done
fi
for name in "${names[@]}"; do
  bin=build-fuzz/tests/fuzz/fuzz_$name
  mkdir -p "$work/$name"
  if [[ -d tests/fuzz/regressions/$name ]]; then
    "$bin" -runs=0 tests/fuzz/regressions/"$name" >"$work/$name.regress.log" 2>&1 ||
      { cat "$work/$name.regress.log"; echo "fuzz: $name fails a regression input" >&2; exit 1; }
  fi
  if ! "$bin" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=1024 \
       -artifact_prefix="$work/$name-" "$work/$name" tests/fuzz/corpus/"$name" \
       >"$work/$name.log" 2>&1; then
    tail -40 "$work/$name.log"
    keep=$(mktemp -d /tmp/livegate-fuzz-XXXX)
    cp "$work/$name"-* "$keep"/ 2>/dev/null || true
    echo "fuzz: $name crashed; reproducer(s) in $keep (copy into tests/fuzz/regressions/$name/)" >&2
    exit 1
  fi
  echo "fuzz: $name: $(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$work/$name.log" | tail -1)s, no crash"
done

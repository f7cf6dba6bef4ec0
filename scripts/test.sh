#!/usr/bin/env bash
# Sets up, builds and runs every test: the suite with warnings as errors, the deployment tests
# (the .deb in a clean Debian root, the images under podman), the same suite under
# AddressSanitizer + UndefinedBehaviorSanitizer and under ThreadSanitizer, every libFuzzer
# harness for LG_FUZZ_SECONDS (20) each, the event-loop cost smoke (a CPU ratio), and
# seconds-long smoke runs of the benchmark, of its floor server and of two nodes over Redis.
# LG_TEST_QUICK=1 skips the sanitizer and fuzzer passes (for a fast local loop).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --test
jobs=$(nproc)

echo "== build (warnings are errors) and test"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLG_WERROR=ON -DLG_BUILD_TESTS=ON >/dev/null
cmake --build build -j"$jobs" >/dev/null
(cd build && ctest --output-on-failure -j"$jobs")

# tests/deploy/README.md: ~1 min with the caches warm, ~5 min cold (the Debian root, the images'
# apt downloads; cached under /var/cache/livegate-test).
echo "== the Debian package in a clean Debian 12 root (tests/deploy/test_deb.sh)"
tests/deploy/test_deb.sh
echo "== the images and the compose stack under podman (tests/deploy/test_image.sh)"
tests/deploy/test_image.sh

if [[ "${LG_TEST_QUICK:-0}" != 1 ]]; then
  echo "== the same tests under ASan + UBSan"
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DLG_WERROR=ON -DLG_SANITIZE=ON -DLG_BUILD_TESTS=ON >/dev/null
  cmake --build build-asan -j"$jobs" >/dev/null
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j"$jobs")

  echo "== the same tests under ThreadSanitizer (a report makes the process that raced fail)"
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DLG_WERROR=ON \
        -DCMAKE_C_FLAGS="-fsanitize=thread -O1" -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread \
        -DLG_BUILD_TESTS=ON >/dev/null
  cmake --build build-tsan -j"$jobs" >/dev/null
  (cd build-tsan && TSAN_OPTIONS="suppressions=$PWD/../tests/tsan.supp:halt_on_error=1:exitcode=66" \
     ctest --output-on-failure -j"$jobs")

  echo "== the fuzzers, ${LG_FUZZ_SECONDS:-20} s each (tests/fuzz)"
  scripts/fuzz.sh "${LG_FUZZ_SECONDS:-20}"
fi

if [[ -x build/bench/lg_event_loop_cost ]]; then
  echo "== event-loop cost smoke (bench/event_loop_cost.c: a ratio far off fails)"
  LG_BINARY=build/livegate build/bench/lg_event_loop_cost
fi

if [[ -x bench/run.sh ]]; then
  echo "== benchmark smoke run (no thresholds)"
  bench/run.sh --smoke
  echo "== lg_floor smoke run (bench/floor.sh: the floor server must lose nothing)"
  bench/floor.sh --smoke
  echo "== scale-out smoke run (bench/scaleout.sh: two nodes over Redis must lose nothing)"
  bench/scaleout.sh --smoke
  echo "== subscribe-hook and presence-churn smoke runs (bench/hook_connect.sh, bench/presence_churn.sh)"
  bench/hook_connect.sh --smoke
  bench/presence_churn.sh --smoke
  echo "== close-cost smoke run (bench/close_cost.sh: 100 subscribers connect and all close)"
  bench/close_cost.sh --subscribers 100 --reps 1
fi

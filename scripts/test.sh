#!/usr/bin/env bash
# Sets up, builds and runs every test: the suite with warnings as errors, the same suite under
# AddressSanitizer + UndefinedBehaviorSanitizer, and a seconds-long smoke run of the benchmark.
# LG_TEST_QUICK=1 skips the sanitizer pass (for a fast local loop).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
jobs=$(nproc)

echo "== build (warnings are errors) and test"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLG_WERROR=ON >/dev/null
cmake --build build -j"$jobs" >/dev/null
(cd build && ctest --output-on-failure -j"$jobs")

if [[ "${LG_TEST_QUICK:-0}" != 1 ]]; then
  echo "== the same tests under ASan + UBSan"
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DLG_WERROR=ON -DLG_SANITIZE=ON >/dev/null
  cmake --build build-asan -j"$jobs" >/dev/null
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j"$jobs")
fi

if [[ -x bench/run.sh ]]; then
  echo "== benchmark smoke run (no thresholds)"
  bench/run.sh --smoke
fi

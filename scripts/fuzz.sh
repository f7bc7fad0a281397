#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS [TARGET...]]
# Builds the libFuzzer targets of fuzz/ with clang (ASan + UBSan, every library instrumented)
# in build-fuzz/ and runs each for SECONDS (default 20) over a fresh copy of its seed corpus
# fuzz/corpus/TARGET/, which is never written to. Prints, per target, the inputs run and
# whether it ran clean; a crashing input is kept under build-fuzz/fuzz-runs/TARGET/ with the
# log. Exits 1 when a target crashed, 77 (skipped) when clang or libFuzzer is missing.
# Installs nothing: clang and libclang-rt-14-dev are in scripts/lib.sh's package list.
# Environment: JOBS (parallel build jobs, default: number of CPUs), CXX_CLANG (the clang++ to
# use, default clang++).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$CHORD_ROOT"

SECONDS_EACH="${1:-20}"
if ! [[ "$SECONDS_EACH" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS [TARGET...]] (SECONDS a positive whole number)" >&2
  exit 2
fi
shift $(($# > 0 ? 1 : 0))
ALL_TARGETS=(frame_decoder_fuzz parse_cost_fuzz node_envelope_fuzz load_input_fuzz http_target_fuzz)
TARGETS=("${ALL_TARGETS[@]}")
if [[ $# -gt 0 ]]; then
  TARGETS=("$@")
fi
for target in "${TARGETS[@]}"; do
  [[ -d "fuzz/corpus/$target" ]] ||
    chord_die "unknown fuzz target $target; the targets are ${ALL_TARGETS[*]}"
done

CLANGXX="${CXX_CLANG:-clang++}"
BUILD_DIR=build-fuzz
RUNS_DIR="$CHORD_ROOT/$BUILD_DIR/fuzz-runs"

# --- clang and libFuzzer, or skip
if ! command -v "$CLANGXX" >/dev/null 2>&1; then
  echo "skipped: $CLANGXX is not installed (Debian: apt-get install clang libclang-rt-14-dev)."
  exit 77
fi
probe_dir="$(mktemp -d)"
trap 'rm -rf "$probe_dir"' EXIT
printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
  'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' \
  >"$probe_dir/probe.cc"
if ! "$CLANGXX" -fsanitize=fuzzer,address,undefined "$probe_dir/probe.cc" -o "$probe_dir/probe" \
  >"$probe_dir/log" 2>&1; then
  echo "skipped: $CLANGXX cannot link libFuzzer (Debian: apt-get install libclang-rt-14-dev)."
  exit 77
fi

chord_section "Build the fuzz targets (clang, ASan + UBSan) in $BUILD_DIR/"
chord_build "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$CLANGXX" \
  -DCHORD_FUZZ=ON -DCHORD_INTEGRATION_TESTS=OFF -- "${TARGETS[@]}"

chord_section "Fuzz each target for $SECONDS_EACH s"
# The number after `name:` in libFuzzer's final statistics.
final_stat() { sed -n "s/^stat::$1: *\([0-9]*\).*/\1/p" "$2" | tail -1; }

failed=()
results=()
for target in "${TARGETS[@]}"; do
  work="$RUNS_DIR/$target"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp -R "fuzz/corpus/$target/." "$work/corpus/"
  seeds=$(find "$work/corpus" -type f | wc -l)
  echo "$target: $seeds seeds, $SECONDS_EACH s ..."
  status=0
  "$CHORD_ROOT/$BUILD_DIR/fuzz/$target" -max_total_time="$SECONDS_EACH" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
    "$work/corpus" >"$work/log" 2>&1 || status=$?
  runs="$(final_stat number_of_executed_units "$work/log")"
  grown=$(($(find "$work/corpus" -type f | wc -l) - seeds))
  if [[ $status -eq 0 ]]; then
    results+=("$(printf '%-20s clean   %10s runs in %s s, corpus %d -> %d' "$target" \
      "${runs:-?}" "$SECONDS_EACH" "$seeds" "$((seeds + grown))")")
  else
    failed+=("$target")
    crash="$(find "$work/artifacts" -type f | head -1)"
    results+=("$(printf '%-20s CRASHED after %s runs: input %s, log %s' "$target" \
      "${runs:-?}" "${crash:-(none saved)}" "$work/log")")
    echo "--- $target: the end of its log"
    grep -v '^#[0-9]' "$work/log" | tail -40
  fi
done

chord_section "Fuzzing results"
printf '%s\n' "${results[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "crashed: ${failed[*]}; reproduce with $BUILD_DIR/fuzz/TARGET INPUT"
  exit 1
fi

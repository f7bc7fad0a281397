#!/usr/bin/env bash
# Runs chord-sim's experiments at the Chord paper's sizes and prints one JSON line per run
# with its wall time: the figures in the README's simulation table. Takes several minutes.
# Usage: scripts/sim_paper.sh [BUILD_DIR]   (default build; builds chord-sim if needed)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$CHORD_ROOT"
BUILD="${1:-build}"
if [[ ! -x "$BUILD/tools/chord-sim" ]]; then
  chord_install_deps
  chord_build "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -- chord-sim
fi
SIM="$BUILD/tools/chord-sim"

run() {
  local start_ns end_ns out
  start_ns=$(date +%s%N)
  out=$("$SIM" "$@" --json)
  end_ns=$(date +%s%N)
  printf '%s {"args":"%s","wall_ms":%d}\n' "$out" "$*" $(((end_ns - start_ns) / 1000000))
}

# Fig. 10: path length; the paper's simulator has no successor-list shortcut (--successors 1).
for n in 1024 4096 10000; do run lookups --nodes "$n" --lookups 100000 --successors 1 --seed 1; done
run lookups --nodes 10000 --lookups 100000 --successors 8 --seed 1
# Fig. 8-9: keys per node, 10^4 nodes, 10^6 keys, V virtual nodes each.
for v in 1 2 5 10 20; do run balance --nodes 10000 --keys 1000000 --vnodes "$v" --seed 1; done
# Table II: simultaneous failures, N = 1000, R = 20, stabilization off.
for p in 0 0.1 0.2 0.3 0.4 0.5; do
  run fail --nodes 1000 --successors 20 --fail-fraction "$p" --lookups 10000 --seed 1
done
# Table III: churn, N = 1000, R = 20, stabilization every 15-45 s, invariants checked.
for x in 0.05 0.1 0.2 0.4; do
  run churn --nodes 1000 --successors 20 --rate "$x" --lookups 10000 --seed 1 --check-invariants
done

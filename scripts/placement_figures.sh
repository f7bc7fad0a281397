#!/usr/bin/env bash
# The placement lab's figures beside the published ones they reproduce: builds chord-placement
# and placement_benchmark in Release into build-release/ (installing missing packages), runs
# them, and prints a Markdown table (figure | source says | we measure) followed by the
# side-by-side `compare` table and the Google Benchmark lookup rows. Nothing here asserts a
# time: the speed rows are ratios of one run on this machine.
# Environment:
#   CHORD_BIN_DIR   use the binaries of this build directory and skip installing and building
#   JOBS            parallel build jobs (default: number of CPUs)
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$CHORD_ROOT"

if [[ -n "${CHORD_BIN_DIR:-}" ]]; then
  BIN_DIR="$(cd "$CHORD_BIN_DIR" && pwd)"
else
  chord_section "Dependencies"
  chord_install_deps
  chord_section "Build chord-placement and placement_benchmark (Release) in build-release/"
  chord_build build-release -DCMAKE_BUILD_TYPE=Release -DCHORD_INTEGRATION_TESTS=OFF \
    -- chord-placement placement_benchmark
  BIN_DIR="$CHORD_ROOT/build-release"
fi
P="$BIN_DIR/tools/chord-placement"
BENCH="$BIN_DIR/tools/placement_benchmark"
for bin in "$P" "$BENCH"; do
  [[ -x "$bin" ]] || chord_die "$bin is missing; build it first (or unset CHORD_BIN_DIR)"
done

pct() { awk -v f="$1" 'BEGIN { printf "%.1f%%", 100 * f }'; }
row() { printf '| %s | %s | %s |\n' "$1" "$2" "$3"; }

chord_section "Reproducing the published figures"
echo "| figure | source | chord-placement |"
echo "|---|---|---|"

j=$("$P" move --algo modulo --from 3 --to 4 --keys 1000 --json)
row "modulo, 1000 users, 3 -> 4 servers" "756 / 1000 moved (background/004)" \
  "$(chord_json_field moved "$j") / 1000 moved"
j=$("$P" move --algo ring --vnodes 100 --from 3 --to 4 --keys 1000 --json)
row "ring, 100 vnodes, 3 -> 4" "237 / 1000 moved, all to the new server (004)" \
  "$(chord_json_field moved "$j") / 1000 moved, $(chord_json_field moved_between_old "$j") between old servers"
j=$("$P" move --algo rendezvous --from 3 --to 4 --keys 1000 --json)
row "rendezvous, 3 -> 4" "about 1/4, only to the new server (004)" \
  "$(chord_json_field moved "$j") / 1000 moved, $(chord_json_field moved_between_old "$j") between old servers"
j=$("$P" move --algo jump --from 10 --to 12 --keys 120000 --json)
after=$(grep -o '"after":\[[^]]*\]' <<<"$j" | tr -d '"after:[]')
new=$(awk -F, '{ print $11 + $12 }' <<<"$after")
row "jump, 10 -> 12 buckets (120,000 keys)" "1/6 = 16.7% moved, all to buckets 10 and 11 (000)" \
  "$(pct "$(chord_json_field moved_fraction "$j")") moved; $new keys now in buckets 10-11 of $(chord_json_field moved "$j") moved; $(chord_json_field moved_between_old "$j") between old buckets"
j=$("$P" move --algo modulo --from 10 --to 12 --keys 120000 --json)
row "modulo, 10 -> 12 (120,000 keys)" "5/6 = 83.3% moved (000)" \
  "$(pct "$(chord_json_field moved_fraction "$j")") moved"
j=$("$P" balance --algo ring --nodes 1000 --vnodes 1000 --json)
row "ring, 1000 points per bucket, 1000 buckets: 99% interval of bucket size / mean" \
  "0.92 - 1.09 (Lamping & Veach, via 000)" \
  "$(printf '%.3f - %.3f' "$(chord_json_field ci99_low "$j")" "$(chord_json_field ci99_high "$j")") (exact arcs)"
j=$("$P" memory --nodes 1000 --vnodes 1000 --json)
vec=$(grep -o '"bytes":[0-9]*,"label":"ring V=1000"' <<<"$j" | grep -o '[0-9]*' | head -n 1)
map=$(grep -o '"bytes":[0-9]*,"label":"ring-map V=1000"' <<<"$j" | grep -o '[0-9]*' | head -n 1)
row "same ring's memory: sorted vector / std::map" "7.6 MB / 46 MB (000)" \
  "$(awk -v v="$vec" -v m="$map" 'BEGIN { printf "%.1f MiB / %.1f MiB", v / 1048576, m / 1048576 }')"

spreads=""
for v in 1 10 100 1000; do
  j=$("$P" balance --algo ring --nodes 1000 --vnodes "$v" --json)
  spreads+="V=$v: $(pct "$(chord_json_field stddev_over_mean "$j")"); "
done
row "spread of shares (sd / mean), 1000 nodes" "about 1/sqrt(V): 100%, 32%, 10%, 3% (002)" \
  "${spreads%; }"

bounded=""
for e in 0.1 0.25 1; do
  j=$("$P" balance --algo bounded --nodes 10 --vnodes 100 --epsilon "$e" --keys 100000 --json)
  bounded+="e=$e: max $(chord_json_field max_load "$j") <= $(chord_json_field capacity "$j"); "
done
row "bounded loads, 10 nodes, 100,000 keys" "no node above ceil((1+e) K/N) (MTZ, 003)" "${bounded%; }"
row "CRC16-XMODEM(\"123456789\")" "0x31C3 = 12739" "$("$P" crc16 123456789)"
row "Redis slot of \"foo\"" "12182" "$("$P" slot foo)"

chord_section "Lookup speed (Google Benchmark, key hashed beforehand)"
csv=$("$BENCH" --benchmark_format=csv --benchmark_min_time=0.3 2>/dev/null | grep '^"BM_')
echo "| buckets | jump ns | ring 1000 points/bucket ns | ring / jump (source: 3-4x) | std::map ring ns |"
echo "|---|---|---|---|---|"
for n in 10 100 1000; do
  t() { grep "^\"$1/$n\"" <<<"$csv" | cut -d, -f3; }
  jump=$(t BM_Jump)
  ring=$(t BM_Ring1000Points)
  map=$(t BM_RingMap1000Points)
  printf '| %s | %.1f | %.1f | %.2f | %.1f |\n' "$n" "$jump" "$ring" \
    "$(awk -v a="$ring" -v b="$jump" 'BEGIN { print a / b }')" "$map"
done
echo
echo "All lookup rows (ns per lookup; name/nodes):"
awk -F, '{ gsub(/"/, "", $1); printf "  %-28s %10.1f\n", $1, $3 }' <<<"$csv"

chord_section "Every scheme side by side (compare --from 3 --to 4 --keys 1000)"
"$P" compare --from 3 --to 4 --keys 1000
chord_section "Every scheme side by side (compare --from 10 --to 12 --keys 100000)"
"$P" compare --from 10 --to 12 --keys 100000

#!/usr/bin/env bash
# A slow link (scripts/lan.sh slow): two nodes in their own network namespaces, R = 2, 8 MiB of
# records; node 1 is killed and started again empty (--memory) while everything node 0 sends
# goes through a 4 Mbit/s token bucket. Node 1 must get every record back (it owns part of the
# ring and holds copies of the rest) within 180 s, node 0 must have handed its keys over in
# several batches, and ring maintenance must not have reset the connection more than a few
# times. The records come in hand-over and repair batches, and the short requests of ring
# maintenance wait behind them on the same connection; a batch that took longer on the wire
# than a short request may wait made that request time out and reset the connection, failing
# the batch, again and again (before LinkPace: 0 of 8192 records in 120 s, 166 resets).
# Needs root and network namespaces; exits 77 (skipped) with the reason otherwise.
# Usage: lan_slow_link_test.sh BUILD_DIR
set -euo pipefail

BUILD="$(cd "${1:?usage: lan_slow_link_test.sh BUILD_DIR}" && pwd)"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LAN="$ROOT/scripts/lan.sh"
KEYS=8192
VALUE_BYTES=1000
RATE_KBIT=4000
WAIT_S=180
MAX_RESETS=10

# shellcheck source=tests/scripts/lan_common.sh
source "$ROOT/tests/scripts/lan_common.sh"
lan_require tc python3
# A token-bucket filter, in a namespace of our own.
ip netns add "chordprobe$$"
if ! ip netns exec "chordprobe$$" tc qdisc add dev lo root tbf rate 1mbit burst 32kb \
  latency 100ms 2>/dev/null; then
  ip netns del "chordprobe$$"
  echo "skipped: this kernel has no token-bucket filter (sch_tbf)"
  exit 77
fi
ip netns del "chordprobe$$"

export CHORD_BIN_DIR="$BUILD"
export CHORD_RUN_DIR
CHORD_RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/chord-slow.XXXXXX")"
export CHORD_LAN_TAG="s$(printf '%04d' $((RANDOM % 10000)))"
# Anti-entropy every 0.5 s: node 0's own range reaches node 1 by its pushes, one per round.
export CHORD_NODE_ARGS="--memory --stabilize-ms 300 --replicas 2 --anti-entropy-ms 500"

trap 'lan_finish $? 25' EXIT

# The keys node I holds, its own and its copies, from its status.
held() {
  "$LAN" ctl --node "$1" --timeout-ms 3000 status --json 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["keys"]+d["replica_keys"])' ||
    echo 0
}

"$LAN" up 2
IFS=, read -r ADDR0 ADDR1 <<<"$("$LAN" addrs)"

python3 - "$KEYS" "$VALUE_BYTES" >"$CHORD_RUN_DIR/records.tsv" <<'PY'
import sys
keys, size = int(sys.argv[1]), int(sys.argv[2])
for i in range(keys):
    print(f"key-{i:05d}\t" + (f"{i:05d}" * (size // 5 + 1))[:size])
PY
"$LAN" ctl --timeout-ms 10000 load "$CHORD_RUN_DIR/records.tsv" >/dev/null ||
  fail "loading $KEYS records failed"
# Every wait is bounded in time (SECONDS), so that the test ends, and stops its nodes, well
# within ctest's timeout.
deadline=$((SECONDS + 60))
while ((SECONDS < deadline)); do
  [[ "$(held "$ADDR1")" -ge $KEYS ]] && break
  sleep 1
done
[[ "$(held "$ADDR1")" -ge $KEYS ]] || fail "node 1 never held all $KEYS records before the test"

"$LAN" kill 1
# Node 0 must notice the death before node 1 comes back: its successor list drops node 1.
noticed=0
deadline=$((SECONDS + 30))
while ((SECONDS < deadline)); do
  if "$LAN" ctl --node "$ADDR0" --timeout-ms 2000 status --json 2>/dev/null |
    python3 -c 'import json,sys
sys.exit(1 if sys.argv[1] in json.dumps(json.load(sys.stdin)["successors"]) else 0)' "$ADDR1"
  then
    noticed=1
    break
  fi
  sleep 1
done
((noticed)) || fail "node 0 still lists node 1 as a successor 30 s after its death"
"$LAN" slow 0 "$RATE_KBIT"
log0="$CHORD_RUN_DIR/nodes/0/log"
before=$(wc -l <"$log0")
start=$SECONDS
"$LAN" restart 1
have=0
while ((SECONDS - start < WAIT_S)); do
  have=$(held "$ADDR1")
  [[ "$have" -ge $KEYS ]] && break
  sleep 2
done
echo "node 1 held $have of $KEYS records $((SECONDS - start)) s after its restart" \
  "over a $RATE_KBIT kbit/s link"
# What node 0 logged since the link became slow.
tail -n +$((before + 1)) "$log0" >"$CHORD_RUN_DIR/slow.log"
resets=$(grep -c "closed connection .* to $ADDR1" "$CHORD_RUN_DIR/slow.log" || true)
batches=$(grep -c "transferred [0-9]* keys .* to .*$ADDR1" "$CHORD_RUN_DIR/slow.log" || true)
echo "node 0 handed keys over in $batches batches and reset its connection to node 1 $resets times"
[[ "$have" -ge $KEYS ]] || fail "node 1 got only $have of $KEYS records within $WAIT_S s"
[[ "$batches" -ge 2 ]] ||
  fail "node 0 handed its keys over in $batches batches, not in several smaller ones"
[[ "$resets" -le $MAX_RESETS ]] || fail "node 0 reset its connection to node 1 $resets times"
echo "PASS"

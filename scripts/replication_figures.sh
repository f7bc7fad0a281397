#!/usr/bin/env bash
# Measures the replication figures the README reports, on real chord-node processes on
# 127.0.0.1 (RocksDB stores, R = 3): the cost of anti-entropy when nothing differs, the keys
# and bytes a join moves against the ideal, and the time until every key has 3 live copies
# again after two ring-adjacent nodes are SIGKILLed at once. Uses an existing build.
#
# Environment:
#   CHORD_BIN_DIR   build directory with node/chord-node and tools/chordctl (default ./build)
#   NODES           ring size before the join (default 7)
#   KEYS            keys stored (default 2000)
#   WAIT_S          bound of every wait in seconds (default 60)
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$CHORD_ROOT"

BIN_DIR="$(cd "${CHORD_BIN_DIR:-build}" && pwd)"
CTL="$BIN_DIR/tools/chordctl"
NODES="${NODES:-7}"
KEYS="${KEYS:-2000}"
WAIT_S="${WAIT_S:-60}"
R=3
HOST=127.0.0.1
[[ -x "$BIN_DIR/node/chord-node" && -x "$CTL" ]] || chord_die "build chord-node and chordctl first (scripts/test.sh or cmake --build build)"
[[ "$NODES" =~ ^[0-9]+$ && "$NODES" -ge 4 && "$NODES" -le 50 ]] || chord_die "NODES must be 4 to 50"
[[ "$KEYS" =~ ^[0-9]+$ && "$KEYS" -ge 1 && "$KEYS" -le 100000 ]] || chord_die "KEYS must be 1 to 100000"

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/chord-repl.XXXXXX")"
BASE=$((30000 + (RANDOM % 1000) * 10))
cluster() {
  CHORD_RUN_DIR="$RUN_DIR" CHORD_BIN_DIR="$BIN_DIR" CHORD_WAIT_S="$WAIT_S" \
    CHORD_NODE_ARGS="--replicas $R --stabilize-ms 500" "$CHORD_ROOT/scripts/cluster.sh" "$@"
}
cleanup() {
  cluster stop >/dev/null 2>&1 || true
  rm -rf "$RUN_DIR"
}
trap cleanup EXIT
ctl() { "$CTL" --node "$HOST:$BASE" --timeout-ms 5000 "$@"; }
now_ms() { date +%s%3N; }
# json_num FIELD TEXT: the first number after "FIELD": in TEXT.
json_num() { sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" <<<"$2" | head -1; }
# sum_status FIELD: the sum of FIELD over every running node's status --json.
sum_status() {
  local total=0 port v
  for port in "$@"; do
    v="$(json_num "$FIELD" "$("$CTL" --node "$HOST:$port" status --json 2>/dev/null || true)")"
    total=$((total + ${v:-0}))
  done
  echo "$total"
}
# wait_copies: until the ring reports KEYS primary and (R-1)*KEYS replica keys.
wait_copies() {
  local deadline=$((SECONDS + WAIT_S)) out
  while ((SECONDS < deadline)); do
    out="$(ctl ring --json 2>/dev/null || true)"
    if [[ "$(json_num total_keys "$out")" == "$KEYS" &&
      "$(json_num total_replica_keys "$out")" == "$(((R - 1) * KEYS))" &&
      "$out" == *'"consistent": true'* ]]; then
      return 0
    fi
    sleep 0.1
  done
  ctl ring >&2 || true
  chord_die "copies did not settle to $KEYS primary and $(((R - 1) * KEYS)) replica keys within $WAIT_S s"
}

chord_section "Ring of $NODES nodes (R = $R, RocksDB) with $KEYS keys of 100 bytes"
started=0
for ((try = 0; try < 5; try++)); do
  if cluster start "$NODES" --base-port "$BASE" >/dev/null 2>&1; then
    started=1
    break
  fi
  cluster stop >/dev/null 2>&1 || true
  BASE=$((30000 + (RANDOM % 1000) * 10))  # a port was taken: another base
done
[[ $started -eq 1 ]] || chord_die "could not start $NODES nodes on free ports; see $RUN_DIR"
value="$(printf 'v%.0s' {1..100})"
for ((i = 1; i <= KEYS; i++)); do ctl put "user-$i" "$value" >/dev/null; done
wait_copies
ports=()
for ((i = 0; i < NODES; i++)); do ports+=($((BASE + i))); done

chord_section "Anti-entropy when nothing differs (10 s)"
FIELD=anti_entropy_rounds r0="$(sum_status "${ports[@]}")"
FIELD=anti_entropy_bytes b0="$(sum_status "${ports[@]}")"
FIELD=keys_repaired k0="$(sum_status "${ports[@]}")"
sleep 10
FIELD=anti_entropy_rounds r1="$(sum_status "${ports[@]}")"
FIELD=anti_entropy_bytes b1="$(sum_status "${ports[@]}")"
FIELD=keys_repaired k1="$(sum_status "${ports[@]}")"
rounds=$((r1 - r0))
echo "rounds (one owner vs one replica): $rounds; bytes: $((b1 - b0)) ($(((b1 - b0) / (rounds > 0 ? rounds : 1))) per round); keys repaired: $((k1 - k0))"

chord_section "Join of node $((NODES + 1))"
FIELD=keys_sent s0="$(sum_status "${ports[@]}")"
FIELD=bytes_sent y0="$(sum_status "${ports[@]}")"
FIELD=keys_dropped d0="$(sum_status "${ports[@]}")"
t0="$(now_ms)"
cluster add >/dev/null
NEW=$((BASE + NODES))
ports+=("$NEW")
wait_copies
t1="$(now_ms)"
FIELD=keys_sent s1="$(sum_status "${ports[@]}")"
FIELD=bytes_sent y1="$(sum_status "${ports[@]}")"
FIELD=keys_dropped d1="$(sum_status "${ports[@]}")"
dropped=$((d1 - d0))
st="$("$CTL" --node "$HOST:$NEW" status --json)"
held=$(($(json_num keys "$st") + $(json_num replica_keys "$st")))
echo "hand-over to the new node: $((s1 - s0)) keys, $((y1 - y0)) bytes; it must hold $held keys (primary $(json_num keys "$st") + replica $(json_num replica_keys "$st"))"
echo "ideal: K/N = $((KEYS / (NODES + 1))) primary keys, R*K/N = $((R * KEYS / (NODES + 1))) copies; copies dropped elsewhere: $dropped; settled in $((t1 - t0)) ms"

chord_section "SIGKILL two ring-adjacent nodes at once"
ring="$(ctl ring --json)"
mapfile -t order < <(sed -n 's/.*"addr": *"[^:]*:\([0-9]*\)".*/\1/p' <<<"$ring")
a="" b=""
for ((i = 0; i < ${#order[@]}; i++)); do
  x="${order[$i]}" y="${order[$(((i + 1) % ${#order[@]}))]}"
  if [[ "$x" != "$BASE" && "$y" != "$BASE" ]]; then
    a="$x" b="$y"
    break
  fi
done
kill -KILL "$(cat "$RUN_DIR/nodes/$a/pid")" "$(cat "$RUN_DIR/nodes/$b/pid")"
t0="$(now_ms)"
wait_copies
t1="$(now_ms)"
echo "killed $a and $b; every key back to $R live copies (and the ring consistent) after $((t1 - t0)) ms"

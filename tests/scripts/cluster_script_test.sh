#!/usr/bin/env bash
# ctest: scripts/cluster.sh end to end on 127.0.0.1: start 3 nodes with 2 vnodes each, add
# one, kill one (SIGKILL), restart it on its data directory, let one leave (SIGTERM), check
# the ring and the keys after each step, stop. Every node is stopped on any exit.
# Usage: cluster_script_test.sh BUILD_DIR
set -euo pipefail

BUILD_DIR="$(cd "$1" && pwd)"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CTL="$BUILD_DIR/tools/chordctl"
RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/chord-cluster-test.XXXXXX")"
export CHORD_RUN_DIR="$RUN_DIR" CHORD_BIN_DIR="$BUILD_DIR" CHORD_WAIT_S=30
export CHORD_NODE_ARGS="--stabilize-ms 200"
cluster() { "$ROOT/scripts/cluster.sh" "$@"; }
cleanup() {
  cluster stop >/dev/null 2>&1 || true
  CHORD_RUN_DIR="$RUN_DIR/bad" cluster stop >/dev/null 2>&1 || true
  rm -rf "$RUN_DIR"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for log in "$RUN_DIR"/nodes/*/log; do
    echo "--- $log" >&2
    tail -5 "$log" >&2 || true
  done
  exit 1
}

# A base port with 5 free ports after it, below the kernel's ephemeral range (which the other
# tests' free-port picks and every client socket draw from).
free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_base() {
  local try b
  for ((try = 0; try < 100; try++)); do
    b=$((21000 + (RANDOM % 1000) * 10))
    if free "$b" && free $((b + 1)) && free $((b + 2)) && free $((b + 3)) && free $((b + 4)); then
      echo "$b"
      return 0
    fi
  done
  return 1
}
ctl() { "$CTL" --node "127.0.0.1:$BASE" --timeout-ms 5000 "$@"; }

# wait_check N: until `chordctl check` is [OK] and the ring has N entries (bounded).
wait_check() {
  local want="$1" i out
  for ((i = 0; i < 150; i++)); do
    out="$(ctl ring --json 2>/dev/null || true)"
    if ctl check >/dev/null 2>&1 && [[ "$(grep -c '"addr":' <<<"$out")" -ge "$want" ]]; then
      return 0
    fi
    sleep 0.2
  done
  ctl ring >&2 || true
  fail "ring did not settle to $want consistent positions"
}

# A port can still be taken between the check and the bind: then try another base.
started=0
for ((attempt = 0; attempt < 4; attempt++)); do
  BASE="$(pick_base)" || fail "no free ports"
  if cluster start 3 --base-port "$BASE" --vnodes 2; then
    started=1
    break
  fi
  cluster stop >/dev/null 2>&1 || true
done
[[ $started -eq 1 ]] || fail "start"
[[ -d "$RUN_DIR/nodes/$BASE/data" ]] || fail "no RocksDB data directory under the run directory"
wait_check 6
for i in $(seq 1 60); do ctl put "k$i" "v$i" >/dev/null || fail "put k$i"; done
status="$(cluster status)" || fail "status"
grep -q "127.0.0.1:$((BASE + 2))#1" <<<"$status" || fail "status does not list the vnodes: $status"

cluster add || fail "add"
wait_check 8
cluster kill $((BASE + 1)) || fail "kill"
for i in $(seq 1 60); do
  [[ "$(ctl get "k$i")" == "v$i" ]] || fail "k$i unreadable after the kill"
done
cluster restart $((BASE + 1)) || fail "restart"
wait_check 8
cluster leave $((BASE + 2)) || fail "leave"
wait_check 6
for i in $(seq 1 60); do
  [[ "$(ctl get "k$i")" == "v$i" ]] || fail "k$i unreadable after the leave"
done
# Unknown commands and bad arguments are refused with a sentence.
if cluster frobnicate 2>/dev/null; then fail "an unknown command was accepted"; fi
if cluster start 0 2>/dev/null; then fail "start 0 was accepted"; fi
cluster stop || fail "stop"
[[ -z "$(cd "$RUN_DIR" && cluster status 2>/dev/null | awk '$3 == "yes"')" ]] || fail "nodes still alive after stop"

# --tls: a ring with mutual TLS; chordctl needs the credentials cluster.sh env prints.
if cluster env >/dev/null 2>&1; then fail "env printed credentials for a plain ring"; fi
export CHORD_NODE_ARGS="--stabilize-ms 200 --memory"
cluster start 3 --base-port "$BASE" --tls || fail "start --tls"
if ctl put plain v >/dev/null 2>&1; then fail "a client without a certificate could write"; fi
eval "$(cluster env)" || fail "env"
wait_check 3
ctl put secure v1 >/dev/null || fail "put over TLS"
cluster kill $((BASE + 1)) || fail "kill (TLS)"
cluster restart $((BASE + 1)) || fail "restart (TLS)"
wait_check 3
[[ "$(ctl get secure)" == "v1" ]] || fail "secure unreadable over TLS"
cluster stop || fail "stop (TLS)"
unset CHORD_TLS_CERT CHORD_TLS_KEY CHORD_TLS_CA

# A node that exits at startup is reported as such (with its log) well before the wait ends;
# a node still between fork and exec is not (every start above relied on that).
out="$(CHORD_RUN_DIR="$RUN_DIR/bad" CHORD_NODE_ARGS="--no-such-flag" CHORD_WAIT_S=60 \
  timeout 30 "$ROOT/scripts/cluster.sh" start 1 --base-port "$BASE" 2>&1)" &&
  fail "a node that cannot start was reported started: $out"
[[ "$out" == *"exited during startup"* && "$out" == *"--no-such-flag"* ]] ||
  fail "a node that cannot start was not reported with its log: $out"
CHORD_RUN_DIR="$RUN_DIR/bad" "$ROOT/scripts/cluster.sh" stop >/dev/null 2>&1 || true
echo "cluster.sh: start --vnodes, status, add, kill, restart, leave, stop, start --tls, a failed start all work"

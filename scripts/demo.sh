#!/usr/bin/env bash
# The chord demo: builds chord-node and chordctl (installing missing packages first), starts a
# ring of 5 nodes on free 127.0.0.1 ports, stores 50 keys, adds a 6th node and shows exactly
# which keys moved to it, lets one node leave gracefully and shows where its keys went, crashes
# another with SIGKILL (every key has 3 copies, so none is lost) and restarts it on its data
# directory, then checks that every key still reads back. Along the way it shows `chordctl
# ring`, draws the ring as SVG (demo-output/ring-*.svg) and runs `chordctl watch` during the
# join and the crash. Every node serves HTTP (--http-listen) too: the address of the live ring
# page is printed at the start, and headless Chromium keeps a screenshot of that page after
# each step (demo-output/step-NN-*.png; skipped with a note when chromium is missing). Stops
# every node it started on any exit.
#
# Environment:
#   CHORD_BIN_DIR   use the chord-node and chordctl of this build directory and skip the
#                   install + build steps (default: install, build into build/)
#   JOBS            parallel build jobs (default: number of CPUs)
#   DEMO_KEYS       how many keys to store (default 50)
#   DEMO_WAIT_S     bound of every wait, in seconds (default 20)
#   DEMO_OUT        where the SVG pictures and the screenshots go (default demo-output)
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$CHORD_ROOT"

NUM_KEYS="${DEMO_KEYS:-50}"
WAIT_S="${DEMO_WAIT_S:-20}"
HOST="127.0.0.1"
NUM_NODES=5
RUN_DIR=""
BASE_PORT=""
DEMO_OK=0
OUT_DIR="${DEMO_OUT:-demo-output}"
WATCH_PID=""
# Node P serves HTTP on P + HTTP_OFFSET (scripts/cluster.sh, CHORD_HTTP_PORT_OFFSET).
HTTP_OFFSET=1000
PAGE_URL=""
CHROMIUM="$(command -v chromium || true)"
SHOTS=()

if ! [[ "$NUM_KEYS" =~ ^[1-9][0-9]{0,5}$ ]] || ((NUM_KEYS > 100000)); then
  chord_die "DEMO_KEYS must be a number from 1 to 100000"
fi
if ! [[ "$WAIT_S" =~ ^[1-9][0-9]{0,3}$ ]] || ((WAIT_S > 3600)); then
  chord_die "DEMO_WAIT_S must be a number of seconds from 1 to 3600"
fi

# ---- building ---------------------------------------------------------------------------

if [[ -n "${CHORD_BIN_DIR:-}" ]]; then
  BIN_DIR="$(cd "$CHORD_BIN_DIR" && pwd)"
  chord_section "Using the binaries in $BIN_DIR"
else
  chord_section "Dependencies"
  chord_install_deps
  chord_section "Build chord-node and chordctl in build/"
  chord_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -- chord-node chordctl
  BIN_DIR="$CHORD_ROOT/build"
fi
CTL="$BIN_DIR/tools/chordctl"
[[ -x "$BIN_DIR/node/chord-node" ]] || chord_die "$BIN_DIR/node/chord-node is missing; build it first"
[[ -x "$CTL" ]] || chord_die "$CTL is missing; build it first"

# ---- helpers ------------------------------------------------------------------------------

cluster() {
  CHORD_RUN_DIR="$RUN_DIR" CHORD_BIN_DIR="$BIN_DIR" CHORD_WAIT_S="$WAIT_S" \
    CHORD_HTTP_PORT_OFFSET="$HTTP_OFFSET" "$CHORD_ROOT/scripts/cluster.sh" "$@"
}

# chordctl, asking the first node (it never leaves during the demo).
ctl() {
  "$CTL" --node "$HOST:$BASE_PORT" --timeout-ms 5000 "$@"
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ -n "$WATCH_PID" ]]; then kill "$WATCH_PID" 2>/dev/null || true; fi
  if [[ -n "$RUN_DIR" && -d "$RUN_DIR" ]]; then
    cluster stop >/dev/null 2>&1 || true
    if [[ $DEMO_OK -eq 1 ]]; then
      rm -rf "$RUN_DIR"
    else
      echo "the demo failed; node logs are kept in $RUN_DIR/nodes/<port>/log" >&2
    fi
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_free() { ! chord_port_taken "$HOST" "$1"; }

# A base port with 6 consecutive free ports (5 nodes and the one added later), and 6 more
# free ports HTTP_OFFSET above them for their HTTP servers, all below the kernel's ephemeral
# range (where a client connection could take one between this check and the node's start).
find_base_port() {
  local tries base i free span
  span=$((($(chord_ephemeral_low) - HTTP_OFFSET - NUM_NODES - 1 - 20000) / 10))
  ((span > 0)) || span=1
  for ((tries = 0; tries < 200; tries++)); do
    base=$((20000 + (RANDOM % span) * 10))
    free=1
    for ((i = 0; i <= NUM_NODES; i++)); do
      if ! port_free $((base + i)) || ! port_free $((base + HTTP_OFFSET + i)); then
        free=0
        break
      fi
    done
    if [[ $free -eq 1 ]]; then
      echo "$base"
      return 0
    fi
  done
  chord_die "found no 6 consecutive free ports between 20000 and 40000 (with 6 more $HTTP_OFFSET above them for HTTP); free some and retry"
}

# wait_ring N: waits until `chordctl ring` meets N nodes and all their pointers agree.
wait_ring() {
  local want="$1" deadline=$((SECONDS + WAIT_S))
  CHORD_RING_MET=0
  while ((SECONDS < deadline)); do
    if chord_ring_settled "$want" ctl; then
      echo "ring of $want nodes is consistent after $((SECONDS - deadline + WAIT_S)) s"
      return 0
    fi
    sleep 0.5
  done
  ctl ring >&2 || true
  chord_die "the ring did not settle to $want consistent nodes within ${WAIT_S} s (last walk met $CHORD_RING_MET); see the table above and the logs in $RUN_DIR"
}

# wait_keys: waits (bounded) until the owners' primary key counts add up to NUM_KEYS, i.e.
# key transfers have finished. Only warns when they do not: the read-back check decides.
wait_keys() {
  local deadline=$((SECONDS + WAIT_S)) out="" total=""
  while ((SECONDS < deadline)); do
    out="$(ctl ring --json 2>/dev/null || true)"
    total="$(sed -n 's/^ *"total_keys": *\([0-9]*\).*/\1/p' <<<"$out")"
    [[ "$total" == "$NUM_KEYS" ]] && return 0
    sleep 0.5
  done
  echo "note: the nodes report ${total:-?} primary keys, expected $NUM_KEYS (transfers may still be running)"
}

# owner_of KEY: the address of the node that owns KEY, from `chordctl lookup`
# ("key "K" -> owner ID ADDR (N hops)").
owner_of() {
  local line
  line="$(ctl lookup "$1")" || chord_die "lookup of key $1 failed"
  awk '{ for (i = 1; i < NF; i++) if ($i == "owner") { print $(i + 2); exit } }' <<<"$line"
}

# record_owners ARRAY_NAME: fills the associative array with key -> owner address.
record_owners() {
  local -n owners="$1"
  local i
  for ((i = 1; i <= NUM_KEYS; i++)); do
    # shellcheck disable=SC2034  # the array is the caller's
    owners["user-$i"]="$(owner_of "user-$i")"
  done
}

key_value() {
  echo "hello from user-$1"
}

# watch_start: `chordctl watch` in the background (plain frames, since its output is a pipe),
# a frame every 0.7 s for at most 7 frames, while the next step changes the ring.
watch_start() {
  ctl watch --interval-ms 700 --count 7 | sed 's/^/  watch| /' &
  WATCH_PID=$!
}
watch_end() {
  if [[ -n "$WATCH_PID" ]]; then wait "$WATCH_PID" 2>/dev/null || true; fi
  WATCH_PID=""
}
# svg NAME: draws the ring into $OUT_DIR/ring-NAME.svg.
svg() {
  mkdir -p "$OUT_DIR"
  ctl ring --svg "$OUT_DIR/ring-$1.svg" || chord_die "chordctl ring --svg failed"
}

# shot N NAME [KEY]: a screenshot of the ring page after step N into $OUT_DIR/step-0N-NAME.png,
# looking KEY up when given. Headless Chromium loads the page, lets its events arrive
# for 4 s and saves the picture (--timeout, not --virtual-time-budget: virtual time stands
# still while the page's event stream is open); a failure is only noted.
shot() {
  [[ -n "$CHROMIUM" ]] || return 0
  mkdir -p "$OUT_DIR"
  local file url="$PAGE_URL${3:+#lookup=$3}"
  file="$OUT_DIR/$(printf 'step-%02d' "$1")-$2.png"
  rm -f "$file"
  if timeout 60 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --user-data-dir="$RUN_DIR/chromium" --window-size=1200,900 --timeout=4000 \
    --screenshot="$file" "$url" >"$RUN_DIR/chromium.log" 2>&1 && [[ -s "$file" ]]; then
    SHOTS+=("$file")
    echo "screenshot of the ring page: $file"
  else
    echo "note: no screenshot of $url (chromium failed; see $RUN_DIR/chromium.log)"
  fi
}

# ---- the demo -----------------------------------------------------------------------------

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/chord-demo.XXXXXX")"
BASE_PORT="$(find_base_port)"
NEW_PORT=$((BASE_PORT + NUM_NODES))
PAGE_URL="http://$HOST:$((BASE_PORT + HTTP_OFFSET))/"
echo "ring page: $PAGE_URL (open it in a browser to watch the demo live)"
if [[ -z "$CHROMIUM" ]]; then
  echo "note: chromium is not installed (apt-get install chromium), so no screenshots of the ring page are kept"
fi

chord_section "1. Start a ring of $NUM_NODES nodes on $HOST:$BASE_PORT..$((BASE_PORT + NUM_NODES - 1))"
cluster start "$NUM_NODES" --base-port "$BASE_PORT"
wait_ring "$NUM_NODES"
shot 1 ring-of-$NUM_NODES

chord_section "2. Store $NUM_KEYS keys (user-1 .. user-$NUM_KEYS)"
for ((i = 1; i <= NUM_KEYS; i++)); do
  ctl put "user-$i" "$(key_value "$i")" ||
    chord_die "put of user-$i failed; see the logs in $RUN_DIR"
done
echo "stored $NUM_KEYS keys through $HOST:$BASE_PORT"
wait_keys
ctl ring
svg before
shot 2 keys-stored

declare -A BEFORE=() AFTER_JOIN=() AFTER_LEAVE=()
record_owners BEFORE

chord_section "3. Add a 6th node on $HOST:$NEW_PORT (chordctl watch shows the keys flow)"
watch_start
sleep 0.8
cluster add
wait_ring $((NUM_NODES + 1))
wait_keys
watch_end
ctl ring
svg after-join
shot 3 node-joined
record_owners AFTER_JOIN

echo
echo "keys that moved (old owner -> new owner):"
moved=0
for ((i = 1; i <= NUM_KEYS; i++)); do
  key="user-$i"
  if [[ "${BEFORE[$key]}" != "${AFTER_JOIN[$key]}" ]]; then
    printf '  %-10s %s -> %s\n' "$key" "${BEFORE[$key]}" "${AFTER_JOIN[$key]}"
    moved=$((moved + 1))
    [[ "${AFTER_JOIN[$key]}" == "$HOST:$NEW_PORT" ]] ||
      chord_die "key $key moved to ${AFTER_JOIN[$key]}, but on a join keys may only move to the new node $HOST:$NEW_PORT"
  fi
done
[[ $moved -gt 0 ]] || echo "  (none: the new node's arc holds none of the $NUM_KEYS keys)"
echo "[OK] $moved of $NUM_KEYS keys moved, all to the new node $HOST:$NEW_PORT; no other key moved"

# The node that leaves: the one (other than the first, which chordctl talks to) owning most keys.
LEAVER=""
best=-1
for ((port = BASE_PORT + 1; port <= NEW_PORT; port++)); do
  n=0
  for key in "${!AFTER_JOIN[@]}"; do
    if [[ "${AFTER_JOIN[$key]}" == "$HOST:$port" ]]; then n=$((n + 1)); fi
  done
  if ((n > best)); then
    best=$n
    LEAVER=$port
  fi
done

chord_section "4. Node $HOST:$LEAVER (owner of $best keys) leaves gracefully (SIGTERM)"
cluster leave "$LEAVER"
wait_ring "$NUM_NODES"
wait_keys
ctl ring
record_owners AFTER_LEAVE

echo
echo "keys of $HOST:$LEAVER and where they went:"
handed=0
for ((i = 1; i <= NUM_KEYS; i++)); do
  key="user-$i"
  if [[ "${AFTER_JOIN[$key]}" == "$HOST:$LEAVER" ]]; then
    printf '  %-10s %s -> %s\n' "$key" "$HOST:$LEAVER" "${AFTER_LEAVE[$key]}"
    handed=$((handed + 1))
  fi
  [[ "${AFTER_LEAVE[$key]}" != "$HOST:$LEAVER" ]] ||
    chord_die "key $key is still routed to $HOST:$LEAVER after it left"
done
[[ $handed -gt 0 ]] || echo "  (none)"
shot 4 node-left

# The node that crashes: the owner of user-1 (not the first node, which chordctl talks to).
CRASHED="$(owner_of user-1)"
CRASHED="${CRASHED##*:}"
if [[ "$CRASHED" == "$BASE_PORT" ]]; then CRASHED=$((BASE_PORT + 1)); fi
[[ "$CRASHED" != "$LEAVER" ]] || CRASHED=$((BASE_PORT + 2))
chord_section "5. Node $HOST:$CRASHED crashes (SIGKILL): its keys have copies on the next 2 nodes"
watch_start
sleep 0.8
cluster kill "$CRASHED"
ctl check || echo "(chordctl check exits 1 while the ring has not noticed the crash yet)"
wait_ring $((NUM_NODES - 1))
watch_end
ctl check
echo "user-1 now: $(ctl get user-1) (owner $(owner_of user-1))"
wait_keys
ctl ring
svg after-crash
shot 5 node-crashed user-1

chord_section "6. Restart $HOST:$CRASHED on its data directory: it rejoins with its keys"
cluster restart "$CRASHED"
wait_ring "$NUM_NODES"
wait_keys
ctl ring
shot 6 node-restarted

chord_section "7. Read every key back"
bad=0
for ((i = 1; i <= NUM_KEYS; i++)); do
  want="$(key_value "$i")"
  if ! got="$(ctl get "user-$i" 2>&1)"; then
    echo "  [ERR] user-$i: $got"
    bad=$((bad + 1))
  elif [[ "$got" != "$want" ]]; then
    echo "  [ERR] user-$i: read \"$got\", expected \"$want\""
    bad=$((bad + 1))
  fi
done
if [[ $bad -gt 0 ]]; then
  chord_die "$bad of $NUM_KEYS keys did not read back correctly; see the logs in $RUN_DIR"
fi
echo "[OK] all $NUM_KEYS keys read back with their values"
echo "chordctl dump lists $(ctl dump | wc -l) keys"
shot 7 keys-read-back user-1

chord_section "8. Stop the ring"
cluster stop
DEMO_OK=1
chord_section "Demo finished"
echo "pictures of the ring: $(ls "$OUT_DIR"/ring-*.svg | tr '\n' ' ')(open them in a browser)"
if ((${#SHOTS[@]} > 0)); then
  echo "screenshots of the ring page, one per step:"
  printf '  %s\n' "${SHOTS[@]}"
fi

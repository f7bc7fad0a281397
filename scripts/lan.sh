#!/usr/bin/env bash
# A LAN on one machine for chord: N nodes, each in its own network namespace, joined by a
# bridge, with the faults a LAN produces. Needs root (network namespaces).
#
#   lan.sh up N [--vnodes V]        N nodes at 10.77.0.10..(10+N-1):4000, each in namespace
#                                   chordlan-<tag>-<i>; node 0 creates the ring, the others
#                                   join it. Clients run in the hub namespace (10.77.0.1),
#                                   which reaches every node, partitioned or not
#   lan.sh partition A B            cut the nodes of group A off from those of group B, both
#                                   ways (groups are comma-separated node numbers: 0,1,2)
#   lan.sh heal                     remove every cut
#   lan.sh slow I KBIT | fast I     limit what node I sends to KBIT kbit/s (a slow link: a
#                                   token bucket on its interface) / lift the limit
#   lan.sh pause I | resume I       SIGSTOP / SIGCONT node I
#   lan.sh kill I | restart I       SIGKILL node I / start it again on its address and data
#   lan.sh ctl [ARGS...]            chordctl from the hub (default --node: node 0)
#   lan.sh hub CMD [ARGS...]        run a command in the hub namespace (e.g. chord-lancheck)
#   lan.sh addrs                    the nodes' addresses, comma-separated
#   lan.sh status                   one line per node, then `chordctl check`
#   lan.sh down                     stop every node and delete the namespaces
#
# Environment:
#   CHORD_LAN_TAG    names this LAN's namespaces, so that several can exist (default "0")
#   CHORD_RUN_DIR    node state: nodes/<i>/{pid,log,data} (default ./run-lan)
#   CHORD_BIN_DIR    build directory with node/chord-node and tools/chordctl (default ./build)
#   CHORD_NODE_ARGS  extra chord-node arguments (e.g. --memory --stabilize-ms 300)
#   CHORD_WAIT_S     how long to wait for a node to answer or exit (default 20)
#
# Faults are made with blackhole routes (partitions), a token-bucket filter (slow links) and
# signals (pauses, crashes): this kernel has no netem. Processes are only signalled through the
# PIDs this script recorded.
set -euo pipefail

TAG="${CHORD_LAN_TAG:-0}"
RUN_DIR="${CHORD_RUN_DIR:-./run-lan}"
BIN_DIR="${CHORD_BIN_DIR:-./build}"
NODE_BIN="$BIN_DIR/node/chord-node"
CTL_BIN="$BIN_DIR/tools/chordctl"
NODE_ARGS="${CHORD_NODE_ARGS-}"
WAIT_S="${CHORD_WAIT_S:-20}"
PORT=4000
SUBNET=10.77.0
HUB="chordlan-$TAG-hub"
MAX_NODES=200

die() {
  printf 'lan.sh: %s\n' "$*" >&2
  exit 1
}

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  exit 2
}

[[ "$TAG" =~ ^[a-z0-9]{1,8}$ ]] || die "CHORD_LAN_TAG must be 1 to 8 lowercase letters or digits"
[[ "$WAIT_S" =~ ^[0-9]+$ && "$WAIT_S" -ge 1 && "$WAIT_S" -le 3600 ]] ||
  die "CHORD_WAIT_S must be a number of seconds from 1 to 3600"

ns_of() { printf 'chordlan-%s-%s' "$TAG" "$1"; }
ip_of() { printf '%s.%d' "$SUBNET" $((10 + $1)); }
addr_of() { printf '%s:%d' "$(ip_of "$1")" "$PORT"; }
node_dir() { printf '%s/nodes/%s' "$RUN_DIR" "$1"; }

node_count() {
  [[ -f "$RUN_DIR/count" ]] || die "no LAN is up in $RUN_DIR; start one with: lan.sh up N"
  cat "$RUN_DIR/count"
}

check_node() {
  local n
  n=$(node_count)
  [[ "$1" =~ ^[0-9]+$ ]] && (($1 < n)) || die "\"$1\" is not a node number (0 to $((n - 1)))"
}

check_root() {
  [[ $(id -u) -eq 0 ]] || die "network namespaces need root; run as root (or with sudo)"
  command -v ip >/dev/null || die "the ip command is missing; install iproute2"
}

check_binaries() {
  [[ -x "$NODE_BIN" ]] || die "$NODE_BIN not found; build first or set CHORD_BIN_DIR"
  [[ -x "$CTL_BIN" ]] || die "$CTL_BIN not found; build first or set CHORD_BIN_DIR"
}

# pid_of I: the recorded PID of node I if that process is still its chord-node, else "".
pid_of() {
  local f pid
  f="$(node_dir "$1")/pid"
  [[ -f "$f" ]] || return 0
  pid=$(cat "$f")
  if [[ "$pid" =~ ^[0-9]+$ ]] && [[ -r "/proc/$pid/cmdline" ]] &&
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "--listen $(addr_of "$1")"; then
    printf '%s' "$pid"
  fi
}

ctl() { ip netns exec "$HUB" "$CTL_BIN" "$@"; }

wait_answers() {
  local i=$1 deadline=$((SECONDS + WAIT_S))
  while ((SECONDS < deadline)); do
    if ctl --timeout-ms 2000 --node "$(addr_of "$i")" status >/dev/null 2>&1; then return 0; fi
    [[ -n "$(pid_of "$i")" ]] || die "node $i exited; see $(node_dir "$i")/log"
    sleep 0.2
  done
  die "node $i did not answer within $WAIT_S s; see $(node_dir "$i")/log"
}

# start_node I JOIN: starts node I in its namespace (JOIN empty: a new ring).
start_node() {
  local i=$1 join=$2 dir
  dir=$(node_dir "$i")
  mkdir -p "$dir"
  # shellcheck disable=SC2206
  local extra=($NODE_ARGS)
  # The namespaces' addresses are not loopback: the nodes need --insecure (plain TCP) on this
  # private test network that only this script's namespaces can reach.
  local args=(--listen "$(addr_of "$i")" --insecure)
  # RocksDB under the run directory unless the node keeps its records in memory.
  [[ " $NODE_ARGS " == *" --memory "* ]] || args+=(--data-dir "$dir/data")
  [[ -n "$join" ]] && args+=(--join "$join")
  printf '# chord-node %s\n' "${args[*]} ${extra[*]}" >>"$dir/log"
  ip netns exec "$(ns_of "$i")" "$NODE_BIN" "${args[@]}" "${extra[@]}" >>"$dir/log" 2>&1 &
  echo $! >"$dir/pid"
}

cmd_up() {
  check_root
  check_binaries
  local n=${1:-}
  [[ "$n" =~ ^[0-9]+$ && "$n" -ge 1 && "$n" -le $MAX_NODES ]] ||
    die "give the number of nodes, 1 to $MAX_NODES: lan.sh up N"
  shift
  if [[ "${1:-}" == "--vnodes" ]]; then
    [[ "${2:-}" =~ ^[0-9]+$ ]] || die "--vnodes needs a number"
    NODE_ARGS="$NODE_ARGS --vnodes $2"
  fi
  [[ ! -f "$RUN_DIR/count" ]] || die "a LAN is already up in $RUN_DIR; lan.sh down first"
  ip netns list | grep -q "^$HUB\b" && die "namespace $HUB exists; lan.sh down first (same CHORD_LAN_TAG)"
  mkdir -p "$RUN_DIR"
  echo "$n" >"$RUN_DIR/count"
  printf '%s\n' "$NODE_ARGS" >"$RUN_DIR/node-args"
  ip netns add "$HUB"
  ip -n "$HUB" link set lo up
  ip -n "$HUB" link add br0 type bridge
  ip -n "$HUB" addr add "$SUBNET.1/24" dev br0
  ip -n "$HUB" link set br0 up
  local i
  for ((i = 0; i < n; i++)); do
    local ns
    ns=$(ns_of "$i")
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$ns" link add eth0 type veth peer name "v$i" netns "$HUB"
    ip -n "$ns" addr add "$(ip_of "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$HUB" link set "v$i" master br0
    ip -n "$HUB" link set "v$i" up
  done
  start_node 0 ""
  wait_answers 0
  for ((i = 1; i < n; i++)); do
    start_node "$i" "$(addr_of 0)"
  done
  for ((i = 1; i < n; i++)); do wait_answers "$i"; done
  echo "started $n nodes: $(cmd_addrs); namespaces $(ns_of 0) .. $(ns_of $((n - 1))), hub $HUB"
}

cmd_addrs() {
  local n i out=""
  n=$(node_count)
  for ((i = 0; i < n; i++)); do out+="${out:+,}$(addr_of "$i")"; done
  printf '%s\n' "$out"
}

parse_group() {
  local g=$1 n=$2
  [[ "$g" =~ ^[0-9]+(,[0-9]+)*$ ]] || die "\"$g\" is not a group of node numbers like 0,1,2"
  local x
  for x in ${g//,/ }; do ((x < n)) || die "node $x does not exist (0 to $((n - 1)))"; done
  printf '%s' "${g//,/ }"
}

cmd_partition() {
  check_root
  [[ $# -eq 2 ]] || die "give two groups: lan.sh partition 0,1,2 3,4,5"
  local n a b i j
  n=$(node_count)
  a=$(parse_group "$1" "$n")
  b=$(parse_group "$2" "$n")
  for i in $a; do
    for j in $b; do
      ip -n "$(ns_of "$i")" route replace blackhole "$(ip_of "$j")/32"
      ip -n "$(ns_of "$j")" route replace blackhole "$(ip_of "$i")/32"
    done
  done
  echo "partitioned {$1} from {$2}"
}

cmd_heal() {
  check_root
  local n i
  n=$(node_count)
  for ((i = 0; i < n; i++)); do ip -n "$(ns_of "$i")" route flush type blackhole 2>/dev/null || true; done
  echo "healed every partition"
}

cmd_slow() {
  check_root
  local i=${1:-} kbit=${2:-}
  check_node "$i"
  [[ "$kbit" =~ ^[0-9]+$ && "$kbit" -ge 64 && "$kbit" -le 10000000 ]] ||
    die "give the rate in kbit/s, 64 to 10000000: lan.sh slow I KBIT"
  # Bursts of 32 KiB; what waits longer than 2 s for the bucket is dropped (TCP sends it again).
  ip netns exec "$(ns_of "$i")" tc qdisc replace dev eth0 root tbf rate "${kbit}kbit" \
    burst 32kb latency 2000ms
  echo "node $i sends at most $kbit kbit/s"
}

cmd_fast() {
  check_root
  local i=${1:-}
  check_node "$i"
  ip netns exec "$(ns_of "$i")" tc qdisc del dev eth0 root 2>/dev/null || true
  echo "node $i sends at full speed"
}

signal_node() {
  local sig=$1 i=$2 pid
  check_node "$i"
  pid=$(pid_of "$i")
  [[ -n "$pid" ]] || die "node $i is not running"
  kill "-$sig" "$pid"
}

cmd_restart() {
  check_root
  check_binaries
  local i=$1 n j join=""
  check_node "$i"
  [[ -z "$(pid_of "$i")" ]] || die "node $i is running; kill it first"
  n=$(node_count)
  NODE_ARGS=$(cat "$RUN_DIR/node-args")
  for ((j = 0; j < n; j++)); do
    if ((j != i)) && [[ -n "$(pid_of "$j")" ]]; then
      join+="${join:+,}$(addr_of "$j")"
    fi
  done
  start_node "$i" "$join"
  wait_answers "$i"
  echo "restarted node $i ($(addr_of "$i"))"
}

cmd_status() {
  local n i pid
  n=$(node_count)
  for ((i = 0; i < n; i++)); do
    pid=$(pid_of "$i")
    if [[ -z "$pid" ]]; then
      printf 'node %d %s: not running\n' "$i" "$(addr_of "$i")"
    elif [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == "T" ]]; then
      printf 'node %d %s: paused (pid %s)\n' "$i" "$(addr_of "$i")" "$pid"
    else
      printf 'node %d %s: running (pid %s)\n' "$i" "$(addr_of "$i")" "$pid"
    fi
  done
  ctl --node "$(addr_of 0)" check || true
}

cmd_down() {
  check_root
  local n=0 i pid deadline
  [[ -f "$RUN_DIR/count" ]] && n=$(cat "$RUN_DIR/count")
  for ((i = 0; i < n; i++)); do
    pid=$(pid_of "$i")
    [[ -n "$pid" ]] && { kill -CONT "$pid" 2>/dev/null || true; kill -TERM "$pid" 2>/dev/null || true; }
  done
  deadline=$((SECONDS + 10))
  for ((i = 0; i < n; i++)); do
    while [[ -n "$(pid_of "$i")" ]] && ((SECONDS < deadline)); do sleep 0.1; done
    pid=$(pid_of "$i")
    [[ -n "$pid" ]] && kill -KILL "$pid" 2>/dev/null || true
  done
  for ((i = 0; i < n; i++)); do ip netns del "$(ns_of "$i")" 2>/dev/null || true; done
  ip netns del "$HUB" 2>/dev/null || true
  rm -f "$RUN_DIR/count"
  echo "stopped $n nodes and deleted their namespaces"
}

[[ $# -ge 1 ]] || usage
command=$1
shift
case "$command" in
up) cmd_up "$@" ;;
partition) cmd_partition "$@" ;;
heal) cmd_heal ;;
slow) cmd_slow "$@" ;;
fast) cmd_fast "${1:-}" ;;
pause) signal_node STOP "${1:-}" ;;
resume) signal_node CONT "${1:-}" ;;
kill) signal_node KILL "${1:-}" ;;
restart) cmd_restart "${1:-}" ;;
ctl)
  check_root
  if [[ " $* " == *" --node "* ]]; then ctl "$@"; else ctl --node "$(addr_of 0)" "$@"; fi
  ;;
hub)
  check_root
  # exec: the caller's $! is then the command itself, which a kill reaches.
  exec ip netns exec "$HUB" "$@"
  ;;
addrs) cmd_addrs ;;
status) cmd_status ;;
down) cmd_down ;;
*) usage ;;
esac

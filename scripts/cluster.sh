#!/usr/bin/env bash
# Runs a local chord ring of chord-node processes on 127.0.0.1, one per port.
#
#   cluster.sh start N [--base-port P] [--vnodes V] [--tls]
#                                        start N nodes on P..P+N-1 (default P = 4000), each
#                                        with V ring positions (default 1); the first creates
#                                        the ring, the others join it. --tls: make a cluster
#                                        CA and certificates in <run dir>/certs (scripts/
#                                        certs.sh) and run the ring with mutual TLS
#   cluster.sh env                       with --tls: the CHORD_TLS_* exports that make
#                                        chordctl and chord-bench an admin client of the ring
#                                        (eval "$(scripts/cluster.sh env)")
#   cluster.sh add                       start one more node on the next free port; it joins
#   cluster.sh kill PORT                 crash a node (SIGKILL)
#   cluster.sh restart PORT              start a stopped or crashed node again on its port and
#                                        data directory; it rejoins through a running node
#   cluster.sh leave PORT                graceful leave (SIGTERM), waits for it to exit
#   cluster.sh status                    one line per node, then `chordctl ring`
#   cluster.sh stop                      SIGTERM every node, SIGKILL what is left after 10 s
#
# Environment:
#   CHORD_RUN_DIR    where node state lives, nodes/<port>/{pid,log,data} (default ./run)
#   CHORD_BIN_DIR    the build directory holding node/chord-node and tools/chordctl
#                    (default ./build)
#   CHORD_NODE_ARGS  extra chord-node arguments (default none: each node keeps its records in
#                    RocksDB under nodes/<port>/data; pass --memory for in-memory nodes)
#   CHORD_WAIT_S     how long to wait for a node to answer or exit (default 20)
#   CHORD_HTTP_PORT_OFFSET
#                    when set, the node on port P also serves HTTP (the REST API and the
#                    ring page) on P + this offset (--http-listen); default none
#
# Processes are only ever signalled through the PIDs recorded in the run directory, and only
# after checking that the PID still is the chord-node started for that port.
set -euo pipefail

RUN_DIR="${CHORD_RUN_DIR:-./run}"
BIN_DIR="${CHORD_BIN_DIR:-./build}"
NODE_BIN="$BIN_DIR/node/chord-node"
CTL_BIN="$BIN_DIR/tools/chordctl"
NODE_ARGS="${CHORD_NODE_ARGS-}"
WAIT_S="${CHORD_WAIT_S:-20}"
HTTP_OFFSET="${CHORD_HTTP_PORT_OFFSET:-}"
HOST="127.0.0.1"
CERTS_SH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/certs.sh"
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
STOP_WAIT_S=10
MAX_NODES=1000

die() {
  printf 'cluster.sh: %s\n' "$*" >&2
  exit 1
}

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  exit 2
}

check_binaries() {
  [[ -x "$NODE_BIN" ]] ||
    die "$NODE_BIN not found; build first (cmake -S . -B build && cmake --build build) or set CHORD_BIN_DIR"
  [[ -x "$CTL_BIN" ]] ||
    die "$CTL_BIN not found; build first (cmake --build build --target chordctl) or set CHORD_BIN_DIR"
}

check_port() {
  if ! [[ "$1" =~ ^[1-9][0-9]{0,4}$ ]] || (($1 > 65535)); then
    die "\"$1\" is not a port number (1-65535)"
  fi
}

# The ports recorded in the run directory, ascending.
recorded_ports() {
  local dir
  [[ -d "$RUN_DIR/nodes" ]] || return 0
  for dir in "$RUN_DIR"/nodes/*/; do
    [[ -f "$dir/pid" ]] || continue
    basename "$dir"
  done | sort -n
}

node_pid() {
  cat "$RUN_DIR/nodes/$1/pid" 2>/dev/null || true
}

# True when the PID recorded for port $1 is still the chord-node listening on that port
# (not a zombie, not a recycled PID).
node_alive() {
  local pid
  pid="$(node_pid "$1")"
  [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
  local cmdline
  cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)"
  [[ "$cmdline" == *chord-node* && "$cmdline" == *"--listen $HOST:$1 "* ]]
}

alive_ports() {
  local port
  for port in $(recorded_ports); do
    if node_alive "$port"; then echo "$port"; fi
  done
}

port_in_use() { chord_port_taken "$HOST" "$1"; }

# With --tls: chordctl (here and for the user) is the admin client of the run's CA.
tls_on() { [[ -f "$RUN_DIR/tls" ]]; }
use_admin_credentials() {
  if tls_on; then
    export CHORD_TLS_CERT="$RUN_DIR/certs/client-admin.pem"
    export CHORD_TLS_KEY="$RUN_DIR/certs/client-admin.key"
    export CHORD_TLS_CA="$RUN_DIR/certs/ca.pem"
  fi
}

# True while the process launch() just started for port $1 runs (or has not yet exec'd
# chord-node: until then /proc shows the forked shell's command line, which node_alive would
# take for a dead node); false once it has exited, even if not yet reaped.
launched_alive() {
  local pid state
  pid="$(node_pid "$1")"
  [[ -n "$pid" ]] || return 1
  state="$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1 || true)"
  [[ -n "$state" && "$state" != Z ]]
}

# Waits until the node on port $1 (just started by launch) answers `chordctl status` and says
# it has joined.
wait_answering() {
  local port="$1" deadline=$((SECONDS + WAIT_S))
  while ((SECONDS < deadline)); do
    if ! launched_alive "$port"; then
      echo "--- last lines of $RUN_DIR/nodes/$port/log:" >&2
      tail -n 20 "$RUN_DIR/nodes/$port/log" >&2 || true
      die "the node on port $port exited during startup; see its log above"
    fi
    local out
    out="$("$CTL_BIN" --node "$HOST:$port" --timeout-ms 1000 status --json 2>/dev/null || true)"
    if [[ "$out" == *'"joined": true'* ]]; then
      return 0
    fi
    sleep 0.2
  done
  die "the node on port $port did not answer chordctl status as joined within ${WAIT_S} s; see $RUN_DIR/nodes/$port/log"
}

# launch PORT [JOIN_PORT]: starts one node in the background and records its PID.
launch() {
  local port="$1" join="${2:-}"
  local dir="$RUN_DIR/nodes/$port"
  if port_in_use "$port"; then
    die "port $port is already in use; pick another --base-port"
  fi
  mkdir -p "$dir"
  local args=(--listen "$HOST:$port")
  if [[ -n "$join" ]]; then args+=(--join "$HOST:$join"); fi
  if [[ -n "$HTTP_OFFSET" ]]; then
    [[ "$HTTP_OFFSET" =~ ^[1-9][0-9]{0,4}$ ]] ||
      die "CHORD_HTTP_PORT_OFFSET must be a positive number, not \"$HTTP_OFFSET\""
    local http_port=$((port + HTTP_OFFSET))
    check_port "$http_port"
    if port_in_use "$http_port"; then
      die "port $http_port (HTTP of the node on $port) is already in use; pick another --base-port or CHORD_HTTP_PORT_OFFSET"
    fi
    args+=(--http-listen "$HOST:$http_port")
  fi
  # shellcheck disable=SC2206  # NODE_ARGS is a word list on purpose
  args+=($NODE_ARGS)
  if [[ -f "$RUN_DIR/vnodes" ]]; then args+=(--vnodes "$(cat "$RUN_DIR/vnodes")"); fi
  if [[ " $NODE_ARGS " != *" --memory "* && " $NODE_ARGS " != *" --data-dir"* ]]; then
    args+=(--data-dir "$dir/data")
  fi
  if tls_on; then
    local certs="$RUN_DIR/certs" base="member-${HOST}_$port" vnodes=1
    if [[ -f "$RUN_DIR/vnodes" ]]; then vnodes="$(cat "$RUN_DIR/vnodes")"; fi
    if [[ ! -f "$certs/$base.pem" ]]; then
      bash "$CERTS_SH" member "$certs" "$HOST:$port" --vnodes "$vnodes" >/dev/null ||
        die "could not make the member certificate for $HOST:$port"
    fi
    args+=(--tls-cert "$certs/$base.pem" --tls-key "$certs/$base.key" --tls-ca "$certs/ca.pem")
  fi
  nohup "$NODE_BIN" "${args[@]}" </dev/null >>"$dir/log" 2>&1 &
  echo $! >"$dir/pid"
  printf 'started node %s:%s (pid %s)%s\n' "$HOST" "$port" "$!" "${join:+, joining via $HOST:$join}"
  wait_answering "$port"
}

cmd_start() {
  local n="" base=4000 vnodes=1 tls=0
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --tls)
        tls=1
        shift
        ;;
      --vnodes)
        [[ $# -ge 2 ]] || die "--vnodes needs a value"
        vnodes="$2"
        shift 2
        ;;
      --vnodes=*)
        vnodes="${1#*=}"
        shift
        ;;
      --base-port)
        [[ $# -ge 2 ]] || die "--base-port needs a value"
        base="$2"
        shift 2
        ;;
      --base-port=*)
        base="${1#*=}"
        shift
        ;;
      *)
        [[ -z "$n" ]] || die "unexpected argument \"$1\"; usage: cluster.sh start N [--base-port P] [--vnodes V]"
        n="$1"
        shift
        ;;
    esac
  done
  if ! [[ "$n" =~ ^[1-9][0-9]{0,3}$ ]] || ((n > MAX_NODES)); then
    die "start needs a node count from 1 to $MAX_NODES; usage: cluster.sh start N [--base-port P] [--vnodes V]"
  fi
  check_port "$base"
  check_port $((base + n - 1))
  check_binaries
  if [[ -n "$(alive_ports)" ]]; then
    die "nodes are already running in $RUN_DIR; run cluster.sh stop first (or set CHORD_RUN_DIR)"
  fi
  if ! [[ "$vnodes" =~ ^[1-9][0-9]?$ ]] || ((vnodes > 64)); then
    die "--vnodes must be a number from 1 to 64"
  fi
  rm -rf "$RUN_DIR/nodes" "$RUN_DIR/vnodes" "$RUN_DIR/tls" "$RUN_DIR/certs"
  unset CHORD_TLS_CERT CHORD_TLS_KEY CHORD_TLS_CA  # a plain ring needs none
  mkdir -p "$RUN_DIR/nodes"
  if ((vnodes > 1)); then echo "$vnodes" >"$RUN_DIR/vnodes"; fi
  if ((tls)); then
    bash "$CERTS_SH" ca "$RUN_DIR/certs" >/dev/null || die "could not make the cluster CA"
    for role in admin write read; do
      bash "$CERTS_SH" client "$RUN_DIR/certs" "$role" --role "$role" >/dev/null ||
        die "could not make the $role client certificate"
    done
    touch "$RUN_DIR/tls"
    use_admin_credentials
    echo "mutual TLS: cluster CA and certificates in $RUN_DIR/certs"
  fi
  local i
  launch "$base"
  for ((i = 1; i < n; i++)); do
    launch $((base + i)) "$base"
  done
  echo "$n node(s) running on $HOST:$base..$((base + n - 1)); run directory $RUN_DIR"
  if ((tls)); then
    echo "for chordctl and chord-bench as an admin client: eval \"\$(scripts/cluster.sh env)\""
  fi
}

cmd_env() {
  tls_on || die "the ring in $RUN_DIR runs without TLS; chordctl needs no credentials"
  printf 'export CHORD_TLS_CERT=%q CHORD_TLS_KEY=%q CHORD_TLS_CA=%q\n' \
    "$(realpath "$RUN_DIR/certs/client-admin.pem")" "$(realpath "$RUN_DIR/certs/client-admin.key")" \
    "$(realpath "$RUN_DIR/certs/ca.pem")"
}

cmd_add() {
  check_binaries
  local alive=() recorded=() port tries
  mapfile -t alive < <(alive_ports)
  [[ ${#alive[@]} -gt 0 ]] || die "no node is running in $RUN_DIR; run cluster.sh start N first"
  mapfile -t recorded < <(recorded_ports)
  port=$((recorded[${#recorded[@]} - 1] + 1))
  for ((tries = 0; tries < 100; tries++)); do
    if ! port_in_use "$port" && [[ ! -e "$RUN_DIR/nodes/$port" ]]; then break; fi
    port=$((port + 1))
  done
  check_port "$port"
  launch "$port" "${alive[0]}"
}

cmd_kill() {
  [[ $# -eq 1 ]] || die "usage: cluster.sh kill PORT"
  check_port "$1"
  local port="$1" pid
  node_alive "$port" || die "no running node on port $port in $RUN_DIR; see cluster.sh status"
  pid="$(node_pid "$port")"
  kill -KILL "$pid"
  local deadline=$((SECONDS + WAIT_S))
  while node_alive "$port" && ((SECONDS < deadline)); do sleep 0.1; done
  echo "killed node $HOST:$port (pid $pid, SIGKILL)"
}

cmd_restart() {
  [[ $# -eq 1 ]] || die "usage: cluster.sh restart PORT"
  check_port "$1"
  check_binaries
  local port="$1" alive=() p join=""
  [[ -d "$RUN_DIR/nodes/$port" ]] || die "no node was ever started on port $port in $RUN_DIR; see cluster.sh status"
  node_alive "$port" && die "the node on port $port is still running; kill or leave it first"
  mapfile -t alive < <(alive_ports)
  for p in "${alive[@]}"; do
    if [[ "$p" != "$port" ]]; then
      join="$p"
      break
    fi
  done
  launch "$port" "$join"
}

cmd_leave() {
  [[ $# -eq 1 ]] || die "usage: cluster.sh leave PORT"
  check_port "$1"
  local port="$1" pid
  node_alive "$port" || die "no running node on port $port in $RUN_DIR; see cluster.sh status"
  pid="$(node_pid "$port")"
  kill -TERM "$pid"
  local deadline=$((SECONDS + WAIT_S))
  while node_alive "$port"; do
    ((SECONDS < deadline)) ||
      die "node $HOST:$port (pid $pid) did not exit within ${WAIT_S} s of SIGTERM; see $RUN_DIR/nodes/$port/log, or crash it with cluster.sh kill $port"
    sleep 0.1
  done
  echo "node $HOST:$port (pid $pid) left the ring (SIGTERM)"
}

cmd_status() {
  local port first=""
  local ports
  ports="$(recorded_ports)"
  [[ -n "$ports" ]] || die "no nodes recorded in $RUN_DIR; run cluster.sh start N first"
  printf '%-7s %-9s %s\n' PORT PID ALIVE
  for port in $ports; do
    if node_alive "$port"; then
      printf '%-7s %-9s %s\n' "$port" "$(node_pid "$port")" yes
      [[ -n "$first" ]] || first="$port"
    else
      printf '%-7s %-9s %s\n' "$port" "$(node_pid "$port")" no
    fi
  done
  if [[ -z "$first" ]]; then
    echo "no node is alive"
    return 0
  fi
  echo
  [[ -x "$CTL_BIN" ]] || die "$CTL_BIN not found; build it or set CHORD_BIN_DIR"
  "$CTL_BIN" --node "$HOST:$first" ring
}

cmd_stop() {
  local ports port pid
  ports="$(alive_ports)"
  if [[ -z "$ports" ]]; then
    echo "no node is running in $RUN_DIR"
    return 0
  fi
  for port in $ports; do
    kill -TERM "$(node_pid "$port")" 2>/dev/null || true
  done
  local deadline=$((SECONDS + STOP_WAIT_S))
  while [[ -n "$(alive_ports)" ]] && ((SECONDS < deadline)); do sleep 0.2; done
  for port in $(alive_ports); do
    pid="$(node_pid "$port")"
    echo "node $HOST:$port (pid $pid) did not exit within ${STOP_WAIT_S} s of SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  done
  echo "stopped $(echo "$ports" | wc -w) node(s)"
}

main() {
  [[ $# -ge 1 ]] || usage
  use_admin_credentials
  local cmd="$1"
  shift
  case "$cmd" in
    start) cmd_start "$@" ;;
    env) cmd_env ;;
    add)
      [[ $# -eq 0 ]] || die "usage: cluster.sh add"
      cmd_add
      ;;
    kill) cmd_kill "$@" ;;
    restart) cmd_restart "$@" ;;
    leave) cmd_leave "$@" ;;
    status)
      [[ $# -eq 0 ]] || die "usage: cluster.sh status"
      cmd_status
      ;;
    stop)
      [[ $# -eq 0 ]] || die "usage: cluster.sh stop"
      cmd_stop
      ;;
    -h | --help | help) usage ;;
    *) die "unknown command \"$cmd\"; use start, add, kill, restart, leave, status or stop" ;;
  esac
}

main "$@"

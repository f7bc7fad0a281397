#!/usr/bin/env bash
# Side-by-side figures for chord and Redis on this machine: builds chord-node, chordctl and
# chord-bench in Release with profile-guided optimization into build-release/ (scripts/
# build_release.sh; installing missing packages, and redis-server and redis-tools, with
# apt-get), then measures, one after the other on 127.0.0.1:
#   redis-server (one process, no persistence) with redis-benchmark: SET and GET;
#   one chord-node (--memory, --replicas 1) with chord-bench: put and get, routed and --direct;
#   a 3-node chord ring (--memory, --replicas 3) with chord-bench: put and get, routed
#   round-robin over the three nodes and --direct to each key's owner, and routed put and get
#   at --consistency one, quorum and all (a table of its own, ratios to one);
#   the same 1-node and 3-node setups with mutual TLS (certificates from scripts/certs.sh,
#   chord-bench as an admin client), for the cost of TLS as a ratio to the plain runs;
#   one chord-node with --http-listen: gets of the same keys through the HTTP API with wrk
#   beside chord-bench's binary-protocol gets, as a ratio;
#   a 10-node ring (--replicas 3): routed puts by 16 clients;
#   memory: the same MEM_KEYS keys and values loaded into redis-server, one chord-node --memory
#   and one chord-node --data-dir (RocksDB), resident-memory growth per key;
#   data growth: 3 nodes, R=3, --memory and RocksDB, gets of SMALL_KEYS hot keys by 16 clients
#   after loading SMALL_KEYS and then BIG_KEYS keys (anti-entropy on its default period);
#   COST_ROUNDS paired rounds of the rows the cost targets compare (redis SET and GET, one
#   chord-node's put and get, a 3-node ring's direct put and get), one right after the other,
#   with the GET load split over three redis-servers (one redis-benchmark each), the same GETs
#   sent by chord-bench --redis to one redis-server and spread by key over three (every client
#   to every server, as a ring's direct gets; not with PIPELINE above 1) and its SETs to the
#   one redis-server (the same client as chord's rows), and the 3-node ring's direct put and
#   get with its nodes under --sched batch (SCHED_BATCH; every other run uses chord-node's
#   default, the policy it is started with), as references;
# all with the same client count (and client threads), value size and key space. Prints a table
# of ops/s and latency percentiles with the ratio of each chord figure to Redis's (chord /
# redis), and the cost table of issue 16: server CPU microseconds per operation (utime + stime
# of every server process from /proc/PID/stat before and after the run, over the operations
# served: measured the same way for redis-server and chord-node) beside ops/s and latency,
# with ratios to Redis. There are no thresholds: absolute figures on a shared machine are noise;
# CPU per operation and bytes per key swing far less than throughput, and the ratios are the
# result.
# Every process it starts is stopped by PID on any exit.
#
# Environment:
#   CLIENTS         concurrent clients of every run (default 16)
#   BENCH_SECONDS   measured seconds of every run (default 5)
#   WARMUP_S        chord-bench warm-up seconds before each measured window (default 1)
#   VALUE_SIZE      bytes per value (default 100)
#   KEYS            key space (default 10000)
#   PIPELINE        requests in flight per connection, chord-bench --pipeline and
#                   redis-benchmark -P (default 1)
#   MEM_KEYS        keys loaded for the memory table (default 200000)
#   SMALL_KEYS      keys loaded, and hot keys read, in the data-growth table (default 1000)
#   BIG_KEYS        keys loaded in the data-growth table's large runs (default 1000000)
#   COST_ROUNDS     paired rounds of the cost targets (default 3, at most 20; 0 skips them):
#                   each round measures redis SET and GET, the GET load split over three
#                   redis-servers and chord-bench --redis's SETs and GETs of one
#                   redis-server and its GETs spread over three (references), one
#                   chord-node's put and get, a 3-node ring's direct put and get, and the
#                   same ring with --sched batch (a reference; which ring goes first
#                   alternates by round) one right after the other; a table gives each
#                   round's CPU ratios and their medians
#   WAIT_S          bound of every wait for a process to be ready, in seconds (default 30)
#   CHORD_BIN_DIR   use the binaries of this build directory and skip installing and building
#   CHORD_PGO       0: build plain Release, without the profile (scripts/build_release.sh)
#   JOBS            parallel build jobs (default: number of CPUs)
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$CHORD_ROOT"

CLIENTS="${CLIENTS:-16}"
BENCH_SECONDS="${BENCH_SECONDS:-5}"
WARMUP_S="${WARMUP_S:-1}"
VALUE_SIZE="${VALUE_SIZE:-100}"
KEYS="${KEYS:-10000}"
PIPELINE="${PIPELINE:-1}"
MEM_KEYS="${MEM_KEYS:-200000}"
SMALL_KEYS="${SMALL_KEYS:-1000}"
BIG_KEYS="${BIG_KEYS:-1000000}"
WAIT_S="${WAIT_S:-30}"
COST_ROUNDS="${COST_ROUNDS:-3}"
HOST=127.0.0.1
REDIS_PACKAGES=(redis-server redis-tools)
# redis-benchmark gets as many client threads as chord-bench (one per client; it allows 500),
# so that neither side's client gets a smaller share of the CPUs.
REDIS_THREADS=$((CLIENTS < 500 ? CLIENTS : 500))

[[ "$CLIENTS" =~ ^[0-9]+$ && "$CLIENTS" -ge 1 && "$CLIENTS" -le 1000 ]] ||
  chord_die "CLIENTS must be a number from 1 to 1000"
[[ "$BENCH_SECONDS" =~ ^[0-9]+$ && "$BENCH_SECONDS" -ge 1 && "$BENCH_SECONDS" -le 3600 ]] ||
  chord_die "BENCH_SECONDS must be a whole number of seconds from 1 to 3600"
[[ "$WARMUP_S" =~ ^[0-9]+$ && "$WARMUP_S" -le 600 ]] ||
  chord_die "WARMUP_S must be a whole number of seconds from 0 to 600"
[[ "$VALUE_SIZE" =~ ^[0-9]+$ && "$VALUE_SIZE" -ge 1 && "$VALUE_SIZE" -le 1048576 ]] ||
  chord_die "VALUE_SIZE must be a number of bytes from 1 to 1048576"
[[ "$KEYS" =~ ^[0-9]+$ && "$KEYS" -ge 1 && "$KEYS" -le 10000000 ]] ||
  chord_die "KEYS must be a number from 1 to 10000000"
[[ "$PIPELINE" =~ ^[0-9]+$ && "$PIPELINE" -ge 1 && "$PIPELINE" -le 1024 ]] ||
  chord_die "PIPELINE must be a number from 1 to 1024"
for var in MEM_KEYS SMALL_KEYS BIG_KEYS; do
  [[ "${!var}" =~ ^[0-9]+$ && "${!var}" -ge 1 && "${!var}" -le 10000000 ]] ||
    chord_die "$var must be a number from 1 to 10000000"
done
[[ "$WAIT_S" =~ ^[0-9]+$ && "$WAIT_S" -ge 1 && "$WAIT_S" -le 3600 ]] ||
  chord_die "WAIT_S must be a number of seconds from 1 to 3600"
[[ "$COST_ROUNDS" =~ ^[0-9]+$ && "$COST_ROUNDS" -le 20 ]] ||
  chord_die "COST_ROUNDS must be a number of rounds from 0 to 20"

# ---- processes: every one started here is stopped by PID on exit -----------------------------

PIDS=()
RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/chord-bench.XXXXXX")"

# stop_pids PID...: SIGTERM, up to 5 s to exit, then SIGKILL; reaps each.
stop_pids() {
  local pid i
  for pid in "$@"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "$@"; do
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ ${#PIDS[@]} -gt 0 ]]; then stop_pids "${PIDS[@]}"; fi
  PIDS=()
  rm -rf "$RUN_DIR"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# stop_all: stops every process started so far (between the measured setups).
stop_all() {
  if [[ ${#PIDS[@]} -gt 0 ]]; then stop_pids "${PIDS[@]}"; fi
  PIDS=()
}

USED_PORTS=" "
# free_port: sets FREE_PORT to a 127.0.0.1 port nothing listens on now and not handed out
# before by this script, below the kernel's ephemeral range (so that no client connection holds
# it by the time the server binds it). Called in this shell, not in $(...), so that USED_PORTS
# keeps what it handed out.
EPHEMERAL_LOW="$(chord_ephemeral_low)"
free_port() {
  local port try
  for ((try = 0; try < 200; try++)); do
    port=$((10000 + RANDOM % (EPHEMERAL_LOW - 10000)))
    [[ "$USED_PORTS" == *" $port "* ]] && continue
    if ! (exec 3<>"/dev/tcp/$HOST/$port") 2>/dev/null; then
      USED_PORTS+="$port "
      FREE_PORT="$port"
      return 0
    fi
  done
  chord_die "found no free port on $HOST"
}

# wait_for DESCRIPTION PID COMMAND...: runs COMMAND every 0.1 s until it succeeds, at most
# WAIT_S seconds; dies if PID exits meanwhile or time runs out.
wait_for() {
  local what="$1" pid="$2"
  shift 2
  local deadline=$((SECONDS + WAIT_S))
  while ((SECONDS < deadline)); do
    kill -0 "$pid" 2>/dev/null || chord_die "$what exited early; see its log in $RUN_DIR"
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  chord_die "$what was not ready within $WAIT_S s; see its log in $RUN_DIR"
}

# ---- building ------------------------------------------------------------------------------

if [[ -n "${CHORD_BIN_DIR:-}" ]]; then
  BIN_DIR="$(cd "$CHORD_BIN_DIR" && pwd)"
  chord_section "Using the binaries in $BIN_DIR"
else
  # Installs what is missing; Release, compiled a second time with the profile of a short
  # training load (README "Built with a profile"); CHORD_PGO=0 builds it without.
  "$CHORD_ROOT/scripts/build_release.sh" build-release
  BIN_DIR="$CHORD_ROOT/build-release"
fi
NODE_BIN="$BIN_DIR/node/chord-node"
CTL="$BIN_DIR/tools/chordctl"
BENCH="$BIN_DIR/tools/chord-bench"
for bin in "$NODE_BIN" "$CTL" "$BENCH"; do
  [[ -x "$bin" ]] || chord_die "$bin is missing; build it first (or unset CHORD_BIN_DIR)"
done
# The paired rounds' chord-bench --redis references need a chord-bench that has --redis (an
# older build in CHORD_BIN_DIR has not: those two columns are then "-").
REDIS_SPREAD_OK=0
if [[ "$("$BENCH" --help 2>/dev/null)" == *--redis* ]]; then REDIS_SPREAD_OK=1; fi

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-benchmark >/dev/null 2>&1 ||
  ! command -v redis-cli >/dev/null 2>&1; then
  chord_section "Installing ${REDIS_PACKAGES[*]}"
  chord_apt_install "${REDIS_PACKAGES[@]}"
fi
REDIS_VERSION="$(redis-server --version | sed -n 's/.*v=\([0-9.]*\).*/\1/p')"

# ---- results -------------------------------------------------------------------------------

declare -A OPS P50 P99 P999 MAXUS HOPS ERRORS CPU BPK USER_CPU SYS_CPU CALLS SLEEPS

# json_number FIELD JSON: a number field of chord-bench's JSON, "" when null or absent.
json_number() {
  local v
  v="$(chord_json_field "$1" "$2")"
  [[ "$v" == null ]] && v=""
  echo "$v"
}

CLK_TCK="$(getconf CLK_TCK)"
PAGE_SIZE="$(getconf PAGESIZE)"
# proc_split PID: "USER_S SYSTEM_S CALLS SLEEPS" of PID, as chord-bench reads them for
# --server-pid: its utime and stime in seconds (/proc/PID/stat; the command name may hold
# spaces, so fields are counted after its closing parenthesis), its read- and write-family
# system calls (syscr + syscw of /proc/PID/io) and its threads' sleeps (voluntary_ctxt_switches
# of /proc/PID/task/*/status); "-" for a figure that cannot be read.
proc_split() {
  local times calls sleeps
  times="$(awk -v tck="$CLK_TCK" '{ sub(/^.*\) /, ""); printf "%.6f %.6f", $12 / tck, $13 / tck }' \
    "/proc/$1/stat")"
  calls="$(awk '$1 == "syscr:" || $1 == "syscw:" { n += $2; k++ }
    END { if (k == 2) printf "%.0f", n; else print "-" }' "/proc/$1/io" 2>/dev/null || echo -)"
  sleeps="$(cat /proc/"$1"/task/*/status 2>/dev/null |
    awk '$1 == "voluntary_ctxt_switches:" { n += $2; k++ }
      END { if (k) printf "%.0f", n; else print "-" }')"
  echo "$times ${calls:--} ${sleeps:--}"
}
# per_op A B N SCALE: (B - A) * SCALE / N with 3 decimals; "" when A or B is unknown ("-" or
# empty) or N is not positive.
per_op() {
  awk -v a="$1" -v b="$2" -v n="$3" -v s="$4" 'BEGIN {
    if (a == "-" || b == "-" || a == "" || b == "" || n <= 0) exit
    printf "%.3f", (b - a) * s / n }'
}
# proc_rss PID: resident bytes of PID (/proc/PID/statm).
proc_rss() { awk -v page="$PAGE_SIZE" '{ printf "%d", $2 * page }' "/proc/$1/statm"; }

# CHORD_EXTRA_ARGS: added to every chord-bench run (e.g. --hot-keys).
CHORD_EXTRA_ARGS=()
# run_chord ROW BENCH_ARGS...: one chord-bench run, recorded under ROW. The servers' CPU time
# and memory are read from /proc/PID/stat of every process started (--server-pid), as for
# redis-server.
run_chord() {
  local row="$1" out pid pid_args=()
  shift
  for pid in "${PIDS[@]}"; do pid_args+=(--server-pid "$pid"); done
  echo "chord-bench $* ${CHORD_EXTRA_ARGS[*]} (row: $row)"
  out="$(timeout --kill-after=5 $((WARMUP_S + BENCH_SECONDS + 900)) "$BENCH" \
    --clients "$CLIENTS" --seconds "${RUN_SECONDS:-$BENCH_SECONDS}" \
    --warmup-s "${RUN_WARMUP_S:-$WARMUP_S}" --keys "$KEYS" --value-size "$VALUE_SIZE" \
    --pipeline "$PIPELINE" --json \
    "${pid_args[@]}" "${CHORD_EXTRA_ARGS[@]}" "$@")" ||
    chord_die "chord-bench failed for row \"$row\" (exit $?)"
  echo "  $out"
  OPS[$row]="$(chord_json_field ops_per_sec "$out")"
  P50[$row]="$(chord_json_field p50_us "$out")"
  P99[$row]="$(chord_json_field p99_us "$out")"
  P999[$row]="$(chord_json_field p999_us "$out")"
  MAXUS[$row]="$(chord_json_field max_us "$out")"
  HOPS[$row]="$(chord_json_field mean_hops "$out")"
  ERRORS[$row]="$(chord_json_field errors "$out")"
  CPU[$row]="$(json_number server_cpu_us_per_op "$out")"
  USER_CPU[$row]="$(json_number server_user_us_per_op "$out")"
  SYS_CPU[$row]="$(json_number server_sys_us_per_op "$out")"
  CALLS[$row]="$(json_number server_syscalls_per_op "$out")"
  SLEEPS[$row]="$(json_number server_sleeps_per_op "$out")"
  BPK[$row]="$(json_number bytes_per_key "$out")"
}

# redis_csv_field TEST FIELD CSV: FIELD (a header name) of the line of TEST in redis-benchmark's
# --csv output.
redis_csv_field() {
  tr -d '"\r' <<<"$3" | awk -F, -v test="$1" -v field="$2" '
    $1 == "test" { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $1 == test && (field in col) { print $(col[field]); exit }'
}

# run_redis ROW TEST REQUESTS PORT PID: one redis-benchmark run of TEST (SET or GET); the
# server's CPU time per request from /proc/PID/stat before and after.
run_redis() {
  local row="$1" test="$2" n="$3" port="$4" pid="$5" out p50ms p99ms line
  local lower u0 s0 c0 z0 u1 s1 c1 z1
  lower="$(tr '[:upper:]' '[:lower:]' <<<"$test")"
  echo "redis-benchmark -t $lower -n $n -c $CLIENTS --threads $REDIS_THREADS -d $VALUE_SIZE" \
    "-r $KEYS -P $PIPELINE (row: $row)"
  read -r u0 s0 c0 z0 <<<"$(proc_split "$pid")"
  out="$(timeout --kill-after=5 $((BENCH_SECONDS * 10 + 120)) redis-benchmark -h "$HOST" \
    -p "$port" -t "$lower" -n "$n" -c "$CLIENTS" --threads "$REDIS_THREADS" -d "$VALUE_SIZE" \
    -r "$KEYS" -P "$PIPELINE" --csv)" ||
    chord_die "redis-benchmark failed for row \"$row\""
  read -r u1 s1 c1 z1 <<<"$(proc_split "$pid")"
  USER_CPU[$row]="$(per_op "$u0" "$u1" "$n" 1e6)"
  SYS_CPU[$row]="$(per_op "$s0" "$s1" "$n" 1e6)"
  CALLS[$row]="$(per_op "$c0" "$c1" "$n" 1)"
  SLEEPS[$row]="$(per_op "$z0" "$z1" "$n" 1)"
  CPU[$row]="$(awk -v a="$u0 $s0" -v b="$u1 $s1" -v n="$n" 'BEGIN {
    split(a, x, " "); split(b, y, " "); printf "%.2f", (y[1] + y[2] - x[1] - x[2]) * 1e6 / n }')"
  while IFS= read -r line; do echo "  $line"; done <<<"$out"
  OPS[$row]="$(redis_csv_field "$test" rps "$out")"
  p50ms="$(redis_csv_field "$test" p50_latency_ms "$out")"
  p99ms="$(redis_csv_field "$test" p99_latency_ms "$out")"
  [[ -n "${OPS[$row]}" ]] || chord_die "could not read requests per second from redis-benchmark's output"
  P50[$row]="$(awk -v v="$p50ms" 'BEGIN { if (v != "") printf "%.1f", v * 1000 }')"
  P99[$row]="$(awk -v v="$p99ms" 'BEGIN { if (v != "") printf "%.1f", v * 1000 }')"
  P999[$row]=""
  HOPS[$row]=""
  ERRORS[$row]=""
}

# run_redis_split ROW REQUESTS: the load of one GET run spread over three redis-servers, as a
# 3-node ring spreads a direct get's: one redis-benchmark process per server, all at once,
# CLIENTS clients in all (fewer servers when CLIENTS < 3), REQUESTS in all, after the same
# warm-up and SET load as the single server's GET run had (so the keys are there); the
# servers' CPU time and counters summed. It shows what splitting one server's work over
# several processes costs on this machine, whatever the server (a reference for the 3-node
# get's target).
# split_sum PID...: "CPU_S USER_S SYSTEM_S CALLS SLEEPS" summed over the PIDs (proc_split of
# each; CPU_S = USER_S + SYSTEM_S); CALLS and SLEEPS are "-" when any process's could not be
# read.
split_sum() {
  local pid u s k z cpu=0 user=0 sys=0 calls=0 sleeps=0
  for pid in "$@"; do
    read -r u s k z <<<"$(proc_split "$pid")"
    cpu="$(awk -v a="$cpu" -v b="$u" -v c="$s" 'BEGIN { printf "%.6f", a + b + c }')"
    user="$(awk -v a="$user" -v b="$u" 'BEGIN { printf "%.6f", a + b }')"
    sys="$(awk -v a="$sys" -v b="$s" 'BEGIN { printf "%.6f", a + b }')"
    if [[ "$calls" != - && "$k" =~ ^[0-9]+$ && "$z" =~ ^[0-9]+$ ]]; then
      calls=$((calls + k)) sleeps=$((sleeps + z))
    else
      calls=- sleeps=-
    fi
  done
  echo "$cpu $user $sys $calls $sleeps"
}
run_redis_split() {
  local row="$1" i c pid servers=$((CLIENTS < 3 ? CLIENTS : 3)) ports=() pids=() bench_pids=()
  local each n cpu0 cpu1 u0 s0 c0 z0 u1 s1 c1 z1
  each=$(($2 / servers))
  n=$((each * servers))
  for ((i = 0; i < servers; i++)); do
    start_redis
    ports+=("$REDIS_PORT") pids+=("$REDIS_PID")
    redis_warmup >/dev/null
    timeout --kill-after=5 $((BENCH_SECONDS * 10 + 120)) redis-benchmark -h "$HOST" \
      -p "$REDIS_PORT" -t set -n $((REDIS_N[SET] / servers)) -c "$CLIENTS" \
      --threads "$REDIS_THREADS" -d "$VALUE_SIZE" -r "$KEYS" -P "$PIPELINE" -q >/dev/null ||
      chord_die "redis-benchmark's SET load of redis-server on port $REDIS_PORT failed"
  done
  echo "$servers x redis-benchmark -t get -n $each at once, one per redis-server, $CLIENTS" \
    "clients in all (row: $row)"
  read -r cpu0 u0 s0 c0 z0 <<<"$(split_sum "${pids[@]}")"
  for ((i = 0; i < servers; i++)); do
    c=$((CLIENTS / servers + (i < CLIENTS % servers ? 1 : 0)))
    timeout --kill-after=5 $((BENCH_SECONDS * 10 + 120)) redis-benchmark -h "$HOST" \
      -p "${ports[$i]}" -t get -n "$each" -c "$c" --threads "$c" -d "$VALUE_SIZE" -r "$KEYS" \
      -P "$PIPELINE" -q >/dev/null &
    bench_pids+=($!)
    PIDS+=($!)  # stopped with the servers if this run dies
  done
  for pid in "${bench_pids[@]}"; do
    wait "$pid" || chord_die "redis-benchmark failed for row \"$row\""
  done
  read -r cpu1 u1 s1 c1 z1 <<<"$(split_sum "${pids[@]}")"
  CPU[$row]="$(per_op "$cpu0" "$cpu1" "$n" 1e6)"
  USER_CPU[$row]="$(per_op "$u0" "$u1" "$n" 1e6)"
  SYS_CPU[$row]="$(per_op "$s0" "$s1" "$n" 1e6)"
  CALLS[$row]="$(per_op "$c0" "$c1" "$n" 1)"
  SLEEPS[$row]="$(per_op "$z0" "$z1" "$n" 1)"
  echo "  server CPU ${CPU[$row]} us/op over the $servers"
  stop_all
}

# ---- Redis ---------------------------------------------------------------------------------

MEASURE_START=$SECONDS
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"

# start_redis: one redis-server without persistence in the background; its port and PID in
# REDIS_PORT and REDIS_PID.
start_redis() {
  free_port
  REDIS_PORT="$FREE_PORT"
  redis-server --port "$REDIS_PORT" --bind "$HOST" --save '' --appendonly no --daemonize no \
    --dir "$RUN_DIR" --logfile "$RUN_DIR/redis-$REDIS_PORT.log" &
  REDIS_PID=$!
  PIDS+=("$REDIS_PID")
  wait_for "redis-server" "$REDIS_PID" redis-cli -h "$HOST" -p "$REDIS_PORT" ping
}

chord_section "redis-server $REDIS_VERSION: 1 process, no persistence"
start_redis
# redis_warmup: a short run of SET and GET against REDIS_PORT (the warm-up of a new
# redis-server, as chord-bench's --warmup-s is chord's); prints redis-benchmark's CSV.
redis_warmup() {
  timeout --kill-after=5 120 redis-benchmark -h "$HOST" -p "$REDIS_PORT" -t set,get -n 20000 \
    -c "$CLIENTS" --threads "$REDIS_THREADS" -d "$VALUE_SIZE" -r "$KEYS" -P "$PIPELINE" --csv ||
    chord_die "redis-benchmark's warm-up against redis-server on port $REDIS_PORT failed"
}
# The warm-up is also the calibration: it sizes -n so that each test takes about BENCH_SECONDS.
calib="$(redis_warmup)"
declare -A REDIS_N  # requests of each redis-benchmark test (SET, GET)
for test in SET GET; do
  rps="$(redis_csv_field "$test" rps "$calib")"
  REDIS_N[$test]="$(awk -v r="${rps:-0}" -v s="$BENCH_SECONDS" \
    'BEGIN { n = int(r * s); if (n < 10000) n = 10000; if (n > 50000000) n = 50000000; print n }')"
  run_redis "redis $test" "$test" "${REDIS_N[$test]}" "$REDIS_PORT" "$REDIS_PID"
done

# Memory: MEM_KEYS keys key-0 ... with VALUE_SIZE-byte values (the keys and values chord-bench
# preloads), written through redis-cli --pipe into an empty database; resident growth per key.
redis-cli -h "$HOST" -p "$REDIS_PORT" flushall >/dev/null
sleep 1
rss0="$(proc_rss "$REDIS_PID")"
echo "redis-cli --pipe: SET key-0 .. key-$((MEM_KEYS - 1)) ($VALUE_SIZE-byte values)"
awk -v n="$MEM_KEYS" -v size="$VALUE_SIZE" 'BEGIN {
    v = sprintf("%*s", size, ""); gsub(/ /, "v", v)
    for (i = 0; i < n; i++) printf "*3\r\n$3\r\nSET\r\n$%d\r\nkey-%d\r\n$%d\r\n%s\r\n", length("key-" i), i, size, v
  }' | redis-cli -h "$HOST" -p "$REDIS_PORT" --pipe >"$RUN_DIR/redis-pipe.log" 2>&1 ||
  chord_die "redis-cli --pipe failed; see $RUN_DIR/redis-pipe.log"
loaded="$(redis-cli -h "$HOST" -p "$REDIS_PORT" dbsize)"
[[ "$loaded" == "$MEM_KEYS" ]] || chord_die "redis holds $loaded keys after loading $MEM_KEYS"
rss1="$(proc_rss "$REDIS_PID")"
BPK["redis"]="$(awk -v a="$rss0" -v b="$rss1" -v n="$MEM_KEYS" 'BEGIN { printf "%.1f", (b - a) / n }')"
echo "  resident memory $rss0 -> $rss1 bytes: ${BPK[redis]} bytes/key"
stop_all

# ---- one chord-node -------------------------------------------------------------------------

# start_node LOG REPLICAS PORT [JOIN]: one chord-node --memory in the background.
# With TLS=1 the node runs mutual TLS with a member certificate made for it in $CERTS.
TLS=0
ROCKSDB=0  # 1: chord-node --data-dir (RocksDB) instead of --memory
CERTS="$RUN_DIR/certs"
NODE_EXTRA_ARGS=()
# The scheduling policy every server inherits from this script (chrt's name for it).
SCHED_NAME="$({ chrt -p $$ 2>/dev/null || true; } | sed -n "s/.*scheduling policy: //p")"
SCHED_NAME="${SCHED_NAME:-unknown}"
# Whether a process started from here may put itself under SCHED_BATCH (--sched batch); when
# it may not (unprivileged under SCHED_IDLE, say), the paired rounds skip their batch rings.
BATCH_OK=0
chrt --batch 0 true 2>/dev/null && BATCH_OK=1
start_node() {
  local log="$1" replicas="$2" port="$3" join="${4:-}"
  local store=(--memory)
  ((ROCKSDB)) && store=(--data-dir "$RUN_DIR/data-$port")
  local args=(--listen "$HOST:$port" "${store[@]}" --replicas "$replicas" --log-level warn
    "${NODE_EXTRA_ARGS[@]}")
  [[ -n "$join" ]] && args+=(--join "$join")
  if ((TLS)); then
    bash scripts/certs.sh member "$CERTS" "$HOST:$port" >/dev/null
    args+=(--tls-cert "$CERTS/member-${HOST}_$port.pem" --tls-key "$CERTS/member-${HOST}_$port.key"
      --tls-ca "$CERTS/ca.pem")
  fi
  "$NODE_BIN" "${args[@]}" >"$log" 2>&1 &
  PIDS+=("$!")
}
node_joined() { "$CTL" --node "$1" --timeout-ms 1000 status --json | grep -q '"joined": true'; }

# start_joined_node REPLICAS [JOIN]: one chord-node (start_node) on a free port, waited for
# until it has joined; its address in NODE_ADDR.
start_joined_node() {
  free_port
  start_node "$RUN_DIR/node-$FREE_PORT.log" "$1" "$FREE_PORT" "${2:-}"
  NODE_ADDR="$HOST:$FREE_PORT"
  wait_for "chord-node on $NODE_ADDR" "${PIDS[-1]}" node_joined "$NODE_ADDR"
}

# start_ring N REPLICAS: N chord-nodes joined into one ring; their addresses in RING and
# RING_ARGS (--node ADDR each).
start_ring() {
  local n="$1" replicas="$2" i addr
  RING=()
  RING_ARGS=()
  for ((i = 0; i < n; i++)); do
    start_joined_node "$replicas" "${RING[0]:-}"
    RING+=("$NODE_ADDR")
  done
  wait_for "the $n-node ring" "${PIDS[0]}" \
    chord_ring_settled "$n" "$CTL" --node "${RING[0]}" --timeout-ms 1000
  for addr in "${RING[@]}"; do RING_ARGS+=(--node "$addr"); done
}

# bench_setups SUFFIX: the 1-node and the 3-node runs, rows named "... SUFFIX".
bench_setups() {
  local sfx="$1"
  chord_section "chord: 1 node, --memory --replicas 1$sfx"
  start_joined_node 1
  run_chord "chord 1 node R=1 put$sfx" --node "$NODE_ADDR" --op put
  run_chord "chord 1 node R=1 get$sfx" --node "$NODE_ADDR" --op get
  run_chord "chord 1 node R=1 direct put$sfx" --node "$NODE_ADDR" --op put --direct
  run_chord "chord 1 node R=1 direct get$sfx" --node "$NODE_ADDR" --op get --direct
  stop_all

  chord_section "chord: 3 nodes, --memory --replicas 3$sfx"
  start_ring 3 3
  run_chord "chord 3 nodes R=3 put$sfx" "${RING_ARGS[@]}" --op put
  run_chord "chord 3 nodes R=3 get$sfx" "${RING_ARGS[@]}" --op get
  run_chord "chord 3 nodes R=3 direct put$sfx" --node "${RING[0]}" --op put --direct
  run_chord "chord 3 nodes R=3 direct get$sfx" --node "${RING[0]}" --op get --direct
  if [[ -z $sfx ]]; then
    # Consistency levels side by side on the same ring (README "Consistency levels").
    local level
    for level in one quorum all; do
      run_chord "chord 3 nodes R=3 $level put" "${RING_ARGS[@]}" --op put --consistency "$level"
      run_chord "chord 3 nodes R=3 $level get" "${RING_ARGS[@]}" --op get --consistency "$level"
    done
  fi
  stop_all
}

bench_setups ""

# ---- 10 nodes, R=3: routed puts by 16 clients ------------------------------------------------

chord_section "chord: 10 nodes, --memory --replicas 3, 16 clients"
start_ring 10 3
saved_clients="$CLIENTS"
CLIENTS=16
run_chord "chord 10 nodes R=3 put" "${RING_ARGS[@]}" --op put
CLIENTS="$saved_clients"
stop_all

# ---- paired rounds: the cost targets, chord and Redis one right after the other ---------------

# One run per row is at the mercy of the machine's load, which moves the CPU ratios by a third
# from one run to the next. Each round measures the rows the targets compare within a minute
# or so, so its ratios compare figures taken under about the same load; the medians over the
# rounds are the figures to read.
for ((round = 1; round <= COST_ROUNDS; round++)); do
  chord_section "paired round $round of $COST_ROUNDS: redis-server, 1 chord-node, 3 chord-nodes"
  start_redis
  redis_warmup >/dev/null
  for test in SET GET; do
    run_redis "round $round redis $test" "$test" "${REDIS_N[$test]}" "$REDIS_PORT" "$REDIS_PID"
  done
  stop_all
  run_redis_split "round $round 3 redis GET" "${REDIS_N[GET]}"
  # The same GETs by chord-bench itself (--redis), against one redis-server and spread by key
  # over three, every client to every server as chord-bench --direct spreads a ring's gets;
  # and, on the one server, its SETs.
  if ((PIPELINE == 1 && REDIS_SPREAD_OK)); then
    for servers in 1 3; do
      redis_nodes=()
      for ((i = 0; i < servers; i++)); do
        start_redis
        redis_nodes+=(--node "$HOST:$REDIS_PORT")
      done
      if ((servers == 1)); then
        run_chord "round $round chord-bench redis SET x1" --redis "${redis_nodes[@]}" --op put
      fi
      run_chord "round $round chord-bench redis GET x$servers" --redis "${redis_nodes[@]}" --op get
      stop_all
    done
  fi
  start_joined_node 1
  # Put first, as in the single runs (chord-bench preloads the keys for gets).
  run_chord "round $round 1 node put" --node "$NODE_ADDR" --op put
  run_chord "round $round 1 node get" --node "$NODE_ADDR" --op get
  stop_all
  # The 3-node ring as started by default, and the same ring with --sched batch (README
  # "Scheduling") for reference; which of the two goes first alternates by round, so that a
  # drift of the machine's load does not favour either.
  order=(default batch)
  ((round % 2 == 0)) && order=(batch default)
  ((BATCH_OK)) || order=(default)
  for sched in "${order[@]}"; do
    sfx=""
    NODE_EXTRA_ARGS=()
    if [[ $sched == batch ]]; then
      sfx=", sched batch"
      NODE_EXTRA_ARGS=(--sched batch)
    fi
    start_ring 3 3
    run_chord "round $round 3 nodes direct put$sfx" --node "${RING[0]}" --op put --direct
    run_chord "round $round 3 nodes direct get$sfx" --node "${RING[0]}" --op get --direct
    stop_all
  done
  NODE_EXTRA_ARGS=()
done

# ---- memory per key: the same keys and values as redis -----------------------------------------

for ROCKSDB in 0 1; do
  if ((ROCKSDB)); then store_name="--data-dir (RocksDB)"; else store_name="--memory"; fi
  chord_section "chord: 1 node, $store_name --replicas 1: memory per key, $MEM_KEYS keys"
  start_joined_node 1
  saved_keys="$KEYS"
  KEYS="$MEM_KEYS"
  RUN_SECONDS=1 RUN_WARMUP_S=0 run_chord "chord memory $ROCKSDB" --node "$NODE_ADDR" --op get
  KEYS="$saved_keys"
  if ((ROCKSDB)); then
    # RocksDB's write amplification: bytes written to the disk over bytes of the records put.
    written="$(awk '/^write_bytes:/ { print $2 }' "/proc/${PIDS[-1]}/io" 2>/dev/null || true)"
    WRITE_AMP="$(awk -v w="${written:-}" -v n="$MEM_KEYS" -v size="$VALUE_SIZE" \
      'BEGIN { if (w == "") print "-"; else printf "%.2f", w / (n * (size + 10)) }')"
  fi
  stop_all
done
ROCKSDB=0

# ---- data growth: gets of hot keys after loading few and many keys ----------------------------------

for ROCKSDB in 0 1; do
  for loaded in "$SMALL_KEYS" "$BIG_KEYS"; do
    if ((ROCKSDB)); then store_name="rocksdb"; else store_name="memory"; fi
    chord_section "chord: 3 nodes, --$store_name, R=3: gets of $SMALL_KEYS hot keys after loading $loaded"
    start_ring 3 3
    saved_keys="$KEYS"
    saved_clients="$CLIENTS"
    KEYS="$loaded"
    CLIENTS=16
    CHORD_EXTRA_ARGS=(--hot-keys "$SMALL_KEYS")
    run_chord "growth $store_name $loaded" --node "${RING[0]}" --op get --direct
    CHORD_EXTRA_ARGS=()
    KEYS="$saved_keys"
    CLIENTS="$saved_clients"
    stop_all
  done
done
ROCKSDB=0

# The same with mutual TLS: chord-bench (and chordctl's readiness checks) as an admin client.
bash scripts/certs.sh ca "$CERTS" >/dev/null
bash scripts/certs.sh client "$CERTS" bench --role admin >/dev/null
export CHORD_TLS_CERT="$CERTS/client-bench.pem" CHORD_TLS_KEY="$CERTS/client-bench.key"
export CHORD_TLS_CA="$CERTS/ca.pem"
TLS=1
bench_setups " TLS"
unset CHORD_TLS_CERT CHORD_TLS_KEY CHORD_TLS_CA
TLS=0

# ---- HTTP: the same gets through the HTTP API, with wrk -----------------------------------------

# wrk_latency_us LABEL OUTPUT: the latency of LABEL ("50%", "99%") in wrk's --latency table, in
# microseconds.
wrk_latency_us() {
  awk -v label="$1" '$1 == label {
    v = $2; unit = v; sub(/[0-9.]+/, "", unit); sub(/[a-z]+$/, "", v)
    if (unit == "us") f = 1; else if (unit == "ms") f = 1000; else if (unit == "s") f = 1000000; else f = 0
    printf "%.1f", v * f; exit }' <<<"$2"
}

# run_wrk ROW URL: wrk GETs of random keys key-0 .. key-(KEYS-1) under URL for BENCH_SECONDS.
run_wrk() {
  local row="$1" url="$2" out script="$RUN_DIR/wrk_get.lua"
  cat >"$script" <<LUA
local keys = $KEYS
request = function()
  return wrk.format("GET", "/v1/keys/key-" .. math.random(0, keys - 1))
end
LUA
  echo "wrk -t $REDIS_THREADS -c $CLIENTS -d ${BENCH_SECONDS}s --latency $url (row: $row)"
  out="$(timeout --kill-after=5 $((BENCH_SECONDS + 60)) wrk -t "$REDIS_THREADS" -c "$CLIENTS" \
    -d "${BENCH_SECONDS}s" --latency -s "$script" "$url")" || chord_die "wrk failed for row \"$row\""
  while IFS= read -r line; do echo "  $line"; done <<<"$out"
  OPS[$row]="$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")"
  P50[$row]="$(wrk_latency_us 50% "$out")"
  P99[$row]="$(wrk_latency_us 99% "$out")"
  P999[$row]=""
  HOPS[$row]=""
  ERRORS[$row]="$(awk '/Non-2xx or 3xx responses:/ { print $NF }' <<<"$out")"
  [[ -n "${OPS[$row]}" ]] || chord_die "could not read requests per second from wrk's output"
}

chord_section "chord: 1 node, --memory --replicas 1, HTTP API: wrk beside chord-bench"
free_port
http_port="$FREE_PORT"
NODE_EXTRA_ARGS=(--http-listen "$HOST:$http_port")
start_joined_node 1
NODE_EXTRA_ARGS=()
# chord-bench's get run preloads the keys key-0 ... that wrk then reads.
run_chord "chord 1 node R=1 get (binary)" --node "$NODE_ADDR" --op get
run_wrk "chord 1 node R=1 get (HTTP)" "http://$HOST:$http_port"
stop_all

# ---- the table -------------------------------------------------------------------------------

# ratio A B: A / B with two decimals, "-" when either is missing or B is 0.
ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'
}
fmt() { awk -v v="$1" -v d="$2" 'BEGIN { if (v == "") print "-"; else printf "%.*f", d, v }'; }

chord_section "Results: $CLIENTS clients, $VALUE_SIZE-byte values, $KEYS keys, $BENCH_SECONDS s per run (loopback, $(nproc) CPUs)"
echo "ratios are chord / redis (same op: put vs SET, get vs GET); latencies in microseconds"
echo "(client threads: redis-benchmark --threads $REDIS_THREADS, chord-bench one per client)"
echo "measured in $((SECONDS - MEASURE_START)) s; load average before: $LOAD_BEFORE," \
  "after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown) (other load skews all figures)"
echo
printf '%-30s %10s %7s %9s %7s %9s %7s %9s %6s %7s\n' \
  setup ops/s ratio p50_us ratio p99_us ratio p999_us hops errors
for op in get put; do
  if [[ $op == get ]]; then redis_row="redis GET"; else redis_row="redis SET"; fi
  for row in "$redis_row" "chord 1 node R=1 $op" "chord 1 node R=1 direct $op" \
    "chord 3 nodes R=3 $op" "chord 3 nodes R=3 direct $op"; do
    printf '%-30s %10s %7s %9s %7s %9s %7s %9s %6s %7s\n' "$row" \
      "$(fmt "${OPS[$row]}" 0)" "$(ratio "${OPS[$row]}" "${OPS[$redis_row]}")" \
      "$(fmt "${P50[$row]}" 1)" "$(ratio "${P50[$row]}" "${P50[$redis_row]}")" \
      "$(fmt "${P99[$row]}" 1)" "$(ratio "${P99[$row]}" "${P99[$redis_row]}")" \
      "$(fmt "${P999[$row]}" 1)" "$(fmt "${HOPS[$row]}" 2)" "${ERRORS[$row]:--}"
  done
  echo
done

echo "the cost of mutual TLS: each TLS run beside the same run in the clear (ratio TLS / plain)"
printf '%-34s %10s %10s %7s %10s %10s %7s\n' setup plain_ops tls_ops ratio plain_p50 tls_p50 ratio
for op in get put; do
  for row in "chord 1 node R=1 $op" "chord 1 node R=1 direct $op" "chord 3 nodes R=3 $op" \
    "chord 3 nodes R=3 direct $op"; do
    printf '%-34s %10s %10s %7s %10s %10s %7s\n' "$row" \
      "$(fmt "${OPS[$row]}" 0)" "$(fmt "${OPS[$row TLS]}" 0)" "$(ratio "${OPS[$row TLS]}" "${OPS[$row]}")" \
      "$(fmt "${P50[$row]}" 1)" "$(fmt "${P50[$row TLS]}" 1)" "$(ratio "${P50[$row TLS]}" "${P50[$row]}")"
  done
done

echo
echo "the HTTP API: wrk GETs of the same keys beside chord-bench's binary gets on one node (ratio HTTP / binary)"
printf '%-34s %10s %7s %9s %7s %9s %7s %7s\n' setup ops/s ratio p50_us ratio p99_us ratio errors
base="chord 1 node R=1 get (binary)"
for row in "$base" "chord 1 node R=1 get (HTTP)"; do
  printf '%-34s %10s %7s %9s %7s %9s %7s %7s\n' "$row" \
    "$(fmt "${OPS[$row]}" 0)" "$(ratio "${OPS[$row]}" "${OPS[$base]}")" \
    "$(fmt "${P50[$row]}" 1)" "$(ratio "${P50[$row]}" "${P50[$base]}")" \
    "$(fmt "${P99[$row]}" 1)" "$(ratio "${P99[$row]}" "${P99[$base]}")" "${ERRORS[$row]:--}"
done

echo
echo "consistency levels on the 3-node ring, R=3, routed (ratio to consistency one)"
printf '%-34s %10s %7s %9s %7s %9s %7s %7s\n' setup ops/s ratio p50_us ratio p99_us ratio errors
for op in get put; do
  for level in one quorum all; do
    row="chord 3 nodes R=3 $level $op"
    base="chord 3 nodes R=3 one $op"
    printf '%-34s %10s %7s %9s %7s %9s %7s %7s\n' "$row" \
      "$(fmt "${OPS[$row]}" 0)" "$(ratio "${OPS[$row]}" "${OPS[$base]}")" \
      "$(fmt "${P50[$row]}" 1)" "$(ratio "${P50[$row]}" "${P50[$base]}")" \
      "$(fmt "${P99[$row]}" 1)" "$(ratio "${P99[$row]}" "${P99[$base]}")" "${ERRORS[$row]:--}"
  done
done

# ---- issue 16: cost per operation, chord beside Redis ------------------------------------------

echo
echo "cost per operation: server CPU microseconds per request (utime + stime of every server"
echo "process from /proc/PID/stat, before and after, over the requests served), $CLIENTS clients"
echo "(the 10-node row 16), pipeline $PIPELINE; cpu ratio: to redis GET for gets, to redis SET for puts;"
echo "user_us and sys_us split the CPU; calls/op: read- and write-family system calls per request"
echo "(/proc/PID/io); sleeps/op: the servers' voluntary context switches per request; every"
echo "server runs under the scheduling policy this script was started with ($SCHED_NAME), the"
echo "paired rounds' batch rings aside"
printf '%-38s %10s %11s %9s %8s %8s %8s %9s %9s %9s\n' setup ops/s cpu_us/op cpu_ratio user_us \
  sys_us calls/op sleeps/op p50_us p99_us
cost_row() {
  local label="$1" row="$2" base="$3"
  printf '%-38s %10s %11s %9s %8s %8s %8s %9s %9s %9s\n' "$label" "$(fmt "${OPS[$row]:-}" 0)" \
    "$(fmt "${CPU[$row]:-}" 1)" "$(ratio "${CPU[$row]:-}" "${CPU[$base]:-}")" \
    "$(fmt "${USER_CPU[$row]:-}" 2)" "$(fmt "${SYS_CPU[$row]:-}" 2)" \
    "$(fmt "${CALLS[$row]:-}" 2)" "$(fmt "${SLEEPS[$row]:-}" 3)" \
    "$(fmt "${P50[$row]:-}" 1)" "$(fmt "${P99[$row]:-}" 1)"
}
cost_row "redis GET" "redis GET" "redis GET"
cost_row "redis SET" "redis SET" "redis SET"
cost_row "chord 1 node R=1 get" "chord 1 node R=1 get" "redis GET"
cost_row "chord 1 node R=1 put" "chord 1 node R=1 put" "redis SET"
cost_row "chord 3 nodes R=3 direct get" "chord 3 nodes R=3 direct get" "redis GET"
cost_row "chord 3 nodes R=3 direct put" "chord 3 nodes R=3 direct put" "redis SET"
cost_row "chord 3 nodes R=3 routed get" "chord 3 nodes R=3 get" "redis GET"
cost_row "chord 10 nodes R=3 routed put, 16 cl" "chord 10 nodes R=3 put" "redis SET"
echo "3-node direct get CPU / 1-node get CPU: $(ratio "${CPU[chord 3 nodes R=3 direct get]:-}" \
  "${CPU[chord 1 node R=1 get]:-}") (target <= 1.2); replicated put CPU / redis SET:" \
  "$(ratio "${CPU[chord 3 nodes R=3 direct put]:-}" "${CPU[redis SET]:-}") (target <= 3.5)"

if ((COST_ROUNDS > 0)); then
  # median V...: the median of the numbers among V ("-" when there are none).
  median() {
    printf '%s\n' "$@" | { grep -E '^[0-9.]+$' || true; } | sort -g |
      awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2];
        else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
  }
  # round_row CELLS...: one line of the paired rounds' table.
  round_row() {
    printf '%-8s %13s %13s %9s %9s %15s %18s %15s %22s %20s %20s %13s %13s %17s\n' "$@"
  }
  echo
  echo "paired rounds: the cost targets' CPU ratios, each round's rows measured one right after"
  echo "the other (redis SET and GET, 1 node put and get, 3 nodes R=3 direct put and get), and"
  echo "the median of each ratio over the rounds that measured it (of $COST_ROUNDS)"
  echo "and, for reference, the GET load split over three redis-servers / one (3redis/1redis:"
  echo "one redis-benchmark per server, so each client talks to one server only), the same GETs"
  echo "sent by chord-bench --redis, each key to the server its SHA-1 picks, so that every client"
  echo "talks to every server as with a ring's direct gets, over chord-bench's GETs of one"
  echo "redis-server (spread:3redis/1redis), chord's 1-node get and put over that one"
  echo "redis-server's GET and SET by the same client (get/GET:same_client, put/SET:same_client;"
  echo "no chord-bench --redis rows with a pipeline$(
    ((REDIS_SPREAD_OK)) || echo " or with this chord-bench, which has no --redis")),"
  echo "and the 3-node ratios with the nodes under --sched batch (SCHED_BATCH, README"
  echo "\"Scheduling\"; batch:...), and the batch ring's CPU per put over the default ring's"
  echo "(the other servers under $SCHED_NAME, the policy this script runs under; the two rings'"
  echo "order alternates by round$( ((BATCH_OK)) || echo "; no batch rings: chrt --batch failed here"))"
  round_row round \
    redis_get_cpu redis_set_cpu get/GET put/SET 3node/1node_get replicated_put/SET \
    3redis/1redis spread:3redis/1redis get/GET:same_client put/SET:same_client batch:3node \
    batch:repl batch/default_put
  declare -A ROUND_RATIOS=()
  for ((round = 1; round <= COST_ROUNDS; round++)); do
    r="round $round"
    g="$(ratio "${CPU[$r 1 node get]:-}" "${CPU[$r redis GET]:-}")"
    p="$(ratio "${CPU[$r 1 node put]:-}" "${CPU[$r redis SET]:-}")"
    d="$(ratio "${CPU[$r 3 nodes direct get]:-}" "${CPU[$r 1 node get]:-}")"
    q="$(ratio "${CPU[$r 3 nodes direct put]:-}" "${CPU[$r redis SET]:-}")"
    x="$(ratio "${CPU[$r 3 redis GET]:-}" "${CPU[$r redis GET]:-}")"
    sx="$(ratio "${CPU[$r chord-bench redis GET x3]:-}" "${CPU[$r chord-bench redis GET x1]:-}")"
    sg="$(ratio "${CPU[$r 1 node get]:-}" "${CPU[$r chord-bench redis GET x1]:-}")"
    sp="$(ratio "${CPU[$r 1 node put]:-}" "${CPU[$r chord-bench redis SET x1]:-}")"
    bd="$(ratio "${CPU[$r 3 nodes direct get, sched batch]:-}" "${CPU[$r 1 node get]:-}")"
    bq="$(ratio "${CPU[$r 3 nodes direct put, sched batch]:-}" "${CPU[$r redis SET]:-}")"
    bb="$(ratio "${CPU[$r 3 nodes direct put, sched batch]:-}" "${CPU[$r 3 nodes direct put]:-}")"
    ROUND_RATIOS[get]+=" $g" ROUND_RATIOS[put]+=" $p" ROUND_RATIOS[direct]+=" $d"
    ROUND_RATIOS[replicated]+=" $q" ROUND_RATIOS[split]+=" $x"
    ROUND_RATIOS[spread]+=" $sx" ROUND_RATIOS[same_client]+=" $sg"
    ROUND_RATIOS[same_client_put]+=" $sp"
    ROUND_RATIOS[batch_direct]+=" $bd" ROUND_RATIOS[batch_replicated]+=" $bq"
    ROUND_RATIOS[batch_over_default]+=" $bb"
    round_row "$round" \
      "$(fmt "${CPU[$r redis GET]:-}" 1)" "$(fmt "${CPU[$r redis SET]:-}" 1)" "$g" "$p" "$d" "$q" \
      "$x" "$sx" "$sg" "$sp" "$bd" "$bq" "$bb"
  done
  # shellcheck disable=SC2086 # each list is split into its ratios on purpose
  round_row median "" "" \
    "$(median ${ROUND_RATIOS[get]})" "$(median ${ROUND_RATIOS[put]})" \
    "$(median ${ROUND_RATIOS[direct]})" "$(median ${ROUND_RATIOS[replicated]})" \
    "$(median ${ROUND_RATIOS[split]})" "$(median ${ROUND_RATIOS[spread]})" \
    "$(median ${ROUND_RATIOS[same_client]})" "$(median ${ROUND_RATIOS[same_client_put]})" \
    "$(median ${ROUND_RATIOS[batch_direct]})" \
    "$(median ${ROUND_RATIOS[batch_replicated]})" "$(median ${ROUND_RATIOS[batch_over_default]})"
  round_row target "" "" \
    "<= 1" "<= 1" "<= 1.2" "<= 3.5" "(reference)" "(reference)" "(reference)" "(reference)" \
    "(reference)" "(reference)" "(reference)"
fi

echo
echo "memory per key: resident-memory growth over a load of $MEM_KEYS keys key-0 ... with" \
  "$VALUE_SIZE-byte values (ratio to redis)"
printf '%-34s %12s %7s\n' server bytes/key ratio
printf '%-34s %12s %7s\n' "redis-server $REDIS_VERSION" "$(fmt "${BPK[redis]:-}" 1)" "1.00"
printf '%-34s %12s %7s\n' "chord 1 node --memory" "$(fmt "${BPK[chord memory 0]:-}" 1)" \
  "$(ratio "${BPK[chord memory 0]:-}" "${BPK[redis]:-}")"
printf '%-34s %12s %7s\n' "chord 1 node --data-dir (RocksDB)" "$(fmt "${BPK[chord memory 1]:-}" 1)" \
  "$(ratio "${BPK[chord memory 1]:-}" "${BPK[redis]:-}")"
echo "RocksDB write amplification over the load (bytes written to disk / bytes of keys and values): ${WRITE_AMP:--}"

echo
echo "data growth: 3 nodes, R=3, gets of $SMALL_KEYS hot keys by 16 clients (direct) after loading"
echo "N keys, anti-entropy on its default period; p999 ratio: to the same store with $SMALL_KEYS keys"
printf '%-10s %10s %10s %9s %9s %10s %10s %11s\n' store keys ops/s p50_us p99_us p999_us max_us p999_ratio
for store_name in memory rocksdb; do
  for loaded in "$SMALL_KEYS" "$BIG_KEYS"; do
    row="growth $store_name $loaded"
    printf '%-10s %10s %10s %9s %9s %10s %10s %11s\n' "$store_name" "$loaded" \
      "$(fmt "${OPS[$row]:-}" 0)" "$(fmt "${P50[$row]:-}" 1)" "$(fmt "${P99[$row]:-}" 1)" \
      "$(fmt "${P999[$row]:-}" 1)" "$(fmt "${MAXUS[$row]:-}" 1)" \
      "$(ratio "${P999[$row]:-}" "${P999[growth $store_name $SMALL_KEYS]:-}")"
  done
done

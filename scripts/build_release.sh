#!/usr/bin/env bash
# Installs what is missing, then builds chord-node, chordctl and chord-bench for speed:
# Release, with GCC's profile-guided optimization. First instrumented binaries are built; they
# run a short training load on 127.0.0.1 (one node, then a 3-node ring; puts, gets and a mix of
# both, routed and direct, by chord-bench) and record on exit how often each branch and call
# ran; then the same sources are compiled again with that profile (CMake option CHORD_PGO).
# scripts/bench.sh measures this build; README "Built with a profile" has what the profile
# saves.
#
#   scripts/build_release.sh [BUILD_DIR] [CMAKE_ARG...]
#
#   BUILD_DIR   relative to the repository root (default build-release); extra arguments go
#               to CMake
# Environment:
#   CHORD_PGO       1 (default): with the profile; 0: plain Release, no profile (the way to
#                   build with a compiler other than GCC, which the profile needs)
#   TRAIN_SECONDS   length of each training run (default 2; 1-30)
#   JOBS            parallel build jobs (default: the number of CPUs)
# The training's nodes run from scripts/cluster.sh in a temporary directory on free ports and
# are stopped by their PIDs; a training run that fails stops the build.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$CHORD_ROOT"

BUILD_DIR="${1:-build-release}"
shift || true
TARGETS=(chord-node chordctl chord-bench)
CONFIG=(-DCMAKE_BUILD_TYPE=Release -DCHORD_INTEGRATION_TESTS=OFF "$@")
TRAIN_SECONDS="${TRAIN_SECONDS:-2}"
[[ "$TRAIN_SECONDS" =~ ^[0-9]+$ && "$TRAIN_SECONDS" -ge 1 && "$TRAIN_SECONDS" -le 30 ]] ||
  chord_die "TRAIN_SECONDS must be a number of seconds from 1 to 30"

case "${CHORD_PGO:-1}" in
  1 | on | yes) PGO=1 ;;
  0 | off | no) PGO=0 ;;
  *)
    chord_die "CHORD_PGO must be 1 (build with a profile, the default) or 0 (plain" \
      "Release), not \"$CHORD_PGO\""
    ;;
esac
# The training talks plain TCP to its own nodes: a shell's client certificates or HTTP offset
# for scripts/cluster.sh (eval "$(scripts/cluster.sh env)") are not for it.
unset CHORD_TLS_CERT CHORD_TLS_KEY CHORD_TLS_CA CHORD_HTTP_PORT_OFFSET

chord_section "Dependencies"
chord_install_deps

if ((PGO == 0)); then
  chord_section "Build (Release, no profile) in $BUILD_DIR/"
  chord_build "$BUILD_DIR" "${CONFIG[@]}" -- "${TARGETS[@]}"
  exit 0
fi

PROFILE="$CHORD_ROOT/$BUILD_DIR/pgo-profile"
BIN="$CHORD_ROOT/$BUILD_DIR"
CLUSTER="$CHORD_ROOT/scripts/cluster.sh"
HOST=127.0.0.1

# A profile of older sources would be refused by the second build: each build records anew.
rm -rf "$PROFILE"
chord_section "Build instrumented for the profile (Release, CHORD_PGO=generate) in $BUILD_DIR/"
chord_build "$BUILD_DIR" "${CONFIG[@]}" -DCHORD_PGO=generate -DCHORD_PGO_DIR="$PROFILE" \
  -- "${TARGETS[@]}"

# The training's nodes and logs; the nodes are stopped on every exit.
RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/chord-train.XXXXXX")"
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  CHORD_RUN_DIR="$RUN_DIR" CHORD_BIN_DIR="$BIN" "$CLUSTER" stop >/dev/null 2>&1 || true
  if ((rc == 0)); then
    rm -rf "$RUN_DIR"
  else
    echo "build_release.sh: the training's logs are kept in $RUN_DIR (cluster.log, nodes/*/log)" >&2
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cluster() {
  CHORD_RUN_DIR="$RUN_DIR" CHORD_BIN_DIR="$BIN" CHORD_NODE_ARGS="$NODE_ARGS" "$CLUSTER" "$@"
}

# start_ring N REPLICAS: N --memory nodes on free ports (a random base below the kernel's
# ephemeral range, tried again elsewhere if a port is taken), waited for until their ring is
# consistent; the first one's address in ADDR.
EPHEMERAL_LOW="$(chord_ephemeral_low)"
start_ring() {
  local n="$1" try base deadline
  RING_SIZE="$n"
  NODE_ARGS="--memory --replicas $2 --log-level warn"
  for ((try = 0; try < 5; try++)); do
    base=$((10000 + RANDOM % (EPHEMERAL_LOW - 10000 - n)))
    if cluster start "$n" --base-port "$base" >>"$RUN_DIR/cluster.log" 2>&1; then
      ADDR="$HOST:$base"
      deadline=$((SECONDS + 30))
      while ((SECONDS < deadline)); do
        if chord_ring_settled "$n" "$BIN/tools/chordctl" --node "$ADDR" --timeout-ms 1000; then
          return 0
        fi
        sleep 0.1
      done
      chord_die "the training ring of $n nodes was not consistent within 30 s"
    fi
    cluster stop >>"$RUN_DIR/cluster.log" 2>&1 || true
  done
  chord_die "could not start the training ring in 5 tries; see $RUN_DIR/cluster.log"
}

# stop_ring: SIGTERM to every node of the ring, which writes its profile as it exits; a node
# that had died before or has to be killed (cluster.sh does after 10 s) writes none, which
# stops the build.
stop_ring() {
  local out
  out="$(cluster stop 2>&1)" || chord_die "cluster.sh stop failed: $out"
  echo "$out" >>"$RUN_DIR/cluster.log"
  [[ "$out" != *SIGKILL* ]] ||
    chord_die "a training node did not exit within 10 s of SIGTERM and was killed, so it" \
      "wrote no profile: $out"
  [[ "$out" == *"stopped $RING_SIZE node(s)"* ]] ||
    chord_die "not all $RING_SIZE training nodes were still running to write their profile: $out"
}

# load ARG...: one chord-bench run against ADDR; it must complete requests without errors.
load() {
  local out errors ops
  out="$(timeout --kill-after=5 $((TRAIN_SECONDS + 60)) "$BIN/tools/chord-bench" \
    --node "$ADDR" --seconds "$TRAIN_SECONDS" --keys 10000 --clients 16 --no-server-cost --json \
    "$@")" || chord_die "chord-bench $* failed against $BIN's chord-node"
  errors="$(chord_json_field errors "$out")"
  ops="$(chord_json_field ops "$out")"
  [[ "$errors" == 0 && "$ops" =~ ^[1-9][0-9]*$ ]] ||
    chord_die "chord-bench $* had $errors errors in ${ops:-?} requests against $BIN's" \
      "chord-node: $out"
  printf '  %-32s %s requests\n' "$*" "$ops"
}

chord_section "Training load: one node, then a 3-node ring (R = 3), $TRAIN_SECONDS s a run"
start_ring 1 1
for args in "--op put" "--op get" "--op mix" "--op put --direct" "--op get --direct"; do
  # shellcheck disable=SC2086 # each line is a list of arguments
  load $args
done
stop_ring
start_ring 3 3
for args in "--op put --direct" "--op get --direct" "--op put" "--op get" "--op mix"; do
  # shellcheck disable=SC2086
  load $args
done
stop_ring
# The counts are written as each process exits (chord-bench's and chordctl's too).
[[ -n "$(find "$PROFILE" -name '*chord-node.dir*main.cc.gcda' -print -quit 2>/dev/null)" ]] ||
  chord_die "the training load left no profile of chord-node in $PROFILE"

chord_section "Build with the profile (Release, CHORD_PGO=use) in $BUILD_DIR/"
chord_build "$BUILD_DIR" "${CONFIG[@]}" -DCHORD_PGO=use -DCHORD_PGO_DIR="$PROFILE" \
  -- "${TARGETS[@]}"

chord_section "Check: puts and gets of the profiled build on one node"
start_ring 1 1
load --op put
load --op get
stop_ring

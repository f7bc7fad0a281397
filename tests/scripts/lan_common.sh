# What the LAN tests (tests/scripts/lan_*.sh) share: the check that this machine can make
# network namespaces, and the end of a run (stop the LAN by its recorded PIDs and delete its
# namespaces; keep the node logs of a failed run). Sourced, not run; needs LAN (scripts/lan.sh)
# and CHORD_RUN_DIR set by the test.

# Exits 77 (skipped), with the reason, unless we are root and can make a network namespace;
# each argument is a further tool the test needs.
lan_require() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "skipped: network namespaces need root (CI runs as root)"
    exit 77
  fi
  local tool
  for tool in ip "$@"; do
    if ! command -v "$tool" >/dev/null; then
      echo "skipped: $tool is not installed"
      exit 77
    fi
  done
  if ! ip netns add "chordprobe$$" 2>/dev/null; then
    echo "skipped: this machine cannot create network namespaces"
    exit 77
  fi
  ip netns del "chordprobe$$"
}

# Stops the LAN; on failure (rc != 0) prints the last TAIL lines of every node's log and keeps
# the run directory, else deletes it. Exits with rc.
lan_finish() {
  local rc=$1 tail_lines=$2 f
  "$LAN" down >/dev/null 2>&1 || true
  if [[ $rc -ne 0 ]]; then
    echo "---- node logs (tails) in $CHORD_RUN_DIR"
    for f in "$CHORD_RUN_DIR"/nodes/*/log; do
      [[ -f "$f" ]] || continue
      echo "== $f"
      tail -n "$tail_lines" "$f" || true
    done
  else
    rm -rf "$CHORD_RUN_DIR"
  fi
  exit "$rc"
}

fail() {
  echo "FAIL: $*"
  exit 1
}

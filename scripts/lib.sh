# shellcheck shell=bash
# Shared helpers of the scripts in scripts/: section headers, installing the Debian packages
# the build needs, configuring + building one build directory, waiting for a ring to settle and
# the kernel's ephemeral ports and whether a port is taken. Source it (do not run it); it expects `set -euo pipefail` in
# the caller.

# The Debian packages chord builds and tests with (openssl: the CLI scripts/certs.sh runs;
# clang and libclang-rt-14-dev: the libFuzzer targets of scripts/fuzz.sh; libh2o-dev: the HTTP
# server of the node's API, built on libuv; curl and python3: the HTTP API's tests and the
# Python client; wrk: the HTTP load generator of scripts/bench.sh; libabsl-dev: the B-tree of
# the memory store; libjemalloc-dev: chord-node's allocator; libhiredis-dev: chord-bench's
# Redis client for --redis; redis-server: the Redis that chord-bench --redis is tested against).
CHORD_DEB_PACKAGES=(
  cmake g++ make pkg-config
  libuv1-dev libssl-dev libprotobuf-dev protobuf-compiler libspdlog-dev libcli11-dev
  nlohmann-json3-dev googletest libgtest-dev libbenchmark-dev librocksdb-dev libh2o-dev
  libabsl-dev libjemalloc-dev libhiredis-dev redis-server
  iproute2 curl python3 wrk
  clang libclang-rt-14-dev openssl
)

# The browser of the ring page's test (tests/browser): installed when possible; where it
# cannot be, that test is skipped with the reason.
CHORD_BROWSER_PACKAGES=(chromium chromium-driver)

# The repository root (the parent of scripts/).
CHORD_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Parallel build/test jobs: $JOBS, else the number of CPUs.
CHORD_JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

# Prints a section header.
chord_section() {
  printf '\n==== %s ====\n' "$*"
}

# Prints an error sentence to stderr and exits 1.
chord_die() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}

# Installs whichever of CHORD_DEB_PACKAGES are missing (apt-get; sudo when not root).
chord_install_deps() {
  local missing=() pkg
  for pkg in "${CHORD_DEB_PACKAGES[@]}"; do
    if ! dpkg -s "$pkg" >/dev/null 2>&1; then
      missing+=("$pkg")
    fi
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "all ${#CHORD_DEB_PACKAGES[@]} build packages are installed"
    return 0
  fi
  echo "installing missing packages: ${missing[*]}"
  chord_apt_install "${missing[@]}"
}

# Installs the browser packages if they are missing; on failure says why and goes on.
chord_install_browser() {
  local missing=() pkg
  for pkg in "${CHORD_BROWSER_PACKAGES[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "the browser packages are installed"
    return 0
  fi
  echo "installing the browser of the ring page test: ${missing[*]}"
  if ! (chord_apt_install "${missing[@]}"); then
    echo "could not install ${missing[*]}: the ring page's browser test will be skipped"
  fi
}

# chord_apt_install PKG...: apt-get update, then installs the packages (sudo when not root).
chord_apt_install() {
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 ||
      chord_die "packages $* are missing and sudo is not available; install them as root"
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}

# chord_json_field FIELD JSON: the value of a number, boolean or string field of a compact,
# one-line JSON object without nesting (string quotes removed).
chord_json_field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,}\"]*\).*/\1/p" <<<"$2" | head -1; }

# chord_ring_settled N CHORDCTL_COMMAND...: true when `CHORDCTL_COMMAND... ring --json` (a
# chordctl with its --node and options) walks a consistent ring of exactly N nodes. Sets
# CHORD_RING_MET to the number of nodes the walk met (0 when it failed).
chord_ring_settled() {
  local want="$1" out
  shift
  CHORD_RING_MET=0
  out="$("$@" ring --json 2>/dev/null)" || return 1
  CHORD_RING_MET="$(grep -c '"keys":' <<<"$out" || true)"
  [[ "$CHORD_RING_MET" -eq "$want" && "$out" == *'"consistent": true'* ]]
}

# chord_port_taken HOST PORT: whether a server could not listen on HOST:PORT now: something
# listens there, or a live connection holds it as its own port (ss sees both; sockets of a
# closed connection, which do not stop a bind, are left out). Without a working ss, only a
# listener is seen (by connecting to it).
chord_port_taken() {
  local out
  if out="$(ss -Htan state listening state established state syn-sent state syn-recv \
    "sport = :$2" 2>/dev/null)"; then
    [[ -n "$out" ]]
  else
    (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
  fi
}

# chord_ephemeral_low: prints the lowest port of the kernel's ephemeral range (32768 when it
# cannot be read or is below 12000). Scripts pick servers' ports below it, so that no client
# connection holds one by the time a server binds it.
chord_ephemeral_low() {
  local low
  low="$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true)"
  if [[ "$low" =~ ^[0-9]+$ ]] && ((low > 12000)); then echo "$low"; else echo 32768; fi
}

# chord_build BUILD_DIR [CMAKE_ARG...] [-- TARGET...]
# Configures BUILD_DIR (relative to the repository root) with the given CMake arguments and
# builds the given targets (all when none are given) with CHORD_JOBS jobs. Profile-guided
# optimization is off unless the arguments turn it on (-DCHORD_PGO=..., scripts/
# build_release.sh): a directory that build_release.sh used keeps it in its CMake cache.
chord_build() {
  local build_dir="$1"
  shift
  local cmake_args=() targets=()
  while [[ $# -gt 0 ]]; do
    if [[ "$1" == "--" ]]; then
      shift
      targets=("$@")
      break
    fi
    cmake_args+=("$1")
    shift
  done
  cmake -S "$CHORD_ROOT" -B "$CHORD_ROOT/$build_dir" -DCHORD_PGO= "${cmake_args[@]}"
  local target_args=()
  if [[ ${#targets[@]} -gt 0 ]]; then
    target_args=(--target "${targets[@]}")
  fi
  cmake --build "$CHORD_ROOT/$build_dir" -j "$CHORD_JOBS" "${target_args[@]}"
}

#!/usr/bin/env bash
# ctest: the curl examples of README.md ("HTTP API", between <!-- curl-examples:begin --> and
# <!-- curl-examples:end -->) run as printed against a real ring. Each example is a ```sh block
# whose first line is the command; the rest of the block is the output shape. Starts 3
# chord-node processes on 127.0.0.1 (the first with --http-listen on a free port), rewrites
# 127.0.0.1:8080 to that port, runs each command in order (server-sent event streams with
# --max-time 3), and checks its exit status and a property of its output. An example without
# a check here, or a check without its example, fails the test.
# Usage: readme_curl_test.sh CHORD_NODE_BINARY   ($README_CURL_KEEP=DIR keeps each output there)
set -euo pipefail

NODE_BIN="$1"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
README="$ROOT/README.md"
RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/chord-readme-curl.XXXXXX")"
PIDS=()
# curl talks to the node directly, whatever proxy the environment names.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY

cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$RUN_DIR"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for log in "$RUN_DIR"/node-*.log; do
    [[ -f "$log" ]] || continue
    echo "--- $log" >&2
    tail -5 "$log" >&2 || true
  done
  exit 1
}
command -v curl >/dev/null || fail "curl is not installed (scripts/test.sh installs it)"
command -v python3 >/dev/null || fail "python3 is not installed (scripts/test.sh installs it)"

# A port on 127.0.0.1 nobody listens on now (bind port 0, read it, close).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
# json FILE EXPR: EXPR (Python, over the parsed document `d`) of the JSON in FILE.
json() {
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
sha1() { printf '%s' "$1" | sha1sum | cut -c1-40; }
# sse FILE EVENT EXPR: whether the event stream in FILE has an event named EVENT whose data
# `d` (parsed JSON) makes EXPR (Python) true; `i` is the event's id line (None without one).
sse() {
  python3 - "$@" <<'PY'
import json, sys
path, name, expr = sys.argv[1:]
blocks = open(path, encoding="utf-8").read().replace("\r\n", "\n").split("\n\n")
for block in blocks:
    fields = {}
    for line in block.split("\n"):
        if line and not line.startswith(":"):
            k, _, v = line.partition(":")
            fields[k] = v[1:] if v.startswith(" ") else v
    if fields.get("event") == name and "data" in fields:
        d, i = json.loads(fields["data"]), fields.get("id")
        if eval(expr):
            sys.exit(0)
sys.exit(1)
PY
}

# start_node LOG ARGS...: starts chord-node (its PID in STARTED_PID); returns 1 when it exits
# within a second (most likely a port taken between the pick and the bind).
start_node() {
  local log="$1" i
  shift
  "$NODE_BIN" "$@" >"$log" 2>&1 &
  STARTED_PID=$!
  PIDS+=("$STARTED_PID")
  for ((i = 0; i < 10; i++)); do
    kill -0 "$STARTED_PID" 2>/dev/null || return 1
    sleep 0.1
  done
}

# --- the ring: three nodes, the first with the HTTP API ---------------------------------
HTTP="" ADDRS=()
for ((attempt = 0; attempt < 4 && ${#ADDRS[@]} < 3; attempt++)); do
  ADDRS=()
  port="$(free_port)" http="$(free_port)"
  start_node "$RUN_DIR/node-$port.log" --listen "127.0.0.1:$port" --memory --stabilize-ms 100 \
    --http-listen "127.0.0.1:$http" || continue
  for ((i = 0; i < 100; i++)); do
    curl -sf --max-time 2 "http://127.0.0.1:$http/v1/status" >/dev/null && break
    kill -0 "$STARTED_PID" 2>/dev/null || break
    sleep 0.1
  done
  curl -sf --max-time 2 "http://127.0.0.1:$http/v1/status" >/dev/null || continue
  HTTP="$http" ADDRS=("127.0.0.1:$port")
  for ((n = 1; n < 3; n++)); do
    for ((try = 0; try < 4; try++)); do
      p="$(free_port)"
      if start_node "$RUN_DIR/node-$p.log" --listen "127.0.0.1:$p" --join "${ADDRS[0]}" --memory \
        --stabilize-ms 100; then
        ADDRS+=("127.0.0.1:$p")
        break
      fi
    done
  done
done
[[ ${#ADDRS[@]} -eq 3 ]] || fail "could not start 3 nodes"
BASE="http://127.0.0.1:$HTTP"

# Until /v1/ring shows the 3 nodes, consistent (bounded: 60 s).
settled=0
for ((i = 0; i < 300; i++)); do
  if curl -sf --max-time 5 "$BASE/v1/ring" -o "$RUN_DIR/ring.json" &&
    [[ "$(json "$RUN_DIR/ring.json" 'd["consistent"] and len(d["nodes"]) == 3 and all(n["state"] == "Up" for n in d["nodes"])')" == True ]]; then
    settled=1
    break
  fi
  sleep 0.2
done
[[ $settled -eq 1 ]] || fail "the ring did not become consistent with 3 nodes: $(cat "$RUN_DIR/ring.json" 2>/dev/null)"

# The owner of a key, computed here: the first node id (SHA-1 of HOST:PORT) at or after the
# key's SHA-1, wrapping.
owner_of() {
  local key_id a first="" owner=""
  key_id="$(sha1 "$1")"
  while read -r id a; do
    [[ -z "$first" ]] && first="$a"
    if [[ -z "$owner" && ! "$id" < "$key_id" ]]; then owner="$a"; fi
  done < <(for a in "${ADDRS[@]}"; do echo "$(sha1 "$a") $a"; done | sort)
  echo "${owner:-$first}"
}

# --- the examples -------------------------------------------------------------------------
mapfile -t COMMANDS < <(awk '
  /<!-- curl-examples:begin -->/ { inside = 1; next }
  /<!-- curl-examples:end -->/ { inside = 0 }
  inside && /^```sh$/ { want = 1; next }
  inside && want { print; want = 0 }
' "$README")
[[ ${#COMMANDS[@]} -gt 0 ]] || fail "no curl examples between the markers in README.md"

PUT_VERSION=""
# check NAME OUT_FILE STATUS: the property of example NAME's output.
check() {
  local name="$1" out="$2" status="$3" body
  case "$name" in
    put)
      [[ $status -eq 0 ]] || return 1
      [[ "$(json "$out" 'd["key"]')" == greeting ]] || return 1
      PUT_VERSION="$(json "$out" 'd["version"]')"
      [[ "$PUT_VERSION" -gt 0 ]]
      ;;
    put-json)
      [[ $status -eq 0 && "$(json "$out" 'd["key"]')" == city ]] || return 1
      [[ "$(curl -s "$BASE/v1/keys/city")" == "Zürich" ]]
      ;;
    get)
      [[ $status -eq 0 && "$(cat "$out")" == "hello, ring" ]]
      ;;
    get-json)
      [[ $status -eq 0 ]] || return 1
      [[ "$(json "$out" 'd["value"]')" == "hello, ring" ]] || return 1
      [[ "$(json "$out" 'd["version"]')" == "$PUT_VERSION" ]]
      ;;
    conflict)
      [[ $status -eq 0 ]] || return 1
      head -1 "$out" | grep -q '^HTTP/1.1 409' || return 1
      body="$RUN_DIR/conflict-body.json"
      awk 'found { print } /^\r?$/ { found = 1 }' "$out" >"$body"
      [[ "$(json "$body" 'd["code"]')" == conflict ]] || return 1
      [[ "$(json "$body" 'd["version"]')" == "$PUT_VERSION" ]]
      ;;
    ttl)
      [[ $status -eq 0 ]] || return 1
      local v e
      # The key reads back with the expiry: the version's time (version >> 16, ms) plus 30 s.
      v="$(json "$out" 'd["version"]')"
      curl -s "$BASE/v1/keys/session?format=json" -o "$RUN_DIR/session.json" || return 1
      [[ "$(json "$RUN_DIR/session.json" 'd["version"]')" == "$v" ]] || return 1
      e="$(json "$RUN_DIR/session.json" 'd["expires_unix_ms"]')"
      [[ $e -eq $(((v >> 16) + 30000)) ]]
      ;;
    lookup)
      [[ $status -eq 0 ]] || return 1
      [[ "$(json "$out" 'd["owner"]["addr"]')" == "$(owner_of greeting)" ]] || return 1
      [[ "$(json "$out" 'd["key_id"]')" == "$(sha1 greeting)" ]]
      ;;
    status)
      [[ $status -eq 0 && "$(json "$out" 'd["addr"]')" == "${ADDRS[0]}" ]] || return 1
      [[ "$(json "$out" 'd["id"]')" == "$(sha1 "${ADDRS[0]}")" ]]
      ;;
    ring)
      [[ $status -eq 0 ]] || return 1
      [[ "$(json "$out" 'd["consistent"]')" == True ]] || return 1
      [[ "$(json "$out" '" ".join(n["addr"] for n in d["nodes"])')" == \
        "$(for a in "${ADDRS[@]}"; do echo "$(sha1 "$a") $a"; done | sort | cut -d' ' -f2 | paste -sd' ')" ]]
      ;;
    watch)
      # curl stops at --max-time: exit 28. A put was made while it ran.
      [[ $status -eq 28 || $status -eq 0 ]] || return 1
      # The current value first, then the put, each with its version as the event id.
      sse "$out" current 'd["type"] == "current" and d["value"] == "hello, ring" and i == str(d["version"]) and int(i) >= '"$PUT_VERSION" || return 1
      sse "$out" put 'd["type"] == "put" and d["value"] == "hello again" and i == str(d["version"]) and int(i) > '"$PUT_VERSION"
      ;;
    ring-events)
      [[ $status -eq 28 || $status -eq 0 ]] || return 1
      sse "$out" ring 'len(d["nodes"]) == 3 and d["consistent"]'
      ;;
    delete)
      [[ $status -eq 0 ]] || return 1
      [[ "$(json "$out" 'd["key"]')" == greeting ]] || return 1
      [[ "$(json "$out" 'd["version"]')" -gt "$PUT_VERSION" ]]
      ;;
    missing)
      [[ $status -eq 0 ]] || return 1
      # The JSON error, then the status code on a line of its own.
      [[ "$(tail -n 1 "$out")" == 404 ]] || return 1
      head -n -1 "$out" >"$RUN_DIR/missing.json"
      [[ "$(json "$RUN_DIR/missing.json" 'd["code"]')" == not_found ]] || return 1
      [[ "$(json "$RUN_DIR/missing.json" 'd["error"]')" == 'key "greeting" not found' ]]
      ;;
    metrics)
      [[ $status -eq 0 ]] && grep -q "^chord_keys{node=\"${ADDRS[0]}\"}" "$out"
      ;;
    *)
      return 1
      ;;
  esac
}

# The name of an example: what its command does.
name_of() {
  local c="$1"
  case "$c" in
    *"/v1/ring/events"*) echo ring-events ;;
    *"/v1/watch/"*) echo watch ;;
    *"/metrics"*) echo metrics ;;
    *"/v1/lookup/"*) echo lookup ;;
    *"/v1/status"*) echo status ;;
    *"/v1/ring"*) echo ring ;;
    *"-X DELETE"*) echo delete ;;
    *"if_absent=true"*) echo conflict ;;
    *"ttl="*) echo ttl ;;
    *"application/json"*"-X PUT"* | *"-X PUT"*"application/json"*) echo put-json ;;
    *"-X PUT"*) echo put ;;
    *"format=json"*) echo get-json ;;
    *"http_code"*) echo missing ;;
    *"/v1/keys/"*) echo get ;;
    *) echo unknown ;;
  esac
}

WANT=(put put-json get get-json conflict ttl lookup status ring watch ring-events delete missing metrics)
SEEN=()
for ((i = 0; i < ${#COMMANDS[@]}; i++)); do
  printed="${COMMANDS[$i]}"
  name="$(name_of "$printed")"
  [[ "$printed" == curl* ]] || fail "example $((i + 1)) does not start with curl: $printed"
  [[ "$printed" == *"127.0.0.1:8080"* ]] || fail "example $((i + 1)) does not use 127.0.0.1:8080: $printed"
  cmd="${printed//127.0.0.1:8080/127.0.0.1:$HTTP}"
  if [[ "$cmd" == "curl -N "* ]]; then
    cmd="${cmd/curl -N/curl --max-time 3 -N}"
  else
    cmd="${cmd/curl /curl --max-time 20 }"
  fi
  out="$RUN_DIR/example-$i.out"
  helper=""
  if [[ $name == watch ]]; then
    # Another client's put while the stream is open.
    (sleep 1 && curl -s --max-time 5 -X PUT --data-binary 'hello again' "$BASE/v1/keys/greeting" >/dev/null) &
    helper=$!
  fi
  status=0
  bash -c "set -o pipefail; $cmd" >"$out" 2>"$out.err" || status=$?
  [[ -n "$helper" ]] && wait "$helper"
  if ! check "$name" "$out" "$status"; then
    fail "example $((i + 1)) ($name) failed: $printed
rewritten: $cmd
exit status $status; output:
$(head -c 2000 "$out")
$(cat "$out.err")"
  fi
  if [[ $name == watch ]]; then
    # Later examples expect the value of the put examples again.
    curl -s -X PUT --data-binary 'hello, ring' "$BASE/v1/keys/greeting" -o "$RUN_DIR/reput.json" ||
      fail "re-put after the watch"
    PUT_VERSION="$(json "$RUN_DIR/reput.json" 'd["version"]')"
  fi
  echo "ok: $name: $printed"
  if [[ -n "${README_CURL_KEEP:-}" ]]; then cp "$out" "$README_CURL_KEEP/$((i + 1))-$name.out"; fi
  SEEN+=("$name")
done
[[ "${SEEN[*]}" == "${WANT[*]}" ]] ||
  fail "README examples are (${SEEN[*]}), expected (${WANT[*]}): every endpoint once, in this order"
echo "all ${#SEEN[@]} README curl examples work as printed"

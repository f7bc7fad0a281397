#!/usr/bin/env python3
"""Tests of the Python client (tools/python/chord) against a real 3-node ring.

Starts three chord-node processes on 127.0.0.1 (--memory, --stabilize-ms 100, each with
--http-listen on a port found free at run time), waits until /v1/ring shows them consistent,
and checks the client's calls, its event streams and ``python3 -m chord`` against what the
ring must answer: owners and ids are computed here from SHA-1 of the addresses, independently
of the node. Every node is stopped by its PID at the end (SIGTERM, then SIGKILL).

Usage: test_chord_client.py --chord-node PATH [--chordctl PATH] [unittest arguments]
       (or $CHORD_NODE_BIN / $CHORDCTL_BIN)
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON_DIR = ROOT / "tools" / "python"
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))

import chord  # noqa: E402

CHORD_NODE = os.environ.get("CHORD_NODE_BIN", "")
CHORDCTL = os.environ.get("CHORDCTL_BIN", "")
RING: "Ring | None" = None

# Bounds of every wait (a loop polls at most this long).
START_WAIT_S = 15
SETTLE_WAIT_S = 60
POLL_S = 0.1

# The nodes must be reached directly, whatever proxy the environment names.
for _var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
    os.environ.pop(_var, None)
os.environ.pop("CHORD_HTTP", None)


try:  # Linux: a node is killed when the test process dies, even by SIGKILL (a ctest timeout).
    import ctypes

    _LIBC = ctypes.CDLL(None, use_errno=True)
    _PR_SET_PDEATHSIG = 1
except (ImportError, OSError):
    _LIBC = None


def _die_with_parent() -> None:
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def sha1_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha1(data).hexdigest()


def free_port() -> int:
    """A port on 127.0.0.1 nobody listens on now (bind port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def owner_addr(key: bytes | str, addrs: list[str]) -> str:
    """The owner of ``key`` on a ring of ``addrs`` (one vnode each): the first node id at or
    after the key's id, wrapping; ids are SHA-1 of "HOST:PORT"."""
    key_id = sha1_hex(key)
    ring = sorted((sha1_hex(a), a) for a in addrs)
    for node_id, addr in ring:
        if node_id >= key_id:
            return addr
    return ring[0][1]


def ring_order(addrs: list[str]) -> list[str]:
    return [a for _, a in sorted((sha1_hex(a), a) for a in addrs)]


def wait_until(what: str, predicate, timeout_s: float, poll_s: float = POLL_S):
    """Polls ``predicate`` (exceptions count as not yet) until it returns a true value, at
    most ``timeout_s``; fails with the last problem otherwise."""
    deadline = time.monotonic() + timeout_s
    last = "never checked"
    while True:
        try:
            value = predicate()
            if value:
                return value
            last = "condition false (%r)" % (value,)
        except Exception as e:  # noqa: BLE001 (any failure means "not yet")
            last = "%s: %s" % (type(e).__name__, e)
        if time.monotonic() >= deadline:
            raise AssertionError("%s did not happen within %g s (last: %s)" % (what, timeout_s, last))
        time.sleep(poll_s)


def next_within(events, timeout_s: float = 30):
    """The next item of the iterator ``events``, waited for at most ``timeout_s`` (a stream
    that has nothing to send keeps its connection alive, so next() alone could wait forever).
    On a timeout the reading thread is left blocked; the stream ends when its node stops."""
    box: list = []

    def read():
        try:
            box.append(("ok", next(events)))
        except BaseException as e:  # noqa: BLE001 (handed to the test's thread)
            box.append(("error", e))

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(timeout_s)
    if not box:
        raise AssertionError("no event within %g s" % timeout_s)
    kind, value = box[0]
    if kind == "error":
        raise value
    return value


def stop_stream(events) -> None:
    """Closes an event iterator (a no-op while next_within's thread is still blocked in it)."""
    try:
        events.close()
    except ValueError:  # "generator already executing": that thread ends with the ring
        pass


class Node:
    """One chord-node process."""

    def __init__(self, port: int, http_port: int, join: str | None, log_dir: str):
        self.port = port
        self.http_port = http_port
        self.addr = "127.0.0.1:%d" % port
        self.url = "http://127.0.0.1:%d" % http_port
        self.log_path = os.path.join(log_dir, "node-%d.log" % port)
        args = [CHORD_NODE, "--listen", self.addr, "--memory", "--stabilize-ms", "100",
                "--http-listen", "127.0.0.1:%d" % http_port]
        if join:
            args += ["--join", join]
        self.log = open(self.log_path, "wb")
        # Started from the main thread only (the death signal follows the thread that forked).
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def client(self, **kw) -> chord.Client:
        return chord.Client(self.url, **kw)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.alive():
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()

    def tail(self, lines: int = 15) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return b"".join(f.readlines()[-lines:]).decode("utf-8", "replace")
        except OSError:
            return ""


class Ring:
    """A ring of chord-node processes on 127.0.0.1."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="chord-python-test-")
        self.nodes: list[Node] = []

    @property
    def addrs(self) -> list[str]:
        return [n.addr for n in self.nodes]

    def start_node(self, join: str | None) -> Node:
        """Starts one node and waits until its HTTP API answers; a port taken between the pick
        and the bind makes the node exit, and another pair of ports is tried (4 attempts)."""
        for _ in range(4):
            node = Node(free_port(), free_port(), join, self.dir)
            deadline = time.monotonic() + START_WAIT_S
            while node.alive() and time.monotonic() < deadline:
                try:
                    if node.client(timeout=2).status().get("addr") == node.addr:
                        self.nodes.append(node)
                        return node
                except chord.ChordError:
                    pass
                time.sleep(POLL_S)
            died = not node.alive()
            node.stop(signal.SIGKILL)
            if not died:
                raise AssertionError("node %s did not answer on %s within %d s:\n%s"
                                     % (node.addr, node.url, START_WAIT_S, node.tail()))
        raise AssertionError("could not start a node in 4 attempts:\n%s" % node.tail())

    def start(self, n: int) -> None:
        first = self.start_node(None)
        for _ in range(n - 1):
            self.start_node(first.addr)
        self.wait_consistent()

    def wait_consistent(self) -> None:
        """Until every node's /v1/ring shows exactly our nodes, Up, in ring order, consistent."""
        want = ring_order(self.addrs)

        def settled():
            for node in self.nodes:
                doc = node.client(timeout=5).ring()
                if not doc["consistent"] or [x["addr"] for x in doc["nodes"]] != want:
                    return False
                if any(x["state"] != "Up" for x in doc["nodes"]):
                    return False
            return True

        wait_until("a consistent ring of %s" % ", ".join(want), settled, SETTLE_WAIT_S, 0.2)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def dump_logs(self) -> str:
        return "\n".join("--- %s\n%s" % (n.log_path, n.tail()) for n in self.nodes)


RING_FAILURE: str | None = None


def shared_ring() -> "Ring":
    """The 3-node ring of every test that needs one, started by the first of them."""
    global RING, RING_FAILURE
    if RING_FAILURE is not None:
        raise AssertionError("the ring did not start (see the first failure): " + RING_FAILURE)
    if RING is None:
        ring = Ring()
        try:
            ring.start(3)
        except BaseException as e:
            sys.stderr.write(ring.dump_logs() + "\n")
            ring.stop()
            RING_FAILURE = str(e)
            raise
        RING = ring
    return RING


class RingCase(unittest.TestCase):
    """A test case on the shared ring."""

    @classmethod
    def setUpClass(cls):
        shared_ring()


def tearDownModule():
    if RING is not None:
        RING.stop()


def unique(name: str) -> str:
    """A key no other test (or earlier run on the same ring) uses."""
    return "%s-%d-%d" % (name, os.getpid(), time.monotonic_ns())


class DropAfterFirstEventProxy:
    """A TCP proxy to ``port`` that cuts every connection once the server has sent one whole
    event (a data line and the blank line after it): to test that a stream resumes."""

    def __init__(self, port: int):
        self.target = port
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.cuts = 0
        self.stopping = False
        self.threads: list[threading.Thread] = []
        self.accepter = threading.Thread(target=self._accept, daemon=True)
        self.accepter.start()

    def _accept(self):
        while not self.stopping:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            self.connections += 1
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self.threads.append(t)

    def _serve(self, conn: socket.socket):
        upstream = socket.create_connection(("127.0.0.1", self.target), timeout=10)
        conn.settimeout(10)
        # The request: forward whatever the client sends until the server starts answering.
        def forward_request():
            try:
                while True:
                    data = conn.recv(65536)
                    if not data:
                        break
                    upstream.sendall(data)
            except OSError:
                pass

        threading.Thread(target=forward_request, daemon=True).start()
        seen = b""
        try:
            while not self.stopping:
                data = upstream.recv(65536)
                if not data:
                    break
                conn.sendall(data)
                seen += data
                head_end = seen.find(b"\r\n\r\n")
                body = seen[head_end + 4:] if head_end >= 0 else b""
                data_at = body.find(b"data:")
                if data_at >= 0 and b"\n\n" in body[data_at:]:
                    self.cuts += 1
                    break
        except OSError:
            pass
        finally:
            for s in (conn, upstream):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self):
        self.stopping = True
        self.listener.close()
        self.accepter.join(2)


class SseParserTest(unittest.TestCase):
    """chord.sse on fixed input (no ring needed)."""

    def test_fields_comments_and_line_ends(self):
        import io
        from chord import sse

        stream = io.BytesIO(
            b": keep-alive\n\n"
            b"event: put\r\nid: 7\r\ndata: {\"a\":1}\r\n\r\n"
            b"data:first\ndata: second\nretry: 250\n\n"
            b"id: 9\n\n"  # an id alone sets the id but dispatches nothing
            b"event: cut\ndata: never ended")
        got = list(sse.events(stream))
        self.assertEqual([(e.event, e.data, e.id, e.retry_ms) for e in got],
                         [("put", '{"a":1}', "7", None), ("message", "first\nsecond", "7", 250)])


class TextTest(unittest.TestCase):
    """chord.cli's text forms on fixed documents (no ring needed)."""

    def test_a_node_that_cannot_read_its_store_is_not_shown_as_empty(self):
        from chord import cli

        error = "the disk returned an I/O error"
        status = {"id": "ab", "addr": "127.0.0.1:4000", "keys": 0, "replica_keys": 0,
                  "tombstones": 0, "store_error": error}
        text = cli.status_text(status)
        self.assertIn("keys:           unknown: the store could not be read (%s)" % error, text)
        self.assertNotIn("replica_keys", text)
        self.assertIn("keys:           5\n", cli.status_text({"keys": 5}))
        ring = {"nodes": [{"state": "Up", "addr": "127.0.0.1:4000", "id": "ab", "keys": 0,
                           "replica_keys": 0, "store_error": error},
                          {"state": "Up", "addr": "127.0.0.1:4001", "id": "cd", "keys": 7,
                           "replica_keys": 3}],
                "consistent": True, "problems": [], "total_keys": 7, "total_replica_keys": 3,
                "nodes_not_counted": 1}
        text = cli.ring_text(ring)
        row = next(line for line in text.splitlines() if "127.0.0.1:4000" in line)
        self.assertEqual(row.count("?"), 2, text)
        self.assertIn("(not counting 1 node that cannot read its store)", text)
        self.assertIn("[ERR] 127.0.0.1:4000 cannot read its store to count its keys (%s)" % error,
                      text)
        self.assertNotIn("[OK]", text)


class KeysTest(RingCase):
    """get/put/delete, compare-and-set and TTL through the HTTP API."""

    def setUp(self):
        self.c0 = RING.nodes[0].client()
        self.c1 = RING.nodes[1].client()
        self.c2 = RING.nodes[2].client()

    def test_put_get_delete_round_trip(self):
        key = unique("round-trip")
        put = self.c0.put(key, "hello")
        self.assertEqual(put["key"], key)
        self.assertGreater(put["version"], 0)
        self.assertGreaterEqual(put["acks"], put["required"])
        # Read through the other two nodes: the request is routed to the owner.
        self.assertEqual(self.c1.get(key), b"hello")
        rec = self.c2.get_record(key)
        self.assertEqual(rec.value, b"hello")
        self.assertEqual(rec.version, put["version"])
        self.assertIsNone(rec.expires_unix_ms)
        doc = self.c1.get_json(key)
        self.assertEqual((doc["key"], doc["value"], doc["version"]), (key, "hello", put["version"]))
        # A second put is a newer version.
        put2 = self.c1.put(key, b"world")
        self.assertGreater(put2["version"], put["version"])
        self.assertEqual(self.c0.get(key), b"world")
        deleted = self.c2.delete(key)
        self.assertEqual(deleted["key"], key)
        self.assertGreater(deleted["version"], put2["version"])
        for c in (self.c0, self.c1, self.c2):
            self.assertIsNone(c.get(key))
        # Deleting a missing key is no error (as chordctl del).
        self.c0.delete(key)
        self.c0.delete(unique("never-there"))

    def test_binary_values_and_awkward_keys(self):
        values = [bytes(range(256)), b"\x00", b"\xff\xfe\x00 \r\n", "ünïcødé ✓".encode("utf-8"),
                  os.urandom(64 * 1024)]
        keys = ["a/b", "/leading/slash", "with space", "ünïcödé ключ 鍵", "100%", "q?x=1&y=2#frag",
                "plus+sign", "..", "tab\there", "semi;colon,comma"]
        for i, key in enumerate(keys):
            key = key + "-" + unique("k")
            value = values[i % len(values)]
            with self.subTest(key=key):
                self.c0.put(key, value)
                self.assertEqual(self.c1.get(key), value)
                self.assertEqual(self.c2.get_record(key).value, value)
                # The node stored exactly these key bytes: its key id is their SHA-1.
                self.assertEqual(self.c1.lookup(key)["key_id"], sha1_hex(key))
                doc = self.c2.get_json(key)
                self.assertEqual(doc["key"], key)
                try:
                    text = value.decode("utf-8")
                except UnicodeDecodeError:
                    self.assertNotIn("value", doc)
                    self.assertEqual(base64.b64decode(doc["value_base64"]), value)
                else:
                    self.assertEqual(doc["value"], text)
                if CHORDCTL:
                    # The binary protocol's client reads the same key and bytes.
                    out = subprocess.run([CHORDCTL, "--node", RING.nodes[2].addr, "get", key],
                                         capture_output=True, timeout=30)
                    self.assertEqual(out.returncode, 0, out.stderr)
                    self.assertEqual(out.stdout, value + b"\n")
        # bytes keys are sent verbatim, even when they are not UTF-8.
        raw_key = b"raw-\xff\xfe-" + unique("b").encode()
        self.c0.put(raw_key, b"v")
        self.assertEqual(self.c1.get(raw_key), b"v")
        self.assertEqual(self.c2.lookup(raw_key)["key_id"], sha1_hex(raw_key))

    def test_a_value_put_as_json_text(self):
        key = unique("json-body")
        req = urllib.request.Request(RING.nodes[0].url + "/v1/keys/" + chord.quote_key(key),
                                     data=json.dumps({"value": "from json"}).encode(), method="PUT",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            self.assertEqual(json.loads(resp.read())["key"], key)
        self.assertEqual(self.c1.get(key), b"from json")

    def test_missing_key(self):
        key = unique("missing")
        self.assertIsNone(self.c0.get(key))
        with self.assertRaises(chord.NotFound) as cm:
            self.c1.get_record(key)
        e = cm.exception
        self.assertEqual((e.status, e.code), (404, "not_found"))
        self.assertIn('key "%s" not found' % key, e.message)
        self.assertEqual(str(e), e.message)
        # The answer itself: JSON with the sentence and the code.
        with self.assertRaises(urllib.error.HTTPError) as cm:
            urllib.request.urlopen(RING.nodes[2].url + "/v1/keys/" + key, timeout=10)
        self.assertEqual(cm.exception.code, 404)
        self.assertTrue(cm.exception.headers.get("Content-Type", "").startswith("application/json"))
        body = json.loads(cm.exception.read())
        self.assertEqual(body["code"], "not_found")
        self.assertEqual(body["error"], e.message)

    def test_if_absent_twice_conflicts_with_the_current_version(self):
        key = unique("cas-absent")
        first = self.c0.put(key, "one", if_absent=True)
        with self.assertRaises(chord.Conflict) as cm:
            self.c1.put(key, "two", if_absent=True)
        e = cm.exception
        self.assertEqual((e.status, e.code, e.version), (409, "conflict", first["version"]))
        self.assertIn(str(first["version"]), e.message)
        self.assertEqual(self.c2.get(key), b"one")

    def test_if_version(self):
        key = unique("cas-version")
        # No version holds for a key that does not exist; the conflict names version 0.
        with self.assertRaises(chord.Conflict) as cm:
            self.c0.put(key, "x", if_version=12345)
        self.assertEqual(cm.exception.version, 0)
        v1 = self.c0.put(key, "one")["version"]
        v2 = self.c1.put(key, "two", if_version=v1)["version"]
        self.assertGreater(v2, v1)
        self.assertEqual(self.c2.get(key), b"two")
        with self.assertRaises(chord.Conflict) as cm:
            self.c2.put(key, "stale", if_version=v1)
        self.assertEqual(cm.exception.version, v2)
        with self.assertRaises(chord.Conflict) as cm:
            self.c0.delete(key, if_version=v1)
        self.assertEqual(cm.exception.version, v2)
        self.assertEqual(self.c0.get(key), b"two")
        self.c1.delete(key, if_version=v2)
        self.assertIsNone(self.c2.get(key))

    def test_both_conditions_are_refused_as_invalid(self):
        key = unique("cas-both")
        with self.assertRaises(chord.InvalidRequest) as cm:
            self.c0.put(key, "x", if_absent=True, if_version=7)
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "invalid"))

    def test_ttl_expiry(self):
        key = unique("ttl")
        put = self.c0.put(key, "short-lived", ttl="500ms")
        self.assertGreater(put["version"], 0)
        wait_until("the expiry of %s" % key, lambda: self.c1.get(key) is None, 20)
        self.assertIsNone(self.c2.get(key))
        # A longer TTL reads back with its expiry: the write's version time (version >> 16, in
        # ms) plus the TTL; seconds as a number work too.
        key2 = unique("ttl-long")
        put2 = self.c1.put(key2, "longer", ttl=120)
        rec = self.c2.get_record(key2)
        self.assertEqual((rec.value, rec.version), (b"longer", put2["version"]))
        self.assertEqual(rec.expires_unix_ms, (put2["version"] >> 16) + 120_000)
        self.assertEqual(self.c0.get_json(key2)["expires_unix_ms"], rec.expires_unix_ms)
        # A put without a TTL clears it.
        self.c0.put(key2, "forever")
        self.assertIsNone(self.c1.get_record(key2).expires_unix_ms)
        self.assertNotIn("expires_unix_ms", self.c1.get_json(key2))

    def test_put_answer_names_the_expiry(self):
        put = self.c0.put(unique("ttl-answer"), "v", ttl="30s")
        self.assertEqual(put.get("expires_unix_ms"), (put["version"] >> 16) + 30_000)

    def test_bad_ttl_is_invalid(self):
        with self.assertRaises(chord.InvalidRequest) as cm:
            self.c0.put(unique("bad-ttl"), "x", ttl="soon")
        self.assertEqual(cm.exception.status, 400)
        self.assertTrue(cm.exception.message)

    def test_consistency_levels(self):
        key = unique("levels")
        put = self.c0.put(key, "all of them", consistency="all")
        self.assertEqual((put["acks"], put["required"]), (3, 3))
        put = self.c0.put(key, "two", w=2)
        self.assertEqual(put["required"], 2)
        self.assertGreaterEqual(put["acks"], 2)
        rec = self.c1.get_record(key, consistency="quorum")
        self.assertEqual(rec.value, b"two")
        self.assertEqual(rec.required, 2)
        self.assertGreaterEqual(rec.acks, 2)
        with self.assertRaises(ValueError):
            self.c0.get(key, consistency="most")


class RingTest(RingCase):
    """lookup, status and ring against owners and ids computed here."""

    def test_lookup_owner_matches_the_sha1_ring(self):
        order = ring_order(RING.addrs)
        for i in range(12):
            key = "lookup-key-%d" % i
            want = owner_addr(key, RING.addrs)
            for node in RING.nodes:
                with self.subTest(key=key, via=node.addr):
                    doc = node.client().lookup(key)
                    self.assertEqual(doc["key"], key)
                    self.assertEqual(doc["key_id"], sha1_hex(key))
                    self.assertEqual(doc["owner"]["addr"], want)
                    self.assertEqual(doc["owner"]["id"], sha1_hex(want))
                    self.assertEqual(doc["via"], node.addr)
                    self.assertIsInstance(doc["hops"], int)
                    self.assertIsInstance(doc["route"], list)
                    for hop in doc["route"]:
                        self.assertIn(hop, RING.addrs)
                    # R = 3 on 3 processes: the replicas are the other two, clockwise.
                    k = order.index(want)
                    replicas = [order[(k + 1) % 3], order[(k + 2) % 3]]
                    self.assertEqual([r["addr"] for r in doc["replicas"]], replicas)
                    self.assertEqual([r["id"] for r in doc["replicas"]], [sha1_hex(a) for a in replicas])

    def test_ring_lists_the_three_nodes(self):
        order = ring_order(RING.addrs)
        doc = RING.nodes[1].client().ring()
        self.assertTrue(doc["consistent"], doc.get("problems"))
        self.assertEqual([n["addr"] for n in doc["nodes"]], order)
        self.assertEqual([n["id"] for n in doc["nodes"]], [sha1_hex(a) for a in order])
        self.assertEqual([n["id"] for n in doc["nodes"]], sorted(n["id"] for n in doc["nodes"]))
        for i, n in enumerate(doc["nodes"]):
            self.assertEqual(n["state"], "Up")
            self.assertEqual(n["successor"]["addr"], order[(i + 1) % 3])
            self.assertEqual(n["predecessor"]["addr"], order[(i - 1) % 3])
        self.assertEqual(doc["problems"], [])
        self.assertEqual(doc["total_keys"], sum(n["keys"] for n in doc["nodes"]))

    def test_status_of_each_node(self):
        order = ring_order(RING.addrs)
        for node in RING.nodes:
            doc = node.client().status()
            self.assertEqual(doc["addr"], node.addr)
            self.assertEqual(doc["id"], sha1_hex(node.addr))
            i = order.index(node.addr)
            self.assertEqual(doc["successors"][0]["addr"], order[(i + 1) % 3])
            self.assertEqual(doc["predecessor"]["addr"], order[(i - 1) % 3])
            self.assertTrue(doc["joined"])

    def test_metrics(self):
        text = RING.nodes[0].client().metrics()
        self.assertIn('chord_keys{node="%s"}' % RING.nodes[0].addr, text)
        self.assertIn("chord_up", text)

    def test_unknown_path_and_method(self):
        # A path the API does not serve is not a missing key.
        with self.assertRaises(chord.InvalidRequest) as cm:
            RING.nodes[0].client()._json("GET", "/v1/nothing-here")
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "no_such_path"))
        with self.assertRaises(chord.InvalidRequest) as cm:
            RING.nodes[0].client()._json("PATCH", "/v1/keys/x")
        self.assertEqual((cm.exception.status, cm.exception.code), (405, "method"))

    def test_a_server_that_is_not_the_api_does_not_say_keys_are_missing(self):
        # Any URL answered by a bare 404 (not the API's JSON for a missing key) is an error,
        # never "absent".
        class NotFoundHandler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_error(404)

            def log_message(self, *args):
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), NotFoundHandler)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
        thread.start()
        try:
            c = chord.Client("http://127.0.0.1:%d" % server.server_address[1], timeout=5)
            with self.assertRaises(chord.InvalidRequest) as cm:
                c.get("greeting")
            self.assertEqual((cm.exception.status, cm.exception.code), (404, "no_such_path"))
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)

    def test_a_node_that_dribbles_its_answer_cannot_stretch_the_timeout(self):
        # A byte every 0.2 s: each read is quick, the answer as a whole is not. The client's
        # timeout (1 s) bounds the request, in the head and in the body (of an error answer
        # too).
        class DribbleHandler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = b"x" * 60
                status = b"503 Service Unavailable" if "error" in self.path else b"200 OK"
                head = b"HTTP/1.1 %s\r\nContent-Length: %d\r\n\r\n" % (status, len(body))
                data = (head if self.path.startswith("/v1/keys/head") else b"") + body
                if not self.path.startswith("/v1/keys/head"):
                    self.wfile.write(head)
                    self.wfile.flush()
                try:
                    for i in range(len(data)):  # 60 to 100 bytes: at most 20 s
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        time.sleep(0.2)
                except OSError:
                    pass  # the client went away

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), DribbleHandler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
        thread.start()
        try:
            c = chord.Client("http://127.0.0.1:%d" % server.server_address[1], timeout=1)
            for key in ("head", "body", "error"):  # error: an error answer's body
                with self.subTest(dribbled=key):
                    with self.assertRaises(chord.Timeout) as cm:
                        c.get(key)
                    self.assertIn("did not answer within 1 s", cm.exception.message)
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)

    def test_a_port_out_of_range_is_refused(self):
        for url in ("http://127.0.0.1:99999", "127.0.0.1:abc", "http://127.0.0.1:0"):
            with self.subTest(url=url):
                with self.assertRaises(chord.InvalidRequest) as cm:
                    chord.Client(url)
                self.assertIn("1 to 65535", cm.exception.message)

    def test_unreachable_node(self):
        c = chord.Client("http://127.0.0.1:%d" % free_port(), timeout=5)
        with self.assertRaises(chord.Unavailable) as cm:
            c.get("k")
        self.assertEqual(cm.exception.status, 0)
        self.assertIn("could not reach", cm.exception.message)


class WatchTest(RingCase):
    """The server-sent event streams."""

    def test_watch_yields_the_puts_in_order(self):
        key = unique("watch")
        c0, c1 = RING.nodes[0].client(), RING.nodes[1].client()
        events = c0.watch(key, retries=1, idle_timeout=20)
        try:
            first = next_within(events)
            self.assertEqual(first["type"], "current")
            self.assertTrue(first["deleted"])
            versions = [c1.put(key, "v%d" % i)["version"] for i in range(5)]
            deleted = c1.delete(key)["version"]
            got = [next_within(events) for _ in range(6)]
        finally:
            stop_stream(events)
        self.assertEqual([e["type"] for e in got], ["put"] * 5 + ["delete"])
        self.assertEqual([e.get("value") for e in got[:5]], ["v%d" % i for i in range(5)])
        self.assertEqual([e["version"] for e in got], versions + [deleted])
        self.assertEqual([e["version"] for e in got], sorted(set(e["version"] for e in got)))

    def test_watch_from_version_and_current(self):
        key = unique("watch-from")
        c = RING.nodes[2].client()
        # A node keeps the changes of a key only once someone watches it: watch, then write.
        events = c.watch(key, retries=1, idle_timeout=20)
        try:
            self.assertEqual(next_within(events)["type"], "current")
            versions = [c.put(key, "v%d" % i)["version"] for i in range(4)]
        finally:
            stop_stream(events)
        events = RING.nodes[0].client().watch(key, from_version=versions[1], retries=1, idle_timeout=20)
        try:
            got = [next_within(events) for _ in range(2)]
        finally:
            stop_stream(events)
        self.assertEqual([(e["type"], e["version"], e["value"]) for e in got],
                         [("put", versions[2], "v2"), ("put", versions[3], "v3")])
        events = c.watch(key, retries=1, idle_timeout=20)
        try:
            now = next_within(events)
        finally:
            stop_stream(events)
        self.assertEqual((now["type"], now["version"], now["deleted"], now["value"]),
                         ("current", versions[3], False, "v3"))

    def test_an_unknown_version_resyncs(self):
        """A version the node cannot connect to its history: one resync with the value."""
        key = unique("watch-resync")
        c = RING.nodes[1].client()
        version = c.put(key, "only")["version"]
        events = c.watch(key, from_version=version - 1, retries=1, idle_timeout=20)
        try:
            e = next_within(events)
        finally:
            stop_stream(events)
        self.assertEqual((e["type"], e["version"], e["deleted"], e["value"]), ("resync", version, False, "only"))

    def test_last_event_id_resumes(self):
        """The raw stream: ids are versions, and Last-Event-ID resumes after the one given."""
        key = unique("last-event-id")
        c = RING.nodes[0].client()
        events = c.watch(key, retries=1, idle_timeout=20)
        try:
            self.assertEqual(next_within(events)["type"], "current")
            versions = [c.put(key, "v%d" % i)["version"] for i in range(3)]
        finally:
            stop_stream(events)
        req = urllib.request.Request(RING.nodes[1].url + "/v1/watch/" + chord.quote_key(key),
                                     headers={"Last-Event-ID": str(versions[0])})
        blocks = []  # the events: their field lines, comments left out
        with urllib.request.urlopen(req, timeout=20) as resp:
            self.assertTrue(resp.headers.get("Content-Type", "").startswith("text/event-stream"))
            fields: list[str] = []
            while len(blocks) < 2:
                line = resp.readline()
                self.assertTrue(line.endswith(b"\n"), "the stream ended early after %r" % blocks)
                line = line.decode().rstrip("\r\n")
                if line == "":
                    if any(f.startswith("data:") for f in fields):  # e.g. a lone "retry:" is no event
                        blocks.append(sorted(fields))
                    fields = []
                elif not line.startswith(":"):
                    fields.append(line)
        for block, i in zip(blocks, (1, 2)):
            data = [f for f in block if f.startswith("data:")]
            self.assertEqual(len(data), 1, block)
            self.assertEqual(sorted(["event: put", "id: %d" % versions[i], data[0]]), block)
            self.assertEqual(json.loads(data[0][len("data:"):]),
                             {"type": "put", "version": versions[i], "value": "v%d" % i})

    def test_watch_resumes_after_dropped_connections(self):
        key = unique("watch-drop")
        first = RING.nodes[0].client().put(key, "initial")["version"]
        node = RING.nodes[1]
        proxy = DropAfterFirstEventProxy(node.http_port)
        c = chord.Client("http://127.0.0.1:%d" % proxy.port)
        events = c.watch(key, retries=3, idle_timeout=20)
        try:
            e = next_within(events)
            self.assertEqual((e["type"], e["version"]), ("current", first))
            for i in range(5):
                version = RING.nodes[0].client().put(key, "v%d" % i)["version"]
                e = next_within(events)
                self.assertEqual((e["type"], e["version"], e["value"]), ("put", version, "v%d" % i))
        finally:
            stop_stream(events)
            proxy.close()
        # Every event came over a new connection (the proxy cut each after one event).
        self.assertGreaterEqual(proxy.cuts, 5)
        self.assertGreaterEqual(proxy.connections, 6)

    def test_resume_after_the_current_state_of_an_absent_key(self):
        """The current event of an absent key has id 0; resuming after it must give the changes
        since, not the state again."""
        key = unique("resume-absent")
        c = RING.nodes[0].client()
        events = c.watch(key, retries=1, idle_timeout=20)
        try:
            self.assertEqual(next_within(events)["version"], 0)
            version = c.put(key, "v")["version"]
        finally:
            stop_stream(events)
        req = urllib.request.Request(RING.nodes[0].url + "/v1/watch/" + chord.quote_key(key),
                                     headers={"Last-Event-ID": "0"})
        with urllib.request.urlopen(req, timeout=20) as resp:
            e = next_within(chord.client.sse.events(resp))
        self.assertEqual((e.event, json.loads(e.data)["version"]), ("put", version))

    def test_watch_gives_up_after_bounded_retries(self):
        c = chord.Client("http://127.0.0.1:%d" % free_port(), timeout=2)
        started = time.monotonic()
        with self.assertRaises(chord.Unavailable) as cm:
            next(c.watch("k", retries=2))
        self.assertIn("failed 3 times in a row", cm.exception.message)
        self.assertLess(time.monotonic() - started, 60)

    def test_ring_events_show_a_join_and_a_departure(self):
        events = RING.nodes[0].client().ring_events(retries=1, idle_timeout=30)
        extra = None
        try:
            first = next_within(events)
            self.assertEqual(first["event"], "ring")
            self.assertEqual([n["addr"] for n in first["nodes"]], ring_order(RING.addrs))
            extra = RING.start_node(RING.nodes[0].addr)
            saw = []

            def until(pred, what):
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    e = next_within(events, max(deadline - time.monotonic(), 1))
                    saw.append(e["event"])
                    if pred(e):
                        return e
                raise AssertionError("no %s event within 30 s (saw %s)" % (what, saw))

            joined = until(lambda e: e["event"] == "join" and e["addr"] == extra.addr, "join")
            self.assertEqual(joined["id"], sha1_hex(extra.addr))
            self.assertGreater(joined["at_unix_ms"], 0)
            until(lambda e: e["event"] == "ring" and extra.addr in [n["addr"] for n in e["nodes"]],
                  "ring with the new node")
            extra.stop(signal.SIGKILL)
            down = until(lambda e: e["event"] == "down" and e["addr"] == extra.addr, "down")
            self.assertTrue(down.get("reason"))
        finally:
            stop_stream(events)
            if extra is not None:
                extra.stop(signal.SIGKILL)
                RING.nodes.remove(extra)
                RING.wait_consistent()


class TlsTest(unittest.TestCase):
    """A one-node ring with mutual TLS (scripts/certs.sh): the client's certificate and role."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="chord-python-tls-")
        certs = str(ROOT / "scripts" / "certs.sh")
        cls.node = None
        for _ in range(4):
            port, http_port = free_port(), free_port()
            addr = "127.0.0.1:%d" % port
            for args in (["ca", cls.dir, "--force"], ["member", cls.dir, addr],
                         ["client", cls.dir, "writer", "--role", "write"],
                         ["client", cls.dir, "reader", "--role", "read"]):
                subprocess.run(["bash", certs, *args], check=True, capture_output=True, timeout=60)
            member = os.path.join(cls.dir, "member-127.0.0.1_%d" % port)
            log = open(os.path.join(cls.dir, "node.log"), "wb")
            proc = subprocess.Popen(
                [CHORD_NODE, "--listen", addr, "--memory", "--http-listen", "127.0.0.1:%d" % http_port,
                 "--tls-cert", member + ".pem", "--tls-key", member + ".key",
                 "--tls-ca", os.path.join(cls.dir, "ca.pem")],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
            cls.url = "https://127.0.0.1:%d" % http_port
            writer = cls.client("writer")
            try:
                wait_until("the TLS node's API", lambda: proc.poll() is not None or writer.status(), START_WAIT_S)
            except AssertionError:
                pass
            if proc.poll() is None:
                cls.proc, cls.log = proc, log
                return
            log.close()  # exited: most likely a port taken; try others
        raise AssertionError("the TLS node did not start in 4 attempts")

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        try:
            cls.proc.wait(10)
        except subprocess.TimeoutExpired:
            cls.proc.kill()
            cls.proc.wait(10)
        cls.log.close()

    @classmethod
    def client(cls, name: str | None, **kw) -> chord.Client:
        pem = os.path.join(cls.dir, "client-%s" % name) if name else None
        return chord.Client(cls.url, cafile=os.path.join(cls.dir, "ca.pem"),
                            certfile=pem + ".pem" if pem else None, keyfile=pem + ".key" if pem else None, **kw)

    def test_roles(self):
        key = unique("tls")
        writer, reader = self.client("writer"), self.client("reader")
        version = writer.put(key, "secret")["version"]
        self.assertEqual(reader.get_record(key).version, version)
        with self.assertRaises(chord.Forbidden) as cm:
            reader.put(key, "nope")
        self.assertEqual((cm.exception.status, cm.exception.code), (403, "forbidden"))
        self.assertTrue(cm.exception.message)
        self.assertEqual(writer.get(key), b"secret")
        events = reader.watch(key, retries=0, idle_timeout=20)
        try:
            e = next_within(events)
        finally:
            stop_stream(events)
        self.assertEqual((e["type"], e["version"]), ("current", version))

    def test_without_a_certificate(self):
        with self.assertRaises(chord.Unavailable) as cm:
            self.client(None).get("k")
        self.assertIn("client certificate", cm.exception.message)
        # Plain HTTP to the TLS listener.
        with self.assertRaises(chord.Unavailable) as cm:
            chord.Client(self.url.replace("https://", "http://"), timeout=5).get("k")
        self.assertEqual(cm.exception.status, 0)

    def test_cli_with_the_environment_variables(self):
        env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR), CHORD_TLS_CA=os.path.join(self.dir, "ca.pem"),
                   CHORD_TLS_CERT=os.path.join(self.dir, "client-reader.pem"),
                   CHORD_TLS_KEY=os.path.join(self.dir, "client-reader.key"))
        key = unique("tls-cli")
        self.client("writer").put(key, "v")
        run = lambda *a: subprocess.run([sys.executable, "-m", "chord", "--url", self.url, *a],  # noqa: E731
                                        capture_output=True, env=env, timeout=60)
        r = run("get", key)
        self.assertEqual((r.returncode, r.stdout), (0, b"v\n"), r.stderr)
        r = run("put", key, "w")
        self.assertEqual(r.returncode, 3, r.stderr)  # forbidden: chordctl's exit 3
        self.assertEqual(len(r.stderr.decode().splitlines()), 1, r.stderr)


class CliTest(RingCase):
    """python3 -m chord: output and chordctl's exit codes."""

    def cli(self, *args: str, env_url: str | None = None, stdin: bytes | None = None):
        env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
        env.pop("CHORD_HTTP", None)
        if env_url:
            env["CHORD_HTTP"] = env_url
        return subprocess.run([sys.executable, "-m", "chord", *args], input=stdin,
                              capture_output=True, env=env, timeout=60)

    def assertExit(self, result, code: int):
        self.assertEqual(result.returncode, code, "stdout %r stderr %r" % (result.stdout, result.stderr))

    def assertOneSentence(self, result):
        lines = result.stderr.decode().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertTrue(lines[0].startswith("chord: "), lines[0])

    def test_exit_codes(self):
        url = RING.nodes[0].url
        key = unique("cli")
        r = self.cli("--url", url, "put", key, "one")
        self.assertExit(r, 0)
        self.assertEqual(r.stdout, b"")
        r = self.cli("get", key, "--url", RING.nodes[1].url)  # options after the command too
        self.assertExit(r, 0)
        self.assertEqual(r.stdout, b"one\n")
        # Not found: 1.
        r = self.cli("--url", url, "get", unique("cli-missing"))
        self.assertExit(r, 1)
        self.assertOneSentence(r)
        self.assertIn("not found", r.stderr.decode())
        # Conflict: 4, naming the version.
        version = json.loads(self.cli("--url", url, "get", key, "--json").stdout)["version"]
        r = self.cli("--url", url, "put", key, "two", "--if-absent")
        self.assertExit(r, 4)
        self.assertOneSentence(r)
        self.assertIn(str(version), r.stderr.decode())
        r = self.cli("--url", url, "del", key, "--if-version", str(version + 1))
        self.assertExit(r, 4)
        # Usage: 2 (an unknown flag, a bad level, a missing argument, both conditions, no command).
        for args in (["get", key, "--frobnicate"], ["get", key, "--consistency", "most"], ["put", key],
                     ["put", key, "v", "--if-absent", "--if-version", "3"], [], ["get"]):
            with self.subTest(args=args):
                r = self.cli("--url", url, *args)
                self.assertExit(r, 2)
                self.assertOneSentence(r)
        # The node refuses a bad TTL: 2 with its sentence.
        r = self.cli("--url", url, "put", key, "v", "--ttl", "soon")
        self.assertExit(r, 2)
        self.assertOneSentence(r)
        # Unreachable: 3.
        r = self.cli("--url", "127.0.0.1:%d" % free_port(), "get", key)
        self.assertExit(r, 3)
        self.assertOneSentence(r)
        # A port out of range: 2, nothing sent.
        r = self.cli("--url", "127.0.0.1:99999", "get", key)
        self.assertExit(r, 2)
        self.assertOneSentence(r)
        # Delete: 0, also for a missing key; then get: 1.
        self.assertExit(self.cli("--url", url, "del", key), 0)
        self.assertExit(self.cli("--url", url, "del", key), 0)
        self.assertExit(self.cli("--url", url, "get", key), 1)

    def test_chord_http_environment_variable(self):
        key = unique("cli-env")
        self.assertExit(self.cli("put", key, "from env", env_url=RING.nodes[2].url), 0)
        r = self.cli("get", key, env_url=RING.nodes[0].url.replace("http://", ""))
        self.assertExit(r, 0)
        self.assertEqual(r.stdout, b"from env\n")

    def test_json_outputs(self):
        url = RING.nodes[1].url
        key = unique("cli-json")
        put = json.loads(self.cli("--url", url, "put", key, "v", "--json").stdout)
        got = json.loads(self.cli("--url", url, "get", key, "--json").stdout)
        self.assertEqual((got["value"], got["version"]), ("v", put["version"]))
        lookup = json.loads(self.cli("--url", url, "lookup", key, "--json").stdout)
        self.assertEqual(lookup["owner"]["addr"], owner_addr(key, RING.addrs))
        ring = json.loads(self.cli("--url", url, "ring", "--json").stdout)
        self.assertEqual([n["addr"] for n in ring["nodes"]], ring_order(RING.addrs))
        status = json.loads(self.cli("--url", url, "status", "--json").stdout)
        self.assertEqual(status["addr"], RING.nodes[1].addr)
        # The text forms name the same things.
        text = self.cli("--url", url, "lookup", key).stdout.decode()
        self.assertIn(owner_addr(key, RING.addrs), text)
        text = self.cli("--url", url, "ring").stdout.decode()
        for addr in RING.addrs:
            self.assertIn(addr, text)
        self.assertIn("[OK]", text)
        r = self.cli("--url", url, "ring-events", "--count", "1")
        self.assertExit(r, 0)
        lines = r.stdout.decode().splitlines()
        self.assertEqual(len(lines), 1)
        event = json.loads(lines[0])
        self.assertEqual((event["event"], len(event["nodes"])), ("ring", 3))
        r = self.cli("--url", url, "metrics")
        self.assertExit(r, 0)
        self.assertIn('chord_keys{node="%s"}' % RING.nodes[1].addr, r.stdout.decode())

    def test_value_file_and_binary_value(self):
        key = unique("cli-binary")
        value = bytes(range(256)) * 4
        self.assertExit(self.cli("--url", RING.nodes[0].url, "put", key, "--value-file", "-", stdin=value), 0)
        self.assertEqual(RING.nodes[1].client().get(key), value)
        r = self.cli("--url", RING.nodes[2].url, "get", key)
        self.assertEqual(r.stdout, value + b"\n")

    def test_watch_count(self):
        url = RING.nodes[0].url
        key = unique("cli-watch")
        c = RING.nodes[0].client()
        events = c.watch(key, retries=1, idle_timeout=20)  # the node keeps the key's changes from now
        try:
            self.assertEqual(next_within(events)["type"], "current")
            versions = [c.put(key, "v%d" % i)["version"] for i in range(3)]
        finally:
            stop_stream(events)
        r = self.cli("--url", url, "watch", key, "--from-version", str(versions[0]), "--count", "2", "--json")
        self.assertExit(r, 0)
        lines = [json.loads(line) for line in r.stdout.decode().splitlines()]
        self.assertEqual([(e["type"], e["version"]) for e in lines], [("put", versions[1]), ("put", versions[2])])
        r = self.cli("--url", url, "watch", key, "--count", "1")
        self.assertExit(r, 0)
        self.assertEqual(r.stdout.decode(), "current %d v2\n" % versions[2])


def main() -> None:
    global CHORD_NODE, CHORDCTL
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chord-node", default=CHORD_NODE, help="the chord-node binary ($CHORD_NODE_BIN)")
    parser.add_argument("--chordctl", default=CHORDCTL, help="chordctl, for cross-checks ($CHORDCTL_BIN)")
    args, rest = parser.parse_known_args()

    def on_term(signum, frame):  # stop the nodes by their PIDs, then end
        if RING is not None:
            RING.stop()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    CHORD_NODE, CHORDCTL = args.chord_node, args.chordctl
    if not CHORD_NODE or not os.access(CHORD_NODE, os.X_OK):
        sys.stderr.write("test_chord_client.py: give the chord-node binary with --chord-node PATH "
                         "(or $CHORD_NODE_BIN); %r is not executable\n" % CHORD_NODE)
        sys.exit(2)
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()

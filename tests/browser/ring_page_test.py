#!/usr/bin/env python3
"""The live ring page in a real browser: headless Chromium driven through chromedriver.

    ring_page_test.py CHORD_NODE [ARTIFACTS_DIR]

Starts 3 chord-node processes (in memory, --http-listen) on free 127.0.0.1 ports, loads the
page of one of them, and checks, each within a bounded wait:
  (a) the page shows 3 nodes, with the right addresses;
  (b) a 4th node joins: the page shows 4, with its address;
  (c) one node is SIGKILLed: it turns red (data-state=down) or disappears, the count drops to
      3, and it is gone from the picture a few seconds later;
  (d) a key lookup through the page's box highlights as owner the node computed here
      (SHA-1 of the key against the sorted SHA-1s of the live addresses), and its replicas.
The browser is spoken to in W3C WebDriver JSON over HTTP (standard library only). A screenshot
goes to $CHORD_TEST_ARTIFACTS (default ARTIFACTS_DIR, else ./test-artifacts) as ring_page.png.
Exit 0 pass, 1 fail, 77 skipped (Chromium or chromedriver missing; the reason is printed).
"""
import base64
import bisect
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
HOST = "127.0.0.1"
WAIT_S = 20          # bound of every wait on the page or the ring
NUM_KEYS = 12
REPLICAS = 3         # chord-node's default --replicas


class TestFailure(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def sha1_int(text):
    return int.from_bytes(hashlib.sha1(text.encode()).digest(), "big")


def sorted_ring(addrs):
    """The nodes as (id, address) pairs in ring order."""
    return sorted((sha1_int(a), a) for a in addrs)


def owner_on(ring, key_id):
    """Owner of a key id on a sorted_ring: the first id >= the key's id, wrapping."""
    return ring[bisect.bisect_left(ring, (key_id,)) % len(ring)][1]


def expected_owner(key, addrs):
    return owner_on(sorted_ring(addrs), sha1_int(key))


def first_key_of_each(addrs, limit=1_000_000):
    """For each address, the first key user-1, user-2, ... (below `limit`) that it owns.

    Each node's range is a random arc, so a fixed handful of candidates can miss a small one
    (with 10,000 candidates, about one run in 500 did); a million miss an arc only if it is
    below about a millionth of the ring.
    """
    ring = sorted_ring(addrs)
    found = {}
    for i in range(1, limit):
        key = f"user-{i}"
        found.setdefault(owner_on(ring, sha1_int(key)), key)
        if len(found) == len(ring):
            return [found[a] for a in sorted(addrs)]
    missing = sorted(set(addrs) - set(found))
    raise TestFailure(f"no key user-1 .. user-{limit - 1} falls in the range of {missing}: "
                      "its arc of the ring is too small to test through the page; run again")


def expected_replicas(owner, addrs, replicas):
    ring = [a for _, a in sorted_ring(addrs)]
    i = ring.index(owner)
    return {ring[(i + k) % len(ring)] for k in range(1, min(replicas, len(ring)))}


def http(method, url, body=None, timeout=10):
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method)
    if body is not None and not isinstance(body, bytes):
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        raw = resp.read()
    return json.loads(raw) if raw else None


def poll(what, check, wait_s=WAIT_S, interval=0.25):
    """Calls check() until it returns a true value (returned) or wait_s pass (TestFailure)."""
    deadline = time.monotonic() + wait_s
    last = None
    while True:
        try:
            result, last = check()
        except (urllib.error.URLError, OSError, ValueError) as e:
            result, last = None, f"{type(e).__name__}: {e}"
        if result:
            return result
        if time.monotonic() >= deadline:
            raise TestFailure(f"{what}: not within {wait_s} s (last seen: {last})")
        time.sleep(interval)


class Node:
    def __init__(self, binary, workdir, join=None):
        self.port = free_port()
        self.http_port = free_port()
        self.addr = f"{HOST}:{self.port}"
        self.http = f"http://{HOST}:{self.http_port}"
        args = [binary, "--listen", self.addr, "--memory", "--stabilize-ms", "100",
                "--http-listen", f"{HOST}:{self.http_port}"]
        if join:
            args += ["--join", join]
        self.log_path = os.path.join(workdir, f"node-{self.port}.log")
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def ring(self):
        return http("GET", self.http + "/v1/ring")


def wait_ring(node, addrs):
    """Until node's /v1/ring lists exactly addrs and says consistent."""
    want = sorted(addrs)

    def check():
        r = node.ring()
        got = sorted(n["addr"] for n in r["nodes"])
        return (got == want and r["consistent"]), f"{got}, consistent={r['consistent']}"
    poll(f"the ring of {node.addr} to be {want} and consistent", check)


class WebDriver:
    """The few W3C WebDriver commands the test needs, over plain HTTP."""
    ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C web element identifier

    def __init__(self, workdir):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [CHROMEDRIVER, f"--port={self.port}", f"--log-path={os.path.join(workdir, 'chromedriver.log')}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
            start_new_session=True)
        self.base = f"http://{HOST}:{self.port}"
        self.session = None
        poll("chromedriver to answer /status",
             lambda: (http("GET", self.base + "/status")["value"].get("ready"), "not ready"))
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,900",
                "--disable-dev-shm-usage", f"--user-data-dir={os.path.join(workdir, 'profile')}"]}}}}
        answer = http("POST", self.base + "/session", caps, timeout=60)
        self.session = answer["value"]["sessionId"]

    def cmd(self, method, path, body=None):
        try:
            return http(method, f"{self.base}/session/{self.session}{path}", body, timeout=30)["value"]
        except urllib.error.HTTPError as e:
            raise TestFailure(f"WebDriver {method} {path}: HTTP {e.code} {e.read()[:300]!r}") from None

    def get(self, url):
        self.cmd("POST", "/url", {"url": url})

    def js(self, script, *args):
        return self.cmd("POST", "/execute/sync", {"script": script, "args": list(args)})

    def find(self, css):
        return self.cmd("POST", "/element", {"using": "css selector", "value": css})[self.ELEMENT]

    def clear(self, element):
        self.cmd("POST", f"/element/{element}/clear", {})

    def type(self, element, text):
        self.cmd("POST", f"/element/{element}/value", {"text": text})

    def click(self, element):
        self.cmd("POST", f"/element/{element}/click", {})

    def screenshot(self, path):
        png = base64.b64decode(self.cmd("GET", "/screenshot"))
        with open(path, "wb") as f:
            f.write(png)
        return path

    def quit(self):
        try:
            if self.session:
                http("DELETE", f"{self.base}/session/{self.session}", timeout=30)
        except (urllib.error.URLError, OSError):
            pass
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGTERM)  # chromedriver's own group: it and its browser
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


# What the page shows: its count, and the address and state of every drawn node.
PAGE_STATE = """
const c = document.getElementById('node-count');
return {count: c ? c.dataset.count : null,
        conn: (document.getElementById('conn-state') || {}).textContent,
        totals: (document.getElementById('totals') || {}).textContent,
        nodes: [...document.querySelectorAll('#ring g.node')].map(g => ({
          addr: g.dataset.addr, id: g.dataset.id, state: g.dataset.state,
          cls: [...g.classList].filter(x => x !== 'node')})),
        result: (() => { const r = document.getElementById('lookup-result');
                         return r ? {owner: r.dataset.owner || null, key: r.dataset.key || null,
                                     text: r.textContent} : null; })()};
"""


def page_shows(driver, addrs):
    """Check for poll(): the page counts len(addrs) nodes and draws exactly addrs as not down."""
    def check():
        s = driver.js(PAGE_STATE)
        shown = sorted(n["addr"] for n in s["nodes"] if n["state"] != "down")
        ok = s["count"] == str(len(addrs)) and shown == sorted(addrs)
        return (s if ok else None), f"count={s['count']}, nodes={shown}, events {s['conn']}"
    return check


def run(node_bin, artifacts, workdir):
    nodes = []
    driver = None
    try:
        nodes.append(Node(node_bin, workdir))
        for _ in range(2):
            nodes.append(Node(node_bin, workdir, join=nodes[0].addr))
        page_node = nodes[0]
        addrs = [n.addr for n in nodes]
        log(f"nodes: {', '.join(addrs)}; page at {page_node.http}/")
        wait_ring(page_node, addrs)
        for i in range(1, NUM_KEYS + 1):
            http("PUT", f"{page_node.http}/v1/keys/" + urllib.parse.quote(f"user-{i}", safe=""),
                 f"value {i}".encode())
        poll(f"the ring to count {NUM_KEYS} primary keys",
             lambda: ((r := page_node.ring())["total_keys"] == NUM_KEYS, r["total_keys"]))

        driver = WebDriver(workdir)
        driver.get(page_node.http + "/")
        title = driver.js("return document.title;")
        if "chord" not in (title or ""):
            raise TestFailure(f"{page_node.http}/ is not the ring page (title {title!r})")

        # (a) three nodes, the right addresses, and the key total.
        poll("(a) the page to show the 3 nodes", page_shows(driver, addrs))
        poll(f"(a) the page to show {NUM_KEYS} keys in total", lambda: (
            (t := driver.js(PAGE_STATE)["totals"] or "").startswith(f"{NUM_KEYS} keys"), t))
        log("[OK] (a) the page shows 3 nodes with their addresses")

        # (b) a fourth node joins.
        nodes.append(Node(node_bin, workdir, join=nodes[1].addr))
        addrs.append(nodes[-1].addr)
        poll("(b) the page to show the 4th node " + nodes[-1].addr, page_shows(driver, addrs))
        log(f"[OK] (b) the page shows 4 nodes after {nodes[-1].addr} joined")
        wait_ring(page_node, addrs)

        # (c) SIGKILL one node (not the page's).
        victim = nodes[2]
        victim.stop(signal.SIGKILL)
        addrs.remove(victim.addr)
        seen_red = False

        def dropped():
            nonlocal seen_red
            s = driver.js(PAGE_STATE)
            mine = [n for n in s["nodes"] if n["addr"] == victim.addr]
            if mine and mine[0]["state"] == "down":
                seen_red = True
            ok = s["count"] == "3" and (not mine or mine[0]["state"] == "down")
            return ok, f"count={s['count']}, {victim.addr}: {mine[0]['state'] if mine else 'gone'}"
        poll(f"(c) the killed node {victim.addr} to turn red or vanish and the count to drop to 3",
             dropped, interval=0.1)

        def vanished():
            drawn = [(n["addr"], n["state"]) for n in driver.js(PAGE_STATE)["nodes"]]
            return all(a != victim.addr for a, _ in drawn), drawn
        poll(f"(c) the killed node {victim.addr} to vanish from the picture", vanished)
        poll("(c) the page to show the 3 live nodes", page_shows(driver, addrs))
        log(f"[OK] (c) {victim.addr} was SIGKILLed: " +
            ("shown red, then gone" if seen_red else "gone (not caught while red)") + "; 3 nodes shown")

        # (d) lookups through the page's box.
        wait_ring(page_node, addrs)
        box = driver.find("#lookup-key")
        go = driver.find("#lookup-go")
        # One key owned by each live node (so no single highlighted node can pass), and one
        # that needs escaping in the URL.
        keys = first_key_of_each(addrs)
        keys.append("a key/with spaces & slashes?")
        for key in keys:
            owner = expected_owner(key, addrs)
            replicas = expected_replicas(owner, addrs, REPLICAS)
            last = {}

            def answered():
                driver.clear(box)
                driver.type(box, key)
                driver.click(go)
                try:
                    s = poll(f"the lookup of {key!r} to be answered", lambda: (
                        (st := driver.js(PAGE_STATE))["result"]["key"] == key and st,
                        st["result"]), wait_s=10)
                except TestFailure as e:
                    return False, str(e)
                owners = [n["addr"] for n in s["nodes"] if "owner" in n["cls"]]
                reps = {n["addr"] for n in s["nodes"] if "replica" in n["cls"]}
                last.update(result_owner=s["result"]["owner"], highlighted_owner=owners,
                            replicas=sorted(reps), text=s["result"]["text"])
                ok = owners == [owner] and s["result"]["owner"] == owner and reps == replicas
                return ok, last
            poll(f"(d) lookup of {key!r}: owner {owner} (replicas {sorted(replicas)}) highlighted",
                 answered, interval=1)
            log(f"[OK] (d) {key!r}: the page highlights owner {owner} and replicas {sorted(replicas)}")

        os.makedirs(artifacts, exist_ok=True)
        log("screenshot: " + driver.screenshot(os.path.join(artifacts, "ring_page.png")))
    except Exception:
        if driver and driver.session:
            try:
                os.makedirs(artifacts, exist_ok=True)
                log("screenshot of the failure: " +
                    driver.screenshot(os.path.join(artifacts, "ring_page_failure.png")))
            except Exception as e:  # the original error matters more
                log(f"(no failure screenshot: {e})")
        raise
    finally:
        if driver:
            driver.quit()
        for n in nodes:
            n.stop()


def main():
    if len(sys.argv) < 2:
        print("usage: ring_page_test.py CHORD_NODE [ARTIFACTS_DIR]", file=sys.stderr)
        return 2
    node_bin = sys.argv[1]
    artifacts = os.environ.get("CHORD_TEST_ARTIFACTS") or (
        sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.getcwd(), "test-artifacts"))
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            print(f"SKIP: {path} is missing (apt-get install {package}); the ring page is not tested "
                  "in a browser", flush=True)
            return 77
    if not os.access(node_bin, os.X_OK):
        print(f"FAIL: {node_bin} is not an executable chord-node; build it first", file=sys.stderr)
        return 1
    workdir = tempfile.mkdtemp(prefix="chord-ring-page-")
    try:
        run(node_bin, artifacts, workdir)
    except TestFailure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        print(f"(logs kept in {workdir})", file=sys.stderr)
        for name in sorted(os.listdir(workdir)):
            if name.endswith(".log"):
                with open(os.path.join(workdir, name), errors="replace") as f:
                    tail = f.readlines()[-15:]
                print(f"--- last lines of {name}:\n" + "".join(tail), file=sys.stderr)
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    print("PASS: the ring page follows joins and crashes and highlights lookups", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

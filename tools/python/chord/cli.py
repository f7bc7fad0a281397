"""The command line ``python3 -m chord``: chordctl's data and ring commands over HTTP.

Exit codes are chordctl's: 0 ok, 1 not found, 2 usage (bad flags, key or value refused as
invalid), 3 node unreachable, timeout or the ring could not complete the request, 4 a
compare-and-set condition did not hold. Errors are one sentence on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Sequence

from .client import CONSISTENCY_LEVELS, Client, default_url
from .errors import ChordError

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3
EXIT_CONFLICT = 4

PROG = "python3 -m chord"
# As chordctl: above any replication factor a node accepts; the node names the real limit.
MAX_REQUIRED = 64
MAX_VALUE_BYTES = 1 << 20


class UsageError(Exception):
    """A command line mistake found after parsing."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a mistake is one sentence on stderr and exit 2 (no usage dump)."""

    def error(self, message: str):  # noqa: D102 (argparse's hook)
        sys.stderr.write("chord: %s; run %s --help for usage\n" % (message, self.prog))
        sys.exit(EXIT_USAGE)


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a whole number" % text) from None
    if n < 1:
        raise argparse.ArgumentTypeError("%r must be at least 1" % text)
    return n


def _required(text: str) -> int:
    n = _positive(text)
    if n > MAX_REQUIRED:
        raise argparse.ArgumentTypeError("%r is more than %d replicas" % (text, MAX_REQUIRED))
    return n


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a whole number" % text) from None
    if n < 0:
        raise argparse.ArgumentTypeError("%r must not be negative" % text)
    return n


def _timeout(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number of seconds" % text) from None
    if not 0 < s <= 3600:
        raise argparse.ArgumentTypeError("%r must be above 0 and at most 3600 seconds" % text)
    return s


def _global_options(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """--url, --timeout and the TLS files. On the subcommands too (``default=SUPPRESS``), so
    that they may come before or after the command."""

    def default(value):
        return argparse.SUPPRESS if suppress else value

    parser.add_argument("--url", default=default(None),
                        help="the node's HTTP address, http://HOST:PORT (default: $CHORD_HTTP, then "
                        "http://127.0.0.1:8080)")
    parser.add_argument("--timeout", type=_timeout, default=default(10.0), metavar="S",
                        help="give up on the node after S seconds (default 10)")
    parser.add_argument("--tls-cert", default=default(os.environ.get("CHORD_TLS_CERT")), metavar="FILE",
                        help="client certificate (PEM) for a ring that runs TLS (default: $CHORD_TLS_CERT)")
    parser.add_argument("--tls-key", default=default(os.environ.get("CHORD_TLS_KEY")), metavar="FILE",
                        help="its private key (default: $CHORD_TLS_KEY)")
    parser.add_argument("--tls-ca", default=default(os.environ.get("CHORD_TLS_CA")), metavar="FILE",
                        help="the cluster CA certificate (default: $CHORD_TLS_CA)")


def _consistency_options(cmd: argparse.ArgumentParser, letter: str) -> None:
    what = "store the write" if letter == "w" else "answer"
    cmd.add_argument("--consistency", choices=CONSISTENCY_LEVELS,
                     help="how many of the key's replicas must %s: one, quorum or all" % what)
    cmd.add_argument("-" + letter, type=_required, metavar="N",
                     help="replicas that must %s (overrides --consistency)" % what)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python3 -m chord``."""
    parser = _Parser(
        prog=PROG,
        description="Talk to a chord ring over its HTTP API (chord-node --http-listen): put, get, "
        "delete and look up keys, watch a key, show a node or the ring.",
        epilog="Exit codes: 0 ok; 1 not found; 2 usage; 3 node unreachable, timeout, or the ring "
        "could not complete the request; 4 a compare-and-set condition did not hold.",
    )
    _global_options(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        _global_options(cmd, suppress=True)
        return cmd

    get = command("get", "print the value of KEY; exit 1 if it is missing")
    get.add_argument("key", metavar="KEY")
    _consistency_options(get, "r")
    get.add_argument("--json", action="store_true",
                     help="print the node's JSON: key, value (or value_base64), version, acks, "
                     "required, expires_unix_ms")

    put = command("put", "store VALUE under KEY; exit 0 once acknowledged, 4 if a condition did not hold")
    put.add_argument("key", metavar="KEY")
    put.add_argument("value", metavar="VALUE", nargs="?")
    put.add_argument("--value-file", metavar="FILE",
                     help="read the value from FILE instead (- for stdin)")
    _consistency_options(put, "w")
    cas = put.add_mutually_exclusive_group()
    cas.add_argument("--if-absent", action="store_true",
                     help="store only if the key does not exist")
    cas.add_argument("--if-version", type=_positive, metavar="V",
                     help="store only if the key is at version V now")
    put.add_argument("--ttl", metavar="DURATION",
                     help="the value expires after DURATION (500ms, 30s, 5m, 1h)")
    put.add_argument("--json", action="store_true",
                     help="print the node's JSON: key, version, acks, required")

    delete = command("del", "delete KEY (a missing key is no error); exit 4 if a condition did not hold")
    delete.add_argument("key", metavar="KEY")
    _consistency_options(delete, "w")
    delete.add_argument("--if-version", type=_positive, metavar="V",
                        help="delete only if the key is at version V now")
    delete.add_argument("--json", action="store_true",
                        help="print the node's JSON: key, version, acks, required")

    lookup = command("lookup", "show which node owns KEY, the route of the lookup and the replicas")
    lookup.add_argument("key", metavar="KEY")
    lookup.add_argument("--json", action="store_true", help="print the node's JSON")

    status = command("status", "show the node's view of the ring")
    status.add_argument("--json", action="store_true", help="print the node's JSON")

    ring = command("ring", "walk the ring: one row per ring position, its keys, and the pointer check")
    ring.add_argument("--json", action="store_true", help="print the node's JSON")

    watch = command("watch", "print every change of KEY as it happens (put VERSION VALUE, delete "
                    "VERSION, expire VERSION; current ... first); Ctrl-C to stop")
    watch.add_argument("key", metavar="KEY")
    watch.add_argument("--from-version", type=_positive, metavar="V",
                       help="resume after version V instead of starting with the current state")
    watch.add_argument("--count", type=_count, default=0, metavar="N",
                       help="stop after N events (0 = until Ctrl-C)")
    watch.add_argument("--json", action="store_true", help="one JSON object per line and event")

    events = command("ring-events", "print the ring's changes as they happen, one JSON object per "
                     "line (ring, join, down, state); Ctrl-C to stop")
    events.add_argument("--count", type=_count, default=0, metavar="N",
                        help="stop after N events (0 = until Ctrl-C)")

    command("metrics", "print the node's Prometheus metrics")
    return parser


def _out(text: str | bytes) -> None:
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogateescape")
    sys.stdout.buffer.write(text)
    sys.stdout.buffer.flush()


def _print_json(doc) -> None:
    _out(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def _arg_bytes(text: str) -> bytes:
    """A command-line argument's original bytes."""
    return os.fsencode(text)


def _escape(text: str) -> str:
    """chordctl's TSV escaping of a value on one line."""
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _quote(key: str) -> str:
    return json.dumps(key, ensure_ascii=False)


def watch_line(event: dict) -> str:
    """chordctl watch-key's text line of one watch event."""
    kind = event.get("type", "?")
    line = "%s %s" % (kind, event.get("version", "?"))
    carries_state = kind in ("current", "resync")
    if kind == "put" or (carries_state and not event.get("deleted")):
        if "value" in event:
            line += " " + _escape(str(event["value"]))
        elif "value_base64" in event:
            line += " base64:" + str(event["value_base64"])
    if carries_state and event.get("deleted"):
        line += " (absent)"
    return line


def _node_text(node) -> str:
    if not node:
        return "(none)"
    return "%s [%s]" % (node.get("addr", "?"), str(node.get("id", ""))[:8])


def lookup_text(doc: dict) -> str:
    """One line: owner, hops, the route and the replicas."""
    owner = doc.get("owner") or {}
    hops = doc.get("hops", 0)
    line = "key %s -> owner %s %s (%d %s" % (
        _quote(str(doc.get("key", ""))), owner.get("id", "?"), owner.get("addr", "?"), hops,
        "hop" if hops == 1 else "hops")
    if doc.get("timeouts"):
        line += ", %d timeouts" % doc["timeouts"]
    line += ")"
    if doc.get("route"):
        line += "; route " + " -> ".join(doc["route"])
    if doc.get("replicas"):
        line += "; replicas " + ", ".join(r.get("addr", "?") for r in doc["replicas"])
    return line


def status_text(doc: dict) -> str:
    """The main fields of a node's status, one per line."""
    rows = [
        ("id", doc.get("id")),
        ("addr", doc.get("addr")),
        ("joined", "yes" if doc.get("joined") else "no"),
        ("leaving", "yes" if doc.get("leaving") else "no"),
        ("predecessor", _node_text(doc.get("predecessor"))),
        ("successors", ", ".join(_node_text(s) for s in doc.get("successors") or []) or "(none)"),
        ("keys", doc.get("keys")),
        ("replica_keys", doc.get("replica_keys")),
        ("tombstones", doc.get("tombstones")),
        ("replicas", doc.get("replicas")),
        ("watchers", doc.get("watchers")),
        ("hints_pending", doc.get("hints_pending")),
    ]
    if doc.get("store_error"):  # the counts are 0 because the node could not read its store
        rows = [row for row in rows if row[0] not in ("replica_keys", "tombstones")]
        rows = [(name, "unknown: the store could not be read (%s)" % doc["store_error"])
                if name == "keys" else (name, value) for name, value in rows]
    return "".join("%-15s %s\n" % (name + ":", value) for name, value in rows if value is not None)


def ring_text(doc: dict) -> str:
    """A table of the ring (one row per position) and the check."""
    nodes = doc.get("nodes") or []
    rows = [("STATE", "ADDRESS", "ID", "KEYS", "REPLICA KEYS")]
    unreadable = [n for n in nodes if n.get("store_error")]
    for n in nodes:
        counted = not n.get("store_error")
        rows.append((str(n.get("state", "?")), str(n.get("addr", "?")), str(n.get("id", ""))[:8],
                     str(n.get("keys", 0)) if counted else "?",
                     str(n.get("replica_keys", 0)) if counted else "?"))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    out = ""
    for r in rows:
        out += "  ".join(r[i].ljust(widths[i]) if i < 3 else r[i].rjust(widths[i]) for i in range(5)).rstrip() + "\n"
    out += "%d %s, %d keys, %d replica keys%s\n" % (
        len(nodes), "node" if len(nodes) == 1 else "nodes", doc.get("total_keys", 0),
        doc.get("total_replica_keys", 0),
        " (not counting %d %s that cannot read %s store)" % (
            len(unreadable), "node" if len(unreadable) == 1 else "nodes",
            "its" if len(unreadable) == 1 else "their") if unreadable else "")
    for n in unreadable:
        out += "[ERR] %s cannot read its store to count its keys (%s)\n" % (
            n.get("addr", "?"), n["store_error"])
    if doc.get("consistent") and not unreadable:
        out += "[OK] every successor and predecessor pointer agrees with the ring order\n"
    for problem in doc.get("problems") or []:
        out += "[ERR] %s\n" % problem
    if not doc.get("consistent") and not doc.get("problems"):
        out += "[ERR] the ring is not consistent\n"
    for o in doc.get("outside") or []:
        out += "[ERR] %s answers but is not on this ring\n" % o.get("addr", "?")
    return out


def _read_value(args) -> bytes:
    if args.value is not None and args.value_file is not None:
        raise UsageError("give the value either as VALUE or with --value-file, not both")
    if args.value_file is None:
        if args.value is None:
            raise UsageError("put needs a VALUE (or --value-file FILE)")
        return _arg_bytes(args.value)
    try:
        if args.value_file == "-":
            return sys.stdin.buffer.read(MAX_VALUE_BYTES + 1)
        with open(args.value_file, "rb") as f:
            return f.read(MAX_VALUE_BYTES + 1)
    except OSError as e:
        raise UsageError("could not read the value file %s: %s; check the path"
                         % (_quote(args.value_file), e.strerror or e)) from None


def run(args: argparse.Namespace) -> int:
    """Runs the parsed command; its exit code. ChordError and UsageError propagate."""
    if args.command is None:
        raise UsageError("no command given (get, put, del, lookup, status, ring, watch, ring-events "
                         "or metrics)")
    client = Client(args.url, timeout=args.timeout, cafile=args.tls_ca, certfile=args.tls_cert,
                    keyfile=args.tls_key)
    cmd = args.command
    if cmd == "get":
        key = _arg_bytes(args.key)
        if args.json:
            _print_json(client.get_json(key, consistency=args.consistency, r=args.r))
        else:
            _out(client.get_record(key, consistency=args.consistency, r=args.r).value + b"\n")
    elif cmd == "put":
        value = _read_value(args)
        doc = client.put(_arg_bytes(args.key), value, consistency=args.consistency, w=args.w,
                         if_absent=args.if_absent, if_version=args.if_version, ttl=args.ttl)
        if args.json:
            _print_json(doc)
    elif cmd == "del":
        doc = client.delete(_arg_bytes(args.key), if_version=args.if_version,
                            consistency=args.consistency, w=args.w)
        if args.json:
            _print_json(doc)
    elif cmd == "lookup":
        doc = client.lookup(_arg_bytes(args.key))
        if args.json:
            _print_json(doc)
        else:
            _out(lookup_text(doc) + "\n")
    elif cmd == "status":
        doc = client.status()
        if args.json:
            _print_json(doc)
        else:
            _out(status_text(doc))
    elif cmd == "ring":
        doc = client.ring()
        if args.json:
            _print_json(doc)
        else:
            _out(ring_text(doc))
    elif cmd == "watch":
        printed = 0
        for event in client.watch(_arg_bytes(args.key), from_version=args.from_version):
            if args.count and printed >= args.count:
                break
            _out((json.dumps(event, ensure_ascii=False) if args.json else watch_line(event)) + "\n")
            printed += 1
            if args.count and printed >= args.count:
                break
    elif cmd == "ring-events":
        printed = 0
        for event in client.ring_events():
            _out(json.dumps(event, ensure_ascii=False) + "\n")
            printed += 1
            if args.count and printed >= args.count:
                break
    elif cmd == "metrics":
        _out(client.metrics())
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python3 -m chord``; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.url is None:
        args.url = default_url()
    try:
        return run(args)
    except UsageError as e:
        sys.stderr.write("chord: %s; run %s --help for usage\n" % (e, PROG))
        return EXIT_USAGE
    except ChordError as e:
        sys.stderr.write("chord: %s\n" % e.message)
        return e.exit_code
    except ValueError as e:  # e.g. a consistency level or TTL the client refuses itself
        sys.stderr.write("chord: %s; run %s --help for usage\n" % (e, PROG))
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_OK
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, and keep Python's final flush of
        # stdout from failing too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except OSError as e:  # a certificate file that cannot be read, ...
        sys.stderr.write("chord: %s; check the files given\n" % (e.strerror or e))
        return EXIT_USAGE

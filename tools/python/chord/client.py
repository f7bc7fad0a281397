"""The chord HTTP client: :class:`Client` over a node's ``--http-listen`` API (README, "HTTP API").

Standard library only (urllib, json, ssl). One HTTP/1.1 request per call; every call waits at
most ``timeout`` seconds for the node, from the connection to the last byte of the answer (a
timer shuts the socket down when the time is up, so a node that sends a byte at a time cannot
stretch it). The server-sent event streams (:meth:`Client.watch`,
:meth:`Client.ring_events`) are iterators that reconnect by themselves after a dropped
connection, a bounded number of times in a row.
"""

from __future__ import annotations

import datetime
import functools
import http.client
import json
import os
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Iterator

from . import sse
from .errors import ChordError, InvalidRequest, Timeout, Unavailable, error_for

DEFAULT_URL = "http://127.0.0.1:8080"

# The consistency levels a request may ask for.
CONSISTENCY_LEVELS = ("one", "quorum", "all")

# Reconnection of the event streams: the first wait, the longest, and the default number of
# failed attempts in a row after which the iterator gives up.
_RECONNECT_FIRST_S = 0.2
_RECONNECT_MAX_S = 5.0
_DEFAULT_RETRIES = 5
# A stream that sends nothing for this long is taken as dropped (the node sends a keep-alive
# comment every 2 s).
_DEFAULT_IDLE_TIMEOUT_S = 45.0


class _Deadline:
    """The time one request may take, as a context manager: a timer that shuts down the
    sockets the request opened once ``seconds`` have passed (their reads and writes then
    fail, and ``expired`` tells why)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.expired = False
        self._finished = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> "_Deadline":
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.finish()

    def finish(self) -> None:
        """The request is over (call before its socket is closed): the timer shuts nothing
        down from now on, so it cannot hit a descriptor the system has given to another
        socket."""
        with self._lock:
            self._finished = True
        self._timer.cancel()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired and not self._finished:
                _shut_down(sock)

    def _expire(self) -> None:
        with self._lock:
            if self._finished:
                return
            self.expired = True
            for sock in self._sockets:
                _shut_down(sock)


def _shut_down(sock: socket.socket) -> None:
    """Shuts ``sock`` down both ways at the system level (for a TLS socket too, without
    touching its TLS state, which the reading thread owns); nothing if it is closed."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


class _DeadlineConnection:
    """A connection (mixed into http.client's two) whose socket its request's _Deadline cuts."""

    def __init__(self, *args, deadline: _Deadline | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._chord_deadline = deadline

    def connect(self) -> None:
        super().connect()
        if self._chord_deadline is not None:
            self._chord_deadline.watch(self.sock)


class _DeadlineHTTPConnection(_DeadlineConnection, http.client.HTTPConnection):
    pass


class _DeadlineHTTPSConnection(_DeadlineConnection, http.client.HTTPSConnection):
    pass


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    """urllib's HTTP handler with connections that a request's _Deadline can cut."""

    def http_open(self, req):
        deadline = getattr(req, "chord_deadline", None)
        return self.do_open(functools.partial(_DeadlineHTTPConnection, deadline=deadline), req)


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    """urllib's HTTPS handler with connections that a request's _Deadline can cut."""

    def https_open(self, req):
        deadline = getattr(req, "chord_deadline", None)
        return self.do_open(functools.partial(_DeadlineHTTPSConnection, deadline=deadline), req,
                            context=self._context)


def default_url() -> str:
    """``$CHORD_HTTP`` when set, else ``http://127.0.0.1:8080``."""
    return os.environ.get("CHORD_HTTP") or DEFAULT_URL


def normalize_url(url: str, tls: bool = False) -> str:
    """``url`` with a scheme (``http://``, or ``https://`` when ``tls``) and no trailing slash."""
    url = url.strip()
    if "://" not in url:
        url = ("https://" if tls else "http://") + url
    return url.rstrip("/")


def _check_url(url: str) -> None:
    """Raises InvalidRequest unless ``url`` is http(s)://HOST:PORT with a port in 1-65535 (or
    none); urllib would otherwise send to a port wrapped around 65536."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0 or port == -1:
        raise InvalidRequest("%r is not a node's HTTP address; give http://HOST:PORT with a port "
                             "from 1 to 65535" % url, "invalid")


def quote_key(key: str | bytes) -> str:
    """``key`` percent-encoded as one path segment: every byte but letters, digits and
    ``_.-~`` is escaped, ``/`` too. A str key is UTF-8 (undecodable command-line bytes, held as
    surrogate escapes, are sent as the original bytes)."""
    if isinstance(key, str):
        key = key.encode("utf-8", "surrogateescape")
    return urllib.parse.quote(key, safe="")


def _key_text(key: str | bytes) -> str:
    """``key`` quoted for a sentence."""
    if isinstance(key, bytes):
        key = key.decode("utf-8", "replace")
    return json.dumps(key, ensure_ascii=False)


def ttl_param(ttl: str | int | float | datetime.timedelta) -> str:
    """The ``ttl`` query value of ``ttl``: a string such as ``"500ms"``, ``"30s"``, ``"5m"``,
    ``"1h"`` is sent as it is; a number is seconds and a timedelta its length, both sent in
    milliseconds."""
    if isinstance(ttl, str):
        return ttl
    if isinstance(ttl, datetime.timedelta):
        ttl = ttl.total_seconds()
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise TypeError("ttl must be a duration string such as '30s', seconds, or a timedelta")
    return "%dms" % round(ttl * 1000)


@dataclass
class Record:
    """A key's value as a get found it."""

    key: str | bytes
    value: bytes
    version: int  # the version of this value (a put's or delete's answer names the same)
    acks: int  # replicas that answered the read
    required: int  # replicas the consistency level asked for
    expires_unix_ms: int | None = None  # when the value expires (None: never)

    @property
    def text(self) -> str:
        """The value as UTF-8 text (undecodable bytes replaced)."""
        return self.value.decode("utf-8", "replace")


class Client:
    """A client of one chord node's HTTP API.

    Args:
        url: the node's HTTP address, ``http://HOST:PORT`` (``HOST:PORT`` alone means http,
            or https when certificates are given); default ``$CHORD_HTTP``, then
            ``http://127.0.0.1:8080``.
        timeout: seconds each request may take, from connecting to the end of the answer
            (an event stream's opening waits as long for each read).
        cafile: the cluster CA certificate (PEM) that signed the node's certificate, for a
            ring that runs TLS.
        certfile, keyfile: this client's certificate and key (PEM, ``scripts/certs.sh
            client``); their role (reader, writer, admin) decides what the node allows.

    Every method raises a :class:`~chord.errors.ChordError` subclass when the node refuses
    or the request fails: :class:`~chord.errors.NotFound`, :class:`~chord.errors.Conflict`
    (with ``.version``), :class:`~chord.errors.InvalidRequest`,
    :class:`~chord.errors.Forbidden`, :class:`~chord.errors.Unavailable`,
    :class:`~chord.errors.Timeout`; its ``message`` is the node's sentence.

    Example::

        c = Client("http://127.0.0.1:8080")
        c.put("greeting", "hello")
        assert c.get("greeting") == b"hello"
    """

    def __init__(
        self,
        url: str | None = None,
        timeout: float = 10,
        cafile: str | None = None,
        certfile: str | None = None,
        keyfile: str | None = None,
    ):
        tls = bool(cafile or certfile)
        self.url = normalize_url(url or default_url(), tls=tls)
        _check_url(self.url)
        self.timeout = timeout
        self._has_cert = bool(certfile)
        handlers: list[urllib.request.BaseHandler] = [_DeadlineHTTPHandler()]
        context = None
        if self.url.startswith("https://") or tls:
            context = ssl.create_default_context(cafile=cafile)
            if certfile:
                context.load_cert_chain(certfile, keyfile)
        handlers.append(_DeadlineHTTPSHandler(context=context))
        self._opener = urllib.request.build_opener(*handlers)

    def __repr__(self) -> str:
        return "Client(%r)" % self.url

    # ---- keys ----------------------------------------------------------------------------

    def get(self, key: str | bytes, consistency: str | None = None, r: int | None = None) -> bytes | None:
        """The value of ``key``, or None when the key does not exist.

        ``consistency`` is ``one`` (the default: the owner answers), ``quorum`` or ``all``;
        ``r`` a number of replicas that must answer instead."""
        try:
            return self.get_record(key, consistency=consistency, r=r).value
        except ChordError as e:
            if e.code == "not_found":
                return None
            raise

    def get_record(self, key: str | bytes, consistency: str | None = None, r: int | None = None) -> Record:
        """``key``'s value with its version, the replicas that answered (``acks``) and were
        required, and its expiry; raises NotFound when the key does not exist."""
        query = _query(consistency=consistency, r=r)
        with _Deadline(self.timeout) as deadline:
            with self._open("GET", "/v1/keys/" + quote_key(key), query, deadline=deadline) as resp:
                value = self._read(resp, deadline)
                headers = resp.headers
        expires = headers.get("X-Chord-Expires")
        return Record(
            key=key,
            value=value,
            version=_int_header(headers, "X-Chord-Version"),
            acks=_int_header(headers, "X-Chord-Acks"),
            required=_int_header(headers, "X-Chord-Required"),
            expires_unix_ms=int(expires) if expires else None,
        )

    def get_json(self, key: str | bytes, consistency: str | None = None, r: int | None = None) -> dict:
        """The node's JSON answer to a get (``?format=json``): ``key``, ``value`` (or
        ``value_base64`` for a value that is not UTF-8), ``version``, ``acks``, ``required``,
        ``expires_unix_ms``; raises NotFound when the key does not exist."""
        query = _query(consistency=consistency, r=r, format="json")
        return self._json("GET", "/v1/keys/" + quote_key(key), query)

    def put(
        self,
        key: str | bytes,
        value: bytes | str,
        consistency: str | None = None,
        w: int | None = None,
        if_absent: bool = False,
        if_version: int | None = None,
        ttl: str | int | float | datetime.timedelta | None = None,
    ) -> dict:
        """Stores ``value`` (bytes verbatim, a str as UTF-8) under ``key``.

        Args:
            consistency: ``one``, ``quorum`` (the default) or ``all`` replicas must store it;
                ``w`` a number instead.
            if_absent: store only if the key does not exist.
            if_version: store only if the key is live at exactly this version.
            ttl: the value expires after this long (``"500ms"``, ``"30s"``, ``"5m"``,
                ``"1h"``, or seconds); then it reads as absent everywhere.

        Returns:
            ``{"key", "version", "acks", "required"}`` (and ``expires_unix_ms`` with a ttl).

        Raises:
            Conflict: a condition did not hold; ``.version`` is the key's version (0: absent).
            Unavailable: fewer than the required replicas stored it (it may still have been
                applied on some).
        """
        if isinstance(value, str):
            value = value.encode("utf-8", "surrogateescape")
        query = _query(
            consistency=consistency,
            w=w,
            if_absent="true" if if_absent else None,
            if_version=if_version,
            ttl=None if ttl is None else ttl_param(ttl),
        )
        headers = {"Content-Type": "application/octet-stream"}
        return self._json("PUT", "/v1/keys/" + quote_key(key), query, body=bytes(value), headers=headers)

    def delete(
        self,
        key: str | bytes,
        if_version: int | None = None,
        consistency: str | None = None,
        w: int | None = None,
    ) -> dict:
        """Deletes ``key`` (a missing key is no error); only if it is at ``if_version`` when
        given (else Conflict). Returns ``{"key", "version", "acks", "required"}``."""
        query = _query(consistency=consistency, w=w, if_version=if_version)
        return self._json("DELETE", "/v1/keys/" + quote_key(key), query)

    # ---- ring ----------------------------------------------------------------------------

    def lookup(self, key: str | bytes) -> dict:
        """Who owns ``key``: ``{"key", "key_id", "owner": {"id", "addr"}, "hops", "timeouts",
        "route": [addr, ...], "replicas": [{"id", "addr"}, ...], "via"}``."""
        return self._json("GET", "/v1/lookup/" + quote_key(key))

    def status(self) -> dict:
        """This node's view: the JSON of ``chordctl status --json``."""
        return self._json("GET", "/v1/status")

    def ring(self) -> dict:
        """The whole ring walked from this node: the JSON of ``chordctl ring --json``
        (``nodes`` in ring order, ``consistent``, ``problems``, ``total_keys``, ...)."""
        return self._json("GET", "/v1/ring")

    def metrics(self) -> str:
        """The node's Prometheus metrics text."""
        with _Deadline(self.timeout) as deadline:
            with self._open("GET", "/metrics", deadline=deadline) as resp:
                return self._read(resp, deadline).decode("utf-8", "replace")

    # ---- event streams -------------------------------------------------------------------

    def watch(
        self,
        key: str | bytes,
        from_version: int | None = None,
        retries: int = _DEFAULT_RETRIES,
        idle_timeout: float = _DEFAULT_IDLE_TIMEOUT_S,
    ) -> Iterator[dict]:
        """Every change of ``key`` as it happens, in version order, without end.

        Each item is the event's JSON: ``{"type": "put", "version": V, "value": "..."}``,
        ``delete``/``expire`` (no value), and ``current``/``resync`` with ``"deleted"`` and the
        value when not deleted (``"value_base64"`` instead of ``"value"`` for a value that is
        not UTF-8 text). Without ``from_version`` the first item is ``current`` (the
        key's state now); with it, the changes after that version.

        A dropped connection (or ``idle_timeout`` seconds without even a keep-alive) is
        reconnected with ``Last-Event-ID`` set to the last version received, so nothing is
        missed or repeated; after ``retries`` failed attempts in a row the iterator raises
        Unavailable. Stop it with ``break`` (or ``close()``)."""
        query = _query(from_version=from_version)
        for name, data, _ in self._stream("/v1/watch/" + quote_key(key), query, retries, idle_timeout,
                                          "the watch of key " + _key_text(key), resume="from_version"):
            if isinstance(data, dict):
                data.setdefault("type", name)
                yield data
            else:
                yield {"type": name, "data": data}

    def ring_events(
        self,
        retries: int = _DEFAULT_RETRIES,
        idle_timeout: float = _DEFAULT_IDLE_TIMEOUT_S,
    ) -> Iterator[dict]:
        """The ring's changes as they happen, without end. Each item is the event's JSON with
        its name under ``"event"``: first ``{"event": "ring", "nodes": [...], ...}`` (the JSON
        of :meth:`ring`), then ``join``/``down``/``state`` (``id``, ``addr``, ``at_unix_ms``,
        and ``reason`` or ``state``) for each membership change, each followed by a new
        ``ring``. Reconnects like :meth:`watch` (a reconnect starts with a ``ring`` again)."""
        for name, data, _ in self._stream("/v1/ring/events", {}, retries, idle_timeout,
                                          "the ring event stream"):
            if isinstance(data, dict):
                data.setdefault("event", name)
                yield data
            else:
                yield {"event": name, "data": data}

    def _stream(self, path: str, query: dict, retries: int, idle_timeout: float, what: str,
                resume: str | None = None):
        """(event name, parsed data, id) of the event stream at ``path``, reconnecting after a
        drop with Last-Event-ID (and the query parameter ``resume`` set to the same id, for a
        server that reads only the query); raises Unavailable after ``retries`` failures in a
        row."""
        last_id: str | None = None
        failures = 0
        wait_s = _RECONNECT_FIRST_S
        problem = ""
        while True:
            headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
            if last_id is not None:
                headers["Last-Event-ID"] = last_id
                if resume:
                    query = dict(query, **{resume: last_id})
            resp = None
            try:
                resp = self._open("GET", path, query, headers=headers, timeout=idle_timeout)
                for ev in sse.events(resp, last_id):
                    last_id = ev.id
                    if ev.retry_ms is not None:
                        wait_s = min(max(ev.retry_ms / 1000.0, 0.05), _RECONNECT_MAX_S)
                    failures = 0
                    try:
                        data = json.loads(ev.data)
                    except ValueError:
                        data = ev.data
                    yield ev.event, data, ev.id
                problem = "the node closed the stream"
            except Unavailable as e:  # unreachable, 503, 504: worth another attempt
                problem = e.message
            except (OSError, http.client.HTTPException, sse.StreamError) as e:
                problem = _describe(e)
            finally:
                if resp is not None:
                    resp.close()
            failures += 1
            if failures > retries:
                raise Unavailable(
                    "%s failed %d times in a row (last: %s); check the node at %s and retry"
                    % (what, failures, problem.rstrip("."), self.url)
                )
            time.sleep(min(wait_s * (2 ** (failures - 1)), _RECONNECT_MAX_S))

    # ---- plumbing ------------------------------------------------------------------------

    def _open(
        self,
        method: str,
        path: str,
        query: dict | None = None,
        body: bytes | None = None,
        headers: dict | None = None,
        timeout: float | None = None,
        deadline: _Deadline | None = None,
    ) -> http.client.HTTPResponse:
        """The node's successful answer to one request (to be closed by the caller); raises
        the ChordError of an error answer or of a failed connection. ``timeout`` bounds each
        socket operation, ``deadline`` (its time) the request as a whole."""
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
        req.chord_deadline = deadline
        wait_s = self.timeout if timeout is None else timeout
        try:
            return self._opener.open(req, timeout=wait_s)
        except urllib.error.HTTPError as e:
            raise self._error_of(e, url, deadline) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            if deadline is not None and deadline.expired:
                raise self._late(deadline) from None
            reason = e.reason if isinstance(e, urllib.error.URLError) else e
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise Timeout("%s did not answer within %g s; check that the node runs and retry"
                              % (self.url, wait_s), "timeout") from None
            if isinstance(e, urllib.error.URLError) and not isinstance(
                    reason, (ssl.SSLError, ConnectionResetError)):
                raise Unavailable("could not reach %s (%s); check that the node runs with "
                                  "--http-listen at that address" % (self.url, _describe(reason)),
                                  "unavailable") from None
            raise Unavailable("the connection to %s failed (%s)%s"
                              % (self.url, _describe(reason), self._hint(reason)),
                              "unavailable") from None

    def _late(self, deadline: _Deadline) -> Timeout:
        """The Timeout of a request that took its whole time."""
        return Timeout("%s did not answer within %g s; check that the node runs and retry"
                       % (self.url, deadline.seconds), "timeout")

    def _hint(self, e: BaseException) -> str:
        """What to do about a connection the node closed or refused to set up."""
        if isinstance(e, ssl.SSLCertVerificationError):
            return "; give the cluster CA that signed the node's certificate (cafile, --tls-ca)"
        closed = isinstance(e, (http.client.RemoteDisconnected, ConnectionResetError, ssl.SSLError))
        if closed and self.url.startswith("http://"):
            return "; if the ring runs TLS, use https:// with a client certificate"
        if closed and not self._has_cert:
            return "; a ring with TLS wants a client certificate (certfile and keyfile, --tls-cert and --tls-key)"
        return "; retry"

    def _read(self, resp: http.client.HTTPResponse, deadline: _Deadline | None = None) -> bytes:
        """The whole body of ``resp``; a failure while reading raises Unavailable/Timeout."""
        try:
            body = resp.read()
            if deadline is not None:
                deadline.finish()  # before the caller closes the socket
        except (OSError, http.client.HTTPException) as e:
            if deadline is not None and deadline.expired:
                raise self._late(deadline) from None
            if isinstance(e, (socket.timeout, TimeoutError)):
                raise Timeout("%s stopped answering for %g s in the middle of an answer; retry"
                              % (self.url, self.timeout), "timeout") from None
            raise Unavailable("the answer of %s was cut off (%s); retry" % (self.url, _describe(e)),
                              "unavailable") from None
        if deadline is not None and deadline.expired and resp.getheader("Content-Length") is None:
            raise self._late(deadline)  # an answer read to its end may have been cut short
        return body

    def _json(self, method: str, path: str, query: dict | None = None, body: bytes | None = None,
              headers: dict | None = None) -> Any:
        """The parsed JSON answer to one request."""
        with _Deadline(self.timeout) as deadline:
            with self._open(method, path, query, body, headers, deadline=deadline) as resp:
                raw = self._read(resp, deadline)
        try:
            return json.loads(raw)
        except ValueError:
            raise ChordError("%s answered %s %s with something that is not JSON; check that the URL "
                             "is a chord node's --http-listen address" % (self.url, method, path),
                             "invalid", resp.status) from None

    def _error_of(self, e: urllib.error.HTTPError, url: str,
                  deadline: _Deadline | None = None) -> ChordError:
        """The ChordError of an error answer: the node's sentence and code when it sent the
        API's JSON error, else a sentence naming the HTTP status (Timeout when the request's
        time ran out while its body came)."""
        try:
            raw = e.read()
        except (OSError, http.client.HTTPException):
            raw = b""
        finally:
            e.close()
        if deadline is not None and deadline.expired:
            return self._late(deadline)
        doc = None
        try:
            doc = json.loads(raw)
        except ValueError:
            pass
        if isinstance(doc, dict) and isinstance(doc.get("error"), str):
            return error_for(e.code, doc.get("code"), doc["error"], doc.get("version"))
        path = urllib.parse.urlsplit(url).path
        return error_for(e.code, None, "%s answered %d %s to %s; check that the URL is a chord node's "
                         "--http-listen address" % (self.url, e.code, e.reason, path))


def _query(**params: Any) -> dict:
    """The query parameters that are set (None left out), checked where the client can."""
    consistency = params.get("consistency")
    if consistency is not None and consistency not in CONSISTENCY_LEVELS:
        raise ValueError("consistency must be one of %s, not %r" % (", ".join(CONSISTENCY_LEVELS), consistency))
    return {k: v for k, v in params.items() if v is not None}


def _int_header(headers, name: str) -> int:
    value = headers.get(name)
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


def _describe(e: BaseException | str) -> str:
    """A short description of a low-level failure."""
    if isinstance(e, str):
        return e
    if isinstance(e, ConnectionRefusedError):
        return "connection refused"
    if isinstance(e, (socket.timeout, TimeoutError)):
        return "timed out"
    text = getattr(e, "strerror", None) or str(e) or type(e).__name__
    return text

"""Exceptions of the chord HTTP client.

Every failure of a request raises a :class:`ChordError` (or a subclass) whose ``message`` is
one sentence: the node's own ``error`` sentence when the node answered (the same sentence
chordctl prints), otherwise a sentence saying what went wrong on the way (unreachable node,
timeout, an answer that is not the chord API).
"""

from __future__ import annotations


class ChordError(Exception):
    """A request the node refused or could not complete.

    Attributes:
        code: the API's error code: ``invalid``, ``forbidden``, ``not_found`` (a missing key),
            ``no_such_path`` (a URL the API does not serve), ``method``, ``conflict``,
            ``too_large``, ``unavailable`` or ``timeout`` (``unavailable`` too when the node
            could not be reached at all).
        status: the HTTP status of the answer (400, 403, 404, 405, 409, 413, 503, 504), or 0
            when no answer arrived.
        message: one sentence saying what was wrong and what to do.
    """

    exit_code = 3  # the chordctl exit code of this kind of failure

    def __init__(self, message: str, code: str = "unavailable", status: int = 0):
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status

    def __str__(self) -> str:
        return self.message


class InvalidRequest(ChordError):
    """The request was malformed or out of bounds (HTTP 400, 405, 413), or its URL reaches no
    part of the API (HTTP 404 ``no_such_path``, also a 404 that is not the API's JSON);
    chordctl exit 2."""

    exit_code = 2


class Forbidden(ChordError):
    """The client certificate's role does not allow the request (HTTP 403)."""


class NotFound(ChordError):
    """The key does not exist (HTTP 404); chordctl exit 1."""

    exit_code = 1


class Conflict(ChordError):
    """A compare-and-set condition did not hold (HTTP 409); chordctl exit 4.

    Attributes:
        version: the key's current live version, 0 when the key does not exist.
    """

    exit_code = 4

    def __init__(self, message: str, code: str = "conflict", status: int = 409, version: int = 0):
        super().__init__(message, code, status)
        self.version = version


class Unavailable(ChordError):
    """The node is unreachable or the ring could not complete the request (HTTP 503), e.g.
    fewer replicas answered than the consistency level requires; chordctl exit 3."""


class Timeout(Unavailable):
    """The ring, or the node itself, did not answer in time (HTTP 504, or the client's own
    timeout); chordctl exit 3."""


# The exception class of each API error code.
ERROR_CLASSES = {
    "invalid": InvalidRequest,
    "method": InvalidRequest,
    "too_large": InvalidRequest,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "no_such_path": InvalidRequest,
    "conflict": Conflict,
    "unavailable": Unavailable,
    "timeout": Timeout,
}

# The API error code of an HTTP status, for answers that carry no JSON error. A bare 404 is
# not the API's answer for a missing key (that one is JSON): the URL reaches something else.
CODE_OF_STATUS = {
    400: "invalid",
    403: "forbidden",
    404: "no_such_path",
    405: "method",
    409: "conflict",
    413: "too_large",
    503: "unavailable",
    504: "timeout",
}


def error_for(status: int, code: str | None, message: str, version: int | None = None) -> ChordError:
    """The exception for an error answer with HTTP ``status`` and API ``code``."""
    code = code or CODE_OF_STATUS.get(status, "unavailable")
    cls = ERROR_CLASSES.get(code)
    if cls is None:
        cls = InvalidRequest if 400 <= status < 500 else Unavailable
    if cls is Conflict:
        return Conflict(message, code, status, int(version or 0))
    return cls(message, code, status)

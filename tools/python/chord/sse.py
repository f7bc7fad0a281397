"""A reader of server-sent events (text/event-stream), as the HTML standard defines them.

Only what the chord API sends is needed (``event:``, ``data:``, ``id:``, ``retry:`` fields and
``:`` comments), and the line format is followed except that lines must end in LF or CRLF
(a lone CR, which the standard also allows, is not a line end here): a field
without a colon has an empty value, one space after the colon is dropped, several ``data:``
lines are joined with newlines, and an event is dispatched at a blank line only when it has
data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO, Iterator

# A line longer than this is not an event of the chord API (values are at most 1 MiB, and
# base64 or JSON-escaped at most about 6 times that).
MAX_LINE_BYTES = 8 << 20


@dataclass
class Event:
    """One server-sent event."""

    event: str  # the event name ("message" when the stream named none)
    data: str  # the data lines, joined with "\n"
    id: str | None  # the last event id seen on the stream so far (None: none yet)
    retry_ms: int | None  # the last reconnection time the stream asked for


class StreamError(Exception):
    """The stream broke a limit (a line too long)."""


def _lines(stream: BinaryIO) -> Iterator[bytes]:
    """The complete lines of ``stream`` without their terminators (LF or CRLF; a stream ends
    lines with one of them). A last line without a terminator was cut off: not returned."""
    while True:
        line = stream.readline(MAX_LINE_BYTES + 1)
        if not line.endswith(b"\n"):
            if len(line) > MAX_LINE_BYTES:
                raise StreamError("an event line is longer than %d bytes" % MAX_LINE_BYTES)
            return  # the end of the stream (possibly in the middle of a line)
        yield line[:-2] if line.endswith(b"\r\n") else line[:-1]


def events(stream: BinaryIO, last_id: str | None = None) -> Iterator[Event]:
    """The events of ``stream`` (a binary file-like object with ``readline``), in order.

    ``last_id`` is the id in force before the stream starts (a resumed stream). Ends when the
    stream ends; an event cut off by the end of the stream is not returned.
    """
    name = ""
    data: list[str] = []
    retry_ms: int | None = None
    for raw in _lines(stream):
        line = raw.decode("utf-8", errors="replace")
        if line == "":
            if data:
                yield Event(name or "message", "\n".join(data), last_id, retry_ms)
            name = ""
            data = []
            continue
        if line.startswith(":"):
            continue  # a comment, e.g. ": keep-alive"
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
        elif field == "id":
            if "\0" not in value:
                last_id = value
        elif field == "retry":
            if value.isdigit():
                retry_ms = int(value)

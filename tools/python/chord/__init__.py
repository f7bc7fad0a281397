"""chord: a Python client of a chord ring's HTTP API (``chord-node --http-listen``).

Standard library only; use it without installing by putting ``tools/python`` on the path::

    PYTHONPATH=tools/python python3 -c 'import chord; print(chord.Client().ring()["consistent"])'
    PYTHONPATH=tools/python python3 -m chord --url http://127.0.0.1:8080 get greeting

:class:`Client` has get/get_record/put/delete/lookup/status/ring/metrics and the event
streams watch/ring_events; failures raise :class:`ChordError` subclasses. ``python3 -m
chord`` is a command line like chordctl's, over HTTP (``python3 -m chord --help``).
"""

from .client import DEFAULT_URL, Client, Record, default_url, quote_key
from .errors import (
    ChordError,
    Conflict,
    Forbidden,
    InvalidRequest,
    NotFound,
    Timeout,
    Unavailable,
)

__all__ = [
    "DEFAULT_URL",
    "ChordError",
    "Client",
    "Conflict",
    "Forbidden",
    "InvalidRequest",
    "NotFound",
    "Record",
    "Timeout",
    "Unavailable",
    "default_url",
    "quote_key",
]

"""The agent stream's lines, as gputop writes them: a hello, then one ``gputop/1`` snapshot per
line (NDJSON). `gputop agent` streams them to the cluster view; the dashboard's recording (`r`)
writes them to a file, which `gputop report` reads back. The cluster view's decoder
(gputop.cluster.protocol) reads what this writes.

Declared once here, below both writers: the hello's words, and the encoding of a line.
"""

from __future__ import annotations

from typing import Any

from gputop import __version__
from gputop.core import jsonout
from gputop.core.model import SCHEMA

HELLO = "gputop"  # the hello line's "hello" value: what says a stream is gputop's


def hello_document(backend: str, host: str) -> dict[str, Any]:
    """Return the hello line's document: gputop's version, the schema, the backend, the host."""
    return {"hello": HELLO, "version": __version__, "schema": SCHEMA, "backend": backend,
            "host": host}


def encode_line(doc: dict[str, Any]) -> bytes:
    """Return ``doc`` as one line of the stream; raise ValueError on a non-finite number."""
    # ensure_ascii keeps every line plain ASCII whatever a process name holds.
    return jsonout.dumps(doc, separators=(",", ":")).encode("ascii") + b"\n"

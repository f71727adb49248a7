"""JSON as gputop writes it: every document, from every command, is JSON a strict parser accepts.

``NaN`` and ``Infinity`` are not JSON; Python's ``json`` writes them by default. Every place
that writes JSON goes through here (a test holds that), so ``allow_nan=False`` holds by
construction: a non-finite value raises ValueError at the source instead of reaching a script.

Nor is a lone surrogate: a command line or file name holding bytes that are not UTF-8 reaches
Python as one (``surrogateescape``), a JSON answer from a server may spell one (``"\\udcff"``),
and ``json`` writes it as ``\\udcff``, which strict parsers (Go, Rust, jq) refuse. Such a string
is written with U+FFFD in its place (:func:`gputop.core.visible.valid_unicode`), whatever its source.
"""

from __future__ import annotations

import json
from typing import IO, Any

from gputop.core.visible import valid_unicode


def dumps(obj: Any, **kwargs: Any) -> str:
    text = json.dumps(obj, allow_nan=False, **kwargs)
    # One substring search on the usual path: a surrogate is written "\ud…" (ensure_ascii), or
    # stays a surrogate in non-ASCII text. Characters beyond U+FFFF are written as pairs "\ud8…"
    # too: those take the slow path for nothing, and come out the same.
    if "\\ud" in text or (not text.isascii() and valid_unicode(text) != text):
        text = json.dumps(_valid(obj), allow_nan=False, **kwargs)
    return text


def dump(obj: Any, fh: IO[str], **kwargs: Any) -> None:
    # Encoded whole first, so a refused value leaves nothing half-written in ``fh``.
    fh.write(dumps(obj, **kwargs))


def _valid(obj: Any) -> Any:
    """``obj`` with every string (keys included) in valid Unicode."""
    if isinstance(obj, str):
        return valid_unicode(obj)
    if isinstance(obj, dict):
        return {valid_unicode(k) if isinstance(k, str) else k: _valid(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_valid(v) for v in obj]
    return obj

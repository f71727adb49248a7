"""How a secret is shown: a webhook URL as its scheme and host, nothing of its path or query.

Incoming-webhook URLs carry their credential in the path (Slack's ``/services/T…/B…/XXXX``,
Discord's ``/api/webhooks/ID/TOKEN``, a Teams workflow's ``sig=`` query): anyone who reads one can
post to the channel. Every message, repr, log line and exception of this package shows
`redact_url`'s form instead, and `scrub` removes a secret from a text that may quote it (an
error from the standard library, a server's answer).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

HIDDEN = "…"


def redact_url(url: str) -> str:
    """Return ``url`` as ``scheme://host[:port]/…``: no user, password, path, query or
    fragment. A URL that cannot be read is shown as ``…`` whole."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return HIDDEN
    if not parts.scheme or not host:
        return HIDDEN
    if ":" in host:
        host = f"[{host}]"  # IPv6
    where = f"{host}:{port}" if port is not None else host
    return f"{parts.scheme}://{where}/{HIDDEN}"


def secrets_of(url: str, header_values: Iterable[str] = ()) -> tuple[str, ...]:
    """Return the parts of ``url`` and the header values that must never be printed, longest
    first (so a part inside another is not left half-hidden): the URL whole, its path, query,
    user and password, each path segment and each query value that is long enough to be a
    token."""
    found = {url}
    try:
        parts = urlsplit(url)
        found.update(p for p in (parts.path, parts.query, parts.fragment, parts.username,
                                 parts.password) if p)
    except ValueError:
        parts = None
    if parts is not None:
        found.update(seg for seg in parts.path.split("/") if len(seg) >= 6)
        for pair in parts.query.split("&"):
            value = pair.partition("=")[2]
            if len(value) >= 6:
                found.add(value)
    found.update(v for v in header_values if v)
    found.discard("/")
    # as an error may quote them: repr() escapes a control character as \\x01
    found.update([repr(s)[1:-1] for s in found])
    return tuple(sorted(found, key=len, reverse=True))


def scrub(text: str, secrets: Iterable[str]) -> str:
    """Return ``text`` with every secret in it replaced by ``…``."""
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, HIDDEN)
    return text

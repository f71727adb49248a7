"""The webhook channel: the alert POSTed as JSON to an http or https URL.

The standard library's ``urllib.request`` posts it: no dependency, and the proxy a node reaches
the internet through is taken from ``https_proxy``/``http_proxy``/``no_proxy`` as curl takes it.
Redirects are not followed (a POST turned into a GET would lose the alert and hide why): a 3xx is
a failure, as is any status outside 2xx. Each attempt is bounded by its timeout (connecting,
and each read of an answer of which at most `MAX_ANSWER` bytes are read).

The URL and the extra headers are secrets: `repr`, `name` and every `DeliveryError` show the
URL as `redact.redact_url` does and never a header's value.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Mapping

from gputop import __version__
from gputop.alerts.model import Alert, DeliveryError
from gputop.alerts.notify import payloads
from gputop.alerts.notify.redact import redact_url, scrub, secrets_of
from gputop.core.userfile import one_line

MAX_ANSWER = 64 << 10  # a receiver's answer is read this far (to reuse nothing; to quote it)
USER_AGENT = f"gputop/{__version__}"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # urllib then raises HTTPError with the 3xx status


class WebhookNotifier:
    """POSTs each alert in one of `payloads.FORMATS` to ``url``, with ``headers`` added."""

    def __init__(self, name: str, url: str, fmt: str = "generic",
                 headers: Mapping[str, str] | None = None) -> None:
        if fmt not in payloads.BUILDERS:
            raise ValueError(f"unknown webhook format {fmt!r}")
        self._name = name
        self._url = url
        self._fmt = fmt
        self._headers = dict(headers or {})
        self._secrets = secrets_of(url, self._headers.values())
        self.shown_url = redact_url(url)
        self._opener = urllib.request.build_opener(
            _NoRedirect(), urllib.request.HTTPSHandler(context=ssl.create_default_context()))

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return (f"WebhookNotifier(name={self._name!r}, url={self.shown_url!r}, "
                f"format={self._fmt!r}, headers={sorted(self._headers)!r})")

    def describe(self) -> str:
        """Return what the channel is, as messages name it: ``webhook https://host/… (slack)``."""
        return f"webhook {self.shown_url} ({self._fmt})"

    def send(self, alert: Alert, timeout_s: float) -> None:
        """POST the alert; raise DeliveryError (its text free of the URL) unless a 2xx came
        back within ``timeout_s``."""
        data = payloads.body(self._fmt, alert)
        headers = {"Content-Type": "application/json; charset=utf-8", "User-Agent": USER_AGENT,
                   **self._headers}
        request = urllib.request.Request(self._url, data=data, headers=headers, method="POST")
        deadline = time.monotonic() + timeout_s
        try:
            with self._opener.open(request, timeout=timeout_s) as answer:
                _drain(answer, deadline)
        except urllib.error.HTTPError as exc:
            text = _answer_text(exc, deadline)
            raise self._error(f"HTTP {exc.code}" + (f": {text}" if text else "")) from None
        except urllib.error.URLError as exc:
            raise self._error(_reason(exc.reason)) from None
        except TimeoutError:
            raise self._error(f"no answer within {timeout_s:.3g} s") from None
        except (OSError, ValueError, http.client.HTTPException) as exc:
            raise self._error(f"{type(exc).__name__}: {exc}") from None

    def _error(self, why: str) -> DeliveryError:
        return DeliveryError(one_line(scrub(why, self._secrets)))


def _reason(reason: object) -> str:
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return "no answer within the timeout"
    if isinstance(reason, ssl.SSLError):
        return f"TLS: {reason.reason or reason}"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason)


def _drain(answer: object, deadline: float) -> bytes:
    """Read at most MAX_ANSWER bytes of an answer, giving up at ``deadline``."""
    read = getattr(answer, "read", None)
    if read is None:
        return b""
    chunks: list[bytes] = []
    size = 0
    while size < MAX_ANSWER and time.monotonic() < deadline:
        chunk = read(min(8192, MAX_ANSWER - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _answer_text(exc: urllib.error.HTTPError, deadline: float) -> str:
    """Return the first line of an error answer (Slack says ``invalid_payload``, Discord what
    field was wrong), or ''."""
    try:
        data = _drain(exc, deadline)
    except (OSError, ValueError):
        return ""
    finally:
        exc.close()
    text = data.decode("utf-8", "replace").strip()
    return one_line(text, 160) if text else ""


def header_problem(name: str, value: str) -> str | None:
    """Return why ``name: value`` cannot be sent as an HTTP header, or None."""
    if not name or not name.isascii() or not name.isprintable() or any(c in name for c in " :"):
        return f"header name {name!r} is not a valid HTTP header name"
    if "\r" in value or "\n" in value:
        return f"header {name}'s value holds a line break"
    if not value.isascii() or not value.isprintable():
        return f"header {name}'s value must be printable ASCII"  # what HTTP headers carry
    return None


"""Node states and how an ssh session's end (exit status + stderr) maps onto them. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gputop.core.visible import visible

CONNECTING = "connecting"
OK = "ok"
STALE = "stale"
UNREACHABLE = "unreachable"
AUTH_FAILED = "auth-failed"
HOST_KEY_REJECTED = "host-key-rejected"
NO_GPUTOP = "no-gputop"
INCOMPATIBLE = "incompatible"
PROTOCOL_ERROR = "protocol-error"  # the remote sent garbage or an oversized line
FAILED = "failed"  # the remote command ran and failed (e.g. the agent found no backend)
DOWN = "down"  # Prometheus: its last scrape of the node failed (up == 0)

STATES = (CONNECTING, OK, STALE, UNREACHABLE, AUTH_FAILED, HOST_KEY_REJECTED, NO_GPUTOP,
          INCOMPATIBLE, PROTOCOL_ERROR, FAILED, DOWN)
# States that retrying soon will not fix: retried at the longest backoff only.
STUBBORN = frozenset({AUTH_FAILED, HOST_KEY_REJECTED, NO_GPUTOP, INCOMPATIBLE})
# Sort order for the nodes table: trouble first.
SEVERITY = {DOWN: 2, HOST_KEY_REJECTED: 0, AUTH_FAILED: 1, UNREACHABLE: 2, INCOMPATIBLE: 3,
            PROTOCOL_ERROR: 4, FAILED: 5, NO_GPUTOP: 6, STALE: 7, CONNECTING: 8, OK: 9}

SSH_ERROR_EXIT = 255  # ssh's own failures; anything else is the remote command's status
COMMAND_NOT_FOUND_EXIT = 127

_HOST_KEY = re.compile(
    r"Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED|"
    r"No \S+ host key is known|host key for .* has changed|Host key .* not found in", re.I)
_AUTH = re.compile(r"Permission denied|Too many authentication failures|"
                   r"no mutual signature algorithm|Authentication failed", re.I)
_UNREACHABLE = re.compile(
    r"Connection refused|Connection timed out|timed out during banner exchange|"
    r"Could not resolve hostname|Name or service not known|No route to host|"
    r"Network is unreachable|Connection closed by|Connection reset|closed by remote host|"
    r"Broken pipe|Timeout, server .* not responding|kex_exchange_identification|"
    r"Connection to .* closed|Operation timed out|ProxyJump|stdio forwarding failed", re.I)
_NOT_FOUND = re.compile(r"command not found|No such file or directory|not found|"
                        r"No module named '?gputop|Unknown command", re.I)


@dataclass(frozen=True)
class Verdict:
    state: str
    reason: str


def last_lines(stderr: str, n: int = 2) -> str:
    """The last meaningful stderr lines, one line of plain text (untrusted: controls made
    visible)."""
    lines = [ln.strip() for ln in stderr.splitlines()]
    lines = [ln for ln in lines if ln and not set(ln) <= set("@ ") and
             not ln.startswith(("Warning: Permanently added", "** ", "Pseudo-terminal"))]
    text = " / ".join(lines[-n:])
    return visible(text)[:300]


def classify_exit(returncode: int | None, stderr: str, *, had_data: bool) -> Verdict:
    """Why an ssh session ended. ``had_data``: the remote had already sent something valid."""
    if returncode == SSH_ERROR_EXIT or returncode is None or returncode < 0:
        if _HOST_KEY.search(stderr):
            return Verdict(HOST_KEY_REJECTED, _host_key_reason(stderr))
        if _AUTH.search(stderr) and not had_data:
            return Verdict(AUTH_FAILED, last_lines(stderr, 1) or "authentication failed")
        if returncode is not None and returncode < 0:
            return Verdict(UNREACHABLE, f"ssh was stopped by signal {-returncode}")
        return Verdict(UNREACHABLE, last_lines(stderr) or "ssh exited with status 255")
    if returncode == COMMAND_NOT_FOUND_EXIT or (not had_data and _NOT_FOUND.search(stderr)
                                                and returncode != 0):
        return Verdict(NO_GPUTOP, last_lines(stderr, 1) or "remote command not found (127)")
    if returncode == 0:
        return Verdict(UNREACHABLE, "the remote command ended" +
                       (f": {last_lines(stderr)}" if stderr.strip() else ""))
    return Verdict(FAILED, f"remote command exited with status {returncode}" +
                   (f": {last_lines(stderr)}" if stderr.strip() else ""))


def _host_key_reason(stderr: str) -> str:
    if "IDENTIFICATION HAS CHANGED" in stderr or "has changed" in stderr:
        return "host key changed (possible man-in-the-middle); check known_hosts"
    if re.search(r"No \S+ host key is known", stderr):
        return "host key unknown and StrictHostKeyChecking is on; add it to known_hosts"
    return "host key verification failed"


def is_unreachable_text(stderr: str) -> bool:
    return bool(_UNREACHABLE.search(stderr))

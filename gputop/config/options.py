"""What every command shares once its options are parsed: where readings come from and how often.

The commands (`gputop.commands`) parse the command line and hand what they read down as frozen
config objects such as `SourceConfig`; nothing below them sees the parsed command line. Numbers
were checked against `gputop.core.bounds` as they were parsed, so a bad value is one line and exit 2
before any device is opened.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.backends.base import BackendOptions
from gputop.core import bounds

SIM_STATE_ENV = "GPUTOP_SIM_STATE"
DEFAULT_INTERVAL_S = 1.0  # seconds between samples where --interval is not given


@dataclass(frozen=True)
class SourceConfig:
    """The backend to open, how to configure it, which of its devices, and the seconds between
    samples: the options every command shares."""

    backend: str = "auto"
    options: BackendOptions = field(default_factory=BackendOptions)
    ids: str | None = None  # -i/--id as given; matched to the node's devices once it is open
    interval: float = DEFAULT_INTERVAL_S


def parse_listen(text: str) -> tuple[str, int]:
    """``--listen``: ``:9400``, ``127.0.0.1:9400``, ``[::1]:9400`` → (host, port); host "" is
    every address. The port is checked against `gputop.core.bounds`."""
    from gputop.core.errors import UsageError

    host, sep, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    wanted = UsageError(f"--listen: expected ADDR:PORT, :PORT or [IPV6]:PORT with a port from "
                        f"{bounds.LISTEN_PORT.describe()}, not {text!r}")
    if not sep or ":" in host and not text.startswith("["):
        raise wanted
    try:
        return host, int(bounds.LISTEN_PORT.convert(port))
    except ValueError:
        raise wanted from None

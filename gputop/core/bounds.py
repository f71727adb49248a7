"""The range of every numeric option and environment value, and the one check they all pass.

A number from a user is finite and inside a documented range before anything uses it: `inf` as an
interval would end the sampler's thread, `1e-320` would spin it, and `1e309` as a window would
never return. Each bound names its option, so the one-line error says which value was wrong and
what would have been accepted. docs/reference/limits.md's bad-input table lists these same bounds (a test keeps
the two in step).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from gputop.core.errors import UsageError

MAX_DIGITS = 40  # no accepted value is longer: refuse a 4000-digit "number" before parsing it


@dataclass(frozen=True)
class Bound:
    """``low <= value <= high``, finite."""

    name: str
    low: float
    high: float
    unit: str = ""  # "s", "ms", "W", "%" or "" (a count or a factor)
    integer: bool = False

    def describe(self) -> str:
        """The range as the docs and the errors write it: ``0.05 to 86400 s``."""
        unit = f" {self.unit}" if self.unit else ""
        return f"{_plain(self.low)} to {_plain(self.high)}{unit}"

    def kind(self) -> str:
        return "a whole number" if self.integer else "a number"

    def problem(self, text: str) -> str | None:
        """Why ``text`` is not acceptable, or None."""
        try:
            self.convert(text)
        except ValueError as exc:
            return str(exc)
        return None

    def convert(self, text: str) -> float | int:
        """The value of ``text``; ValueError (without the option's name) when out of range."""
        wanted = f"expected {self.kind()} from {self.describe()}, not {text!r}"
        raw = text.strip()
        if not raw or len(raw) > MAX_DIGITS:
            raise ValueError(wanted)
        try:
            value: float | int = int(raw) if self.integer else float(raw)
        except ValueError:
            raise ValueError(wanted) from None
        if not math.isfinite(value) or value > self.high or value < self.low:
            raise ValueError(wanted)
        return value

    def parse(self, text: str) -> float | int:
        """For values outside the command line (environment variables): a UsageError naming the
        bound. The command line's own check is `gputop.commands.common.bounded`."""
        try:
            return self.convert(text)
        except ValueError as exc:
            raise UsageError(f"{self.name}: {exc}") from None

    def from_env(self, environ: Mapping[str, str], default: float) -> float | int:
        raw = environ.get(self.name)
        if raw is None or raw == "":
            return default
        return self.parse(raw)


def as_written(value: object, limit: int = 40) -> str:
    """A value from a JSON file as the file wrote it (``true``, ``NaN``, ``[1]``), cut short."""
    import math

    from gputop.core import jsonout

    if isinstance(value, float) and not math.isfinite(value):
        text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    else:
        try:
            text = jsonout.dumps(value)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def json_type(value: object) -> str:
    """The JSON name of a value's type: object, array, string, number, true/false, null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    for kind, name in ((dict, "an object"), (list, "an array"), (str, "a string"),
                       ((int, float), "a number")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _plain(x: float) -> str:
    """A bound as people write it: 86400000, not 8.64e+07."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


DAY_S = 86400.0

# Sampling. The dashboard's keys step the interval between 0.25 and 30 s; below 0.05 s a sample
# of 8 GPUs × 32 processes would take most of a core.
INTERVAL = Bound("--interval", 0.05, DAY_S, "s")
# nvidia-smi query loops: people log at -lms 10 and below.
LOOP_S = Bound("-l/--loop", 0.001, DAY_S, "s")
LOOP_MS = Bound("-lms/--loop-ms", 1, DAY_S * 1000, "ms", integer=True)
SNAPSHOT_WINDOW = Bound("snapshot --window", 0, DAY_S, "s")
# How far back the dashboard's history reaches: the same frames at any span, sparser the longer.
HISTORY = Bound("--history", 60, 30 * DAY_S, "s")
HISTORY_DEFAULT_S = 3600.0

# The simulator and replay.
SIM_SPEED = Bound("--sim-speed", 0.01, 100000)
SEED = Bound("--seed", 0, 2**63 - 1, integer=True)
REPLAY_SPEED = Bound("replay --speed", 0.125, 64)  # the dashboard's [ and ] keep to this too
REPLAY_SEEK = Bound("replay position", 0, 10 * 365 * DAY_S, "s")

# The agent and the cluster view.
AGENT_COUNT = Bound("agent --count", 0, 10**9, integer=True)
CONNECT_TIMEOUT = Bound("cluster --connect-timeout", 1, 3600, "s")
ONCE_TIMEOUT = Bound("cluster --timeout", 0.1, DAY_S, "s")
MAX_OPENING = Bound("cluster --max-opening", 1, 1024, integer=True)
EXPORTER_TOP_PROCESSES = Bound("exporter --top-processes", 0, 1000, integer=True)

# Servers (the exporter, the web view). Port 0: the kernel picks a free one (and it is printed).
LISTEN_PORT = Bound("--listen port", 0, 65535, integer=True)
# Each browser tab is a dashboard process of about WEB_VIEWER_MB: a cap keeps a shared URL from
# eating the node that the dashboard watches.
WEB_MAX_VIEWERS = Bound("web --max-viewers", 1, 100, integer=True)
# One viewer's app process, the dashboard on the simulator's 8 GPUs with its history full (600
# samples): its resident memory in MB, measured (40 at its first frame, 56 once full; checked by
# tests/e2e/web/test_web_viewers.py). `gputop web` states the cap's cost with it.
WEB_VIEWER_MB = 60

# The power-limit advisor.
ADVISE_WINDOW = Bound("advise --window", 0.1, DAY_S, "s")
ADVISE_STEP = Bound("advise --step", 1, 5000, "W")  # a smaller step: millions of limits
ADVISE_SETTLE = Bound("advise --settle", 0, 3600, "s")
ADVISE_MEASURE = Bound("advise --measure", 0.1, 3600, "s")
ADVISE_MAX_SLOWDOWN = Bound("advise --max-slowdown", 0.01, 99, "%")
ADVISE_ETA = Bound("advise --eta", 0, 1)
ADVISE_LOWEST = Bound("advise --lowest", 1, 5000, "W")
ADVISE_REPEAT = Bound("advise --repeat", 1, 1000, integer=True)

# Alert channels, in the settings file's [alerts.channel.NAME] tables.
ALERT_TIMEOUT = Bound("alerts.channel timeout", 0.1, 300, "s")
ALERT_RETRIES = Bound("alerts.channel retries", 0, 20, integer=True)
ALERT_QUEUE = Bound("alerts.channel queue", 1, 10000, integer=True)

# Environment.
NPU_SMI_TIMEOUT = Bound("GPUTOP_NPU_SMI_TIMEOUT", 0.1, 3600, "s")
AMD_SMI_TIMEOUT = Bound("GPUTOP_AMD_SMI_TIMEOUT", 0.1, 3600, "s")
ROCM_SMI_TIMEOUT = Bound("GPUTOP_ROCM_SMI_TIMEOUT", 0.1, 3600, "s")
XPU_SMI_TIMEOUT = Bound("GPUTOP_XPU_SMI_TIMEOUT", 0.1, 3600, "s")

ALL: tuple[Bound, ...] = tuple(v for v in list(globals().values()) if isinstance(v, Bound))

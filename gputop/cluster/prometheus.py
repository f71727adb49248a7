"""The cluster view's second transport: a Prometheus server's HTTP API instead of SSH.

Each refresh asks one instant query per figure for all nodes together, under the ``--selector``
matcher; a figure dcgm-exporter names comes from gputop's own family for it where a GPU has no
DCGM series (AMD, Intel), in the same query (``OWN``). The nodes table needs only each node's
headline figures, so a live refresh asks Prometheus for those already aggregated per scrape
target (``instance``): ``avg/sum/count/max by (instance)``, about one series per node per query,
whatever the number of GPUs. Whole snapshots (one query per metric, one series per GPU) are
asked only for what a view shows whole: the node the user opened, every node while the users
view is shown, and every node for ``--once``. Nodes are named by their ``Hostname``/``hostname``
label. It offers the SSH transport's consumer interface (``start``, ``stop``, ``version``,
``statuses``, ``status``, ``wait``, ``settled``, ``problem``) plus ``detail`` (what to fetch
whole), so the cluster UI does not know which it reads.

Node states: ok; stale when the last scrape or the exporter's own snapshot is older than
``stale_after``; down when the last scrape failed (``up == 0``). Prometheus unreachable, an HTTP
error or an unexpected answer keeps the last statuses, sets ``problem`` to one line and retries
with backoff; nothing here raises into the UI.

A server is untrusted as any input is: each request ends by its deadline however slowly the
server trickles (``_Socket``), each refresh by its own, an answer is read up to ``MAX_ANSWER``
bytes and no further, and JSON too deep for the parser is one line. The queries run on daemon
threads that nothing waits for: quitting abandons a request in flight instead of sitting it out.
"""

from __future__ import annotations

import http.client
import io
import math
import queue
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import Executor, Future
from concurrent.futures import wait as wait_all
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from gputop.cluster import states
from gputop.cluster.node import NodeStatus, wait_until
from gputop.cluster.summary import NodeSummary
from gputop.core import jsonout, untrusted, userfile
from gputop.core.errors import UsageError
from gputop.core.model import DEVICE_STATUSES, Device, Hint, Process, Saturation, Snapshot
from gputop.core.units import HZ_PER_MHZ, MIB
from gputop.formats import dcgm

MODE_GPUTOP = "exporter"  # a gputop exporter behind Prometheus
MODE_DCGM = "dcgm"  # a dcgm-exporter (no gputop_ family)
MODE_UNKNOWN = "prometheus"  # no data: which exporter is not known
# The largest answer read: a whole per-GPU query of 1000 nodes x 8 GPUs is 2-3 MiB, the
# processes of 10 per GPU there 11.4 MiB. Past it the read stops: parsed, 16 MiB of JSON is
# already some hundreds of MB of Python objects.
MAX_ANSWER = 16 * MIB
DEFAULT_TIMEOUT_S = 10.0  # one request
DEFAULT_REFRESH_TIMEOUT_S = 30.0  # one refresh: all its requests, and --once's default
# How long a refresh waits past its deadline for a worker still parsing an answer it read in time.
PARSE_GRACE_S = 1.0
BACKOFF_INITIAL_S = 1.0
BACKOFF_MAX_S = 60.0
# Scrape intervals of 15-30 s are common: a node is stale after three missed ones.
DEFAULT_STALE_AFTER_S = 90.0

# One instant query per metric, for all nodes together. Most keep only the labels the view
# needs (``max by``): at 1000 nodes × 8 GPUs each answer is 8000 series, and the full label set
# would be most of its bytes. The device identity (UUID, model, bus id, host name) comes whole
# from the two queries that name every device: dcgm-exporter's memory used, gputop's status.
_BY_GPU = "max by (instance, gpu) ({m})"
_BY_GPU_INSTANCE = "max by (instance, gpu, GPU_I_ID) ({m})"
# The DCGM fields the view reads back, a query each: what it shows, and no more (an exporter
# serves many others). Each is a model attribute, so the device comes back as the model has it.
VIEWED = {f.name: f for f in (dcgm.BY_NAME[name] for name in (
    "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL", "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE",
    "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
    "DCGM_FI_PROF_PIPE_FP64_ACTIVE", "DCGM_FI_PROF_PIPE_FP32_ACTIVE",
    "DCGM_FI_PROF_PIPE_FP16_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES"))}


class Own(NamedTuple):
    """gputop's own family for a figure dcgm-exporter also names, as the exporter serves it on
    every vendor (gputop/exporter/own.py), and how its value becomes the model's unit."""

    family: str
    times: float = 1.0  # the family's value times this, divided by ``per``: the model's unit
    per: float = 1.0
    match: str = ""  # the label matcher that picks the figure out of the family

    def in_dcgm_unit(self, name: str) -> tuple[float, float]:
        """(times, per) that turn the family's value into DCGM field ``name``'s unit."""
        return self.times * VIEWED[name].scale, self.per


# A GPU with no DCGM series for a figure (AMD and Intel GPUs, which the exporter serves under its
# own names only) answers the figure's query from gputop's family instead, in the DCGM field's
# unit: ``DCGM or on (instance, gpu) own``, still one query per figure. One table for the whole
# snapshots and the node summaries alike.
OWN: dict[str, Own] = {
    "DCGM_FI_DEV_GPU_UTIL": Own("gputop_utilization_ratio", times=100.0),  # a ratio, 0-1
    "DCGM_FI_DEV_FB_USED": Own("gputop_memory_used_bytes", per=MIB),
    "DCGM_FI_DEV_POWER_USAGE": Own("gputop_power_draw_watts"),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": Own("gputop_energy_joules_total"),
    "DCGM_FI_DEV_GPU_TEMP": Own("gputop_temperature_celsius", match='sensor="gpu"'),
    "DCGM_FI_DEV_MEMORY_TEMP": Own("gputop_temperature_celsius", match='sensor="memory"'),
    "DCGM_FI_DEV_SM_CLOCK": Own("gputop_clock_hertz", per=HZ_PER_MHZ, match='clock="sm"'),
    "DCGM_FI_DEV_MEM_CLOCK": Own("gputop_clock_hertz", per=HZ_PER_MHZ, match='clock="memory"'),
}


def _either(name: str, dcgm_series: str, by_gpu: bool = False) -> str:
    """A query template: ``dcgm_series`` (a template of ``name``'s series), or else per GPU
    gputop's own family for the same figure (``max by (instance, gpu)`` of it with ``by_gpu``).
    Its ``{own[NAME]}`` is filled by _promql (the family under the selector, in DCGM's unit)."""
    if name not in OWN:
        return dcgm_series
    own = f"{{own[{name}]}}"
    return f"{dcgm_series} or on (instance, gpu) " + \
        (f"max by (instance, gpu) {own}" if by_gpu else own)


def _own_series(selector: str) -> dict[str, str]:
    """Each OWN figure's family under ``selector`` and its matcher, in the DCGM field's unit."""
    out = {}
    for name, own in OWN.items():
        times, per = own.in_dcgm_unit(name)
        out[name] = (f"({own.family}{with_matcher(selector, own.match)}" +
                     (f" * {times:.17g}" if times != 1.0 else "") +
                     (f" / {per:.17g}" if per != 1.0 else "") + ")")
    return out


# A GPU instance's own figures, no part of its GPU's: its GPM and its free memory (the GPU's
# free memory also counts what no instance holds).
_INSTANCE_OWN = frozenset({m.name for m in VIEWED.values() if m.sat} |
                          {"DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED"})
QUERIES: tuple[tuple[str, str], ...] = (
    ("up", "{m}"),
    ("timestamp(up)", "timestamp({m})"),
    ("gputop_device_status", "{m} == 1"),
    ("DCGM_FI_DEV_FB_USED", _either("DCGM_FI_DEV_FB_USED", "{m}")),
    ("gputop_info", "{m}"),
    ("gputop_snapshot_timestamp_seconds", "max by (instance) ({m})"),
    # Under MIG an exporter sends one series per GPU instance (GPU_I_ID), as dcgm-exporter
    # does. Kept apart here: the GPU's own figures come repeated on each (power, clocks, …);
    # memory used adds up to the GPU's; the rest is each instance's own (see _absorb).
    *((name, _either(name, _BY_GPU_INSTANCE, by_gpu=True))
      for name in VIEWED if name != "DCGM_FI_DEV_FB_USED"),
    ("gputop_memory_total_bytes", _BY_GPU),
    ("gputop_power_limit_watts", _BY_GPU),
    # The reasons that hold, plus one 0 per GPU that reports reasons at all (none held: []).
    ("gputop_clock_event_active",
     "max by (instance, gpu, reason) ({m}) == 1 or max by (instance, gpu) ({m}) * 0"),
    ("gputop_saturation_source", "max by (instance, gpu, source) ({m})"),
    ("gputop_hint", "{m}"),
    ("gputop_process_gpu_memory_bytes", "max by (instance, gpu, pid, user, name) ({m})"),
    ("gputop_process_sm_ratio", "max by (instance, gpu, pid, user, name) ({m})"),
)
# The nodes table's figures, one series per node, on every live refresh. Summed over the GPUs
# that report each figure, as the SSH view's summaries are (a lost GPU reports none).
SUMMARY_QUERIES: tuple[tuple[str, str], ...] = (
    ("up", "up{s}"),
    ("timestamp(up)", "timestamp(up{s})"),
    # GPUs known to either family, counted once each; the node's name comes with them.
    ("gpus", "count by (instance, Hostname, hostname) ("
             "max by (instance, gpu, Hostname, hostname) (DCGM_FI_DEV_FB_USED{s}) or "
             "max by (instance, gpu, Hostname, hostname) (gputop_device_status{s}))"),
    # A figure gputop also serves under its own name comes from that where a GPU has no DCGM
    # series (OWN): AMD and Intel GPUs.
    ("util", "avg by (instance) (" + _either("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL{s}")
     + ")"),
    ("mem_used", "sum by (instance) (" + _either("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_USED{s}")
     + ")"),
    ("mem_free", "sum by (instance) (DCGM_FI_DEV_FB_FREE{s})"),
    ("mem_reserved", "sum by (instance) (DCGM_FI_DEV_FB_RESERVED{s})"),
    ("mem_total", "sum by (instance) (gputop_memory_total_bytes{s})"),
    # a MIG GPU repeats its power on each GPU instance's series: counted once
    ("power", "sum by (instance) (max by (instance, gpu) (" +
     _either("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_POWER_USAGE{s}") + "))"),
    ("power_limit", "sum by (instance) (gputop_power_limit_watts{s})"),
    ("hints", "count by (instance) (gputop_hint{s})"),
    ("snapshot_time", "max by (instance) (gputop_snapshot_timestamp_seconds{s})"),
    ("backend", "max by (instance, backend) (gputop_info{s})"),
)
# A Slurm job's GPUs (``--slurm JOBID``): the series of the GPUs it holds carry ``hpc_job``, as
# dcgm-exporter labels them from Slurm's job-mapping files and gputop's exporter from its
# processes' attribution; memory used is the DCGM field both serve on every NVIDIA GPU.
JOB_GPUS = "max by (instance, gpu) (DCGM_FI_DEV_FB_USED{s})"
PARALLEL_QUERIES = 4
# Whole snapshots for at most this many opened nodes per refresh (one is opened at a time).
MAX_DETAIL_NODES = 4
_BOOL_ATTRS = {"remapped_rows_failed"}
_SELECTOR = re.compile(r'^\{\s*(?:[A-Za-z_][A-Za-z0-9_]*\s*(?:=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"'
                       r'\s*,?\s*)*\}$')


class PrometheusError(Exception):
    """Prometheus could not answer, or answered something that is not a query result."""


def check_selector(selector: str | None) -> str:
    """``{job="gpus"}`` (label matchers in braces) or nothing. Raises UsageError."""
    if selector is None or selector.strip() == "":
        return ""
    selector = selector.strip()
    if not _SELECTOR.match(selector):
        raise UsageError(f"--selector: expected label matchers in braces such as "
                         f'{{job="gpus"}}, got {selector!r}')
    return selector


def check_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"--prometheus: expected an http(s):// URL, got {url!r}")
    return url.rstrip("/")


class _Socket:
    """A connected socket whose every read and write ends by one deadline (``time.monotonic``).
    A socket's own timeout bounds each read alone: a server trickling its answer a byte at a
    time stretched a request for ever."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self.deadline = deadline

    def _arm(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        self._sock.settimeout(left)

    def sendall(self, data: bytes) -> None:
        self._arm()
        self._sock.sendall(data)

    def makefile(self, mode: str = "rb") -> io.BufferedReader:
        """Return the reader http.client reads the status line, headers and body from."""
        return io.BufferedReader(_Reader(self._arm, self._sock.makefile("rb", buffering=0)))

    def close(self) -> None:
        self._sock.close()


class _Reader(io.RawIOBase):
    """A socket's own unbuffered file, its deadline armed before each read. Being the socket's
    file, it keeps the socket open until both are closed, as ``socket.makefile`` does
    (http.client closes the connection first when an answer is read up to the server's close)."""

    def __init__(self, arm: Callable[[], None], raw: io.RawIOBase) -> None:
        super().__init__()
        self._arm = arm
        self._raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._arm()
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _Deadlined:
    """An http.client connection whose requests each end by a deadline: connecting (TLS
    handshake included) gets the time left, then every read and write of the socket does."""

    sock: Any
    timeout: float | None
    deadline = math.inf

    def set_deadline(self, deadline: float) -> None:
        self.deadline = deadline
        if isinstance(self.sock, _Socket):
            self.sock.deadline = deadline

    def connect(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        self.timeout = left
        super().connect()  # type: ignore[misc]  # a mixin: the HTTPConnection after it has it
        self.sock = _Socket(self.sock, self.deadline)


class _HTTP(_Deadlined, http.client.HTTPConnection):
    pass


class _HTTPS(_Deadlined, http.client.HTTPSConnection):
    pass


_connections = threading.local()  # each query thread keeps one connection per server
_parsing = threading.Lock()  # one answer parsed at a time (see http_query)


def _connection(base: str) -> tuple[_HTTP | _HTTPS, str]:
    held = _connections.__dict__.setdefault("held", {})
    got = held.get(base)
    if got is None:
        parts = urllib.parse.urlsplit(base)
        conn: _HTTP | _HTTPS
        if parts.scheme == "https":
            conn = _HTTPS(parts.hostname or "", parts.port,
                          context=ssl.create_default_context())
        else:
            conn = _HTTP(parts.hostname or "", parts.port)
        got = held[base] = (conn, parts.path)
    return got


def _drop(base: str) -> None:
    got = _connections.__dict__.get("held", {}).pop(base, None)
    if got is not None:
        got[0].close()


class PrometheusTimeout(PrometheusError):
    """Prometheus did not answer by the request's deadline."""


class _TooLarge(Exception):
    pass


def _read_body(answer: http.client.HTTPResponse) -> bytes:
    """The whole body, or _TooLarge as soon as it is known to pass MAX_ANSWER (read no further)."""
    if answer.length is not None and answer.length > MAX_ANSWER:
        raise _TooLarge
    body = answer.read(MAX_ANSWER + 1)
    if len(body) > MAX_ANSWER:
        raise _TooLarge
    return body


def http_query(base: str, promql: str, timeout: float, at: float | None = None) -> list[dict]:
    """One instant query over a kept-alive connection, answered within ``timeout`` seconds in
    all (however slowly the server sends) and in at most MAX_ANSWER bytes; the result vector,
    checked. ``at``: the Unix time it is evaluated at (default: the server's now). Raises
    PrometheusError with one line naming the server and the problem."""
    deadline = time.monotonic() + timeout
    server = f"Prometheus at {base}"
    params = {"query": promql} if at is None else {"query": promql, "time": f"{at:.3f}"}
    query = "/api/v1/query?" + urllib.parse.urlencode(params)
    for attempt in (1, 2):
        conn, prefix = _connection(base)
        reused = conn.sock is not None
        conn.set_deadline(deadline)
        failure: PrometheusError
        try:
            conn.request("GET", prefix + query)
            answer = conn.getresponse()
            body = _read_body(answer)
        except TimeoutError:
            failure = PrometheusTimeout(f"{server} did not answer {promql} within "
                                        f"{timeout:.3g} s")
        except _TooLarge:
            failure = PrometheusError(f"{server} answered {promql} with more than "
                                      f"{MAX_ANSWER // MIB} MiB: stopped reading it")
        except (OSError, http.client.HTTPException) as exc:
            if reused and attempt == 1 and isinstance(exc, (OSError, http.client.BadStatusLine)):
                _drop(base)
                continue  # the server closed the idle connection: once more on a new one
            failure = PrometheusError(
                f"Prometheus unreachable at {base}: {userfile.one_line(str(exc))}"
                if isinstance(exc, OSError) else
                f"{server} answered {promql} with something not HTTP: "
                f"{userfile.one_line(repr(exc))}")
        else:
            if answer.will_close:
                _drop(base)
            break
        _drop(base)
        # Raised out here, not in the handler: the read's exception and its frames (the
        # 16 MiB read) would ride along as the context of each future's failure.
        raise failure
    if answer.status != 200:
        raise PrometheusError(f"{server} answered HTTP {answer.status} to {promql}")
    # The parser holds the GIL for a whole answer anyway: parsing one at a time costs nothing
    # and keeps one parsed document in memory at a time, not one per query thread.
    with _parsing:
        return parse_vector(body, promql, server, answer.getheader("Content-Type"))


def parse_vector(body: bytes, promql: str, server: str = "Prometheus",
                 content_type: str | None = None) -> list[dict]:
    """An instant query's answer: each series' labels (strings) and finite value. Raises
    PrometheusError with one line (``server`` names who answered) for anything else:
    not UTF-8 JSON, nested too deeply, an error, another result type, a malformed series.

    Only the parser recurses: the vector's fixed shape is checked level by level below, so a
    document deeper than that is malformed, and one too deep to parse is caught as it parses
    (``userfile.shallow`` would walk every answer again, at twice the parse's own cost)."""
    sent = f" ({userfile.one_line(content_type, 60)})" if content_type else ""
    problem: str | None
    try:
        doc = untrusted.loads(userfile.decode(body))
    except RecursionError:
        problem = "JSON nested too deeply to parse"
    except ValueError as exc:  # userfile.FileProblem and json's errors alike
        problem = f"something not JSON{sent}: {userfile.one_line(str(exc))}"
    else:
        problem = None
    if problem is not None:  # raised out here: a RecursionError's traceback is long
        raise PrometheusError(f"{server} answered {promql} with {problem}")
    if not isinstance(doc, dict) or doc.get("status") != "success":
        error = doc.get("error") if isinstance(doc, dict) else None
        raise PrometheusError(f"{server} refused {promql}: {userfile.one_line(str(error))}")
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "vector" or \
            not isinstance(data.get("result"), list):
        raise PrometheusError(f"{server} answered {promql} with no instant vector")
    out = []
    for item in data["result"]:
        labels = item.get("metric") if isinstance(item, dict) else None
        if not isinstance(labels, dict) or \
                not all(type(v) is str for v in labels.values()):
            raise PrometheusError(f"{server} answered {promql} with a malformed series")
        value = item.get("value")
        try:
            if type(value) is not list or len(value) != 2 or type(value[1]) is not str:
                raise ValueError
            number = float(value[1])  # Prometheus writes NaN and ±Inf as Go does: dropped below
        except ValueError:
            raise PrometheusError(f"{server} answered {promql} with a malformed value") from None
        if math.isfinite(number):
            out.append({"labels": labels, "value": number})
    return out


@dataclass
class _NodeData:
    instance: str
    up: bool
    scraped: float | None = None  # Unix time of the last scrape
    hostname: str | None = None
    driver: str | None = None
    backend: str | None = None
    snapshot_time: float | None = None
    devices: dict[int, dict] = field(default_factory=dict)  # gpu -> Device kwargs
    sat: dict[int, dict] = field(default_factory=dict)
    procs: dict[int, dict[int, dict]] = field(default_factory=dict)  # gpu -> pid -> kwargs
    hints: list[Hint] = field(default_factory=list)
    reasons: dict[int, list[str]] = field(default_factory=dict)
    mig: set[int] = field(default_factory=set)  # GPUs whose series come per GPU instance


def _gpu(labels: dict[str, str]) -> int | None:
    try:
        return int(labels.get("gpu", ""))
    except ValueError:
        return None


class Target(NamedTuple):
    """One scrape target as a refresh found it."""

    key: str  # the instance label
    host: str
    state: str
    reason: str
    data: Snapshot | NodeSummary | None
    age: float | None  # seconds since its newest data
    mode: str


def _state(up: bool, age: float | None, stale_after: float) -> tuple[str, str]:
    if not up:
        return states.DOWN, "the last scrape failed (up == 0)"
    if age is not None and age > stale_after:
        return states.STALE, f"no new data for {age:.0f} s"
    return states.OK, ""


def _age(now: float, *times: float | None) -> float | None:
    known = [t for t in times if t is not None]
    return max(0.0, now - min(known)) if known else None


def _time(snapshot_time: float | None, scraped: float | None) -> float:
    """A node's data time: the exporter's own snapshot time, else the last scrape's."""
    return snapshot_time if snapshot_time is not None else (scraped or 0.0)


def hostname_of(labels: dict[str, str]) -> str | None:
    """The node a series is from, by its host label (either of dcgm-exporter's two names)."""
    return labels.get("Hostname") or labels.get("hostname") or None


def _total_mib(used: float | None, free: float | None, reserved: float | None) -> float | None:
    """Memory total as dcgm-exporter gives it, in parts (no total of its own): used + free +
    reserved; None without used and free."""
    if used is None or free is None:
        return None
    return used + free + (reserved or 0.0)


def build_summaries(answers: dict[str, list[dict]], now: float,
                    stale_after: float) -> list[Target]:
    """SUMMARY_QUERIES' answers → one Target per scrape target, its data a NodeSummary. Pure."""
    by: dict[str, dict[str, dict]] = {
        name: {s["labels"].get("instance", ""): s for s in answers.get(name, ())}
        for name, _ in SUMMARY_QUERIES}

    def value(name: str, key: str) -> float | None:
        s = by[name].get(key)
        return None if s is None else s["value"]

    out = []
    for key in sorted(k for k in by["up"] if k):
        scraped, snapshot_time = value("timestamp(up)", key), value("snapshot_time", key)
        age = _age(now, scraped, snapshot_time)
        state, reason = _state(value("up", key) == 1.0, age, stale_after)
        gpus = by["gpus"].get(key)
        host = key
        summary = None
        mode = MODE_UNKNOWN
        if gpus is not None:
            host = hostname_of(gpus["labels"]) or key
            mode = MODE_GPUTOP if key in by["backend"] else MODE_DCGM
            used, total = value("mem_used", key), value("mem_total", key)
            if total is not None:
                total /= MIB
            else:
                total = _total_mib(used, value("mem_free", key), value("mem_reserved", key))
            summary = NodeSummary(time=_time(snapshot_time, scraped), gpus=int(gpus["value"]),
                                  util_pct=value("util", key), mem_used_mib=used,
                                  mem_total_mib=total, power_w=value("power", key),
                                  power_limit_w=value("power_limit", key),
                                  hints=int(value("hints", key) or 0))
        out.append(Target(key, host, state, reason, summary, age, mode))
    return out


def build_nodes(answers: dict[str, list[dict]], now: float, stale_after: float) -> list[Target]:
    """QUERIES' answers → one Target per scrape target, its data a whole Snapshot. Pure."""
    nodes: dict[str, _NodeData] = {}
    for s in answers["up"]:
        inst = s["labels"].get("instance")
        if inst:
            nodes[inst] = _NodeData(inst, up=s["value"] == 1.0)
    for s in answers["timestamp(up)"]:
        node = nodes.get(s["labels"].get("instance", ""))
        if node is not None:
            node.scraped = s["value"]
    for name, _ in QUERIES[2:]:
        for s in answers.get(name, ()):
            _absorb(nodes, name, s)
    out = []
    for key in sorted(nodes):
        node = nodes[key]
        snap = _snapshot(node) if node.devices else None
        age = _age(now, node.scraped, node.snapshot_time)
        state, reason = _state(node.up, age, stale_after)
        mode = MODE_UNKNOWN if snap is None else \
            MODE_DCGM if snap.backend == MODE_DCGM else MODE_GPUTOP
        out.append(Target(key, node.hostname or key, state, reason, snap, age, mode))
    return out


def _absorb(nodes: dict[str, _NodeData], name: str, s: dict) -> None:
    labels, value = s["labels"], s["value"]
    node = nodes.get(labels.get("instance", ""))
    if node is None:
        return
    node.hostname = node.hostname or hostname_of(labels)
    if name == "gputop_info":
        node.backend = labels.get("backend") or None
        return
    if name == "gputop_snapshot_timestamp_seconds":
        node.snapshot_time = value
        return
    if name == "gputop_hint":
        gpu = _gpu(labels)
        code, severity = labels.get("code", ""), labels.get("severity", "")
        if code:
            node.hints.append(Hint(device=gpu, code=code, severity=severity, message=code))
        return
    gpu = _gpu(labels)
    if gpu is None:
        return
    dev = node.devices.get(gpu)
    if dev is None:
        dev = node.devices[gpu] = {
            "index": gpu, "uuid": labels.get("UUID") or None,
            "name": labels.get("modelName") or None,
            "pci_bus_id": labels.get("pci_bus_id") or None,
            "vendor": "huawei" if labels.get("device", "").startswith("davinci") else "nvidia"}
        node.driver = node.driver or labels.get("DCGM_FI_DRIVER_VERSION") or None
    metric = VIEWED.get(name)
    if metric is not None:
        number = value / metric.scale
        if metric.attr in _BOOL_ATTRS:
            number = bool(number)
        if "GPU_I_ID" in labels:  # a MIG GPU: what its instances hold adds up to its own
            node.mig.add(gpu)
            if name in _INSTANCE_OWN:
                return
            if name == "DCGM_FI_DEV_FB_USED":
                number += dev.get(metric.attr) or 0.0
        (node.sat.setdefault(gpu, {}) if metric.sat else dev)[metric.attr] = number
    elif name == "gputop_device_status":
        if labels.get("vendor"):  # the exporter's word, over the guess from the device label
            dev["vendor"] = labels["vendor"]
        if value == 1.0 and labels.get("status") in DEVICE_STATUSES:
            dev["status"] = labels["status"]
    elif name == "gputop_saturation_source":
        if value == 1.0 and labels.get("source"):
            node.sat.setdefault(gpu, {})["source"] = labels["source"]
    elif name == "gputop_memory_total_bytes":
        dev["memory_total_mib"] = value / MIB
    elif name == "gputop_power_limit_watts":
        dev["power_limit_w"] = value
    elif name == "gputop_clock_event_active":
        held = node.reasons.setdefault(gpu, [])
        if value == 1.0 and labels.get("reason"):
            held.append(labels["reason"])
    elif name in ("gputop_process_gpu_memory_bytes", "gputop_process_sm_ratio"):
        try:
            pid = int(labels.get("pid", ""))
        except ValueError:
            return
        proc = node.procs.setdefault(gpu, {}).setdefault(
            pid, {"pid": pid, "user": labels.get("user") or None,
                  "name": labels.get("name") or None})
        if name == "gputop_process_gpu_memory_bytes":
            proc["gpu_memory_mib"] = value / MIB
        else:
            proc["sm_pct"] = value * 100.0


def _snapshot(node: _NodeData) -> Snapshot:
    devices = []
    for gpu in sorted(node.devices):
        kw = dict(node.devices[gpu])
        if "memory_total_mib" not in kw:
            total = _total_mib(kw.get("memory_used_mib"), kw.get("memory_free_mib"),
                               kw.get("memory_reserved_mib"))
            if total is not None:
                kw["memory_total_mib"] = total
        if gpu in node.reasons:
            kw["clock_event_reasons"] = tuple(node.reasons[gpu])
        sat = node.sat.get(gpu) if gpu not in node.mig else None
        if sat:
            # Without gputop's own label, the profiling figures are DCGM's measurements.
            kw["saturation"] = Saturation(**{"source": "dcgm", **sat})
        procs = node.procs.get(gpu, {})
        kw["processes"] = tuple(Process(**procs[pid]) for pid in sorted(procs))
        devices.append(Device(**kw))
    return Snapshot(host=node.hostname or node.instance,
                    time=_time(node.snapshot_time, node.scraped),
                    backend=node.backend or MODE_DCGM, devices=tuple(devices),
                    driver_version=node.driver, hints=tuple(node.hints))


Query = Callable[[str, str, float], list[dict]]  # (base URL, PromQL, timeout in seconds)


class _DaemonPool(Executor):
    """A few daemon threads running the queries of a refresh. ThreadPoolExecutor's threads are
    joined when the interpreter exits, so a query stuck on a slow server held the process long
    after ``q``; these are abandoned instead (each request ends by its deadline anyway)."""

    def __init__(self, size: int, name: str) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._size = size
        self._name = name
        self._threads: list[threading.Thread] = []
        self._closed = False
        # A submit is whole before shutdown closes the pool or not begun: a job queued behind
        # the workers' stop signals would be neither run nor cancelled.
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        with self._lock:
            if self._closed:
                raise RuntimeError("the query threads are stopped")
            future: Future = Future()
            self._jobs.put((future, fn, args, kwargs))
            if len(self._threads) < self._size:
                thread = threading.Thread(target=self._work, daemon=True,
                                          name=f"{self._name}-{len(self._threads)}")
                self._threads.append(thread)
                thread.start()
        return future

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, fn, args, kwargs = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # handed to whoever waits on the future
                future.set_exception(exc)
            else:
                future.set_result(result)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
        while cancel_futures:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job[0].cancel()
                # Tell those waiting on it (concurrent.futures.wait counts a cancelled future
                # as done only once it is notified, as an executor must).
                job[0].set_running_or_notify_cancel()
        for _ in self._threads:
            self._jobs.put(None)
        if wait:
            for thread in self._threads:
                thread.join()


def with_matcher(selector: str, more: str) -> str:
    """The selector's matchers plus ``more`` (one more matcher, or none), in braces."""
    inner = selector.strip()[1:-1].strip().rstrip(",") if selector else ""
    both = ", ".join(m for m in (inner, more) if m)
    return "{" + both + "}" if both else ""


def one_of(label: str, values: Iterable[str]) -> str:
    """A matcher of ``label`` equal to any of ``values``: ``instance=~"a:9400|b:9400"``."""
    # PromQL regexes are RE2, fully anchored; re.escape's escapes are RE2's too
    return f"{label}=~{jsonout.dumps('|'.join(re.escape(v) for v in sorted(values)))}"


def with_instance(selector: str, instance: str) -> str:
    """The selector's matchers plus ``instance="…"`` (the value escaped as PromQL reads it)."""
    quoted = jsonout.dumps(instance)  # a PromQL string literal escapes as JSON does
    return with_matcher(selector, f"instance={quoted}")


def _promql(name: str, template: str, selector: str) -> str:
    """A query's text: QUERIES' templates name their metric ``{m}`` (the query's name, with the
    selector); SUMMARY_QUERIES' name theirs and take the selector as ``{s}``; either takes
    gputop's own family for a DCGM figure as ``{own[NAME]}``."""
    metric = name if name != "timestamp(up)" else "up"
    return template.format(m=metric + selector, s=selector, own=_own_series(selector))


class PrometheusCluster:
    """Watches every scrape target Prometheus has under the selector; refreshes every
    ``interval`` seconds on its own thread.

    Implements :class:`gputop.cluster.source.ClusterSource`."""

    def __init__(self, url: str, selector: str = "", *, interval: float = 5.0,
                 stale_after: float = DEFAULT_STALE_AFTER_S, timeout: float = DEFAULT_TIMEOUT_S,
                 refresh_timeout: float = DEFAULT_REFRESH_TIMEOUT_S,
                 once: bool = False, query: Query = http_query,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time, job: str | None = None) -> None:
        """``job``: a Slurm job id; the nodes are then those holding its GPUs (their series'
        ``hpc_job`` label), read whole, each with only the job's GPUs."""
        self.url = url
        self.selector = selector
        self.job = job
        self.interval = interval
        self.stale_after = stale_after
        self.timeout = timeout  # one request
        self.refresh_timeout = refresh_timeout  # one refresh; with once, every try together
        self.once = once
        self._query = query
        self.clock = clock
        self.wall = wall
        self.version = 0
        self.problem: str | None = None
        self.failures = 0
        self.refresh_s: float | None = None  # how long the last refresh took
        self._statuses: dict[str, NodeStatus] = {}
        self._order: list[str] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._wake = threading.Event()  # a view asked for more: refresh now
        self._thread: threading.Thread | None = None
        self._done = False
        self._detail_hosts: frozenset[str] = frozenset()
        self._detail_all = once
        # Queries go out together: each is one round trip that Prometheus answers on its own.
        self._pool = _DaemonPool(PARALLEL_QUERIES, "gputop-promql")

    # ------------------------------------------------------------------ consumer side
    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="gputop-cluster-prometheus",
                                            daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 0.0) -> None:
        """Stop refreshing, at once: the queries in flight are abandoned, not waited for (the
        screen calls this as it quits). ``timeout``: how long to wait for the refresh thread."""
        self._stop.set()
        self._wake.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._thread is not None:
            if timeout > 0:
                self._thread.join(timeout)
            self._thread = None

    def detail(self, hosts: Collection[str] = (), every: bool = False) -> None:
        """What the views show whole from the next refresh on: the nodes named (an opened
        node), or every node (the users view). The others get their summary alone."""
        hosts = frozenset(hosts)
        with self._lock:
            more = bool(hosts - self._detail_hosts) or (every and not self._detail_all)
            self._detail_hosts, self._detail_all = hosts, every or self.once
        if more:
            self._wake.set()

    def statuses(self) -> list[NodeStatus]:
        with self._lock:
            return [self._statuses[k] for k in self._order]

    def status(self, host: str) -> NodeStatus:
        with self._lock:
            for status in self._statuses.values():
                if status.host == host:
                    return status
        raise KeyError(host)

    def wait(self, predicate: Callable[[list[NodeStatus]], bool], timeout: float) -> bool:
        return wait_until(
            self._changed,
            lambda: self._done or predicate([self._statuses[k] for k in self._order]), timeout)

    @staticmethod
    def settled(statuses: Sequence[NodeStatus]) -> bool:
        return bool(statuses) and all(s.done for s in statuses)

    # ------------------------------------------------------------------ refresh
    def refresh(self, deadline: float | None = None) -> bool:
        """One round of queries, all answered by ``deadline`` (``clock``; default:
        ``refresh_timeout`` from now); True when Prometheus answered all of them."""
        started = self.clock()
        if deadline is None:
            deadline = started + self.refresh_timeout
        with self._lock:
            whole = self._detail_all
            opened = [key for key, s in self._statuses.items()
                      if s.host in self._detail_hosts][:MAX_DETAIL_NODES]
        try:
            if self.job is not None:
                targets = self._job_targets(self.job, deadline)
            elif whole:
                targets = build_nodes(self._ask(QUERIES, self.selector, deadline), self.wall(),
                                      self.stale_after)
            else:
                targets = build_summaries(self._ask(SUMMARY_QUERIES, self.selector, deadline),
                                          self.wall(), self.stale_after)
                for key in opened:
                    targets = self._with_whole(targets, key, deadline)
        except PrometheusError as exc:
            if self._stop.is_set():
                return False  # stopped while the queries were out: nobody is told
            self.failures += 1
            with self._changed:
                self.problem = str(exc)
                self.version += 1
                self._changed.notify_all()
            return False
        self._publish(targets, started)
        return True

    def _job_targets(self, job: str, deadline: float) -> list[Target]:
        """The nodes holding ``job``'s GPUs, whole, each with only those GPUs: one query for
        which GPUs carry its ``hpc_job``, then the whole snapshots of those nodes alone (a job's
        few nodes, however many the server has)."""
        held = self._ask((("job_gpus", JOB_GPUS),),
                         with_matcher(self.selector, f"hpc_job={jsonout.dumps(job)}"),
                         deadline)["job_gpus"]
        gpus: dict[str, set[int]] = {}
        for series in held:
            inst, gpu = series["labels"].get("instance"), _gpu(series["labels"])
            if inst and gpu is not None:
                gpus.setdefault(inst, set()).add(gpu)
        if not gpus:
            return []
        whole = build_nodes(self._ask(QUERIES, with_matcher(self.selector,
                                                            one_of("instance", gpus)),
                                      deadline), self.wall(), self.stale_after)
        out = []
        for t in whole:
            if t.key not in gpus:
                continue
            if isinstance(t.data, Snapshot):
                t = t._replace(data=replace(t.data, devices=tuple(
                    d for d in t.data.devices if d.index in gpus[t.key])))
            out.append(t)
        return out

    def _with_whole(self, targets: list[Target], key: str, deadline: float) -> list[Target]:
        """``targets`` with the node ``key``'s summary replaced by its whole snapshot."""
        whole = build_nodes(self._ask(QUERIES, with_instance(self.selector, key), deadline),
                            self.wall(), self.stale_after)
        found = {t.key: t for t in whole}
        return [found.get(t.key, t) if t.key == key else t for t in targets]

    def _ask(self, queries: Sequence[tuple[str, str]], selector: str,
             deadline: float) -> dict[str, list[dict]]:
        """Every query's answer by ``deadline``; the first failure, in query order, raises.
        Answers still out at the deadline are abandoned (their requests end by it too)."""
        texts = [_promql(name, template, selector) for name, template in queries]
        try:
            futures = [self._pool.submit(self._one, text, deadline) for text in texts]
        except RuntimeError:  # stopped
            raise PrometheusError("stopped") from None
        wait_all(futures, max(0.0, deadline - self.clock()) + PARSE_GRACE_S)
        late = PrometheusError(f"Prometheus at {self.url} did not answer within "
                               f"{self.refresh_timeout:g} s")
        answers = []
        for future in futures:
            if not future.done() or future.cancelled():
                for other in futures:
                    other.cancel()
                raise late
            exc = future.exception()
            if isinstance(exc, PrometheusTimeout) and self.clock() >= deadline:
                raise late  # the refresh's deadline cut the request short, not its own
            if exc is not None:
                raise exc
            answers.append(future.result())
        return dict(zip((name for name, _ in queries), answers))

    def _one(self, promql: str, deadline: float) -> list[dict]:
        """One query, given the request's timeout or what is left of the refresh's."""
        left = deadline - self.clock()
        if left <= 0 or self._stop.is_set():
            raise PrometheusTimeout("no time left")
        return self._query(self.url, promql, min(self.timeout, left))

    def _publish(self, targets: list[Target], started: float) -> None:
        now = self.clock()
        with self._changed:
            self.failures = 0
            # An empty answer is no failure, but a view of nothing has to say why.
            matching = f" matching {self.selector}" if self.selector else ""
            self.problem = None if targets else \
                f"Prometheus at {self.url} has no scrape target{matching}" if self.job is None \
                else f"Prometheus at {self.url} has no GPU series with hpc_job=" \
                     f"{jsonout.dumps(self.job)}{matching} (job ended, or not labelled)"
            self.version += 1
            statuses: dict[str, NodeStatus] = {}
            hosts = Counter(t.host for t in targets)
            for t in targets:
                host = t.host if hosts[t.host] == 1 else f"{t.host} ({t.key})"  # one name, two targets
                received = None if t.age is None else now - t.age
                statuses[t.key] = NodeStatus(host=host, state=t.state, mode=t.mode,
                                             reason=t.reason, data=t.data, received=received,
                                             seq=self.version, done=self.once)
            self._statuses = statuses
            self._order = list(statuses)
            self._done = self.once
            self.refresh_s = self.clock() - started
            self._changed.notify_all()

    def backoff(self) -> float:
        if self.failures == 0:
            return self.interval
        return min(BACKOFF_MAX_S, BACKOFF_INITIAL_S * 2 ** (self.failures - 1))

    def _run(self) -> None:
        # With once, every try shares one deadline: --once --timeout N ends within N s.
        until = self.clock() + self.refresh_timeout if self.once else None
        while not self._stop.is_set():
            started = self.clock()
            ok = self.refresh(until)
            if ok and self.once:
                return
            wait = self.backoff() if not ok else max(0.0, self.interval -
                                                    (self.clock() - started))
            if until is not None and self.clock() + wait >= until:
                self._give_up()
                return
            self._wake.wait(wait)
            self._wake.clear()

    def _give_up(self) -> None:
        """End a ``once`` run that has no time left for another try: its problem stands."""
        with self._changed:
            self._done = True
            self._changed.notify_all()

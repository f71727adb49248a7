"""Logging that loses nothing: whole rows through signals, clear errors on a full or bad disk."""

from __future__ import annotations

import errno
import io
import os
import signal
import threading
import time

import pytest

from gputop.backends import open_backend
from gputop.backends.base import BackendOptions, Clock
from gputop.commands import query as query_cli
from gputop.commands.main import main
from gputop.core.errors import GputopError
from gputop.formats.query_fields import parse_field_list
from gputop.query.recorder import DEFAULT_FIELDS, Recorder, default_path
from gputop.query.sink import LogWriteError
from tests.support.fake_pynvml import ManualClock
from tests.support.query import SIGNAL_LOG_FIELDS


def test_ctrl_c_while_writing_finishes_the_row(tmp_path):
    """A signal that lands while a row is being sampled and written waits for it."""

    class Sink:
        def __init__(self):
            self.parts = []

        def write(self, text):
            if len(self.parts) == 2:
                os.kill(os.getpid(), signal.SIGINT)  # arrives mid-write
            self.parts.append(text)

        def close(self):
            pass

    backend = open_backend("sim", BackendOptions())
    sink = Sink()
    logger = query_cli.QueryLogger(backend, "gpu", parse_field_list(SIGNAL_LOG_FIELDS),
                                   True, None, 8, sink)
    logger.loop(0.01)
    assert logger.stop_signal == signal.SIGINT
    assert len(sink.parts) == 3 and all(p.count("\n") == 8 for p in sink.parts)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored


def test_path_that_is_a_folder_is_a_clear_error(tmp_path, capsys):
    assert main(["--backend", "sim", "--query-gpu=index", "--format=csv", "-f", str(tmp_path)]) == 1
    assert capsys.readouterr().err == f"gputop: cannot open log file {tmp_path}: Is a directory\n"


def test_enospc_mid_log_stops_with_the_error(monkeypatch, tmp_path):
    from gputop.query import sink as sink_mod

    real_write = os.write
    calls = {"n": 0}

    def flaky_write(fd, data):
        calls["n"] += 1
        if calls["n"] == 4:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(sink_mod.os, "write", flaky_write)
    log = tmp_path / "log.csv"
    with pytest.raises(LogWriteError, match="No space left on device"):
        query_cli.main(["--backend", "sim", "--query-gpu=index", "--format=csv", "-lms", "5",
                        "-f", str(log)])
    assert log.read_text().count("\n") == 1 + 8 * 2  # header and two whole samples


def test_partial_writes_are_completed(monkeypatch, tmp_path):
    from gputop.query import sink as sink_mod

    real_write = os.write
    monkeypatch.setattr(sink_mod.os, "write", lambda fd, data: real_write(fd, bytes(data[:7])))
    log = tmp_path / "log.csv"
    assert main(["--backend", "sim", "--query-gpu=index,name", "--format=csv", "-f", str(log)]) == 0
    assert log.read_text().splitlines()[8] == "7, NVIDIA H100 80GB HBM3"


def test_recorder_writes_the_query_format(tmp_path, capsys):
    backend = open_backend("sim", BackendOptions(scenario="training"))
    path = tmp_path / "rec.csv"
    with Recorder(str(path)) as rec:
        assert rec.path == str(path) and rec.rows == 0
        rec.write(backend.sample())
        rec.write(backend.sample([2, 3]))
        assert rec.rows == 10
    assert rec.closed
    assert main(["--backend", "replay", "--replay", str(path),
                 f"--query-gpu={','.join(DEFAULT_FIELDS)}", "--format=csv"]) == 0
    assert capsys.readouterr().out == path.read_text()
    with pytest.raises(LogWriteError):
        rec.write(backend.sample())


def test_recorder_errors(tmp_path):
    with pytest.raises(GputopError, match='Field "bogus" is not a valid field'):
        Recorder(str(tmp_path / "x.csv"), fields="index,bogus")
    with pytest.raises(GputopError, match="cannot open log file"):
        Recorder(str(tmp_path / "missing" / "x.csv"))
    rec = Recorder("/dev/full", fields=("index",), header=False) if os.path.exists(
        "/dev/full") else None
    if rec is not None:
        with pytest.raises(LogWriteError, match="No space left"):
            rec.write(open_backend("sim", BackendOptions()).sample())
        assert rec.closed
    assert default_path("/logs", now=0).startswith("/logs/gputop-19")


class _SlowBackend:
    """Each sample costs ``costs[i]`` seconds of the fake clock."""

    name = "fake"

    def __init__(self, costs):
        from gputop.core.model import Device

        self.clock = ManualClock(epoch=0.0)
        self.costs = list(costs)
        self.device = Device(index=0)
        self.asked: list = []

    def sample(self, devices=None, *, wants=None):
        from gputop.core.model import Snapshot

        self.asked.append(wants)
        t = self.clock.t  # the reading is taken when the tick starts
        self.clock.t += self.costs.pop(0) if self.costs else 0.007
        return Snapshot(host="h", time=t, backend="fake", devices=(self.device,))


def test_sampling_work_does_not_shift_the_schedule():
    costs = [0.007] * 5 + [0.025] + [0.007] * 5  # one tick overruns two periods
    backend = _SlowBackend(costs)
    times = []

    class Sink:
        def write(self, text):
            times.append(round(float(text.split(", ")[0]) - 1000.0, 6))
            if len(times) == 10:
                logger.stop_signal = signal.SIGTERM

    logger = query_cli.QueryLogger(backend, "gpu", [_raw_time_field()], True, None, 1, Sink())
    logger.loop(0.010)
    # 7 ms of work per 10 ms period never accumulates; the 25 ms tick skips the two ticks it
    # overran instead of bunching them, and the grid carries on where it was.
    assert times == [0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.08, 0.09, 0.10, 0.11]
    assert logger.skipped == 2
    # --query-gpu reads no process list or GPM: only what its fields print
    assert all("processes" not in w and "saturation" not in w for w in backend.asked)


def test_compute_apps_asks_the_backend_for_process_lists():
    backend = _SlowBackend([])
    logger = query_cli.QueryLogger(backend, "compute-apps", parse_field_list("pid", "compute-apps"),
                                   True, None, 1, io.StringIO())
    logger.once()
    assert all("processes" in w for w in backend.asked)


def _raw_time_field():
    from gputop.formats.query_fields import Field

    return Field(name="t", kind="str", get=lambda snap, dev, count: f"{snap.time:.6f}")


class _StallsInMain(Clock):
    """Real time, except that a wait in the main thread oversleeps by 25 ms: its CPU was taken
    away (hypervisor steal), as on a shared VM."""

    def wait(self, event, seconds):
        if threading.current_thread() is threading.main_thread():
            seconds += 0.025
        return super().wait(event, seconds)


class _WhoTicks:
    name = "who-ticks"

    def __init__(self):
        from gputop.core.model import Device

        self.clock = _StallsInMain()
        self.device = Device(index=0)
        self.ticks: list[tuple[float, str]] = []

    def sample(self, devices=None, *, wants=None):
        from gputop.core.model import Snapshot

        self.ticks.append((time.monotonic(), threading.current_thread().name))
        return Snapshot(host="h", time=time.time(), backend="fake", devices=(self.device,))


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="hedging needs two usable CPUs")
def test_a_stalled_waiter_is_covered_by_the_other_one():
    backend = _WhoTicks()

    class Sink:
        def write(self, text):
            if len(backend.ticks) == 20:
                logger.stop_signal = signal.SIGTERM

    logger = query_cli.QueryLogger(backend, "gpu", parse_field_list("index"), True, None, 1, Sink())
    logger.loop(0.010)
    start = backend.ticks[0][0]
    later = backend.ticks[1:]
    by_helper = [t for t, who in later if who == "gputop-query-hedge"]
    # A lone waiter would be 25 ms late for every tick and skip two of every three.
    assert len(by_helper) >= 15, backend.ticks
    lateness = sorted(t - (start + 0.010 * round((t - start) / 0.010)) for t, _ in later)
    assert lateness[len(lateness) // 2] < 0.005
    assert logger.skipped <= 4


def test_no_second_waiter_without_two_cpus_or_with_a_clock_that_does_not_sleep(monkeypatch):
    from gputop.backends.base import REAL_CLOCK
    from gputop.query.hedge import hedge_cpus

    assert hedge_cpus(ManualClock()) is None
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})
    assert hedge_cpus(REAL_CLOCK) is None
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5})
    assert hedge_cpus(REAL_CLOCK) == (5, 2)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="hedging needs two usable CPUs")
def test_arming_a_timer_leaves_the_thread_free_to_run_anywhere():
    from gputop.query.hedge import arm_here

    allowed = os.sched_getaffinity(0)
    cpu = max(allowed)
    result = {}

    def arm():
        result["armed"] = arm_here(cpu, allowed)
        result["after"] = os.sched_getaffinity(0)
        result["bad"] = arm_here(max(allowed) + 4096, allowed)  # no such CPU
        result["after_bad"] = os.sched_getaffinity(0)

    t = threading.Thread(target=arm)
    t.start()
    t.join()
    assert result == {"armed": True, "after": allowed, "bad": False, "after_bad": allowed}
    assert os.sched_getaffinity(0) == allowed  # the affinity is the calling thread's alone

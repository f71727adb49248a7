import threading
import time

from gputop.backends.base import Backend, BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.core.budget import EVERYTHING, Wants
from gputop.core.model import Device, Hint, NodeInfo, Snapshot
from gputop.history import History
from gputop.sampler import Sampler, next_tick


def test_next_tick_is_drift_free_and_skips_late_ticks():
    assert next_tick(100.0, 1.0, 100.2, 0) == (1, 101.0)
    # Tick 1 finished late, at 103.5: ticks 2 and 3 are skipped, never bunched.
    assert next_tick(100.0, 1.0, 103.5, 1) == (4, 104.0)


class SlowBackend(Backend):
    name = "slow"

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls = 0

    def info(self) -> NodeInfo:
        return NodeInfo(host="h", backend=self.name)

    def sample(self, devices=None, *, wants: Wants | None = EVERYTHING) -> Snapshot:
        self.calls += 1
        time.sleep(self.delay)
        return Snapshot(host="h", time=time.time(), backend=self.name)


def test_a_slow_backend_never_blocks_the_consumer():
    sampler = Sampler(SlowBackend(0.5), interval=0.05)
    start = time.monotonic()
    sampler.start()
    assert sampler.latest is None  # the consumer reads at once, even before the first sample
    assert time.monotonic() - start < 0.1
    time.sleep(1.2)
    sampler.stop()
    # 0.5 s per sample at a 0.05 s interval: late ticks are skipped, not queued up.
    assert 2 <= sampler.backend.calls <= 3
    assert sampler.skipped_ticks > 0


class FailingBackend(SlowBackend):
    def sample(self, devices=None, *, wants: Wants | None = EVERYTHING) -> Snapshot:
        self.calls += 1
        if self.calls == 2:
            raise RuntimeError("transient")
        return Snapshot(host="h", time=time.time(), backend=self.name)


def test_a_backend_error_is_reported_and_sampling_goes_on():
    errors = []
    sampler = Sampler(FailingBackend(0.0), interval=0.01)
    sampler.subscribe(lambda s: None, on_error=errors.append)
    assert sampler.tick() is not None
    assert sampler.tick() is None and isinstance(sampler.last_error, RuntimeError)
    assert sampler.tick() is not None and sampler.last_error is None
    assert len(errors) == 1


def test_the_analyzer_sees_the_history_window_and_every_sample_is_kept():
    seen = []

    def analyze(history):
        seen.append([len(w.times) for w in history.window(60.0, 240)])
        return [Hint(device=None, code="idle-allocated", severity="info", message="x")]

    backend = SimBackend(BackendOptions(scenario="idle", sim_speed=1000))
    backend.open()
    sampler = Sampler(backend, interval=1.0, history=History(window_s=4.0), analyze=analyze)
    sampler.run_for(9.0)
    assert len(sampler.history) == 10
    assert seen[-1] == [5] * 8 and sampler.latest.hints[0].code == "idle-allocated"
    times = sampler.history.window(60.0, 240)[0].times
    assert [round(b - a, 6) for a, b in zip(times, times[1:])] == [1.0] * 4
    times, draws = sampler.history.device_series(0, "power_draw_w")
    assert len(draws) == 10 and all(v > 0 for v in draws)


def test_listeners_receive_each_snapshot_on_the_sampler_thread():
    backend = SimBackend(BackendOptions(scenario="idle", sim_speed=100))
    backend.open()
    got = threading.Event()
    threads = []

    def listener(snap):
        threads.append(threading.current_thread().name)
        got.set()

    sampler = Sampler(backend, interval=0.5)
    sampler.subscribe(listener)
    sampler.start()
    assert got.wait(2)
    sampler.stop()
    assert threads[0] == "gputop-sampler"


def test_pause_stops_sampling_and_interval_changes_take_effect():
    backend = SimBackend(BackendOptions(scenario="idle", sim_speed=1))
    backend.open()
    sampler = Sampler(backend, interval=0.05)
    sampler.pause(True)
    sampler.start()
    time.sleep(0.3)
    assert sampler.latest is None
    sampler.pause(False)
    time.sleep(0.3)
    assert sampler.latest is not None
    sampler.set_interval(10.0)
    n = len(sampler.history)
    time.sleep(0.3)
    sampler.stop()
    assert len(sampler.history) - n <= 1


def test_the_history_window_is_a_copy():
    h = History()
    h.append(Snapshot(host="h", time=1.0, backend="x", devices=(Device(index=0),)))
    (copy,) = h.window(60.0, 240)
    h.append(Snapshot(host="h", time=2.0, backend="x", devices=(Device(index=0),)))
    assert copy.times == [1.0] and h.window(60.0, 240)[0].times == [1.0, 2.0]


def test_a_first_sample_handed_to_start_is_tick_zero_and_not_read_again():
    sampler = Sampler(SlowBackend(0.0), interval=10.0)
    first = Snapshot(host="h", time=1.0, backend="slow")
    sampler.start(first)
    time.sleep(0.3)
    sampler.stop()
    assert sampler.backend.calls == 0  # the next read is due one interval later
    assert sampler.history.latest is first and sampler.latest is first
    assert len(sampler.history) == 1
    plain = Sampler(SlowBackend(0.0), interval=10.0)
    plain.start()
    time.sleep(0.3)
    plain.stop()
    assert plain.backend.calls == 1


class BudgetedBackend(SlowBackend):
    def __init__(self) -> None:
        super().__init__(0.0)
        self.asked: list = []

    def sample(self, devices=None, *, wants=None) -> Snapshot:
        self.asked.append(wants)
        return super().sample(devices)


def test_the_sampler_reads_what_its_consumers_want_together():
    sampler = Sampler(BudgetedBackend(), interval=1.0)
    sampler.tick()
    sampler.want("dashboard", {"power_draw_w": 5.0})
    sampler.want("panel", {"power_draw_w": 0.0, "saturation": 0.0})
    sampler.tick()
    sampler.unwant("panel")
    sampler.tick()
    sampler.want("advisor", None)
    sampler.tick()
    assert sampler.backend.asked == [None, {"power_draw_w": 0.0, "saturation": 0.0},
                                     {"power_draw_w": 5.0}, None]
    assert sampler.latest_wants is None


class UnbudgetedBackend(SlowBackend):
    """Breaks the Backend contract: its sample() takes no ``wants``."""

    def sample(self, devices=None) -> Snapshot:  # type: ignore[override]
        return super().sample(devices)


def test_a_backend_that_takes_no_budget_fails_loudly_instead_of_being_detected():
    # The sampler does not look at sample()'s signature: a backend implements Backend.sample
    # whole, and one that cannot take the consumers' wants fails as any broken backend does.
    sampler = Sampler(UnbudgetedBackend(0.0), interval=1.0)
    assert sampler.tick() is not None  # nobody wants anything in particular: no budget passed
    sampler.want("dashboard", {"power_draw_w": 5.0})
    assert sampler.tick() is None and isinstance(sampler.last_error, TypeError)


def test_annotate_runs_before_the_history_and_the_analyses_see_the_sample():
    seen: list[str] = []

    def annotate(snap: Snapshot) -> Snapshot:
        return Snapshot(host="annotated", time=snap.time, backend=snap.backend)

    def analyze(history):
        seen.append(history.latest.host)
        return []

    sampler = Sampler(SlowBackend(0.0), interval=1.0, analyze=analyze, annotate=annotate)
    snap = sampler.tick()
    assert snap is not None and snap.host == "annotated"
    assert seen == ["annotated"] and sampler.history.latest.host == "annotated"

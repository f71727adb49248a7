"""The sampler's history: an hour at any interval in a fixed number of frames, one interface for
every reader, processes kept after they end, and the hints' window as columns, with no whole
snapshot but the newest."""

from __future__ import annotations

import gc
import math

from gputop.core.model import Device, MigInstance, Process, Saturation, Snapshot
from gputop.history import History
from gputop.history.fields import INSTANCE_COLUMNS, WINDOW_COLUMNS, WINDOW_FIELDS
from gputop.history.store import DEVICE_TIERS, PROCESS_TIERS, SPAN_S, WINDOW_SAMPLES
from gputop.history.window import TRIM_EVERY, values


def snap(t: float, util: float | None = 50.0, procs: tuple[Process, ...] = (),
         energy: float | None = None, gpus: int = 1) -> Snapshot:
    return Snapshot(host="n", time=t, backend="sim", devices=tuple(
        Device(index=i, utilization_gpu_pct=util, power_draw_w=300.0, power_limit_w=600.0,
               energy_j=energy, processes=procs if i == 0 else ())
        for i in range(gpus)))


def feed(history: History, times, **kw) -> None:
    for t in times:
        history.append(snap(t, **kw))


def test_an_hour_is_kept_at_any_interval_in_a_fixed_number_of_frames():
    for interval, span in ((0.1, 600.0), (1.0, SPAN_S), (10.0, SPAN_S)):
        h = History(interval=interval, span_s=span)
        n = int(1.5 * span / interval)
        feed(h, (i * interval for i in range(n)), util=1.0)
        times, values = h.device_series(0, "utilization_gpu_pct")
        newest = (n - 1) * interval
        assert newest - times[0] >= span - h.bucket_s[0]  # at least the span
        assert len(times) <= DEVICE_TIERS.fine + DEVICE_TIERS.coarse
        assert times == sorted(times) and values[-1] == 1.0
        # the newest samples as read, the older ones one per bucket
        assert times[-DEVICE_TIERS.fine:] == [i * interval for i in range(n)][-DEVICE_TIERS.fine:]


def test_the_bytes_stay_bounded_however_long_it_runs():
    h = History(interval=1.0)
    procs = tuple(Process(pid=p, started=1.0, gpu_memory_mib=100.0) for p in range(4))
    feed(h, range(5000), procs=procs, gpus=2)
    full = h.nbytes()
    feed(h, range(5000, 9000), procs=procs, gpus=2)
    assert h.nbytes() == full
    frames_d = DEVICE_TIERS.fine + DEVICE_TIERS.coarse
    frames_p = PROCESS_TIERS.fine + PROCESS_TIERS.coarse
    window = (WINDOW_SAMPLES + TRIM_EVERY) * 2 * (8 + 4 + 8 * len(WINDOW_FIELDS))
    assert full <= frames_d * 2 * 13 * 8 + frames_p * 4 * 4 * 4 + window


def test_a_missing_reading_is_none_never_zero():
    h = History()
    feed(h, [1.0, 2.0], util=None)
    assert h.device_series(0, "utilization_gpu_pct") == ([1.0, 2.0], [None, None])
    assert h.device_series(0, "energy_j")[1] == [None, None]


def window(h: History):
    """The one device's window: (times, values by field name), and its newest reading."""
    (w,) = h.window(60.0, 240)
    return w.times, {name: values(w.columns[i]) for name, i in WINDOW_COLUMNS.items()}, w.latest


def test_the_window_holds_the_last_minute_of_each_devices_readings():
    h = History(interval=1.0)
    feed(h, range(200))
    times, values, latest = window(h)
    assert times[-1] == 199 and times[0] == 199 - 60 and len(times) == 61
    assert values["utilization_gpu_pct"] == [50.0] * 61
    assert h.latest is not None and latest is h.latest.devices[0]
    assert [w.times[0] for w in h.window(10.0, 240)] == [189.0]  # the hints' own seconds
    assert [len(w.times) for w in h.window(60.0, 5)] == [5]  # and their most samples


def test_the_window_keeps_what_the_hints_read_of_the_processes_and_clocks():
    procs = (Process(pid=1, cpu_pct=30.0, sm_pct=None), Process(pid=2, cpu_pct=95.0, sm_pct=4.0))
    h = History()
    h.append(Snapshot(host="n", time=1.0, backend="sim", devices=(Device(
        index=0, clock_sm_mhz=1782.0, clock_sm_max_mhz=1980.0,
        clock_event_reasons=("sw_power_cap", "gpu_idle"), processes=procs),)))
    h.append(Snapshot(host="n", time=2.0, backend="sim", devices=(Device(
        index=0, clock_sm_mhz=0.0, clock_sm_max_mhz=1980.0, clock_event_reasons=None),)))
    _, values, _ = window(h)
    assert values["top_process_cpu_pct"] == [95.0, None]
    assert values["top_process_sm_pct"] == [4.0, None]
    assert values["clock_sm_ratio"] == [1782.0 / 1980.0, None]  # the very quotient, not 90.0 %
    assert values["clock_events"] == [0x4 | 0x1, None]  # NVML's bits; None: not reported
    assert values["measured"] == [0.0, 0.0]


def test_a_device_that_stops_answering_leaves_the_window_but_keeps_its_newest_reading():
    def devices(t: float) -> tuple[Device, ...]:
        lost = t >= 5
        return (Device(index=0, utilization_gpu_pct=t),
                Device(index=1, utilization_gpu_pct=t, status="lost" if lost else "ok"))
    h = History()
    for t in range(10):
        h.append(Snapshot(host="n", time=float(t), backend="sim", devices=devices(t)))
    first, second = h.window(60.0, 240)
    assert first.index == 0 and first.times == [float(t) for t in range(10)]
    assert second.index == 1 and second.times == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert second.latest.utilization_gpu_pct == 4.0 and second.latest.status == "ok"
    for t in range(10, 80):  # once its samples age out, so does it
        h.append(Snapshot(host="n", time=float(t), backend="sim", devices=devices(t)))
    assert [w.index for w in h.window(60.0, 240)] == [0]


def test_the_window_meets_devices_in_the_order_they_first_answered_in_it():
    h = History()
    for t in range(5):
        order = (Device(index=3), Device(index=1)) if t < 2 else (Device(index=1),)
        h.append(Snapshot(host="n", time=float(t), backend="sim",
                          devices=order + (Device(index=0),) * (t >= 3)))
    assert [w.index for w in h.window(60.0, 240)] == [3, 1, 0]
    assert [w.index for w in h.window(2.0, 240)] == [1, 0]  # 3 answered before those seconds


def test_the_window_keeps_each_mig_instance_of_a_device_as_first_read():
    def inst(ci: int, sm: float) -> MigInstance:
        return MigInstance(gpu_instance_id=1, compute_instance_id=ci,
                           saturation=Saturation(sm_active_pct=sm),
                           processes=(Process(pid=9, sm_pct=sm / 2),))
    h = History()
    for t in range(3):
        insts = (inst(0, 10.0 * t), inst(0, 99.0)) + ((inst(1, 5.0),) if t == 2 else ())
        h.append(Snapshot(host="n", time=float(t), backend="sim",
                          devices=(Device(index=0, mig_instances=insts),)))
    (w,) = h.window(60.0, 240)
    times, columns = w.instances[(1, 0)]
    assert times == [0.0, 1.0, 2.0]
    assert values(columns[INSTANCE_COLUMNS["sm_active_pct"]]) == [0.0, 10.0, 20.0]
    assert values(columns[INSTANCE_COLUMNS["top_process_sm_pct"]]) == [0.0, 5.0, 10.0]
    assert w.instances[(1, 1)][0] == [2.0]


def test_no_whole_snapshot_is_kept_but_the_newest():
    h = History(interval=0.1)
    for i in range(300):
        h.append(Snapshot(host="n", time=i * 0.1, backend="sim", devices=(
            Device(index=0, name=f"kept? {i}", processes=(Process(pid=1),)),)))
    gc.collect()
    alive = [o.name for o in gc.get_objects() if isinstance(o, Device)
             and (o.name or "").startswith("kept? ")]
    assert alive == ["kept? 299"]


def test_a_repeated_sample_is_ignored_and_an_older_one_starts_over():
    h = History()
    feed(h, [1.0, 2.0, 3.0])
    h.append(snap(3.0, util=99.0))
    assert h.device_series(0, "utilization_gpu_pct")[1] == [50.0, 50.0, 50.0]
    h.append(snap(1.5, util=7.0))  # a replay seeking back: another timeline
    assert h.device_series(0, "utilization_gpu_pct") == ([1.5], [7.0])
    assert window(h)[0] == [1.5]


def test_an_ended_process_keeps_its_series_and_last_row_until_they_age_out():
    h = History(interval=1.0)
    p = Process(pid=7, started=5.0, gpu_memory_mib=512.0, user="ana")
    feed(h, range(10), procs=(p,))
    feed(h, range(10, 20))
    seen = h.process((7, 5.0))
    assert seen is not None and seen.process.user == "ana" and seen.gone_at == 10.0
    assert seen.last_seen == 9.0 and seen.gpus == (0,)
    assert h.process_series((7, 5.0), "gpu_memory_mib") == (list(map(float, range(10))),
                                                             [512.0] * 10)
    feed(h, range(20, int(2 * SPAN_S), 5))  # past the hour: it ages out
    assert h.process((7, 5.0)) is None
    assert h.process_series((7, 5.0), "gpu_memory_mib") == ([], [])


def test_the_holders_of_a_gpu_are_kept_as_runs_of_changes():
    h = History()
    a = Process(pid=1, started=1.0)
    b = Process(pid=2, started=1.0)
    feed(h, [1.0, 2.0], procs=(a,))
    feed(h, [3.0, 4.0], procs=(a, b))
    feed(h, [5.0], procs=())
    assert h.holders(0) == [(1.0, frozenset({(1, 1.0)})), (3.0, frozenset({(1, 1.0), (2, 1.0)})),
                            (5.0, frozenset())]


def test_several_fields_read_from_the_same_samples():
    h = History()
    feed(h, [1.0, 2.0], energy=1000.0)
    times, (power, energy) = h.device_columns(0, ("power_pct", "energy_j"))
    assert times == [1.0, 2.0] and power == [50.0, 50.0] and energy == [1000.0, 1000.0]
    assert not any(math.isnan(v) for v in power)


def test_history_sets_how_far_back_the_dashboard_reaches_in_the_same_frames(tmp_path):
    from gputop.commands.dashboard import configure
    from gputop.commands.main import build_parser
    from gputop.tui.app import GputopApp
    from tests.support.demo import demo_backend

    argv = ["--no-config", "--history", "7200", "--interval", "0.5"]
    parser = build_parser()
    config = configure(parser, argv, parser.parse_args(argv))
    assert config.history_s == 7200
    app = GputopApp(demo_backend("idle"), interval=0.5, history_s=config.history_s,
                    autostart=False)
    assert app.sampler.history.span_s == 7200
    # twice the hour in the same coarse frames: buckets twice as wide
    assert app.sampler.history.bucket_s == (20.0, 30.0)


def test_the_window_holds_about_one_sample_a_second_at_any_interval():
    h = History(interval=0.1)
    feed(h, (i * 0.1 for i in range(2000)))
    times = window(h)[0]
    assert times[-1] == 1999 * 0.1 and times[-1] - times[0] <= 60.0
    assert 55 <= len(times) <= 62  # the newest, and one a second before it
    assert all(b - a >= 0.95 for a, b in zip(times[:-2], times[1:-1]))
    h = History(interval=1.0)
    feed(h, (i * 1.0 - (0.01 if i % 2 else 0) for i in range(100)))  # a jittery 1 s schedule
    assert len(window(h)[0]) == 61

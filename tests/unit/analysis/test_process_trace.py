"""A process's trace for the detail view: keyed by PID and start time, combined over its GPUs,
read from the sampler's history, and telling when the process left."""

from __future__ import annotations

from gputop.analysis.process_trace import ProcessTrace, entries
from gputop.core.model import Device, Process, Snapshot
from gputop.history import History
from gputop.history.fields import combined

STARTED = 1763760000.0


def snap(t: float, *devices: tuple[Process, ...]) -> Snapshot:
    return Snapshot(host="n", time=t, backend="sim",
                    devices=tuple(Device(index=i, processes=procs)
                                  for i, procs in enumerate(devices)))


def proc(pid=100, started=STARTED, **kw) -> Process:
    return Process(pid=pid, started=started, **kw)


def trace_of(*snaps: Snapshot, key=(100, STARTED)) -> ProcessTrace:
    history = History()
    history.extend(snaps)
    return ProcessTrace(key, history)


def test_a_process_on_two_gpus_sums_memory_and_averages_sm():
    s = snap(1.0, (proc(gpu_memory_mib=1000, sm_pct=90, cpu_pct=101.0, host_memory_mib=512),),
             (proc(gpu_memory_mib=3000, sm_pct=50, cpu_pct=101.0, host_memory_mib=512),),
             (proc(pid=7, gpu_memory_mib=9),))
    names = ("gpu_memory_mib", "sm_pct", "cpu_pct", "host_memory_mib")
    assert trace_of(s).columns(names) == ([1.0], [[4000], [70], [101.0], [512]])
    assert [gpu for gpu, _ in entries(s, (100, STARTED))] == [0, 1]
    assert combined([p for _, p in entries(s, (100, STARTED))])["gpu_memory_mib"] == 4000


def test_what_no_gpu_reports_stays_none_not_zero():
    trace = trace_of(snap(1.0, (proc(),)))
    assert trace.columns(("gpu_memory_mib", "sm_pct", "cpu_pct", "host_memory_mib"))[1] == \
        [[None]] * 4


def test_a_reused_pid_is_another_process():
    trace = trace_of(snap(2.0, (proc(started=STARTED + 3600, gpu_memory_mib=5),),
                          (proc(pid=100, outside_pid_namespace=True, gpu_memory_mib=5),)))
    assert trace.samples() == 0


def test_leaving_the_gpus_is_noted_and_the_last_points_stay():
    history = History()
    trace = ProcessTrace((100, STARTED), history)
    history.append(snap(0.0, ()))  # not started yet: not "gone"
    assert trace.gone_since is None
    history.append(snap(1.0, (proc(gpu_memory_mib=10),)))
    history.append(snap(2.0, (proc(gpu_memory_mib=20),)))
    history.append(snap(3.0, ()))
    history.append(snap(4.0, ()))
    assert trace.gone_since == 3.0
    assert trace.columns(("gpu_memory_mib",)) == ([1.0, 2.0], [[10, 20]])
    history.append(snap(5.0, (proc(gpu_memory_mib=30),)))  # back on a GPU
    assert trace.gone_since is None

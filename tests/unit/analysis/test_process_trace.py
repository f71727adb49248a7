"""A process's trace for the detail view: keyed by PID and start time, summed over its GPUs,
bounded, and telling when the process left."""

from __future__ import annotations

from gputop.analysis.process_trace import ProcessTrace, entries, point
from gputop.core.model import Device, Process, Snapshot

STARTED = 1763760000.0


def snap(t: float, *devices: tuple[Process, ...]) -> Snapshot:
    return Snapshot(host="n", time=t, backend="sim",
                    devices=tuple(Device(index=i, processes=procs)
                                  for i, procs in enumerate(devices)))


def proc(pid=100, started=STARTED, **kw) -> Process:
    return Process(pid=pid, started=started, **kw)


def test_a_process_on_two_gpus_sums_memory_and_averages_sm():
    s = snap(1.0, (proc(gpu_memory_mib=1000, sm_pct=90, cpu_pct=101.0, host_memory_mib=512),),
             (proc(gpu_memory_mib=3000, sm_pct=50, cpu_pct=101.0, host_memory_mib=512),),
             (proc(pid=7, gpu_memory_mib=9),))
    p = point(s, (100, STARTED))
    assert (p.gpu_memory_mib, p.sm_pct, p.cpu_pct, p.host_memory_mib) == (4000, 70, 101.0, 512)
    assert [gpu for gpu, _ in entries(s, (100, STARTED))] == [0, 1]


def test_what_no_gpu_reports_stays_none_not_zero():
    p = point(snap(1.0, (proc(),)), (100, STARTED))
    assert (p.gpu_memory_mib, p.sm_pct, p.cpu_pct, p.host_memory_mib) == (None,) * 4


def test_a_reused_pid_is_another_process():
    later = snap(2.0, (proc(started=STARTED + 3600, gpu_memory_mib=5),))
    assert point(later, (100, STARTED)) is None
    outside = snap(2.0, (proc(outside_pid_namespace=True, gpu_memory_mib=5),))
    assert point(outside, (100, STARTED)) is None


def test_the_trace_is_bounded_and_ignores_old_or_repeated_samples():
    trace = ProcessTrace((100, STARTED), maxlen=50)
    trace.extend(snap(float(t), (proc(gpu_memory_mib=t),)) for t in range(200))
    assert len(trace.points) == 50
    assert trace.series("gpu_memory_mib")[0] == 150 and trace.times()[-1] == 199.0
    assert trace.add(snap(199.0, (proc(gpu_memory_mib=1),))) is None  # the same sample again
    assert trace.add(snap(10.0, (proc(gpu_memory_mib=1),))) is None
    assert trace.series("gpu_memory_mib")[-1] == 199


def test_leaving_the_gpus_is_noted_once_and_the_last_points_stay():
    trace = ProcessTrace((100, STARTED))
    trace.add(snap(0.0, ()))  # not started yet: not "gone"
    assert trace.gone_since is None
    trace.add(snap(1.0, (proc(gpu_memory_mib=10),)))
    trace.add(snap(2.0, (proc(gpu_memory_mib=20),)))
    trace.add(snap(3.0, ()))
    trace.add(snap(4.0, ()))
    assert trace.gone_since == 3.0
    assert trace.series("gpu_memory_mib") == [10, 20]
    trace.add(snap(5.0, (proc(gpu_memory_mib=30),)))  # back on a GPU
    assert trace.gone_since is None

"""Grouping processes by job or user (gputop.analysis.groups, gputop.tui.widgets.grouped), no screen."""

from __future__ import annotations

import pytest

from gputop.analysis.groups import MODES, group, next_mode
from gputop.analysis.jobs import job_energy
from gputop.core.model import Container, Device, Job, Process, Snapshot
from gputop.history import History
from gputop.tui.widgets.grouped import build_group_rows, energy_text
from tests.support.demo import demo_backend


def dev(index: int, *procs: Process, energy_j: float | None = None) -> Device:
    return Device(index=index, name="GPU", processes=procs, energy_j=energy_j)


def rank(pid: int, r: int, user: str = "alice", **kw) -> Process:
    return Process(pid=pid, user=user, command=f"python train.py --lr 1e-3 --local_rank={r}", **kw)


def test_the_ranks_of_one_launch_are_one_group_as_the_straggler_hint_groups_them():
    devices = [dev(i, rank(100 + i, i, gpu_memory_mib=1000, sm_pct=90 + i, cpu_pct=50,
                          host_memory_mib=2000)) for i in range(8)]
    devices.append(dev(8, Process(pid=300, user="bob", command="python train.py --lr 1e-3",
                                  gpu_memory_mib=10)))
    groups = group(devices, "job")
    assert len(groups) == 2  # alice's 8 ranks, bob's run of the same script apart
    g = groups[0]
    assert g.count == 8 and g.pids == list(range(100, 108)) and g.gpus == list(range(8))
    assert g.gpu_memory_mib == 8000 and g.cpu_pct == 400 and g.host_memory_mib == 16000
    assert g.sm_pct == pytest.approx(93.5)
    # an inferred group says it is a guess (#27)
    assert g.label == "≈ python train.py --lr 1e-3" and g.commands == ["python train.py --lr 1e-3"]
    assert groups[1].users == ["bob"]


def test_attributed_jobs_group_whatever_their_commands_and_steps():
    slurm = [Process(pid=10 + i, user="alice", command=f"worker {i}",
                     job=Job("slurm", "4242", str(i % 2))) for i in range(4)]
    pod = Process(pid=50, user="root", command="serve",
                  container=Container(runtime="containerd", id="ab" * 32, pod="infer-0",
                                      pod_namespace="prod"))
    groups = group([dev(0, *slurm[:2]), dev(1, *slurm[2:]), dev(2, pod)], "job")
    assert [(g.label, g.count, g.gpus) for g in groups] == [
        ("job 4242", 4, [0, 1]), ("pod prod/infer-0", 1, [2])]


def test_grouping_by_user_puts_every_job_of_a_user_together():
    devices = [dev(0, rank(1, 0)), dev(1, Process(pid=2, user="alice", command="jupyter")),
               dev(2, Process(pid=3, user="bob", command="jupyter"))]
    groups = group(devices, "user")
    assert [(g.label, g.pids) for g in groups] == [("alice", [1, 2]), ("bob", [3])]


def test_a_process_on_several_gpus_counts_once_for_cpu_and_host_memory():
    p0 = Process(pid=7, user="a", command="x", gpu_memory_mib=100, cpu_pct=80,
                 host_memory_mib=500)
    p1 = Process(pid=7, user="a", command="x", gpu_memory_mib=300, cpu_pct=80,
                 host_memory_mib=500)
    (g,) = group([dev(0, p0), dev(1, p1)], "job")
    assert g.count == 1 and g.gpus == [0, 1]
    assert g.gpu_memory_mib == 400 and g.cpu_pct == 80 and g.host_memory_mib == 500


def test_unknown_values_stay_unknown_and_are_never_summed_as_zero():
    unknown = [Process(pid=i, user="a", command="x") for i in range(3)]
    (g,) = group([dev(0, *unknown)], "job")
    assert (g.gpu_memory_mib, g.sm_pct, g.cpu_pct, g.host_memory_mib, g.started) == (
        None, None, None, None, None)
    some = [Process(pid=1, user="a", command="x", gpu_memory_mib=100, sm_pct=80),
            Process(pid=2, user="a", command="x")]
    (g,) = group([dev(0, *some)], "job")
    assert g.gpu_memory_mib == 100 and g.sm_pct == 80  # the mean of what is known, not 40
    snap = Snapshot(host="h", time=10.0, backend="sim", devices=(dev(0, *unknown),))
    (row,) = build_group_rows(snap, "job")
    assert row.cells[4:8] == ("N/A", "N/A", "N/A", "N/A") and row.cells[8] == "-"


def test_processes_outside_the_pid_namespace_form_their_own_group():
    inside = rank(1, 0)
    outside = Process(pid=9, gpu_memory_mib=100, outside_pid_namespace=True)
    for mode in ("job", "user"):
        groups = group([dev(0, inside, outside)], mode)
        assert [g.outside for g in groups] == [False, True]


def test_gpu_ranges_are_compact():
    snap = Snapshot(host="h", time=10.0, backend="sim", devices=tuple(
        dev(i, rank(100 + i, i)) for i in (0, 1, 2, 3, 5)))
    (row,) = build_group_rows(snap, "job")
    assert row.cells[0] == "0,1,2,3,5"
    snap = Snapshot(host="h", time=10.0, backend="sim", devices=tuple(
        dev(i, rank(100 + i, i)) for i in range(8)))
    (row,) = build_group_rows(snap, "job")
    assert row.cells[0] == "0–7" and row.cells[1] == "8"


def test_job_groups_carry_the_jobs_energy_and_say_when_it_is_only_the_end():
    def snap(t: float, energy: float) -> Snapshot:
        procs = [Process(pid=10 + i, user="a", command="w", started=started,
                         job=Job("slurm", "77")) for i in range(2)]
        return Snapshot(host="h", time=t, backend="sim",
                        devices=(dev(0, procs[0], energy_j=energy),
                                 dev(1, procs[1], energy_j=energy)))

    started = 0.0  # before the history: the figure covers only its end
    history = [snap(100.0, 0.0), snap(101.0, 3600.0), snap(102.0, 7200.0)]
    (g,) = group(history[-1].devices, "job", job_energy(History.of(history)))
    assert g.energy_wh == 4.0 and not g.energy_complete and energy_text(g) == "≥4.0"
    started = 100.0
    history = [snap(100.0, 0.0), snap(101.0, 3600.0)]
    (g,) = group(history[-1].devices, "job", job_energy(History.of(history)))
    assert g.energy_wh == 2.0 and g.energy_complete and energy_text(g) == "2.0"
    (u,) = group(history[-1].devices, "user", job_energy(History.of(history)))
    assert u.energy_wh is None  # a user is no job: no job's energy on it


def test_the_filter_matches_label_user_command_or_pid_and_sorting_works():
    snap = demo_backend("mixed").sample()
    rows = build_group_rows(snap, "job")
    assert len(rows) >= 4
    assert [r.group.label for r in build_group_rows(snap, "job", needle="SWEEP")] == [
        "≈ python sweep.py --lr 3e-4", "≈ python sweep.py --lr 1e-3"]
    assert {r.group.label for r in build_group_rows(snap, "user", needle="dave")} == {"dave"}
    pid = rows[0].group.pids[-1]
    assert [r.key for r in build_group_rows(snap, "job", needle=str(pid))] == [rows[0].key]
    by_memory = build_group_rows(snap, "job", sort="gpu_mem", descending=True)
    memory = [r.group.gpu_memory_mib for r in by_memory]
    assert memory == sorted(memory, reverse=True) and by_memory[0].group.count == 4


def test_the_grouping_key_cycles_process_job_user():
    assert [next_mode(m) for m in MODES] == ["job", "user", "process"]
    with pytest.raises(ValueError):
        group([], "pid")

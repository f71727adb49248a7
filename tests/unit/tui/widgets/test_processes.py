from dataclasses import replace

import pytest

from gputop.core.model import Device, Process, Snapshot
from gputop.tui.widgets.processes import build_rows

NOW = 1_000_000.0


def snap() -> Snapshot:
    return Snapshot(host="h", time=NOW, backend="sim", devices=(
        Device(index=0, processes=(
            Process(pid=300, user="alice", command="python train.py", gpu_memory_mib=1000,
                    sm_pct=90, cpu_pct=100.0, host_memory_mib=100, started=NOW - 50),
            Process(pid=100, user="bob", command="jupyter-lab", gpu_memory_mib=5000, sm_pct=0,
                    cpu_pct=1.0, host_memory_mib=300, started=NOW - 5000),
        )),
        Device(index=1, processes=(
            Process(pid=200, user="carol", command="vllm serve", gpu_memory_mib=3000,
                    sm_pct=None, cpu_pct=None, host_memory_mib=None, started=None),
        )),
    ))


def pids(rows):
    return [r.process.pid for r in rows]


def test_default_order_is_gpu_then_pid():
    assert pids(build_rows(snap())) == [100, 300, 200]


def test_sort_by_each_column_with_missing_values_last_when_descending():
    s = snap()
    assert pids(build_rows(s, sort="gpu_mem", descending=True)) == [100, 200, 300]
    assert pids(build_rows(s, sort="sm", descending=True)) == [300, 100, 200]
    assert pids(build_rows(s, sort="cpu", descending=True)) == [300, 100, 200]
    assert pids(build_rows(s, sort="host_mem", descending=False)) == [200, 300, 100]
    assert pids(build_rows(s, sort="user")) == [300, 100, 200]
    assert pids(build_rows(s, sort="command")) == [100, 300, 200]
    assert pids(build_rows(s, sort="pid")) == [100, 200, 300]
    assert pids(build_rows(s, sort="time", descending=True)) == [100, 300, 200]


def test_filter_matches_user_command_and_pid_case_insensitively():
    s = snap()
    assert pids(build_rows(s, needle="ALICE")) == [300]
    assert pids(build_rows(s, needle="vllm")) == [200]
    assert pids(build_rows(s, needle="10")) == [100]
    assert build_rows(s, needle="nobody") == []


def test_only_one_gpu():
    assert pids(build_rows(snap(), only_gpu=1)) == [200]


def test_cells_show_na_for_missing_values():
    row = next(r for r in build_rows(snap()) if r.process.pid == 200)
    assert row.cells[5:9] == ("N/A", "N/A", "N/A", "N/A")
    assert row.key == "1:200"


def with_gone() -> Snapshot:
    """snap() plus, on GPU 0, a PID the device lists whose process has exited (PID 50: first by
    PID and GPU, and by memory too, had it sorted as any other row)."""
    s = snap()
    gone = Process(pid=50, gpu_memory_mib=9000, gone=True)
    dev = s.devices[0]
    return replace(s, devices=(replace(dev, processes=(*dev.processes, gone)), s.devices[1]))


def test_a_gone_process_shows_gone_as_its_command_not_na():
    row = next(r for r in build_rows(with_gone()) if r.process.pid == 50)
    assert row.cells[-1] == "gone"
    assert row.cells[2] == "N/A"  # its user is unknown, as any missing value
    assert pids(build_rows(with_gone(), needle="gone")) == [50]


@pytest.mark.parametrize("column", ["gpu", "pid", "user", "job", "gpu_mem", "sm", "cpu",
                                    "host_mem", "time", "command"])
@pytest.mark.parametrize("descending", [False, True])
def test_a_gone_process_sorts_last_in_either_direction(column, descending):
    rows = build_rows(with_gone(), sort=column, descending=descending)
    assert pids(rows)[-1] == 50
    assert pids(rows)[:-1] == pids(build_rows(snap(), sort=column, descending=descending))

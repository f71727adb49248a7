"""The JOB column, the `/` filter by job, and one labelled row per GPU for processes outside
gputop's PID namespace."""

from gputop.core.model import Container, Device, Job, Process, Snapshot
from gputop.tui.widgets.processes import COLUMNS, build_rows

JOB = [c.key for c in COLUMNS].index("job")


def snap():
    return Snapshot(host="n", time=100.0, backend="nvml", devices=(
        Device(index=0, processes=(
            Process(pid=10, user="alice", command="python train.py", gpu_memory_mib=100.0,
                    job=Job("slurm", "4242", "0")),
            Process(pid=11, user="bob", command="python serve.py", gpu_memory_mib=200.0,
                    container=Container(runtime="containerd", id="ee4b20e90ac7f42a10bd",
                                        pod="vllm-0", pod_namespace="inference", pod_uid="0125ec2f")),
            Process(pid=12, user="carol", command="jupyter", gpu_memory_mib=300.0,
                    container=Container(runtime="docker", id="a2ffe0e97ac22657a2a0")),
            Process(pid=13, user="dave", command="bash", gpu_memory_mib=1.0),
        )),
        Device(index=1, processes=(
            Process(pid=7001, gpu_memory_mib=8192.0, outside_pid_namespace=True),
            Process(pid=7002, gpu_memory_mib=4403.2, outside_pid_namespace=True),
            Process(pid=20, user="alice", command="python train.py", gpu_memory_mib=50.0,
                    job=Job("slurm", "4242", "0")),
        )),
    ))


def test_job_column_names_slurm_job_pod_and_container():
    cells = {r.process.pid: r.cells[JOB] for r in build_rows(snap())}
    assert cells[10] == "4242.0"
    assert cells[11] == "inference/vllm-0"
    assert cells[12] == "a2ffe0e97ac2"
    assert cells[13] == "-"


def test_filter_and_sort_by_job():
    assert {r.process.pid for r in build_rows(snap(), needle="4242")} == {10, 20}
    assert {r.process.pid for r in build_rows(snap(), needle="vllm")} == {11}
    order = [r.cells[JOB] for r in build_rows(snap(), sort="job") if r.gpu == 0]
    assert order == sorted(order, key=str.lower)


def test_outside_processes_are_one_labelled_row_per_gpu():
    rows = [r for r in build_rows(snap()) if r.gpu == 1]
    assert len(rows) == 2
    outside = next(r for r in rows if r.process.outside_pid_namespace)
    assert outside.cells[-1] == "2 processes outside this container: 12.3 GiB"
    assert outside.process.gpu_memory_mib == 8192.0 + 4403.2


def test_a_process_outside_the_namespace_is_never_signalled_by_its_host_pid():
    from gputop.host.signals import local_pid

    assert local_pid(Process(pid=1, outside_pid_namespace=True)) is None
    assert local_pid(Process(pid=4242, namespace_pid=7)) == 4242  # on the host: the host PID


def test_a_column_that_holds_nothing_on_this_node_collapses():
    """JOB, SM%, CPU% and HOST MEM stand only while some process has a value (#27)."""
    from dataclasses import replace

    from gputop.tui.widgets.processes import empty_columns

    s = snap()
    assert "job" not in empty_columns(s)  # pid 10 runs in Slurm job 4242
    assert {"sm", "cpu", "host_mem"} <= empty_columns(s)  # no such readings here
    bare = replace(s, devices=tuple(
        replace(d, processes=tuple(replace(p, job=None, container=None, sm_pct=55.0)
                                   for p in d.processes)) for d in s.devices))
    assert "job" in empty_columns(bare) and "sm" not in empty_columns(bare)

"""Who holds each GPU, on its DCGM series, from real kernel objects: processes in cgroups named as
Kubernetes (with the kubelet's log folders naming the pod), Slurm and Docker name them, reported
by the fake NVML; the exporter's exposition of that sample carries the pod's and the job's labels
on their GPUs' series, under dcgm-exporter's rules, and none on the others."""

from __future__ import annotations

from gputop.backends.base import BackendOptions
from gputop.backends.nvml.backend import NvmlBackend
from gputop.exporter import collect, exposition, own
from gputop.host.attribution import Attribution, Places
from gputop.host.processes import HostProcesses
from tests.support.fake_pynvml import FakeNvml, FakeProcess, ManualClock, h100
from tests.support.kernel_lab import CRI_ID, DOCKER_ID, POD_UID, lab_fixture  # noqa: F401


def test_pod_and_job_labels_reach_the_gpu_series_of_what_they_hold(lab, tmp_path):
    pod = lab.spawn()
    lab.place(pod.pid, f"kubepods/burstable/pod{POD_UID}/{CRI_ID}")
    job = lab.spawn()
    lab.place(job.pid, "slurm/uid_0/job_4242/step_0/task_0")
    docker = lab.spawn()
    lab.place(docker.pid, f"docker/{DOCKER_ID}")
    # the kubelet's log folders, which name the pod, its namespace and the container
    (tmp_path / "pods" / f"research_trainer-0_{POD_UID}").mkdir(parents=True)
    (tmp_path / "containers").mkdir()
    (tmp_path / "containers" / f"trainer-0_research_pytorch-{CRI_ID}.log").touch()
    places = Places(docker=str(tmp_path / "docker"), pod_logs=str(tmp_path / "pods"),
                    container_logs=str(tmp_path / "containers"))
    gpus = [h100(0, [FakeProcess(pid=pod.pid, used_mib=4096.0)]),
            h100(1, [FakeProcess(pid=job.pid, used_mib=2048.0)]),
            h100(2, [FakeProcess(pid=docker.pid, used_mib=1024.0)]),
            h100(3)]
    clock = ManualClock()
    backend = NvmlBackend(BackendOptions(), nvml=FakeNvml(gpus, clock=clock.wall), clock=clock,
                          host=HostProcesses(attribution=Attribution(places)))
    with backend:
        snap = backend.sample()
    text = exposition.render(collect.families(snap, own.Options(), "t")).decode()
    util = {line.split('gpu="')[1].split('"')[0]: line for line in text.splitlines()
            if line.startswith("DCGM_FI_DEV_GPU_UTIL{")}
    assert util["0"].endswith(',container="pytorch",namespace="research",pod="trainer-0"} 97.0')
    assert util["1"].endswith(',hpc_job="4242"} 97.0')
    for idle in ("2", "3"):  # a Docker container is no pod; GPU 3 holds nothing
        assert "pod=" not in util[idle] and "hpc_job=" not in util[idle]
        assert "container=" not in util[idle]

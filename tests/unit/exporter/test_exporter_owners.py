"""Who holds a GPU, on its DCGM series, as dcgm-exporter's Kubernetes and HPC transforms put it:
pod labels for the pod holding it, one series per Slurm job, nothing for an idle GPU; and a
counters file's fields, types and label rows."""

from __future__ import annotations

from gputop.core.model import Container, Device, Job, MigInstance, Process, Snapshot
from gputop.exporter import collect, exposition, own
from gputop.exporter.labels import owner_labels
from gputop.formats import dcgm_counters


def pod(pid: int, name: str, mib: float, namespace: str = "ml", job: str | None = None) -> Process:
    return Process(pid=pid, user="alice", name="python", gpu_memory_mib=mib,
                   container=Container(runtime="containerd", id=f"{pid:064x}", name="trainer",
                                       pod=name, pod_namespace=namespace),
                   job=Job("slurm", job) if job else None)


def slurm(pid: int, job: str, mib: float = 1.0) -> Process:
    return Process(pid=pid, user="bob", name="python", gpu_memory_mib=mib, job=Job("slurm", job))


def lines(snap: Snapshot, name: str, opts: own.Options | None = None) -> list[str]:
    text = exposition.render(collect.families(snap, opts or own.Options(), "t")).decode()
    return [line for line in text.splitlines() if line.startswith(name + "{")]


def test_owner_label_rules() -> None:
    assert owner_labels([]) == [{}]  # idle: no labels at all, not empty ones
    docker = Process(pid=1, container=Container(runtime="docker", id="a" * 64, name="web"))
    assert owner_labels([docker]) == [{}]  # a container outside Kubernetes: no pod to name
    assert owner_labels([pod(1, "bert-0", 10.0), pod(2, "gpt-1", 30.0), pod(3, "bert-0", 5.0)]) \
        == [{"container": "trainer", "namespace": "ml", "pod": "gpt-1"}]  # the most memory
    assert owner_labels([slurm(1, "4243"), slurm(2, "4242"), slurm(3, "4243")]) == [
        {"hpc_job": "4242"}, {"hpc_job": "4243"}]  # one series per job, in job order
    assert owner_labels([pod(1, "p", 1.0, job="7")]) == [
        {"container": "trainer", "hpc_job": "7", "namespace": "ml", "pod": "p"}]


def test_device_series_carry_the_job_and_pod_and_an_idle_gpu_none() -> None:
    devs = (Device(index=0, uuid="GPU-a", utilization_gpu_pct=90.0,
                   processes=(slurm(11, "4242", 2048.0),)),
            Device(index=1, uuid="GPU-b", utilization_gpu_pct=80.0,
                   processes=(slurm(12, "4242"), slurm(13, "4250"))),
            Device(index=2, uuid="GPU-c", utilization_gpu_pct=70.0,
                   processes=(pod(14, "bert-0", 100.0),)),
            Device(index=3, uuid="GPU-d", utilization_gpu_pct=0.0))
    snap = Snapshot(host="n", time=1.0, backend="nvml", devices=devs, driver_version="580.95.05")
    got = lines(snap, "DCGM_FI_DEV_GPU_UTIL")
    assert got == [
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",pci_bus_id="",device="nvidia0",modelName="",'
        'hostname="n",DCGM_FI_DRIVER_VERSION="580.95.05",hpc_job="4242"} 90.0',
        'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b",pci_bus_id="",device="nvidia1",modelName="",'
        'hostname="n",DCGM_FI_DRIVER_VERSION="580.95.05",hpc_job="4242"} 80.0',
        'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b",pci_bus_id="",device="nvidia1",modelName="",'
        'hostname="n",DCGM_FI_DRIVER_VERSION="580.95.05",hpc_job="4250"} 80.0',
        'DCGM_FI_DEV_GPU_UTIL{gpu="2",UUID="GPU-c",pci_bus_id="",device="nvidia2",modelName="",'
        'hostname="n",DCGM_FI_DRIVER_VERSION="580.95.05",container="trainer",namespace="ml",'
        'pod="bert-0"} 70.0',
        'DCGM_FI_DEV_GPU_UTIL{gpu="3",UUID="GPU-d",pci_bus_id="",device="nvidia3",modelName="",'
        'hostname="n",DCGM_FI_DRIVER_VERSION="580.95.05"} 0.0']


def test_a_mig_instance_carries_the_owners_of_its_own_processes() -> None:
    inst = [MigInstance(gpu_instance_id=g, compute_instance_id=0, profile="3g.40gb",
                        memory_total_mib=40000.0, memory_used_mib=1.0) for g in (1, 2)]
    job = Process(pid=5, gpu_memory_mib=1.0, job=Job("slurm", "77"), gpu_instance_id=2,
                  compute_instance_id=0)
    dev = Device(index=0, uuid="GPU-a", mig_mode="enabled", mig_instances=tuple(inst),
                 processes=(job,))
    got = lines(Snapshot(host="n", time=1.0, backend="nvml", devices=(dev,)), "DCGM_FI_DEV_FB_USED")
    assert len(got) == 2
    assert 'GPU_I_ID="1"' in got[0] and "hpc_job" not in got[0]
    assert 'GPU_I_ID="2"' in got[1] and got[1].endswith(',hpc_job="77"} 1.0')


def test_a_counters_files_names_types_and_label_rows_are_what_is_served() -> None:
    counters = dcgm_counters.parse(
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, counter, Throttling reasons bitmask\n"
        "dcgm_gpu_temp, gauge, GPU temperature (in C).\n"
        "DCGM_FI_DEV_SERIAL, label, Device Serial Number\n"
        "DCGM_FI_DEV_CUDA_COMPUTE_CAPABILITY, label, Cuda compute capability\n")
    dev = Device(index=0, uuid="GPU-a", clock_event_mask=0x44, temperature_c=61.0,
                 serial="1650000000001", compute_capability="9.0",
                 processes=(Process(pid=9, gpu_memory_mib=1.0),))
    snap = Snapshot(host="n", time=1.0, backend="nvml", devices=(dev,))
    opts = own.Options(counters=counters.metrics)
    text = exposition.render(collect.families(snap, opts, "t")).decode()
    assert "# TYPE DCGM_FI_DEV_CLOCK_THROTTLE_REASONS counter\n" in text
    assert "# HELP DCGM_FI_DEV_CLOCK_THROTTLE_REASONS Throttling reasons bitmask\n" in text
    labels = ('{gpu="0",UUID="GPU-a",pci_bus_id="",device="nvidia0",modelName="",hostname="n",'
              'DCGM_FI_DEV_CUDA_COMPUTE_CAPABILITY="38654705664",'  # 9 << 32 | 0, as DCGM's i64
              'DCGM_FI_DEV_SERIAL="1650000000001"}')
    assert f"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{labels} 68.0\n" in text
    assert f"dcgm_gpu_temp{labels} 61.0\n" in text
    assert "DCGM_FI_DEV_SM_CLOCK" not in text and "DCGM_FI_DRIVER_VERSION" not in text
    # the label rows reach gputop's own series of the GPU too, as dcgm-exporter's reach its own
    assert 'gputop_device_status{gpu="0",UUID="GPU-a",pci_bus_id="",device="nvidia0",' \
           'modelName="",hostname="n",DCGM_FI_DEV_CUDA_COMPUTE_CAPABILITY=' in text

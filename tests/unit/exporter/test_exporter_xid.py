"""DCGM_FI_DEV_XID_ERRORS as dcgm-exporter serves it (#29): err_code and err_msg labels in its
order, its own text for each code, "Unknown Error" past its table."""

from __future__ import annotations

from gputop.core.model import Container, Device, Job, Process, Snapshot
from gputop.exporter import collect, exposition, own


def xid_lines(*devices: Device) -> list[str]:
    snap = Snapshot(host="node1", time=1.0, backend="nvml", devices=devices,
                    driver_version="550.144.03")
    body = exposition.render(collect.families(snap, own.Options(), "t")).decode()
    return [line for line in body.splitlines() if line.startswith("DCGM_FI_DEV_XID_ERRORS{")]


def gpu(index: int, xid: int, *procs: Process) -> Device:
    return Device(index=index, uuid=f"GPU-{index}", name="NVIDIA H100 80GB HBM3", vendor="nvidia",
                  pci_bus_id="00000000:8D:00.0", xid_last=xid, processes=procs)


def test_the_xid_series_carries_dcgm_exporters_labels_in_its_order():
    pod = Process(pid=1, gpu_memory_mib=10.0,
                  container=Container(name="c", pod="p", pod_namespace="ns"))
    assert xid_lines(gpu(0, 0, pod)) == [
        'DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-0",pci_bus_id="00000000:8D:00.0",'
        'device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="node1",'
        'DCGM_FI_DRIVER_VERSION="550.144.03",container="c",err_code="0",err_msg="No Error",'
        'namespace="ns",pod="p"} 0.0']
    slurm = Process(pid=2, job=Job("slurm", "1234"))
    line = xid_lines(gpu(1, 79, slurm))[0]
    assert line.endswith('err_code="79",err_msg="GPU has fallen off the bus",hpc_job="1234"} 79.0')


def test_a_code_past_dcgm_exporters_table_says_unknown_as_it_does():
    assert 'err_code="999",err_msg="Unknown Error"' in xid_lines(gpu(0, 999))[0]
    assert 'err_code="172",err_msg="Uncorrectable SRAM Error"' in xid_lines(gpu(0, 172))[0]

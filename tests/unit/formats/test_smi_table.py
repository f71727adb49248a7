"""nvidia-smi's table and `-L`, written from the model: real captures read into the model and
written again come back byte for byte (every cell of a GPU or process row is a model value)."""

from __future__ import annotations

import dataclasses

import pytest

from gputop.core.model import Device, MigInstance, Process
from gputop.formats import smi_capture, smi_table
from gputop.formats.query_csv import process_name
from tests.support.paths import FIXTURES

SMI = FIXTURES / "nvidia-smi"
# The 91-column layout of Linux drivers 550 to 595; each capture's lines as they are.
TABLES = [
    "table_10xA40_550.127.05.txt",
    "table_4xA100-SXM4-80GB_555.42.02.txt",
    "table_8xH100-80GB-HBM3_565.57.01.txt",
    "table_4xL40S_570.172.08_dell-ai_no-final-newline.txt",
    "table_1xH200_580.159.04_idle.txt",
    "table_1xH200_580.159.04_load_with-process.txt",
    "table_1xH200_580.159.04_load_2-processes.txt",
    "table_1xH100-80GB-HBM3_580.159.04_load_2-processes.txt",
    "table_1xH100-80GB-HBM3_590.48.01_load_with-processes.txt",
    "table_1xH100-MIG_590.48.01_load.txt",
    "table_1xRTX4080S_595.71.05_desktop-CplusG_load.txt",
    "table_8xA100-SXM4-80GB_595.71.05_with-processes_indexid-55721952118.txt",
]
# Other layouts (the 79-column drivers before 450, Windows' WDDM column, 610's KMD banner),
# which gputop reads no further than to say so.
OTHER_LAYOUTS = [
    "table_1xGRID-K520_346.46_no-running-processes_nvidia-htop_no-final-newline.txt",
    "table_8xGTX1080Ti_390.25_with-processes_nvidia-htop_no-final-newline.txt",
    "table_2xGTX1080Ti_440.82_in-docker-empty-process-table_nvidia-htop.txt",
    "table_1xRTX2080S_591.86_windows-WDDM_load.txt",
    "table_1xRTX2080S_610.57.04_KMD-Version-header_load.txt",
]


def _write(capture: smi_capture.Capture) -> str:
    rows = [smi_table.TableRow(d, [process_name(p) for p in d.processes])
            for d in capture.devices]
    return smi_table.render(rows, capture.time or 0.0, capture.smi_version,
                            capture.driver_version, capture.cuda_version)


@pytest.mark.parametrize("name", TABLES)
def test_a_table_read_into_the_model_is_written_back_unchanged(name: str) -> None:
    text = (SMI / name).read_text()
    capture = smi_capture.read(text)
    written = _write(capture)
    if capture.time is None:  # the source dropped the time stamp line
        written = written.split("\n", 1)[1]
    if not text.endswith("\n"):  # nor did it keep the final newline
        written = written[:-1]
    assert written == text


def test_the_table_cells_are_model_values() -> None:
    capture = smi_capture.read((SMI / "table_1xH100-MIG_590.48.01_load.txt").read_text())
    dev = capture.devices[0]
    assert (dev.name, dev.pci_bus_id, dev.persistence_mode, dev.display_active) == (
        "NVIDIA H100 80GB HBM3", "00000000:00:09.0", True, False)
    assert (dev.temperature_c, dev.pstate, dev.power_draw_w, dev.power_limit_w) == (52, "P0", 432, 700)
    assert (dev.memory_used_mib, dev.memory_total_mib, dev.utilization_gpu_pct) == (11125, 81559, None)
    assert dev.mig_mode == "enabled" and dev.compute_mode == "Default"
    assert [(m.gpu_instance_id, m.compute_instance_id, m.index, m.sm_count)
            for m in dev.mig_instances] == [(2, 0, 0, 60), (3, 0, 1, 32), (9, 0, 2, 16), (10, 0, 3, 16)]
    assert [(p.pid, p.gpu_instance_id, p.gpu_memory_mib) for p in dev.processes] == [
        (21180, 2, 2296), (21181, 2, 1272), (21198, 2, 7484)]


@pytest.mark.parametrize("name", OTHER_LAYOUTS)
def test_other_layouts_are_refused_in_one_line(name: str) -> None:
    with pytest.raises(smi_capture.CaptureError) as err:
        smi_capture.read((SMI / name).read_text())
    assert "\n" not in str(err.value)


def test_a_gpu_from_any_backend_fills_the_row() -> None:
    dev = Device(index=3, name="NVIDIA GeForce RTX 4080 SUPER", pci_bus_id="00000000:01:00.0",
                 persistence_mode=False, display_active=True, ecc_mode=None, fan_pct=0,
                 temperature_c=45, pstate="P2", power_draw_w=83.4, power_limit_w=320,
                 memory_used_mib=1474, memory_total_mib=16376, utilization_gpu_pct=7,
                 compute_mode="Exclusive_Process", mig_mode=None,
                 processes=(Process(pid=5021, command="/opt/very/long/path/to/the/ffmpeg/binary -i x",
                                    gpu_memory_mib=360, type="C"),))
    text = smi_table.render([smi_table.TableRow(dev, [process_name(p) for p in dev.processes])],
                            0.0, "580.159.04", "580.159.04", "13.0")
    lines = text.splitlines()
    assert lines[8] == ("|   3  NVIDIA GeForce RTX 4080 ...    Off |   00000000:01:00.0  On |"
                        "                  N/A |")
    assert lines[9] == ("|  0%   45C    P2             83W /  320W |    1474MiB /  16376MiB |"
                        "      7%   E. Process |")
    assert lines[-2] == ("|    3   N/A  N/A            5021      C   ...ong/path/to/the/ffmpeg/binary"
                         "        360MiB |")
    assert all(len(line) == 91 for line in lines[1:] if line)


def test_unknown_values_are_na_never_zero() -> None:
    text = smi_table.render([smi_table.TableRow(Device(index=0), [])], 0.0, None, None, None)
    row = text.splitlines()[8:11]
    assert row == [
        "|   0  N/A                            N/A |                N/A N/A |                  N/A |",
        "| N/A   N/A    N/A            N/A /   N/A |        N/A /       N/A |     N/A          N/A |",
        "|                                         |                        |                  N/A |",
    ]
    assert "No running processes found" in text


@pytest.mark.parametrize("name", ["L_1xH200_580.159.04_machine-a.txt",
                                  "L_1xH100-MIG-4-instances_590.48.01.txt",
                                  "L_1xL40S_595.80.txt", "L_1xRTX2080S_610.57.04.txt"])
def test_the_list_is_written_back(name: str) -> None:
    text = (SMI / name).read_text()
    capture = smi_capture.read(text)
    lines = [line for d in capture.devices for line in smi_table.list_line(d)]
    assert lines[0] == text.splitlines()[0]
    assert capture.devices[0].listed_migs == tuple(text.splitlines()[1:])


def test_the_list_writes_mig_devices_from_the_model() -> None:
    dev = Device(index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-0",
                 mig_instances=(MigInstance(gpu_instance_id=2, compute_instance_id=0, index=0,
                                            profile="3g.40gb", uuid="MIG-00000000-0000-0000-0000-000000000000"),))
    want = (SMI / "L_1xH100-MIG-4-instances_590.48.01.txt").read_text().splitlines()[1]
    assert smi_table.list_line(dev)[1] == want


def test_processes_are_listed_by_pid_whatever_order_nvml_gives() -> None:
    """NVML gave PID 439 before 438 (`--query-compute-apps` keeps that order); nvidia-smi's
    table lists 438 first (an H200 on 580.159.04, the capture below)."""
    text = (SMI / "table_1xH200_580.159.04_load_2-processes.txt").read_text()
    capture = smi_capture.read(text)
    (dev,) = capture.devices
    assert [p.pid for p in dev.processes] == [438, 439]
    nvml_order = dataclasses.replace(dev, processes=dev.processes[::-1])
    assert _write(dataclasses.replace(capture, devices=(nvml_order,))) == text

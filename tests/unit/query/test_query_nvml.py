"""Query mode on the NVML backend (the fake pynvml): NVML's units in, nvidia-smi's text out."""

from __future__ import annotations

import csv

import pynvml

from gputop.commands.main import main
from gputop.formats.query_fields import lookup
from tests.support.fake_pynvml import FakeNvml, install, node
from tests.support.query import FIX


def test_query_gpu_through_fake_nvml(monkeypatch, capsys):
    fake = install(monkeypatch, FakeNvml(node(2, 1)))
    fake.gpus[1].event_mask = 0x4 | 0x1
    fields = ("index,name,pci.bus_id,pci.bus,serial,vbios_version,pstate,power.draw,power.limit,"
              "power.min_limit,memory.total,memory.reserved,memory.used,memory.free,"
              "utilization.gpu,utilization.memory,temperature.gpu,temperature.memory,fan.speed,"
              "clocks.sm,clocks.mem,clocks.max.sm,clocks_event_reasons.active,"
              "clocks_event_reasons.sw_power_cap,ecc.mode.current,persistence_mode,"
              "mig.mode.current,compute_mode,pcie.link.gen.current,pcie.link.width.max,count")
    assert main(["--backend", "nvml", f"--query-gpu={fields}", "--format=csv,noheader"]) == 0
    rows = capsys.readouterr().out.splitlines()
    g = fake.gpus[1]
    assert rows[1] == (
        f"1, NVIDIA H100 80GB HBM3, {g.pci_bus_id}, 0x28, {g.serial}, {g.vbios}, P0, 512.30 W, "
        "700.00 W, 200.00 W, 81559 MiB, 479 MiB, 40211 MiB, 40869 MiB, 97 %, 41 %, 61, 70, [N/A], "
        "1980 MHz, 2619 MHz, 1980 MHz, 0x0000000000000005, Active, Enabled, Enabled, Disabled, "
        "Default, 5, 16, 2")
    assert rows[0].split(", ")[22:24] == ["0x0000000000000000", "Not Active"]


def test_query_compute_apps_through_fake_nvml(monkeypatch, capsys):
    fake = install(monkeypatch, FakeNvml(node(2, 2)))
    assert main(["--backend", "nvml", "--query-compute-apps=gpu_uuid,pid,used_memory",
                 "--format=csv,nounits"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "gpu_uuid, pid, used_gpu_memory [MiB]"
    expected = [f"{g.uuid}, {p.pid}, 10000" for g in fake.gpus for p in g.processes]
    assert lines[1:] == expected


# The fields the NVML backend sources that nvidia-smi's own H100 capture has a value for: the
# fake H100 is set to that capture's values, so each cell must equal the capture's byte for byte.
CAPTURED = ("pci.device_id", "pci.sub_device_id", "compute_cap", "memory.total", "memory.reserved",
            "utilization.encoder", "utilization.decoder", "power.limit", "enforced.power.limit",
            "clocks.gr", "clocks.video", "clocks.max.gr", "clocks_event_reasons.supported",
            "ecc.mode.current", "ecc.mode.pending", "mig.mode.current", "mig.mode.pending",
            "ecc.errors.corrected.volatile.total", "ecc.errors.corrected.aggregate.total",
            "ecc.errors.uncorrected.volatile.total", "ecc.errors.uncorrected.aggregate.total")


def capture_cells() -> dict[str, str]:
    with (FIX / "csv_all-fields_1xH100-80GB-HBM3_590.48.01_load.csv").open(newline="") as f:
        header, row = list(csv.reader(f, skipinitialspace=True))
    return dict(zip(header, row, strict=True))


def test_query_mode_prints_the_nvml_only_fields_as_a_real_h100_does(monkeypatch, capsys):
    fake = install(monkeypatch, FakeNvml(node(2)))
    worn = fake.gpus[1]  # a second GPU whose values differ from the capture: read, not constants
    worn.util_encoder, worn.util_decoder, worn.clock_video = 7, 23, 1410
    worn.ecc_pending, worn.mig_pending = 0, 1
    worn.ecc_errors = {(pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, pynvml.NVML_VOLATILE_ECC): 5,
                       (pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, pynvml.NVML_AGGREGATE_ECC): 41,
                       (pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC): 1,
                       (pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_AGGREGATE_ECC): 2}
    fields = (*CAPTURED, "memory.free")
    assert main(["--backend", "nvml", f"--query-gpu={','.join(fields)}", "--format=csv"]) == 0
    header, first, second = capsys.readouterr().out.splitlines()
    names = header.split(", ")
    cells = first.split(", ")
    real = capture_cells()
    assert names[:len(CAPTURED)] == [lookup(n).header for n in CAPTURED]
    for name, cell in zip(names[:len(CAPTURED)], cells, strict=False):
        assert cell == real[name], name
    assert "[N/A]" not in first and "[N/A]" not in second
    # NVML's free bytes, floored (total - reserved - used on the fake)
    assert cells[-1] == f"{(81559 - 479 - 40211)} MiB"
    worn_cells = dict(zip(names, second.split(", "), strict=True))
    assert [worn_cells[lookup(n).header] for n in (
        "utilization.encoder", "utilization.decoder", "clocks.video", "ecc.mode.pending",
        "mig.mode.pending", "ecc.errors.corrected.volatile.total",
        "ecc.errors.corrected.aggregate.total", "ecc.errors.uncorrected.volatile.total",
        "ecc.errors.uncorrected.aggregate.total")] == [
        "7 %", "23 %", "1410 MHz", "Disabled", "Enabled", "5", "41", "1", "2"]


def test_fields_nvml_refuses_print_na(monkeypatch, capsys):
    fake = install(monkeypatch, FakeNvml(node(1)))
    fake.gpus[0].util_encoder = fake.gpus[0].clock_video = None
    fake.gpus[0].ecc = 0  # no ECC: no counters
    for fn in ("nvmlDeviceGetCudaComputeCapability", "nvmlDeviceGetMigMode"):
        fake.fail(fn, pynvml.NVML_ERROR_NOT_SUPPORTED)
    assert main(["--backend", "nvml", "--format=csv,noheader", "--query-gpu=utilization.encoder,"
                 "clocks.video,ecc.errors.corrected.volatile.total,compute_cap,mig.mode.pending,"
                 "utilization.decoder,ecc.mode.pending"]) == 0
    assert capsys.readouterr().out == "[N/A], [N/A], [N/A], [N/A], [N/A], 0 %, Disabled\n"

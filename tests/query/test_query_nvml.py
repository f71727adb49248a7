"""Query mode on the NVML backend (the fake pynvml): NVML's units in, nvidia-smi's text out."""

from __future__ import annotations

from fake_pynvml import FakeNvml, install, node

from gputop.cli import main


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

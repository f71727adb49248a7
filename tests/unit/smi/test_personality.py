"""The nvidia-smi personality answering for a replayed real capture: its own bytes back.

A capture replayed (`--backend replay --replay CAPTURE`) is a node whose model values were read
from the capture; the personality writes them through the same field tables as for any backend,
and the capture's other values as they came. Written in the capture's own layout, the capture
must come back byte for byte."""

from __future__ import annotations

import dataclasses

import pytest

from gputop.backends.base import BackendOptions
from gputop.backends.replay.backend import ReplayBackend
from gputop.commands.main import main
from gputop.formats.smi_capture import CapturedDevice
from gputop.smi import faces, layouts
from tests.support.paths import FIXTURES, ROOT

SMI = FIXTURES / "nvidia-smi"
# Captures of the driver generations gputop answers in (gputop/data/nvidia-smi/).
QUERIES = [
    ("q_8xA100-SXM4-40GB_535.129.03.txt", ["-q"]),
    ("q_4xA100-SXM4-80GB_555.42.02.txt", ["-q"]),
    ("q_1xH200_580.159.04_idle.txt", ["-q"]),
    ("q_1xH200_580.159.04_load.txt", ["-q"]),
    ("q_1xH100-80GB-HBM3_590.48.01_idle.txt", ["-q"]),
    ("q_1xH100-MIG-4-instances_590.48.01_load.txt", ["-q"]),
    ("qx_1xGT-1030_470.74_schema-v11_telegraf-pr9815.xml", ["-q", "-x"]),
    ("qx_1xH200_580.159.04_schema-v13_idle.xml", ["-q", "-x"]),
    ("qx_1xH200_580.159.04_schema-v13_load.xml", ["-q", "-x"]),
    ("qx_1xRTX-PRO-6000-Blackwell-MaxQ_590.44.01_schema-v13_masked-ids_telegraf-pr18176.xml",
     ["-q", "-x"]),
    ("q-d-PERFORMANCE_1xH200_580.159.04.txt", ["-q", "-d", "PERFORMANCE"]),
    ("q-d-ECC_1xH200_580.159.04.txt", ["-q", "-d", "ECC"]),
    ("q-d-PAGE_RETIREMENT_1xH200_580.159.04.txt", ["-q", "-d", "PAGE_RETIREMENT"]),
]
LISTS = ["L_1xH200_580.159.04_machine-a.txt", "L_1xH100-MIG-4-instances_590.48.01.txt"]
TABLES = ["table_1xH200_580.159.04_load_with-process.txt", "table_1xH100-MIG_590.48.01_load.txt",
          "table_8xA100-SXM4-80GB_595.71.05_with-processes_indexid-55721952118.txt"]


def _answer(capsys, capture: str, *argv: str) -> str:
    assert main(["--backend", "replay", "--replay", str(SMI / capture), "nvidia-smi", *argv]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


@pytest.mark.parametrize("name, argv", QUERIES)
def test_a_replayed_capture_is_answered_byte_for_byte(name: str, argv: list[str], capsys) -> None:
    assert _answer(capsys, name, *argv) == (SMI / name).read_text()


@pytest.mark.parametrize("name", LISTS + TABLES)
def test_a_replayed_table_or_list_is_answered_byte_for_byte(name: str, capsys) -> None:
    argv = ["-L"] if name.startswith("L_") else []
    assert _answer(capsys, name, *argv) == (SMI / name).read_text()


def _node(name: str, strip: bool) -> faces.Node:
    backend = ReplayBackend(BackendOptions(replay=str(SMI / name)))
    backend.open()
    snap = backend.sample()
    if strip:  # the model's values alone: no value of the capture's own
        snap = dataclasses.replace(snap, devices=tuple(
            dataclasses.replace(d, reported=None) for d in snap.devices
            if isinstance(d, CapturedDevice)))
    return faces.Node(snap, len(snap.devices), True)


@pytest.mark.parametrize("name, argv", [q for q in QUERIES if len(q[1]) <= 2])
def test_every_value_the_model_holds_is_written_as_nvidia_smi_writes_it(name: str,
                                                                          argv: list[str]) -> None:
    xml = "-x" in argv
    ours = faces.query(_node(name, strip=True), xml).splitlines()
    theirs = iter((SMI / name).read_text().splitlines())
    held = [line for line in ours if "N/A" not in line]
    valued = [line for line in held if (" : " in line or "</" in line) and "Timestamp" not in line
              and "timestamp>" not in line]
    assert len(valued) >= 40  # names, modes, PCI, clocks, power, memory, processes, …
    missing = [line for line in valued if line not in theirs]  # in order: a subsequence
    assert missing == []


def test_devices_are_chosen_by_index_uuid_or_bus_id(capsys) -> None:
    name = "q_8xA100-SXM4-40GB_535.129.03.txt"
    by_bus = _answer(capsys, name, "-q", "-i", "00000000:35:00.0")
    by_index = _answer(capsys, name, "-q", "-i", "1")
    assert by_bus == by_index and by_bus.count("\nGPU 0000") == 1 and "GPU 00000000:35:00.0" in by_bus
    assert "Attached GPUs                             : 8" in by_bus  # the node's, not the choice's
    uuid = next(line.split(": ")[1] for line in by_bus.splitlines() if "GPU UUID" in line)
    assert _answer(capsys, name, "-q", "-i", uuid) == by_bus


def test_a_node_without_a_layout_of_its_own_claims_the_nearest() -> None:
    assert layouts.claim("580.95.05", xml=False) == "580.159.04"
    assert layouts.claim("550.54.15", xml=False) == "555.42.02"
    assert layouts.claim("545.23.08", xml=False) == "535.129.03"  # as near: the older
    assert layouts.claim("525.60.13", xml=True) == "535.54.03"
    assert layouts.claim("418.87.01", xml=True) == "470.74"
    assert layouts.claim("610.57.04", xml=False) == "590.48.01"
    assert layouts.claim("25.0.rc1.1", xml=False) == layouts.DEFAULT
    assert layouts.claim(None, xml=True) == layouts.DEFAULT


def test_the_shipped_layouts_are_the_fixtures_unmodified() -> None:
    data = ROOT / "gputop" / "data" / "nvidia-smi"
    fixtures = {p.read_bytes() for p in SMI.iterdir() if p.is_file()}
    shipped = [p for p in data.iterdir() if p.suffix in (".txt", ".xml")]
    assert len(shipped) == 11
    assert all(p.read_bytes() in fixtures for p in shipped)

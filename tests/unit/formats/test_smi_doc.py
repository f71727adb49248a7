"""`nvidia-smi -q` and `-q -x` read into a tree of lines and written back, byte for byte."""

from __future__ import annotations

import pytest

from gputop.formats import smi_doc
from tests.support.paths import FIXTURES

SMI = FIXTURES / "nvidia-smi"
DOCUMENTS = sorted(p.name for p in SMI.iterdir() if p.name.startswith(("q_", "qx_", "q-d-")))


def _own(doc: smi_doc.Document) -> str:
    return smi_doc.render(smi_doc.layout([doc]), smi_doc.head_source(doc),
                          [smi_doc.Captured(g) for g in doc.gpus])


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_capture_is_written_back_unchanged(name: str) -> None:
    text = (SMI / name).read_text()
    doc = smi_doc.parse(text)
    assert _own(doc) == text


def test_the_captures_span_driver_generations() -> None:
    versions = {name.split("_")[2].removesuffix(".txt").removesuffix(".xml")
                for name in DOCUMENTS if name.count("_") >= 2}
    assert {"418.43", "470.74", "515.105.01", "535.129.03", "535.54.03", "555.42.02",
            "565.57.01", "580.159.04", "590.44.01", "590.48.01"} <= versions


def test_gpu_blocks_and_lists_are_found() -> None:
    doc = smi_doc.parse((SMI / "q_1xH100-MIG-4-instances_590.48.01_load.txt").read_text())
    gpu = smi_doc.Captured(doc.gpus[0])
    assert gpu.value(()) == "00000000:00:09.0"
    migs = gpu.items(("MIG Device",))
    assert migs is not None and [m.value(("GPU Instance ID",)) for m in migs] == ["2", "3", "9", "10"]
    procs = gpu.items(("Processes", "#item"))
    assert procs is not None and [p.value(("Process ID",)) for p in procs] == ["21180", "21181", "21198"]
    assert procs[2].value(("Process ID", "Name")) == "./gpu_burn"


def test_an_empty_list_is_known_empty_and_a_missing_one_unknown() -> None:
    idle = smi_doc.parse((SMI / "qx_1xH200_580.159.04_schema-v13_idle.xml").read_text())
    gpu = smi_doc.Captured(idle.gpus[0])
    assert gpu.items(("processes", "process_info")) == []
    assert gpu.items(("mig_devices", "mig_device")) == []  # <mig_devices>None</mig_devices>
    assert gpu.items(("no_such_list", "entry")) is None


def test_a_layout_takes_a_list_form_from_another_capture() -> None:
    idle = smi_doc.parse((SMI / "q_1xH200_580.159.04_idle.txt").read_text())
    load = smi_doc.parse((SMI / "q_1xH200_580.159.04_load.txt").read_text())
    lay = smi_doc.layout([idle, load])
    assert ("Processes",) in lay.full and ("Processes",) in lay.empty
    # the load capture's node in the idle capture's layout is the load capture
    assert smi_doc.render(lay, smi_doc.head_source(load),
                          [smi_doc.Captured(g) for g in load.gpus]) == (SMI / "q_1xH200_580.159.04_load.txt").read_text()


@pytest.mark.parametrize("text, why", [
    ("hello\n", "NVSMI LOG"),
    ("\n==============NVSMI LOG==============\n\nTimestamp : x\n", "no GPU block"),
    ('<?xml version="1.0" ?>\n<nvidia_smi_log>\n\t<gpu id="0">\n</nvidia_smi_log>\n', "never closed"),
    ('<?xml version="1.0" ?>\n<nvidia_smi_log>\n\t</gpu>\n</nvidia_smi_log>\n', "closes nothing"),
])
def test_what_is_no_document_is_said(text: str, why: str) -> None:
    with pytest.raises(smi_doc.DocumentError, match=why):
        smi_doc.parse(text)

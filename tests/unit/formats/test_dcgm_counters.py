"""dcgm-exporter's counters files, read as dcgm-exporter reads them: real files unchanged, and
the rows it refuses refused with one line naming the row."""

from __future__ import annotations

import pytest

from gputop.formats import dcgm, dcgm_counters
from gputop.formats.dcgm_counters import CountersError
from tests.support.paths import FIXTURES

HERE = FIXTURES / "dcgm-exporter"


def read(name: str) -> dcgm_counters.Counters:
    return dcgm_counters.parse((HERE / name).read_text())


def test_dcgm_exporters_default_file_is_served_but_the_vgpu_licence() -> None:
    got = read("dcgm-exporter_d5e5f51_default-counters.csv")
    names = [m.name for m in got.metrics]
    assert names[:2] == ["DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK"]  # the file's order
    assert "DCGM_FI_DEV_DEC_UTIL" in names  # "DCGM_FI_DEV_DEC_UTIL ," : spaces around commas
    assert len(names) == 25  # 26 active rows
    (note,) = got.notes
    assert note.startswith("line 69: DCGM_FI_DEV_VGPU_LICENSE_STATUS not served: vGPU")
    driver = next(m for m in got.metrics if m.name == "DCGM_FI_DRIVER_VERSION")
    assert driver.label and driver.help == "Driver Version"


def test_an_operators_longer_file_is_accepted_with_a_note_per_row_not_served() -> None:
    got = read("hardware-observer-operator_3d87061_dcgm_metrics.csv")
    by_name = {m.name: m for m in got.metrics}
    # the file's own types and help texts, as dcgm-exporter serves them
    assert by_name["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"].type == "counter"
    assert by_name["DCGM_FI_DEV_FB_FREE"].help == "Frame buffer memory free (in MB)."
    # listed twice, as counter then as gauge: the last row is served, once
    assert by_name["DCGM_FI_PROF_PCIE_TX_BYTES"].type == "gauge"
    again = [n for n in got.notes if "listed again" in n]
    assert len(again) == 2 and "DCGM_FI_PROF_PCIE_TX_BYTES is listed again" in again[0]
    not_served = [n for n in got.notes if "not served" in n]
    for name in ("DCGM_FI_DEV_POWER_VIOLATION", "DCGM_FI_DEV_BAR1_USED", "DCGM_FI_DEV_CC_MODE",
                 "DCGM_FI_DEV_VGPU_LICENSE_STATUS", "DCGM_FI_DEV_POWER_USAGE_INSTANT",
                 "DCGM_FI_NVML_VERSION", "DCGM_FI_DEV_BRAND", "DCGM_FI_DEV_OEM_INFOROM_VER"):
        assert any(f" {name} not served: " in n for n in not_served), name
    for name in ("DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX", "DCGM_FI_DEV_FAN_SPEED",
                 "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_RETIRED_PENDING",
                 "DCGM_FI_DEV_SLOWDOWN_TEMP", "DCGM_FI_DEV_COUNT", "DCGM_FI_DEV_SERIAL",
                 "DCGM_FI_DEV_CUDA_COMPUTE_CAPABILITY", "DCGM_FI_DEV_MINOR_NUMBER"):
        assert name in by_name, name
    assert len(got.metrics) + len(not_served) == 85  # every field row: served or said why not


def test_the_1x_names_and_the_dcp_file_are_served_under_their_own_names() -> None:
    old = read("dcgm-exporter_d5e5f51_1.x-compatibility-metrics.csv")
    assert "dcgm_sm_clock" in [m.name for m in old.metrics]
    assert next(m for m in old.metrics if m.name == "dcgm_gpu_temp").field.name == \
        "DCGM_FI_DEV_GPU_TEMP"
    dcp = read("dcgm-exporter_d5e5f51_dcp-metrics-included.csv")
    assert "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in [m.name for m in dcp.metrics]


@pytest.mark.parametrize("text, needle", [
    ("DCGM_FI_DEV_SM_CLOCK, gauge\n", "line 1: 2 columns where dcgm-exporter reads 3"),
    ("DCGM_FI_DEV_SM_CLOCK, gaug, x\n", "line 1: DCGM_FI_DEV_SM_CLOCK: type 'gaug' is none of"),
    ("DCGM_FI_DEV_SM_CLOCK, gauge, a, b\n", "4 columns"),
    ("DCGM_FI_DEV_SM_CLOCK, Gauge, x\n", "type 'Gauge'"),  # case matters, as for dcgm-exporter
])
def test_rows_dcgm_exporter_refuses_are_refused_with_their_line(text: str, needle: str) -> None:
    with pytest.raises(CountersError, match=needle):
        dcgm_counters.parse(text)


def test_quoted_help_text_exporter_rows_and_text_fields_asked_as_numbers() -> None:
    got = dcgm_counters.parse(
        'DCGM_FI_DEV_SM_CLOCK, gauge, "SM clock, in MHz"\n'
        "DCGM_EXP_XID_ERRORS_COUNT, counter, reported XIDs\n"
        "DCGM_FI_DEV_NAME, gauge, Device Name\n"
        "DCGM_FI_DEV_NAME, label, Device Name\n")
    assert [(m.name, m.type, m.help) for m in got.metrics] == [
        ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock, in MHz"),
        ("DCGM_FI_DEV_NAME", "label", "Device Name")]
    assert got.notes[0].startswith("line 2: DCGM_EXP_XID_ERRORS_COUNT not served: ")
    assert got.notes[1] == "line 3: DCGM_FI_DEV_NAME is text: served only as a label (type label)"


def test_a_name_no_dcgm_has_is_a_note_and_dcgm_46_names_are_served() -> None:
    got = dcgm_counters.parse("# c\n\nDCGM_FI_DEV_SM_CLOK, gauge, x\n"
                              "DCGM_FI_DEV_GPU_TEMP_CELSIUS, gauge, GPU temperature (in C).\n")
    assert got.notes == ("line 3: 'DCGM_FI_DEV_SM_CLOK' not served: no DCGM field of that name "
                         "is known here (DCGM 4.6 and older)",)
    (temp,) = got.metrics  # DCGM 4.6.0's name of DCGM_FI_DEV_GPU_TEMP, served under it
    assert temp.name == "DCGM_FI_DEV_GPU_TEMP_CELSIUS" and temp.field.id == 150


def test_an_empty_file_serves_nothing() -> None:
    assert dcgm_counters.parse("# nothing\n\n") == dcgm_counters.Counters((), ())
    assert dcgm.DEFAULT  # the exporter's default is another thing: no file at all

"""The pure readers of `amd-smi … --json`, on the real captures of tests/fixtures/amd: both shapes
the tool has printed, its value forms, "N/A" and its library's error strings, text before the JSON,
and an output cut off."""

from __future__ import annotations

import json

import pytest

from gputop.backends.amd.smi import mapping, output
from gputop.backends.amd.smi.output import MEBIBYTES, MHZ, AmdSmiParseError
from gputop.core.units import MIB
from tests.support.amd_smi import (
    METRIC_PARTIAL,
    NO_ACCESS_BANNER,
    PROCESS_R9700,
    STATIC_MI300X,
    VERSION_NON_ROOT,
    VERSION_ROOT,
    capture,
)

MI300X_BUSES = ["0000:1b:00.0", "0000:3d:00.0", "0000:4e:00.0", "0000:5f:00.0",
                "0000:9d:00.0", "0000:bd:00.0", "0000:cd:00.0", "0000:dd:00.0"]


def test_static_of_8_mi300x_in_the_gpu_data_shape():
    static = output.load(capture(STATIC_MI300X), "static")
    gpus = [mapping.static_gpu(g) for g in static.gpus]
    assert static.banner == ()
    assert [g.index for g in gpus] == list(range(8))
    assert [g.bus_id for g in gpus] == MI300X_BUSES
    assert {g.name for g in gpus} == {"AMD Instinct MI300X"}
    assert {g.driver_version for g in gpus} == {"6.16.13"}
    assert gpus[0].attrs == {
        "memory_total_mib": 196592.0,  # "MB", which amd-smi counts in MiB
        "power_limit_w": 750.0, "power_limit_min_w": 0.0, "power_limit_max_w": 750.0,
        # the edge sensor's thresholds are "N/A" on MI300: the hotspot's stand for the GPU's
        "temperature_slowdown_c": 100.0, "temperature_shutdown_c": 110.0,
        "temperature_memory_max_c": 105.0,
        "clock_sm_max_mhz": 2100.0, "clock_mem_max_mhz": 1300.0,  # "Level 2": "2100 MHz"
        "pcie_gen_max": 5, "pcie_width_max": 16,  # 32 GT/s
        "ecc_mode": True,  # "UMC": "ENABLED"
        "serial": "692409006566", "vbios_version": "00159017",
        "pci_device_id": 0x74A1 << 16 | 0x1002, "pci_sub_device_id": 0x74A1 << 16 | 0x1002,
    }


def test_process_of_2_r9700_in_the_bare_list_shape():
    found = output.load(capture(PROCESS_R9700), "process")
    assert [mapping.gpu_index(g) for g in found.gpus] == [0, 1]
    for gpu in found.gpus:
        procs = mapping.processes(gpu)
        assert [(p.pid, p.name, p.gfx_ns) for p in procs] == [
            (213534, "python3.12", 0), (213890, "python3.12", 0),
            (213952, "python3.12", 0), (213953, "python3.12", 0)]
        # bytes, in MiB: the default table of the same node prints 56000 B as "54.7 KB" and
        # 21008920000 B as "19.6 GB" (21.0 in decimal units): amd-smi's units are binary
        assert [p.vram_mib * MIB for p in procs] == [56000, 56000, 21008920000, 20503796000]
        assert round(procs[2].vram_mib / 1024, 1) == 19.6


def test_version_as_root_and_without_access():
    assert mapping.version(output.load(capture(VERSION_ROOT), "version").gpus) \
        == mapping.Version("26.2.2+e1a6bc5663", "7.2.1", "6.16.13")
    denied = output.load(capture(VERSION_NON_ROOT), "version")
    assert mapping.version(denied.gpus).amdgpu is None  # the library's error is no version
    assert list(output.status_errors(denied.gpus[0])) == [
        ("amdgpu_version", "AMDSMI_STATUS_FILE_ERROR - Error opening file")]
    assert list(output.status_errors(output.load(capture(VERSION_ROOT), "version").gpus)) == []


def test_text_before_the_json_is_skipped_and_kept():
    found = output.load(NO_ACCESS_BANNER + capture(VERSION_ROOT), "version")
    assert mapping.version(found.gpus).rocm == "7.2.1"
    assert found.banner == ("Permission needed to access required GPU device node(s):",
                            "- /dev/dri/card0: Permission denied; owner=root(0):video(39);")


def test_a_metric_output_cut_off_is_one_clear_error():
    with pytest.raises(AmdSmiParseError) as err:
        output.load(capture(METRIC_PARTIAL), "metric")
    assert str(err.value) == ("`amd-smi metric --json`: its JSON stops at line 40, before the "
                              "document ends (the output was cut off)")


def _whole_values(text: str, keys: tuple[str, ...]) -> dict[str, object]:
    """The values of ``keys`` that stand whole in a cut-off capture, decoded where they are:
    not a byte of the capture is changed or added."""
    decoder = json.JSONDecoder()
    out = {}
    for key in keys:
        at = text.index(f'"{key}": ') + len(f'"{key}": ')
        out[key], _ = decoder.raw_decode(text, at)
    return out


def test_metric_usage_from_the_whole_objects_of_the_cut_off_capture():
    usage = _whole_values(capture(METRIC_PARTIAL), ("gfx_activity", "umc_activity",
                                                    "mm_activity", "vcn_activity"))
    assert usage["vcn_activity"] == [{"value": 0, "unit": "%"}, "N/A", "N/A", "N/A"]
    got = mapping.metric_gpu({"gpu": 0, "usage": usage})
    assert (got["utilization_gpu_pct"], got["utilization_memory_pct"]) == (100.0, 0.0)
    # everything the 40 lines do not reach is None, never 0
    assert {k for k, v in got.items() if v is not None} \
        == {"utilization_gpu_pct", "utilization_memory_pct"}


def test_quantities_in_every_form_the_captures_print():
    gpu = output.load(capture(STATIC_MI300X), "static").gpus[0]
    sys_clock = gpu["clock"]["sys"]
    assert output.quantity(sys_clock["current_frequency"], MHZ) == 132.0  # "132MHz"
    assert output.quantity(sys_clock["frequency_levels"]["Level 1"], MHZ) == 500.0  # "500 MHz"
    assert output.quantity(gpu["vram"]["size"], MEBIBYTES) == 196592.0  # {"value", "unit"}
    assert output.quantity(gpu["bus"]["pcie_levels"], MHZ) is None  # "N/A"
    assert output.quantity(gpu["vram"]["max_bandwidth"], MEBIBYTES) is None  # GB/s: not a size
    assert output.integer(gpu["bus"]["max_pcie_width"]) == 16  # a plain number
    denied = output.load(capture(VERSION_NON_ROOT), "version").gpus[0]
    assert output.text(denied["amdgpu_version"]) is None
    assert output.text(denied["amd_hsmp_driver_version"]) is None  # "N/A"


@pytest.mark.parametrize(("text", "message"), [
    ("", "`amd-smi static --json` printed no JSON"),
    ("RuntimeError: WARNING: User is missing the following required groups: render, video.\n",
     "`amd-smi static --json` printed no JSON: RuntimeError: WARNING: User is missing"),
    ('{"gpu_data": 3}', "expected a list of GPUs"),
    ("[1, 2]", "expected a list of GPUs"),
    ("[{]", "not JSON"),
    ("[" * 100000, "nested too deep"),
], ids=["empty", "an-error-line-alone", "gpu-data-not-a-list", "gpus-not-objects", "garbage",
        "deep"])
def test_what_is_not_the_json_asked_for_is_one_error(text, message):
    with pytest.raises(AmdSmiParseError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[")):
        output.load(text, "static")


def test_notes_say_the_text_before_the_json_and_the_library_errors_once():
    notes = output.Notes()
    assert notes.lines() == ()
    notes.add("version", output.load(capture(VERSION_NON_ROOT), "version"))
    notes.add("version", output.load(NO_ACCESS_BANNER + capture(VERSION_NON_ROOT), "version"))
    notes.add("static", output.load(capture(STATIC_MI300X), "static"))  # no error in it
    assert notes.lines() == (
        "amd-smi printed before its JSON: Permission needed to access required GPU device "
        "node(s):",
        "amd-smi printed before its JSON: - /dev/dri/card0: Permission denied; "
        "owner=root(0):video(39);",
        "amd-smi printed its library's error for 1 value(s), e.g. version: amdgpu_version: "
        "AMDSMI_STATUS_FILE_ERROR - Error opening file (a user outside the render and video "
        "groups cannot open the GPUs' files)")

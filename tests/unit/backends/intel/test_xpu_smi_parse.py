"""The pure readers of xpu-smi v1's text, on the real captures of tests/fixtures/intel: the quoted
CSV of `discovery --dump`, the right-aligned CSV of `dump` with its blank, space-only and N/A
cells, the `ps` table; and the ids gputop asks for, checked against the tool's captured help."""

from __future__ import annotations

import re

import pytest

from gputop.backends.intel.xpu import mapping, output
from gputop.backends.intel.xpu.output import XpuSmiParseError
from tests.support.xpu_smi import (
    DISCOVERY_A310,
    DISCOVERY_FLEX,
    DISCOVERY_HELP,
    DUMP_A310,
    DUMP_FLEX_BLANK,
    DUMP_GUIDE,
    DUMP_HELP,
    DUMP_MAX1550,
    PS,
    PS_HELP,
    V2_TABLE,
    all_captures,
    capture,
    output_of,
)

WHAT = "xpu-smi test"


def _help_ids(name: str) -> dict[int, str]:
    """``{id: text}`` of each numbered line of a captured help (``  16. Memory Physical Size``)."""
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^\s+(\d+)\. (.*)$", capture(name),
                                                              re.MULTILINE)}


def test_every_metric_id_asked_for_is_the_one_dump_h_names():
    named = _help_ids(DUMP_HELP)
    for metric in mapping.METRICS:
        # the help's text starts with the header the capture of its release printed
        assert any(named[metric.id].startswith(h) for h in metric.headers), metric
    assert named[5].startswith("GPU Memory Utilization (%)")  # read, and left out: see mapping
    assert mapping.DUMP_ARGS == ("dump", "-d", "-1", "-m", "0,1,2,3,4,18", "-i", "1", "-n", "1")


def test_every_property_id_asked_for_is_the_one_discovery_h_names():
    named = _help_ids(DISCOVERY_HELP)
    assert {p.id: p.name for p in mapping.PROPERTIES} == {p.id: named[p.id]
                                                          for p in mapping.PROPERTIES}
    assert mapping.DISCOVERY_ARGS == ("discovery", "--dump", "1,2,6,8,11,16")


def test_ps_memory_is_in_kb_as_ps_h_says():
    assert "MEM:" in capture(PS_HELP) and capture(PS_HELP).rstrip().count("(kB)") == 2
    procs = output.ps(output_of(PS), WHAT)
    assert [(p.pid, p.name, p.device, p.memory_kib) for p in procs] \
        == [(12961, "xpu-smi", 0, 1966), (12961, "xpu-smi", 1, 1966)]
    assert mapping.process_memory_mib(procs[0]) == 1966 / 1024


def test_discovery_of_one_a310_with_memory_na():
    gpus = [mapping.static_gpu(r) for r in output.discovery(output_of(DISCOVERY_A310), WHAT)]
    assert gpus == [mapping.StaticGpu(
        device=0, name="Intel(R) Arc(TM) A310 LP Graphics", bus_id=None, driver_version=None,
        attrs={"memory_total_mib": None, "clock_sm_max_mhz": 2450.0})]  # "N/A" memory: None


def test_discovery_of_two_flex_170():
    rows = output.discovery(output_of(DISCOVERY_FLEX), WHAT)
    assert rows[1] == {"Device ID": "1", "Device Name": "Intel(R) Graphics [0x56c0]",
                       "Vendor Name": "Intel(R) Corporation", "Core Clock Rate": "2050 MHz"}
    gpus = [mapping.static_gpu(r) for r in rows]
    assert [(g.device, g.name, g.attrs["clock_sm_max_mhz"]) for g in gpus] \
        == [(0, "Intel(R) Graphics [0x56c0]", 2050.0), (1, "Intel(R) Graphics [0x56c0]", 2050.0)]


def test_dump_of_the_a310_keeps_the_last_row():
    found = output.dump(output_of(DUMP_A310), WHAT)
    assert found.headers == ("GPU Power (W)", "GPU Frequency (MHz)",
                             "GPU Memory Utilization (%)", "GPU Memory Used (MiB)")
    assert mapping.metric_values(found, 0) == {
        "utilization_gpu_pct": None, "power_draw_w": 15.36, "clock_sm_mhz": 2450.0,
        "temperature_c": None, "temperature_memory_c": None,  # not asked for in this capture
        "memory_used_mib": 82.44}
    assert mapping.metric_values(found, 1) is None  # no such device
    assert mapping.unreported(found) == {}


def test_dump_of_a_flex_170_with_spaces_for_utilization_and_nothing_for_temperature():
    text = output_of(DUMP_FLEX_BLANK)
    assert ",     , 43.70, 2050,\n" in text  # the cells as captured: spaces, and empty
    found = output.dump(text, WHAT)
    got = mapping.metric_values(found, 0)
    assert got is not None
    assert (got["utilization_gpu_pct"], got["temperature_c"]) == (None, None)  # never 0
    assert (got["power_draw_w"], got["clock_sm_mhz"]) == (43.70, 2050.0)
    assert mapping.unreported(found) == {"GPU Utilization (%)": [0],
                                         "GPU Core Temperature (Celsius Degree)": [0]}


def test_dump_of_six_max_1550_with_utilization_na():
    found = output.dump(output_of(DUMP_MAX1550), WHAT)
    got = {d: mapping.metric_values(found, d) for d in range(6)}
    assert {v["utilization_gpu_pct"] for v in got.values() if v} == {None}
    assert got[0] == {"utilization_gpu_pct": None, "power_draw_w": 409.54,
                      "clock_sm_mhz": 1600.0, "temperature_c": 40.5,
                      "temperature_memory_c": 34.5, "memory_used_mib": None}
    assert got[5] is not None and got[5]["power_draw_w"] == 284.77  # its last row, the second
    assert mapping.unreported(found) == {"GPU Utilization (%)": [0, 1, 2, 3, 4, 5]}


def test_dump_of_the_guide_reads_id_0_under_its_older_header():
    found = output.dump(output_of(DUMP_GUIDE), WHAT)
    got = mapping.metric_values(found, 0)
    assert got is not None
    assert (got["utilization_gpu_pct"], got["power_draw_w"], got["clock_sm_mhz"]) \
        == (0.0, 14.61, 0.0)  # a real 0 stays 0


def test_notes_say_each_metric_without_a_value_once():
    notes = mapping.Notes()
    assert notes.lines() == ()
    notes.add(output.dump(output_of(DUMP_FLEX_BLANK), WHAT))
    notes.add(output.dump(output_of(DUMP_MAX1550), WHAT))
    notes.add(output.dump(output_of(DUMP_A310), WHAT))  # every cell has a value
    assert notes.lines() == (
        "xpu-smi printed no value (blank or N/A) for GPU Utilization (%) of device(s) 0, 1, 2, "
        "3, 4, 5: shown as N/A, not 0",
        "xpu-smi printed no value (blank or N/A) for GPU Core Temperature (Celsius Degree) of "
        "device(s) 0: shown as N/A, not 0")


READERS = {"discovery": output.discovery, "dump": output.dump, "ps": output.ps}
PARSED_BY = {DISCOVERY_A310: "discovery", DISCOVERY_FLEX: "discovery", DUMP_A310: "dump",
             DUMP_FLEX_BLANK: "dump", DUMP_GUIDE: "dump", DUMP_MAX1550: "dump", PS: "ps"}


@pytest.mark.parametrize("name", all_captures())
@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_capture_is_read_or_refused_with_one_error(name, reader):
    """Each reader reads its own captures, and any other output of the tool (its help, its
    tables, v2's table) is one XpuSmiParseError, never a crash nor a reading."""
    if PARSED_BY.get(name) == reader:
        assert READERS[reader](output_of(name), WHAT)
        return
    with pytest.raises(XpuSmiParseError) as err:
        READERS[reader](output_of(name), WHAT)
    assert str(err.value).startswith(f"`{WHAT}`")


def test_v2s_table_is_not_read_as_a_dump():
    with pytest.raises(XpuSmiParseError, match=r"printed no 'Timestamp' header: \+-"):
        output.dump(output_of(V2_TABLE), WHAT)


@pytest.mark.parametrize(("text", "message"), [
    ("", "printed no 'Timestamp' header$"),
    ("Error: Level Zero initialization failed\n", "printed no 'Timestamp' header: Error: Level"),
    ("Timestamp, Device\n", "does not start with Timestamp, DeviceId"),
    ("Timestamp, DeviceId, GPU Power (W)\n1:00,    0\n", "a row of 2 cells under a header of 3"),
    ("Timestamp, DeviceId, GPU Power (W)\n1:00,  x, 3\n", "'x' is no device id"),
], ids=["empty", "an-error-line", "short-header", "short-row", "bad-device"])
def test_what_is_not_a_dump_is_one_error(text, message):
    with pytest.raises(XpuSmiParseError, match=message):
        output.dump(text, WHAT)


@pytest.mark.parametrize("cell", ["", "     ", "N/A", "  N/A", "nan", "inf", "1e999", "12x"])
def test_a_cell_without_a_finite_number_is_none(cell):
    assert output.number(cell) is None


def test_units_other_than_the_one_asked_are_none():
    assert output.with_unit("32768.00 MiB", "MiB") == 32768.0  # as `discovery -d` prints it
    assert output.with_unit("2050 MHz", "MiB") is None
    assert output.with_unit("N/A", "MiB") is None

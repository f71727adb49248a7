"""Value formatting: the model's values printed as nvidia-smi prints them in real captures."""

from __future__ import annotations

import dataclasses
import time

import pytest

from gputop.backends.replay.backend import build_samples
from gputop.core.model import Device, Process, Snapshot
from gputop.formats.query_csv import apps_lines, gpu_lines, header_line
from gputop.formats.query_fields import (
    DEPRECATED,
    NA,
    NA_BARE,
    format_timestamp,
    lookup,
    parse_field_list,
    parse_timestamp,
)
from gputop.formats.query_log import parse_log
from tests.support.query import ALL_FIELDS_CAPTURES, FIX, header_names

PLAIN_FIELDS = [f.name for f in dataclasses.fields(Device)]


def _plain(dev) -> Device:
    """The model's values only: the log's own cells dropped."""
    return Device(**{n: getattr(dev, n) for n in PLAIN_FIELDS})


@pytest.mark.parametrize("capture", ALL_FIELDS_CAPTURES, ids=lambda p: p.name)
def test_model_values_format_like_the_real_capture(capture):
    log = parse_log(capture.read_text(), str(capture))
    (sample,) = build_samples(log, str(capture))
    dev = _plain(sample.devices[0])
    names = header_names(capture)
    fields = parse_field_list(",".join(names))
    snap = Snapshot(host="h", time=sample.time, backend="replay", devices=(dev,),
                    driver_version=log.rows[0].cells["driver_version"])
    ours = gpu_lines(fields, snap, count=1).rstrip("\n").split(", ")
    theirs = capture.read_text().split("\n")[1].split(", ")
    sourced = 0
    for f, mine, real in zip(fields, ours, theirs, strict=True):
        if f.get is not None:
            sourced += 1
            assert mine == real, f.name
        else:  # no model source: nvidia-smi's own "unavailable" text
            assert mine in (NA, NA_BARE, DEPRECATED), f.name
            if real in (NA, NA_BARE, DEPRECATED):
                assert mine == real, f.name
            if mine == DEPRECATED:  # never where this driver still gives a value
                assert real == DEPRECATED, f.name
    assert sourced >= 60


def test_memory_is_rounded_up_to_whole_mib_as_nvidia_smi_does():
    """NVML's bytes and nvidia-smi 580.159.04's answer on an H200 under load, read one after the
    other (branch captures/h200-580.159.04, probe_nvml-memory-bytes-vs-smi_1xH200_580.159.04.txt):
    reserved 644939776 B = 615.0625 MiB printed 616, used 11250.8125 printed 11251, free
    131905.125 printed 131906."""
    mib = 1 << 20
    dev = Device(index=0, memory_total_mib=150754820096 / mib, memory_reserved_mib=644939776 / mib,
                 memory_used_mib=11797331968 / mib, memory_free_mib=138312548352 / mib)
    snap = Snapshot(host="h", time=1.0, backend="nvml", devices=(dev,))
    row = gpu_lines(parse_field_list("memory.total,memory.reserved,memory.used,memory.free"),
                    snap, count=1, units=False)
    assert row == "143771, 616, 11251, 131906\n"


def test_formats_of_each_kind():
    dev = Device(index=0, name="NVIDIA H100 80GB HBM3", pci_bus_id="00000000:1A:00.0",
                 power_draw_w=85.123, memory_total_mib=143771.0, memory_used_mib=0.0,
                 utilization_gpu_pct=0, pstate="P0", persistence_mode=True, ecc_mode=False,
                 clock_event_mask=0x4, clock_event_supported_mask=0x1FF, clock_sm_mhz=1979.6,
                 fan_pct=None, pci_device_id=0x233010DE, mig_mode="disabled")
    snap = Snapshot(host="h", time=1752480758.6969, backend="sim", devices=(dev,),
                    driver_version="590.48.01")
    names = ("power.draw,memory.total,memory.used,utilization.gpu,pstate,persistence_mode,"
             "ecc.mode.current,clocks_event_reasons.active,clocks_event_reasons.supported,"
             "clocks_event_reasons.sw_power_cap,clocks_event_reasons.gpu_idle,clocks.sm,fan.speed,"
             "pci.domain,pci.bus,pci.device,pci.device_id,mig.mode.current,display_mode,count,"
             "driver_version")
    row = gpu_lines(parse_field_list(names), snap, count=8)
    assert row == ("85.12 W, 143771 MiB, 0 MiB, 0 %, P0, Enabled, Disabled, 0x0000000000000004, "
                   "0x00000000000001FF, Active, Not Active, 1980 MHz, [N/A], 0x0000, 0x1A, 0x00, "
                   "0x233010DE, Disabled, [Requested functionality has been deprecated], 8, "
                   "590.48.01\n")
    bare = gpu_lines(parse_field_list(names), snap, count=8, units=False)
    assert bare.startswith("85.12, 143771, 0, 0, P0, Enabled,")
    assert ", 1980, [N/A]," in bare
    # nounits keeps the unit tags in the header, as real nvidia-smi does
    assert header_line(parse_field_list("power.draw")) == "power.draw [W]\n"


def test_reasons_from_names_when_no_mask():
    dev = Device(index=0, clock_event_reasons=("sw_power_cap", "sw_thermal_slowdown"))
    snap = Snapshot(host="h", time=0.0, backend="sim", devices=(dev,))
    row = gpu_lines(parse_field_list("clocks_event_reasons.active,clocks_event_reasons.sw_power_cap,"
                                     "clocks_event_reasons.hw_slowdown"), snap, count=1)
    assert row == "0x0000000000000024, Active, Not Active\n"


def test_memory_free_derived_when_not_reported():
    dev = Device(index=0, memory_total_mib=81559, memory_used_mib=1000, memory_reserved_mib=479)
    snap = Snapshot(host="h", time=0.0, backend="sim", devices=(dev,))
    assert gpu_lines(parse_field_list("memory.free"), snap, count=1) == "80080 MiB\n"


def test_lost_gpu_prints_nvml_error_text_not_zeros():
    dev = Device(index=3, name="NVIDIA H100 80GB HBM3", status="lost")
    snap = Snapshot(host="h", time=0.0, backend="sim", devices=(dev,))
    row = gpu_lines(parse_field_list("index,name,power.draw,utilization.gpu"), snap, count=8)
    assert row == "3, NVIDIA H100 80GB HBM3, [GPU is lost], [GPU is lost]\n"


def test_timestamp_format_and_parse_round_trip():
    t = time.mktime((2026, 7, 14, 8, 12, 38, 0, 0, -1)) + 0.6969
    assert format_timestamp(t) == "2026/07/14 08:12:38.696"  # truncated, as nvidia-smi does
    assert format_timestamp(parse_timestamp("2026/07/14 08:12:38.696")) == "2026/07/14 08:12:38.696"
    with pytest.raises(ValueError):
        parse_timestamp("yesterday")


def test_compute_apps_rows():
    procs = (Process(pid=11327, name="memhog", command="/root/tools/memhog --size 2g",
                     gpu_memory_mib=2566.4, type="C"),
             Process(pid=2, name="Xorg", command="/usr/bin/Xorg", gpu_memory_mib=4, type="G"),
             Process(pid=11345, name="gpu_burn", gpu_memory_mib=None))
    dev = Device(index=0, name="NVIDIA H100 80GB HBM3", pci_bus_id="00000000:00:09.0",
                 serial="0000000000000", uuid="GPU-0", processes=procs)
    t = parse_timestamp("2026/07/14 08:12:53.500")
    snap = Snapshot(host="h", time=t, backend="sim", devices=(dev,))
    fields = parse_field_list(",".join(header_names(
        FIX / "csv_compute-apps_1xH100-80GB-HBM3_590.48.01_load.csv")), "compute-apps")
    assert apps_lines(fields, snap) == (
        "2026/07/14 08:12:53.500, NVIDIA H100 80GB HBM3, 00000000:00:09.0, 0000000000000, GPU-0, "
        "11327, /root/tools/memhog, 2566 MiB\n"
        "2026/07/14 08:12:53.500, NVIDIA H100 80GB HBM3, 00000000:00:09.0, 0000000000000, GPU-0, "
        "11345, gpu_burn, [N/A]\n")
    assert apps_lines([lookup("used_memory", "compute-apps")], snap, units=False) == "2566\n[N/A]\n"


def test_the_row_remapper_and_retired_pages_are_read():
    """What NVML reports of the row remapper and page retirement reaches query mode (as it does
    `-q`); the H200 that keeps no retired pages says [N/A] there, as its driver does."""
    dev = Device(index=0, remapped_rows_correctable=3, remapped_rows_uncorrectable=1,
                 remapped_rows_pending=True, remapped_rows_failed=False)
    snap = Snapshot(host="h", time=0.0, backend="nvml", devices=(dev,))
    row = gpu_lines(parse_field_list(
        "remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,"
        "remapped_rows.failure,retired_pages.single_bit_ecc.count,retired_pages.pending"),
        snap, count=1)
    assert row == "3, 1, Yes, No, [N/A], [N/A]\n"

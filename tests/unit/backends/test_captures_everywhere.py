"""Every captured AMD and Intel node through every consumer (#32, Done-when): read into the model,
then written by `snapshot --json`, query mode, the exporter and the dashboard, with a value the
card does not report null / `[N/A]` / absent everywhere, never 0.

Two kinds of node: the sysfs trees, mounted under a folder of the test's, and the nodes read
through a vendor tool (amd-smi, rocm-smi, xpu-smi), whose fake on PATH prints the real captures
(tests/support/smi_tools.py). The per-backend tests check each capture's figures against its
files; this one checks that what the model holds, and what it does not, reaches every consumer as
it is, and, for the tool nodes, that the figures read by hand from the captures are the ones
every consumer shows."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gputop.backends.amd.backend import AmdBackend
from gputop.backends.base import Backend, BackendOptions
from gputop.backends.intel.backend import IntelBackend
from gputop.commands.main import main
from gputop.commands.query import QueryLogger
from gputop.core import jsonout
from gputop.core.model import Snapshot, snapshot_to_json
from gputop.exporter import own
from gputop.exporter.server import Latest
from gputop.formats.query_fields import GPU_FIELDS, NA, lookup, unavailable
from gputop.query.sink import StreamSink
from gputop.tui.app import GputopApp
from tests.support import amd, intel, rocm_smi
from tests.support.smi_tools import AMD_SMI, ROCM_SMI, XPU_SMI, Rules, Tool
from tests.support.tui import notices, settle, visible_lines
from tests.support.xpu_smi import (
    DISCOVERY,
    DISCOVERY_A310,
    DISCOVERY_FLEX,
    DUMP,
    DUMP_A310,
    DUMP_FLEX_BLANK,
    DUMP_GUIDE,
    DUMP_MAX1550,
    PS,
)

NODES = [("amd", AmdBackend, amd.mount, tree) for tree in amd.AMDGPU_TREES] + [
    ("intel", IntelBackend, intel.mount, tree) for tree in intel.TREES]
# query fields read straight from one model attribute: N/A exactly where the attribute is None
# (memory.free is total - used where the card reports no free figure of its own)
DIRECT = [f for f in GPU_FIELDS
          if f.attr is not None and f.get is not None and f.name != "memory.free"]
# gputop's own families that serve a device's figures: (family, extra label, attribute, scale)
SERVED = (
    ("gputop_utilization_ratio", None, "utilization_gpu_pct", 0.01),
    ("gputop_memory_used_bytes", None, "memory_used_mib", 2.0 ** 20),
    ("gputop_memory_total_bytes", None, "memory_total_mib", 2.0 ** 20),
    ("gputop_power_draw_watts", None, "power_draw_w", 1.0),
    ("gputop_power_limit_watts", None, "power_limit_w", 1.0),
    ("gputop_energy_joules_total", None, "energy_j", 1.0),
    ("gputop_temperature_celsius", ("sensor", "gpu"), "temperature_c", 1.0),
    ("gputop_temperature_celsius", ("sensor", "hotspot"), "temperature_hotspot_c", 1.0),
    ("gputop_temperature_celsius", ("sensor", "memory"), "temperature_memory_c", 1.0),
    ("gputop_clock_hertz", ("clock", "sm"), "clock_sm_mhz", 1e6),
    ("gputop_clock_hertz", ("clock", "memory"), "clock_mem_mhz", 1e6),
    ("gputop_clock_hertz", ("clock", "video"), "clock_video_mhz", 1e6),
)


def _opened(kind: type[Backend], root) -> Backend:
    backend = kind(BackendOptions(sysfs_root=str(root)))
    backend.open()
    return backend


def check_json(snap: Snapshot) -> None:
    """`snapshot --json`: every device field as the model holds it, None as null."""
    doc = json.loads(jsonout.dumps(snapshot_to_json(snap)))
    for dev, out in zip(snap.devices, doc["devices"], strict=True):
        for f in DIRECT:
            assert out[f.attr] == getattr(dev, f.attr), f.attr


def check_exporter(snap: Snapshot, vendor: str) -> None:
    """/metrics: gputop's own families only (never a DCGM name for AMD or Intel), a sample
    exactly where the model holds a figure, of that figure."""
    latest = Latest(own.Options(), "t")
    latest.publish(snap)
    code, body, _ = latest.answer("/metrics", 60.0)
    assert code == 200
    text = body.decode()
    assert "DCGM_FI_" not in text
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            extra = s.labels.get("sensor") or s.labels.get("clock")
            if "gpu" in s.labels and "pid" not in s.labels:
                samples[(s.name, s.labels["gpu"], extra)] = s.value
    status = [ln for ln in text.splitlines() if ln.startswith("gputop_device_status{")]
    assert {ln.split('gpu="')[1].split('"')[0] for ln in status} == {
        str(d.index) for d in snap.devices}
    assert all(f'vendor="{vendor}"' in ln for ln in status)
    for dev in snap.devices:
        for name, label, attr, scale in SERVED:
            key = (name, str(dev.index), label and label[1])
            value = getattr(dev, attr)
            if value is None:
                assert key not in samples, key
            else:
                assert samples[key] == pytest.approx(value * scale), key


def check_query(snap: Snapshot, rows: list[str]) -> None:
    """Query mode: a cell is [N/A] (or the device's status, as nvidia-smi prints it) exactly
    where the model holds None."""
    assert len(rows) == len(snap.devices)
    for dev, row in zip(snap.devices, rows, strict=True):
        for f, cell in zip(DIRECT, row.split(", "), strict=True):
            assert (cell == unavailable(f, dev, snap.driver_version)) == (getattr(dev, f.attr) is None), (f.name, cell)


async def dashboard(backend: Backend, snap: Snapshot) -> str:
    """Draw the backend on the dashboard; return its screen, checked to name every GPU and to
    raise no error notice."""
    app = GputopApp(backend, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        screen = "\n".join(visible_lines(app))
        assert all((d.name or "")[:12] in screen for d in snap.devices)
        assert not [n for n in notices(app) if n.severity == "error"]
    return screen


@pytest.mark.parametrize(("name", "kind", "mount", "tree"), NODES, ids=[n[3] for n in NODES])
async def test_a_captured_node_reaches_every_consumer_as_read(tmp_path, capsys, name, kind, mount,
                                                              tree):
    root = mount(tmp_path, tree)
    backend = _opened(kind, root)
    try:
        snap = backend.sample()
        check_json(snap)
        check_exporter(snap, name)
        # query mode through its command (one sample: the static files read the same; rates
        # have no first value either way)
        fields = ",".join(f.name for f in DIRECT)
        assert main(["--backend", name, "--sysfs-root", str(root), f"--query-gpu={fields}",
                     "--format=csv,noheader,nounits"]) == 0
        check_query(snap, capsys.readouterr().out.splitlines())
        await dashboard(backend, snap)
    finally:
        backend.close()


# ------------------------------------------------------------------ nodes read through a tool
@dataclass(frozen=True)
class ToolNode:
    """A node read through a fake tool printing real captures: the tool, its fake's answers,
    and what was read by hand from the captures: the query cells of GPU 0 (``--query-gpu``
    field: cell, no units) and text the dashboard shows of it."""

    tool: Tool
    answers: Rules
    cells: dict[str, str] = field(default_factory=dict)
    screen: tuple[str, ...] = ()


def _rocm(capture: str, cells: dict[str, str], screen: tuple[str, ...]) -> ToolNode:
    return ToolNode(ROCM_SMI, [(rocm_smi.CALL, {"file": capture})], cells, screen)


def _xpu(discovery: str, dump: str, cells: dict[str, str], screen: tuple[str, ...]) -> ToolNode:
    return ToolNode(XPU_SMI, [(DISCOVERY, {"file": discovery}), (DUMP, {"file": dump}),
                              ("ps", {"file": PS})], cells, screen)


ERR = "[Unknown Error]"  # nvidia-smi's cell for a reading of a GPU in error
TOOL_NODES = {
    # static: 8 MI300X; metric: cut off at line 40, so every GPU is in error with no reading;
    # process: 4 PIDs under GPUs 0 and 1 of another node (R9700), as captured
    "amd-smi_MI300X-static_R9700-process": ToolNode(
        AMD_SMI, AMD_SMI.answers,
        {"name": "AMD Instinct MI300X", "pci.bus_id": "0000:1b:00.0", "memory.total": "196592",
         "power.limit": "750.00", "power.min_limit": "0.00", "power.max_limit": "750.00",
         "clocks.max.sm": "2100", "clocks.max.memory": "1300", "pcie.link.gen.max": "5",
         "pcie.link.width.max": "16", "ecc.mode.current": "Enabled", "serial": "692409006566",
         "vbios_version": "00159017", "power.draw": ERR, "utilization.gpu": ERR,
         "memory.used": ERR, "temperature.gpu": ERR, "fan.speed": ERR},
        (" 0 AMD Instinct MI300X  ERROR", "ERROR: amd-smi's last read failed", "20036MiB")),
    # rocm-smi: VRAM bytes / 2^20 rounded up as nvidia-smi rounds, `(300Mhz)`, `8.0GT/s` = gen 3
    "rocm-smi_6xMI100_5.7.1": _rocm(
        rocm_smi.MI100,
        {"name": "Arcturus GL-XL [Instinct MI100]", "pci.bus_id": "0000:1e:00.0",
         "memory.total": "32752", "memory.used": "7", "utilization.gpu": "0",
         "temperature.gpu": "31", "temperature.memory": "30", "power.draw": "39.00",
         "power.limit": "290.00", "clocks.sm": "300", "clocks.mem": "1200", "fan.speed": NA,
         "pcie.link.gen.current": "3", "pcie.link.width.current": "16"},
        (" 0 Arcturus GL-XL [Instinct MI100] 31°C fan N/A SCLK 300MHz", "6/32752MiB",
         "39/290W")),
    "rocm-smi_RX6700XT_4.3.0": _rocm(
        rocm_smi.RX6700XT_430,
        {"name": "AMD GPU 1002:73DF", "memory.total": "12272", "memory.used": "1548",
         "temperature.gpu": "45", "power.draw": "6.00", "power.limit": "211.00",
         "clocks.sm": "500", "clocks.mem": "96", "fan.speed": NA, "pcie.link.gen.current": "4"},
        (" 0 AMD GPU 1002:73DF", "45°C fan N/A SCLK 500MHz", "1548/12272MiB", "6/211W")),
    "rocm-smi_RX6700XT_5.7.1": _rocm(
        rocm_smi.RX6700XT_571,
        {"name": "Navi 22 [Radeon RX 6700/6700 XT / 6800M]", "memory.used": "1493",
         "utilization.memory": "0", "clocks.sm": "500"},
        (" 0 Navi 22 [Radeon RX 6700/6700 XT / 6800M]", "1492/12272MiB")),
    # sclk `(0Mhz)`: a reading of 0, printed as 0
    "rocm-smi_RX6700XT_6.1.2": _rocm(
        rocm_smi.RX6700XT_612,
        {"name": "Navi 22 [Radeon RX 6700/6700 XT / 6800M]", "memory.used": "1500",
         "utilization.memory": "0", "clocks.sm": "0"},
        ("45°C fan N/A SCLK 0MHz", "1500/12272MiB")),
    # no memory-activity key at all: utilization.memory N/A
    "rocm-smi_Vega10": _rocm(
        rocm_smi.VEGA10,
        {"name": "AMD GPU 1002:6861", "memory.total": "16368", "memory.used": "17",
         "utilization.memory": NA, "temperature.gpu": "39", "temperature.memory": "92",
         "power.draw": "15.00", "power.limit": "170.00", "clocks.sm": "1269", "fan.speed": "13",
         "pcie.link.gen.current": "3", "serial": "0x2150e7d042a1124"},
        ("39°C fan 13% SCLK 1269MHz", "17/16368MiB", "15/170W")),
    # `Fan speed (%)`: "0", a reading
    "rocm-smi_MI50": _rocm(
        rocm_smi.MI50,
        {"name": "Radeon Instinct MI50 32GB", "memory.total": "32752", "memory.used": "11",
         "temperature.gpu": "36", "power.draw": "26.00", "power.limit": "225.00",
         "clocks.sm": "1725", "clocks.mem": "1000", "fan.speed": "0",
         "pcie.link.gen.current": "4"},
        ("36°C fan 0% SCLK 1725MHz", "10/32752MiB", "26/225W")),
    # the last of the dump's 4 rows; memory size "N/A", and what the dump was not asked for
    "xpu-smi_A310": _xpu(
        DISCOVERY_A310, DUMP_A310,
        {"name": "Intel(R) Arc(TM) A310 LP Graphics", "memory.total": NA, "memory.used": "83",
         "power.draw": "15.36", "clocks.sm": "2450", "clocks.max.sm": "2450",
         "utilization.gpu": NA, "temperature.gpu": NA, "power.limit": NA},
        (" 0 Intel(R) Arc(TM) A310 LP Graphics", "N/A°C fan N/A GT 2450/2450MHz", "15W")),
    # utilization printed as spaces, temperature empty; GPU 1 has no row of its own
    "xpu-smi_Flex170": _xpu(
        DISCOVERY_FLEX, DUMP_FLEX_BLANK,
        {"name": "Intel(R) Graphics [0x56c0]", "power.draw": "43.70", "clocks.sm": "2050",
         "utilization.gpu": NA, "temperature.gpu": NA},
        ("N/A°C fan N/A GT 2050/2050MHz", "44W", "LOST: no row of its own in `xpu-smi dump`")),
    # no discovery of the Max 1550 node was captured: its dump is read under the Flex 170's
    # two devices (their names), each row as captured; utilization "N/A" on every row
    "xpu-smi_Max1550-dump": _xpu(
        DISCOVERY_FLEX, DUMP_MAX1550,
        {"power.draw": "409.54", "clocks.sm": "1600", "temperature.memory": "34",
         "utilization.gpu": NA},
        ("GT 1600/2050MHz", "410W", "287W")),
    # the user guide's dump of device 0 (under the A310's discovery): a utilization of 0.00
    # and a clock of 0 are readings, printed as 0
    "xpu-smi_guide-dump": _xpu(
        DISCOVERY_A310, DUMP_GUIDE,
        {"utilization.gpu": "0", "power.draw": "14.61", "clocks.sm": "0", "memory.used": NA},
        ("GT 0/2450MHz", "0%", "15W")),
}


@pytest.mark.parametrize("node", TOOL_NODES.values(), ids=TOOL_NODES.keys())
async def test_a_node_read_through_its_tool_reaches_every_consumer(tmp_path, monkeypatch, node):
    """One read of the tool per node (open() takes the first round; the worker waits an
    hour before the next), shared by every consumer."""
    node.tool.on_path(tmp_path, monkeypatch).set(node.answers)
    backend = node.tool.open_backend(refresh_s=3600.0)
    try:
        snap = backend.sample()
        check_json(snap)
        check_exporter(snap, node.tool.backend.vendor)
        # query mode as run_query drives an open backend: what the fields want, one row a GPU
        out = io.StringIO()
        QueryLogger(backend, "gpu", DIRECT, False, None, len(snap.devices),
                    StreamSink(out)).once()
        rows = out.getvalue().splitlines()
        check_query(snap, rows)
        got = dict(zip((f.name for f in DIRECT), rows[0].split(", ")))
        assert {k: got[lookup(k).name] for k in node.cells} == node.cells
        screen = await dashboard(backend, snap)
        missing = [text for text in node.screen if text not in screen]
        assert not missing, screen
    finally:
        backend.close()

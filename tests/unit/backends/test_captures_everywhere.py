"""Every captured AMD and Intel sysfs node through every consumer (#32, Done-when): read into
the model, then written by `snapshot --json`, query mode, the exporter and the dashboard, with a
value the card does not report null / `[N/A]` / absent everywhere, never 0.

The per-backend tests check each tree's figures against its files; this one checks that what the
model holds, and what it does not, reaches every consumer as it is."""

from __future__ import annotations

import json

import pytest

from gputop.backends.amd.backend import AmdBackend
from gputop.backends.base import Backend, BackendOptions
from gputop.backends.intel.backend import IntelBackend
from gputop.commands.main import main
from gputop.core import jsonout
from gputop.core.model import snapshot_to_json
from gputop.exporter import collect, exposition, own
from gputop.formats.query_fields import GPU_FIELDS, NA
from gputop.tui.app import GputopApp
from tests.support import amd, intel
from tests.support.tui import notices, settle, visible_lines

NODES = [("amd", AmdBackend, amd.mount, tree) for tree in amd.AMDGPU_TREES] + [
    ("intel", IntelBackend, intel.mount, tree) for tree in intel.TREES]
# query fields read straight from one model attribute: N/A exactly where the attribute is None
# (memory.free is total - used where the card reports no free figure of its own)
DIRECT = [f for f in GPU_FIELDS
          if f.attr is not None and f.get is not None and f.name != "memory.free"]


def _opened(kind: type[Backend], root) -> Backend:
    backend = kind(BackendOptions(sysfs_root=str(root)))
    backend.open()
    return backend


@pytest.mark.parametrize(("name", "kind", "mount", "tree"), NODES, ids=[n[3] for n in NODES])
async def test_a_captured_node_reaches_every_consumer_as_read(tmp_path, capsys, name, kind, mount,
                                                              tree):
    root = mount(tmp_path, tree)
    backend = _opened(kind, root)
    try:
        snap = backend.sample()
        # snapshot --json: every device field as the model holds it, None as null
        doc = json.loads(jsonout.dumps(snapshot_to_json(snap)))
        for dev, out in zip(snap.devices, doc["devices"], strict=True):
            for field in ("utilization_gpu_pct", "memory_used_mib", "power_draw_w",
                          "temperature_c", "clock_sm_mhz", "fan_pct"):
                assert out[field] == getattr(dev, field), field
        # the exporter: gputop's own names, never DCGM's, for every card
        text = exposition.render(collect.families(snap, own.Options(), "t")).decode()
        assert "DCGM_FI_" not in text
        status = [ln for ln in text.splitlines() if ln.startswith("gputop_device_status{")]
        assert {ln.split('gpu="')[1].split('"')[0] for ln in status} == {
            str(d.index) for d in snap.devices}
        assert all(f'vendor="{name}"' in ln for ln in status)
        # query mode: a cell is [N/A] exactly where the model holds None (one sample: the static
        # files read the same; rates have no first value either way)
        fields = ",".join(f.name for f in DIRECT)
        assert main(["--backend", name, "--sysfs-root", str(root), f"--query-gpu={fields}",
                     "--format=csv,noheader,nounits"]) == 0
        rows = capsys.readouterr().out.splitlines()
        assert len(rows) == len(snap.devices)
        for dev, row in zip(snap.devices, rows, strict=True):
            for field, cell in zip(DIRECT, row.split(", "), strict=True):
                assert (cell == NA) == (getattr(dev, field.attr) is None), (field.name, cell)
        # the dashboard draws it, with no error
        app = GputopApp(backend, autostart=False)
        async with app.run_test(size=(120, 40)) as pilot:
            app.sampler.tick()
            await settle(pilot)
            screen = "\n".join(visible_lines(app))
            assert all((d.name or "")[:12] in screen for d in snap.devices)
            assert not [n for n in notices(app) if n.severity == "error"]
    finally:
        backend.close()

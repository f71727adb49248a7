"""The ascend-910b scenario through `gputop snapshot --json` in a process, and the npu-smi
backend's import, in a fresh interpreter, pulling in neither Textual nor psutil."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.paths import ROOT


def test_ascend_910b_snapshot_json() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gputop", "snapshot", "--json", "--backend", "sim",
         "--scenario", "ascend-910b"],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [d["name"] for d in doc["devices"]] == ["Ascend 910B3"] * 8
    assert {d["vendor"] for d in doc["devices"]} == {"huawei"}


def test_npu_smi_backend_imports_no_textual_and_no_psutil_up_front() -> None:
    probe = ("import sys; import gputop.backends.npu_smi; "
             "print(','.join(m for m in ('textual', 'rich', 'psutil') if m in sys.modules) or '-')")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "-"

"""The advisor on GPUs read through a vendor tool (amd-smi, rocm-smi, xpu-smi), whose fake on PATH
prints the real captures: none of these backends sets a power limit, so `advise --sweep` says
plainly why not (and, for AMD, what would), offers no command (nvidia-smi's least of all),
writes no journal and changes nothing; the passive view says what it can."""

from __future__ import annotations

import contextlib
import io

import pytest

from gputop.backends.base import Unsupported
from gputop.commands.main import main
from tests.support.smi_tools import AMD_SMI, ROCM_SMI, TOOLS, XPU_SMI, Tool

SETS_CAP = ("`--backend amd` sets the cap through hwmon power1_cap, as root, where gputop sees "
            "the host's /sys/class/drm")
WHY = {
    "amd-smi": f"the amd-smi backend sets no power limits: it runs amd-smi only to read; {SETS_CAP}",
    "rocm-smi": f"the rocm-smi backend sets no power limits: it runs rocm-smi only to read; "
                f"{SETS_CAP}",
    # its GPUs report no limit at all (xpu-smi's dump has none): that is said first
    "xpu-smi": "GPU 0 reports no power limit (the xpu-smi backend cannot read or set one)",
}


def advise(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["advise", *args])
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("tool", TOOLS)
def test_a_sweep_says_why_it_cannot_change_the_limit(tool: Tool, tmp_path, monkeypatch, adv):
    tool.on_path(tmp_path, monkeypatch).set(tool.answers)
    code, out, err = advise("--backend", tool.name, "--sweep", "--window", "0.3", "--interval",
                            "0.1")
    lines = err.splitlines()
    assert lines[0] == (f"gputop: cannot sweep: {WHY[tool.name]}. Showing the passive view "
                        "instead.")
    assert "nvidia-smi" not in out + err
    assert adv.journals() == []  # nothing was journaled: nothing was to change
    if tool is AMD_SMI:
        # the captured `metric` is cut off: every GPU is in error from the start, said as such
        assert code == 1 and lines[1:] == [
            "gputop: GPU 0 is error (amd-smi's last read failed (`amd-smi metric --json`: its "
            "JSON stops at line 40, before the document ends (the output was cut off)); no "
            "reading yet) while its power was watched"]
    else:
        assert code == 0 and len(lines) == 1
        assert f"Sweep skipped: {WHY[tool.name]}." in out
        assert "passive: nothing was changed" in out
    if tool is ROCM_SMI:
        assert "the device does not report power capping: no advice" in out
    if tool is XPU_SMI:  # 15.36 W drawn, against no limit: not "no power readings"
        assert "  0     15W    15W    15W     N/A" in out
        assert "the device reports no power limit: nothing to compare the draw with" in out


@pytest.mark.parametrize("tool", TOOLS)
def test_the_backend_refuses_a_limit_and_offers_no_command(tool: Tool, tmp_path, monkeypatch):
    tool.on_path(tmp_path, monkeypatch).set(tool.answers)
    backend = tool.open_backend(refresh_s=3600.0)
    try:
        assert backend.limit_commands({0: 200.0}) == []  # nvidia-smi's would not apply
        with pytest.raises(Unsupported) as refused:
            backend.set_power_limit(0, 200.0)
        assert str(refused.value) == backend.limit_refusal()
        assert backend.limit_refusal().startswith(f"the {tool.name} backend sets no power limits")
    finally:
        backend.close()

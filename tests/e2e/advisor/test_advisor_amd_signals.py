"""An AMD card's power cap (hwmon power1_cap, on a writable copy of a captured RX 7900 XTX tree)
is put back as NVIDIA's limit is: a sweep stopped by a signal restores it before it exits, and
one killed outright leaves a journal that the next start warns of and `advise --restore` acts on
(real subprocesses)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.advise import Running
from tests.support.amd import MIN_UW, ORIGINAL_UW, writable_root
from tests.support.paths import ROOT

LOWERED = "step 1/1: measuring at 261 W"  # the sweep's one step: power1_cap_min


class Amd:
    """The advisor on one writable AMD tree, with its own journal folder."""

    def __init__(self, tmp_path: Path) -> None:
        self.root, self.cap = writable_root(tmp_path)
        self.xdg = tmp_path / "xdg"
        self.env = {**os.environ, "XDG_STATE_HOME": str(self.xdg), "PYTHONPATH": str(ROOT)}

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "gputop", "advise", "--backend", "amd", "--sysfs-root",
                str(self.root), "--interval", "0.1", *args]

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(*args), capture_output=True, text=True, cwd=ROOT,
                              env=self.env, timeout=60)

    def uw(self) -> int:
        return int(self.cap.read_text())

    def journals(self) -> list[Path]:
        folder = self.xdg / "gputop"
        return sorted(folder.glob("power-limits-*.json")) if folder.exists() else []


SWEEP = ("--sweep", "--settle", "0", "--measure", "3", "--json")  # the signal comes at once


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_mid_sweep_puts_the_cap_back(tmp_path, signum):
    amd = Amd(tmp_path)
    run = Running(amd.argv(*SWEEP), amd.env)
    run.wait_for(LOWERED)
    assert amd.uw() == MIN_UW and len(amd.journals()) == 1  # really lowered, and journaled
    run.proc.send_signal(signum)
    rc, err = run.finish()
    assert rc == 128 + signum, err
    assert amd.uw() == ORIGINAL_UW
    assert amd.journals() == []


def test_sigkill_leaves_a_journal_that_restore_acts_on(tmp_path):
    amd = Amd(tmp_path)
    run = Running(amd.argv(*SWEEP), amd.env)
    run.wait_for(LOWERED)
    run.proc.kill()
    run.finish()
    assert amd.uw() == MIN_UW and len(amd.journals()) == 1
    # the next start says so, and will not sweep from the lowered cap ...
    passive = amd.run("--window", "0.3")
    assert passive.returncode == 0, passive.stderr
    assert "did not put them back" in passive.stderr and "GPU 0 290 W" in passive.stderr
    refused = amd.run("--sweep", "--settle", "0", "--measure", "0.2")
    assert refused.returncode == 1 and "--restore" in refused.stderr
    assert amd.uw() == MIN_UW
    # ... and --restore writes the original back to power1_cap and removes the journal
    restored = amd.run("--restore")
    assert restored.returncode == 0, restored.stderr
    assert "GPU 0: 261.0 W -> 290 W" in restored.stdout
    assert amd.uw() == ORIGINAL_UW
    assert amd.journals() == []

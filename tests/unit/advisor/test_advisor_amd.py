"""The advisor on AMD and Intel cards read from captured sysfs trees: AMD's power cap written to
hwmon power1_cap and restored exactly, on a writable copy of the capture (tests/fixtures is never
touched); a read-only cap, a file only root may write and an Intel card each refused plainly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gputop.advisor import safety
from gputop.advisor.journal import LimitGuard
from gputop.backends.amd import backend as amd_backend
from gputop.backends.amd.backend import AmdBackend
from gputop.backends.base import BackendOptions, NoPermission
from tests.support.amd import MIN_UW, ORIGINAL_UW, writable_root
from tests.support.intel import A380
from tests.support.intel import mount as mount_intel
from tests.support.paths import ROOT


def advise(root: Path, xdg: Path, *args: str, backend: str = "amd") -> subprocess.CompletedProcess:
    env = {**os.environ, "XDG_STATE_HOME": str(xdg), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "gputop", "advise", "--backend", backend, "--sysfs-root", str(root),
         "--settle", "0", "--measure", "0.2", "--interval", "0.1", "--window", "0.3", *args],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)


def test_the_guard_lowers_power1_cap_then_restores_it_exactly(tmp_path):
    root, cap = writable_root(tmp_path)
    backend = AmdBackend(BackendOptions(sysfs_root=str(root)))
    backend.open()
    try:
        guard = LimitGuard(backend, [0], folder=tmp_path / "journal")
        journal = guard.begin()
        assert journal.path.exists()
        guard.set({0: 261.0})
        assert int(cap.read_text()) == MIN_UW  # µW, as hwmon takes it
        assert backend.sample().devices[0].power_limit_w == 261.0  # read back on the next tick
        assert guard.finish() == [(0, 261.0, 290.0)]
        assert int(cap.read_text()) == ORIGINAL_UW
        assert not journal.path.exists()
        hwmon = f"{root}/sys/class/drm/card0/device/hwmon/{cap.parent.name}"
        assert backend.limit_commands({0: 261.0}) == [f"echo {MIN_UW} | sudo tee {hwmon}/power1_cap"]
    finally:
        backend.close()


def test_a_sweep_steps_the_cap_down_and_puts_it_back(tmp_path):
    root, cap = writable_root(tmp_path)
    out = advise(root, tmp_path / "xdg", "--sweep", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["mode"] == "sweep"
    assert [row["limit_w"] for row in doc["sweep"]["rows"]] == [290.0, 261.0]
    # A-B-A ends on the original: the guard's restore finds it in place and reads it back
    assert doc["sweep"]["original_limits_w"] == {"0": 290.0}
    assert int(cap.read_text()) == ORIGINAL_UW
    assert not list((tmp_path / "xdg" / "gputop").glob("power-limits-*.json"))


def test_a_read_only_cap_is_a_plain_refusal_and_nothing_changes(tmp_path):
    root, cap = writable_root(tmp_path)
    cap.chmod(0o444)  # as amdgpu leaves it where the firmware fixes the cap
    out = advise(root, tmp_path / "xdg", "--sweep")
    assert out.returncode == 0, out.stderr
    assert "gputop: cannot sweep: GPU 0's power cap cannot be changed: amdgpu keeps" in out.stderr
    assert "read-only on this card" in out.stderr and "nvidia-smi" not in out.stderr + out.stdout
    assert "nothing was changed" in out.stderr
    assert int(cap.read_text()) == ORIGINAL_UW


def test_a_cap_only_root_may_write_says_what_is_needed(tmp_path, monkeypatch):
    root, cap = writable_root(tmp_path)
    backend = AmdBackend(BackendOptions(sysfs_root=str(root)))
    backend.open()
    # as a user outside root sees amdgpu's 0644 file (the tests run as root, who may write it)
    monkeypatch.setattr(amd_backend.os, "access", lambda path, mode: mode != os.W_OK)
    with pytest.raises(NoPermission) as refused:
        backend.set_power_limit(0, 261.0)
    backend.close()
    assert "setting the power limit of GPU 0 needs root" in str(refused.value)
    monkeypatch.setattr(safety.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(safety, "_has_cap_sys_admin", lambda: False)
    needs = safety.what_is_needed(refused.value)
    assert needs == amd_backend.NEEDS and "CAP_SYS_ADMIN" not in needs
    assert int(cap.read_text()) == ORIGINAL_UW


def test_an_intel_card_is_refused_with_the_reason(tmp_path):
    root = mount_intel(tmp_path / "root", A380)
    out = advise(root, tmp_path / "xdg", "--sweep", backend="intel")
    assert out.returncode == 0, out.stderr
    assert ("gputop: cannot sweep: the intel backend does not set power limits: writing i915/xe's"
            " hwmon power1_max is not supported yet") in out.stderr
    assert "nvidia-smi" not in out.stderr + out.stdout

"""Simulated data never reaches a script that asked for a device.

Where no device answers, every script-facing command fails as nvidia-smi does without a driver:
one line naming the reason, nvidia-smi's exit code for it. Only the dashboard falls back to the
simulator, and says so. ``--backend sim`` keeps working everywhere, marked as such.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from gputop.backends import open_backend
from gputop.backends.base import BackendOptions, NoDevice
from gputop.commands.main import main
from tests.support.fake_pynvml import FakeNvml, install, node
from tests.support.paths import gputop_cmd

SCRIPT_COMMANDS = {
    "query-gpu": ["--query-gpu=index,name,utilization.gpu", "--format=csv,noheader"],
    "query-gpu-loop": ["--query-gpu=index", "--format=csv", "-l", "1"],
    "query-compute-apps": ["--query-compute-apps=pid,used_memory", "--format=csv"],
    "snapshot": ["snapshot"],
    "snapshot-json": ["snapshot", "--json"],
    "agent": ["agent", "--ignore-stdin"],
    "advise": ["advise", "--window", "1"],
    "advise-sweep": ["advise", "--sweep", "--dry-run"],
}
DRIVER_NOT_LOADED = 9


def no_device_env(tmp_path: Path) -> dict[str, str]:
    """No libnvidia-ml.so.1 for the real nvidia-ml-py to load, no npu-smi on PATH."""
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUTOP_")}
    env.update(LD_LIBRARY_PATH=str(empty), PATH=str(empty))
    return env


def assert_no_readings(argv: list[str], stdout: str) -> None:
    """Nothing but the agent's hello (sent before the backend opens, so a slow first read never
    looks like a dead node) reaches stdout: no device, simulated or not."""
    lines = stdout.splitlines()
    if argv[0] == "agent":
        assert len(lines) == 1 and json.loads(lines[0])["hello"] == "gputop"
        assert "devices" not in lines[0]
    else:
        assert stdout == ""


@pytest.mark.parametrize("argv", SCRIPT_COMMANDS.values(), ids=SCRIPT_COMMANDS.keys())
def test_no_nvml_library_is_exit_12_and_one_line(tmp_path, argv):
    r = subprocess.run(gputop_cmd(*argv), capture_output=True, text=True, timeout=30,
                       env=no_device_env(tmp_path), stdin=subprocess.DEVNULL)
    assert r.returncode == 12, r.stderr  # nvidia-smi: NVML Shared Library couldn't be found
    assert_no_readings(argv, r.stdout)
    assert r.stderr.splitlines() == [
        "gputop: no GPU or NPU answered: NVML: libnvidia-ml.so.1 not found (is the NVIDIA driver"
        " installed?)"]


@pytest.mark.parametrize("argv", SCRIPT_COMMANDS.values(), ids=SCRIPT_COMMANDS.keys())
def test_nvml_init_error_is_nvidia_smis_exit_code(monkeypatch, capsys, argv):
    fake = install(monkeypatch, FakeNvml(node(2)))
    fake.init_error = DRIVER_NOT_LOADED
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(argv) == 9  # nvidia-smi: NVIDIA driver is not loaded
    out, err = capsys.readouterr()
    assert_no_readings(argv, out)
    assert err == "gputop: no GPU or NPU answered: NVML: NVIDIA driver not loaded\n"


def test_a_found_npu_smi_that_fails_is_named_too(tmp_path):
    tool = tmp_path / "bin" / "npu-smi"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho 'dcmi module initialize failed' >&2\nexit 1\n")
    tool.chmod(0o755)
    env = no_device_env(tmp_path)
    env["PATH"] = str(tool.parent)
    r = subprocess.run(gputop_cmd("snapshot", "--json"), capture_output=True, text=True,
                       timeout=30, env=env)
    assert r.returncode == 12 and r.stdout == "", r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "NVML: libnvidia-ml.so.1 not found" in lines[0]
    assert "npu-smi" in lines[0]


def test_the_policy_is_one_flag_of_open_backend(monkeypatch):
    install(monkeypatch, FakeNvml(node(1))).init_error = DRIVER_NOT_LOADED
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(NoDevice) as caught:
        open_backend("auto", BackendOptions())
    assert caught.value.exit_code == 9
    backend = open_backend("auto", BackendOptions(), simulate_if_absent=True)
    try:
        assert backend.name == "sim"
        assert backend.fallback_reason == "NVML: NVIDIA driver not loaded"
    finally:
        backend.close()


def test_the_dashboard_alone_falls_back_and_says_so(monkeypatch):
    """run_dashboard opens auto with the fallback allowed; the app shows the reason."""
    import gputop.tui.app as app_module

    install(monkeypatch, FakeNvml(node(1))).init_error = DRIVER_NOT_LOADED
    monkeypatch.setenv("PATH", "/nonexistent")
    seen = {}

    class Recorder:
        def __init__(self, backend, **kw):
            seen["backend"] = backend.name
            seen["reason"] = backend.fallback_reason
            self.return_code = 0

        def run_until_stopped(self, lifeline):  # TerminalApp's way to run
            return self.return_code

    monkeypatch.setattr(app_module, "GputopApp", Recorder)
    assert main([]) == 0
    assert seen == {"backend": "sim", "reason": "NVML: NVIDIA driver not loaded"}


def test_asking_for_the_simulator_still_works_and_is_marked(tmp_path):
    env = no_device_env(tmp_path)
    r = subprocess.run(gputop_cmd("snapshot", "--json", "--backend", "sim"), capture_output=True,
                       text=True, timeout=30, env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["backend"] == "sim"
    r = subprocess.run(gputop_cmd("--backend", "sim", "--query-gpu=index,name", "--format=csv"),
                       capture_output=True, text=True, timeout=30, env=env)
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.splitlines()[0] == "index, name"  # nvidia-smi's bytes, no marker in the CSV

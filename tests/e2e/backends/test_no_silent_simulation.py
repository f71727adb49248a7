"""Each script-facing command, run as a process on a machine with no NVML library and no
working npu-smi, fails as nvidia-smi does without a driver (one line, exit 12) and prints no
reading; `--backend sim` still works there, marked as such."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.no_device import SCRIPT_COMMANDS, assert_no_readings
from tests.support.paths import gputop_cmd


def no_device_env(tmp_path: Path) -> dict[str, str]:
    """No libnvidia-ml.so.1 for the real nvidia-ml-py to load, no npu-smi on PATH."""
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUTOP_")}
    env.update(LD_LIBRARY_PATH=str(empty), PATH=str(empty))
    return env


@pytest.mark.parametrize("argv", SCRIPT_COMMANDS.values(), ids=SCRIPT_COMMANDS.keys())
def test_no_nvml_library_is_exit_12_and_one_line(tmp_path, argv):
    r = subprocess.run(gputop_cmd(*argv), capture_output=True, text=True, timeout=30,
                       env=no_device_env(tmp_path), stdin=subprocess.DEVNULL)
    assert r.returncode == 12, r.stderr  # nvidia-smi: NVML Shared Library couldn't be found
    assert_no_readings(argv, r.stdout)
    assert r.stderr.splitlines() == [
        "gputop: no GPU or NPU answered: NVML: libnvidia-ml.so.1 not found (is the NVIDIA driver"
        " installed?)"]


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


def test_asking_for_the_simulator_still_works_and_is_marked(tmp_path):
    env = no_device_env(tmp_path)
    r = subprocess.run(gputop_cmd("snapshot", "--json", "--backend", "sim"), capture_output=True,
                       text=True, timeout=30, env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["backend"] == "sim"
    r = subprocess.run(gputop_cmd("--backend", "sim", "--query-gpu=index,name", "--format=csv"),
                       capture_output=True, text=True, timeout=30, env=env)
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.splitlines()[0] == "index, name"  # nvidia-smi's bytes, no marker in the CSV

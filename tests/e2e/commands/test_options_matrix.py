"""Hostile numbers that once hung, overflowed or were accepted, each in a process of its own: one
line, exit 2, at once; npu-smi's timeout from the environment likewise; and the entry point
imported by no command module as they run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import gputop_cmd


def run_cli(*args: str, env: dict | None = None, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run(gputop_cmd(*args), capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("argv", [
    ["agent", "--backend", "sim", "--interval", "inf", "--ignore-stdin"],  # hung; traceback
    ["--backend", "sim", "--query-gpu=index", "--format=csv", "-lms",
     "99999999999999999999999999"],  # OverflowError
    ["snapshot", "--backend", "sim", "--window", "1e309"],  # never returned
    ["snapshot", "--backend", "sim", "--interval", "1e-320"],  # was accepted
], ids=["agent-interval-inf", "lms-huge", "window-1e309", "interval-1e-320"])
def test_the_reported_cases_end_at_once_in_one_line(argv):
    r = run_cli(*argv)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr


@pytest.mark.parametrize("value", ["inf", "nan", "1e309", "1e-320", "-1", "0", "99999999999999999999999999", "x"])
def test_npu_smi_timeout_from_the_environment(tmp_path: Path, value):
    tool = tmp_path / "npu-smi"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    r = run_cli("snapshot", "--backend", "npu-smi", "--npu-smi", str(tool),
                env={"GPUTOP_NPU_SMI_TIMEOUT": value})
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines() == [r.stderr.strip()] and "Traceback" not in r.stderr
    assert re.search(r"GPUTOP_NPU_SMI_TIMEOUT: expected a number from 0\.1 to 3600 s", r.stderr)


def test_options_module_is_below_the_entry_point():
    """No module under gputop/ imports the entry point: it imports them, not the reverse. The
    import-linter contract "commands" (pyproject.toml, run by
    tests/e2e/commands/test_import_hygiene.py) keeps it so in the source; this checks the
    modules as they run."""
    # importing every command module does not pull it in
    probe = ("import sys, importlib\n"
             "for m in ('gputop.config.options', 'gputop.commands.query', 'gputop.commands.snapshot',"
             " 'gputop.commands.agent', 'gputop.commands.advise', 'gputop.commands.cluster',"
             " 'gputop.commands.replay', 'gputop.tui.app'):\n"
             "    importlib.import_module(m)\n"
             "print('gputop.commands.main' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "False", r.stderr

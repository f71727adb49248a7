"""A fake vendor tool (`npu-smi`, `amd-smi`): a small Python script that prints the real captured
samples.

It is written into tmp_path and put first on PATH, so the backend's real subprocess path runs.
Rules map npu-smi's arguments (fnmatch patterns over the joined argv) to what it should do:
print a fixture file, sleep first, exit with a status, print given text, or print the file
forever (a tool gone wild). Each run appends its PID to pids.log (for the no-orphan tests).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from tests.support.paths import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "npu-smi"

SCRIPT = """#!{python} -S
import fnmatch, json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "fake-{name}.json"), encoding="utf-8") as fh:
    rules = json.load(fh)
argv = " ".join(sys.argv[1:])
with open(os.path.join(here, "calls.log"), "a", encoding="utf-8") as fh:
    fh.write(argv + "\\n")
with open(os.path.join(here, "pids.log"), "a", encoding="utf-8") as fh:
    fh.write(str(os.getpid()) + "\\n")
for pattern, act in rules:
    if fnmatch.fnmatchcase(argv, pattern):
        break
else:
    sys.stderr.write({usage!r})
    sys.exit(2)
time.sleep(act.get("delay", 0))
sys.stdout.write(act.get("before", ""))
sys.stdout.flush()
if "file" in act:
    with open(act["file"], "rb") as fh:
        data = fh.read()
    sys.stdout.buffer.write(data)
    while act.get("forever"):
        sys.stdout.buffer.write(data)
sys.stdout.write(act.get("stdout", ""))
sys.stderr.write(act.get("stderr", ""))
sys.stdout.flush()
sys.exit(act.get("rc", 0))
"""


class FakeTool:
    """A fake ``name`` in ``folder``, printing files of ``fixtures``; its usage line is what it
    prints for arguments no rule matches."""

    def __init__(self, folder: Path, name: str, fixtures: Path, usage: str) -> None:
        self.folder = folder
        self.name = name
        self.fixtures = fixtures
        self.path = folder / name
        self.path.write_text(SCRIPT.format(python=sys.executable, name=name, usage=usage),
                             encoding="utf-8")
        self.path.chmod(self.path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        self.set([])

    def set(self, rules: list[tuple[str, dict]]) -> None:
        """Rules: (pattern, action); action keys: file (fixture name), delay, rc, before (text
        printed before the file), stdout (after it), stderr, forever (print the file again and
        again)."""
        out = []
        for pattern, act in rules:
            act = dict(act)
            if "file" in act:
                act["file"] = str(self.fixtures / act["file"])
            out.append([pattern, act])
        tmp = self.folder / f"fake-{self.name}.json.tmp"
        tmp.write_text(json.dumps(out), encoding="utf-8")
        os.replace(tmp, self.folder / f"fake-{self.name}.json")  # never half a file to the fake

    def pids(self) -> list[int]:
        log = self.folder / "pids.log"
        return [int(p) for p in log.read_text().split()] if log.exists() else []

    def calls(self) -> list[str]:
        log = self.folder / "calls.log"
        return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


class FakeNpuSmi(FakeTool):
    def __init__(self, folder: Path) -> None:
        super().__init__(folder, "npu-smi", FIXTURES,
                         "Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]\n")


def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A new folder first on PATH, for a fake tool."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return folder


@pytest.fixture(name="fake_npu_smi")
def fake_npu_smi_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeNpuSmi:
    return FakeNpuSmi(on_path(tmp_path, monkeypatch))

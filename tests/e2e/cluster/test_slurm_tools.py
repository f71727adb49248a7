"""`cluster --slurm` with fake Slurm commands on PATH (shell scripts in tmp_path): a tool that
prints invalid UTF-8 or binary garbage, a hostile node name or job id, prints forever, hangs
with a child, or fails with escape sequences is one line naming the tool and exit 1, in bounded
memory and time, and leaves no child running."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gputop.cluster import slurm
from tests.support.paths import ROOT
from tests.support.peak_rss import peak_run
from tests.support.procs import alive, child_pids_fixture, gone_soon  # noqa: F401 - the fixture

MAX_PEAK_KIB = 200 << 10


@pytest.fixture
def fakebin(tmp_path, monkeypatch):
    """A folder put first on PATH (here and for gputop subprocesses), and a function writing a
    fake Slurm command into it."""
    folder = tmp_path / "fakebin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")

    def tool(name: str, script: str) -> Path:
        path = folder / name
        path.write_text("#!/bin/sh\n" + script + "\n")
        path.chmod(0o755)
        return path

    return tool


def cluster_slurm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gputop", "cluster", *args, "--once"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def garbage(tmp_path: Path) -> Path:
    """Bytes no tool prints: every byte value, shuffled (seeded: the same each run)."""
    data = bytes(range(256)) * 16
    path = tmp_path / "garbage.bin"
    path.write_bytes(bytes(random.Random(24).sample(data, len(data))))
    return path


@pytest.mark.parametrize("script, needle", [
    (r"printf 'RUNNING gpu\377\376\n'",
     "squeue printed something that is not a Slurm answer: not UTF-8 text (byte 0xff at offset 11)"),
    ("cat {garbage}", "squeue printed something that is not a Slurm answer: not UTF-8 text"),
    (r"printf 'RUNNING gpu01\000\n'", "squeue printed something that is not a Slurm answer: "
                                      "holds a NUL byte"),
], ids=["invalid-utf8", "garbage", "nul"])
def test_unreadable_squeue_output_is_one_line(fakebin, tmp_path, script, needle):
    fakebin("squeue", script.format(garbage=garbage(tmp_path)))
    out = cluster_slurm("--slurm", "42")
    assert out.returncode == 1
    assert out.stderr.splitlines() == [out.stderr.strip()] and needle in out.stderr, out.stderr


def test_a_node_name_slurm_gives_that_is_no_host_name_is_refused(fakebin):
    fakebin("squeue", "echo 'RUNNING gpu[01-02]'")
    fakebin("scontrol", "echo gpu01; echo '-oProxyCommand=/tmp/owned'")
    out = cluster_slurm("--slurm", "42")
    assert out.returncode == 1
    assert out.stderr.strip() == ("gputop: scontrol show hostnames: refusing host name "
                                  "'-oProxyCommand=/tmp/owned': it starts with '-' "
                                  "(ssh would read it as an option)")


def test_a_job_id_squeue_gives_that_is_no_job_id_is_refused(fakebin):
    fakebin("squeue", r"printf '42\033[2J gpu01\n'")
    with pytest.raises(slurm.SlurmError, match=r"^squeue printed '42\\x1b\[2J' where a job id"):
        slurm.my_jobs()


def test_a_failing_tools_message_is_one_printable_line(fakebin):
    fakebin("squeue", r"printf '\033]0;owned\007slurm_load_jobs error\033[2J\n' >&2; exit 1")
    out = cluster_slurm("--slurm", "42")
    assert out.returncode == 1
    assert out.stderr == "gputop: squeue: ^[]0;owned^Gslurm_load_jobs error^[[2J\n"


def test_squeue_printing_forever_is_stopped_in_bounded_memory(fakebin, child_pids, tmp_path):
    pidfile = tmp_path / "child.pid"
    fakebin("squeue", f"sleep 1000 & echo $! > {pidfile}; exec yes 'RUNNING gpu01'")
    started = time.monotonic()
    code, peak_kib, stderr = peak_run("cluster", "--slurm", "42", "--once", timeout=60)
    child_pids.append(int(pidfile.read_text()))
    assert time.monotonic() - started < slurm.TIMEOUT_S  # at the cap, not at the timeout
    assert code == 1
    assert stderr == "gputop: squeue printed more than 4 MiB, more than any real answer: " \
                     "stopped it"
    assert peak_kib < MAX_PEAK_KIB, f"peak RSS {peak_kib >> 10} MiB"
    assert gone_soon(child_pids[0])


def test_a_hung_squeue_and_its_child_are_stopped(fakebin, child_pids, tmp_path, monkeypatch):
    monkeypatch.setattr(slurm, "TIMEOUT_S", 1.0)
    pidfile = tmp_path / "child.pid"
    fakebin("squeue", f"sleep 1000 & echo $! > {pidfile}; wait")
    started = time.monotonic()
    with pytest.raises(slurm.SlurmError) as caught:
        slurm.job_nodes("42")
    child_pids.append(int(pidfile.read_text()))
    assert gone_soon(child_pids[0]), "the hung squeue's child is still running"
    assert time.monotonic() - started < 3.0
    assert str(caught.value) == "squeue did not answer in 1 s: stopped it"


def test_a_child_left_behind_by_a_slurm_command_that_answered_is_stopped(fakebin, child_pids,
                                                                         tmp_path):
    pidfile = tmp_path / "child.pid"
    fakebin("squeue", f"sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > {pidfile}; "
                      "echo 'RUNNING gpu01'")
    fakebin("scontrol", "echo gpu01")
    assert slurm.job_nodes("42") == ["gpu01"]
    child_pids.append(int(pidfile.read_text()))
    assert gone_soon(child_pids[0])

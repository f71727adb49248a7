"""Plain `gputop` with no terminal to open the dashboard on prints the text view once and exits,
as nvidia-smi prints its table: through a pipe, to /dev/null, and on a pseudo-terminal it does
not control (`setsid`). Before, it started the full-screen app on stderr and never returned."""

from __future__ import annotations

import os
import re
import subprocess
import time

from tests.support.paths import ROOT, gputop_cmd

SIM = ("--backend", "sim", "--scenario", "training", "--seed", "1")


def test_through_a_pipe_it_prints_the_text_view_once_and_exits_0():
    start = time.monotonic()
    out = subprocess.run(gputop_cmd(*SIM), cwd=ROOT, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=30)
    took = time.monotonic() - start
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "backend: SIMULATED" in lines[0]  # the simulator, as asked, and said
    assert [line[:4] for line in lines[1:9]] == [f"[{i}] " for i in range(8)]
    assert "\x1b" not in out.stdout and out.stderr == ""  # no screen, no colour: a pipe
    expected = subprocess.run(gputop_cmd("snapshot", *SIM), cwd=ROOT, capture_output=True,
                              text=True, timeout=30).stdout
    assert out.stdout.splitlines()[1:] == expected.splitlines()[1:]  # `gputop snapshot`'s view
    assert took < 10.0  # a process that ends; about 0.3 s on this machine


def test_to_dev_null_with_no_input_it_exits_0():
    with open(os.devnull, "r+b") as null:
        out = subprocess.run(gputop_cmd(*SIM), cwd=ROOT, stdin=null, stdout=null,
                             stderr=subprocess.PIPE, timeout=30)
    assert out.returncode == 0 and out.stderr == b""


def test_on_a_terminal_it_does_not_control_it_prints_once(tmp_path):
    """`setsid gputop` on a pty: input and output are a TTY, but no controlling terminal."""
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(gputop_cmd(*SIM), cwd=ROOT, stdin=slave, stdout=slave,
                                stderr=slave, start_new_session=True)
        os.close(slave)
        slave = -1
        data = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every holder of the pty's other end has closed it
                break
            if not chunk:
                break
            data += chunk
        assert proc.wait(30) == 0, data
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
    raw = data.decode()
    assert "\x1b[?1049h" not in raw  # no alternate screen: the dashboard never started
    text = re.sub(r"\x1b\[[0-9;]*m", "", raw)  # a terminal: the text view in colour
    assert "backend: SIMULATED" in text and "[7] " in text


def test_replay_without_a_terminal_is_one_line(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("timestamp, index, utilization.gpu [%]\n"
                   "2026/11/26 03:00:00.000, 0, 50 %\n")
    out = subprocess.run(gputop_cmd("replay", str(log)), cwd=ROOT, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == ("gputop: replay opens the dashboard, which needs a terminal (standard "
                          "input and output a TTY)\n")

"""`gputop snapshot` on untrusted logs, as a process: /dev/zero and a FIFO are refused at once
with one line (and little memory), an over-long line is one line, and a 4000-digit mask is N/A
in strict JSON."""

from __future__ import annotations

import os
import subprocess
import time

from gputop.backends.replay.backend import MAX_LINE_BYTES
from tests.support import strict_json
from tests.support.paths import ROOT, gputop_cmd
from tests.support.peak_rss import peak_run
from tests.support.query import HOSTILE_LOG_HEADER


def test_dev_zero_is_refused_with_one_line_and_little_memory():
    code, peak_kib, stderr = peak_run("snapshot", "--json", "--backend", "replay",
                                      "--replay", "/dev/zero")
    assert code == 1 and stderr == "gputop: cannot read log /dev/zero: not a regular file (a device)"
    assert peak_kib < 300 * 1024


def test_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "log.csv"
    os.mkfifo(fifo)
    started = time.monotonic()
    proc = subprocess.run(gputop_cmd("snapshot", "--backend", "replay", "--replay", str(fifo)),
                          capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert time.monotonic() - started < 20
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert "not a regular file" in proc.stderr


def test_a_line_over_the_cap_is_one_line(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text(HOSTILE_LOG_HEADER + "\n" + "9" * (MAX_LINE_BYTES + 10) + "\n")
    proc = subprocess.run(gputop_cmd("snapshot", "--backend", "replay", "--replay", str(log)),
                          capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert proc.returncode != 0 and proc.stderr.count("\n") == 1
    assert f"{log}:2: a line longer than 1 MiB" in proc.stderr


def test_a_4000_digit_mask_is_not_a_value_and_the_json_is_whole(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text(HOSTILE_LOG_HEADER + "\n2026/07/14 08:12:38.696, 0, 0x" + "f" * 4000 +
                   ", 1e400 W, nan MiB, 0x" + "9" * 4000 + ", -" + "9" * 500 + "\n")
    proc = subprocess.run(gputop_cmd("snapshot", "--json", "--backend", "replay", "--replay",
                                     str(log)), capture_output=True, text=True, timeout=30,
                          cwd=ROOT)
    assert proc.returncode == 0 and proc.stderr == ""
    [dev] = strict_json.loads(proc.stdout)["devices"]
    assert dev["clock_event_mask"] is None and dev["power_draw_w"] is None
    assert dev["memory_used_mib"] is None and dev["pci_device_id"] is None
    assert dev["temperature_c"] is None



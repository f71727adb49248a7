"""Replay through query mode as a process: a real capture written back to a file byte for
byte, and a malformed log as one line naming its line."""

from __future__ import annotations

import subprocess

from tests.support.paths import ROOT, gputop_cmd
from tests.support.query import FIX, replay_argv


def test_round_trip_in_a_subprocess_to_a_file(tmp_path):
    capture = FIX / "csv_all-fields_1xH100-80GB-HBM3_590.48.01_load.csv"
    out = tmp_path / "again.csv"
    proc = subprocess.run(gputop_cmd(*replay_argv(capture, "-f", str(out))), cwd=ROOT,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""
    assert out.read_bytes() == capture.read_bytes()


def test_malformed_log_is_one_clear_line_from_the_cli(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("index, name\n0, a\n1\n")
    proc = subprocess.run(gputop_cmd("--backend", "replay", "--replay", str(path),
                                     "--query-gpu=index", "--format=csv"),
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr == f"gputop: {path}:3: expected 2 cells as in the header, found 1\n"



"""Every field of every real all-fields capture, asked of `gputop --query-gpu` in a process: the
header line is the capture's, byte for byte."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.paths import ROOT, gputop_cmd
from tests.support.query import ALL_FIELDS_CAPTURES, header_names


@pytest.mark.parametrize("capture", ALL_FIELDS_CAPTURES, ids=lambda p: p.name)
def test_all_fields_header_line_is_byte_identical(capture):
    first = capture.read_bytes().split(b"\n", 1)[0] + b"\n"
    names = ",".join(header_names(capture))
    out = subprocess.run(gputop_cmd("--backend", "sim", f"--query-gpu={names}", "--format=csv",
                                    "-i", "0"), capture_output=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(b"\n", 1)[0] + b"\n" == first



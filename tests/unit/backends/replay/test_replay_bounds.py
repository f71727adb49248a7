"""Replay reads untrusted logs within bounds: a device or a FIFO is refused with one line (its
peak memory stays small), lines are capped, and any number a cell holds (huge, negative,
non-finite, a 4000-digit mask) becomes a value the model can hold or N/A: `snapshot --json` is
always strict JSON."""

from __future__ import annotations

import json
import os
import subprocess
import time

import hypothesis
import hypothesis.strategies as st

from gputop.backends.base import BackendOptions
from gputop.backends.replay.backend import MAX_LINE_BYTES, ReplayBackend
from gputop.core import jsonout
from gputop.core.errors import GputopError
from gputop.core.model import snapshot_to_json
from gputop.core.untrusted import number_ok
from tests.support.paths import ROOT, gputop_cmd
from tests.support.peak_rss import peak_run

HEADER = ("timestamp, index, clocks_event_reasons.active, power.draw [W], memory.used [MiB], "
          "pci.device_id, temperature.gpu")


def strict(text: str):
    def refuse(name):
        raise AssertionError(f"{name} in the output")
    return json.loads(text, parse_constant=refuse)


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
    log.write_text(HEADER + "\n" + "9" * (MAX_LINE_BYTES + 10) + "\n")
    proc = subprocess.run(gputop_cmd("snapshot", "--backend", "replay", "--replay", str(log)),
                          capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert proc.returncode != 0 and proc.stderr.count("\n") == 1
    assert f"{log}:2: a line longer than 1 MiB" in proc.stderr


def test_a_4000_digit_mask_is_not_a_value_and_the_json_is_whole(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text(HEADER + "\n2026/07/14 08:12:38.696, 0, 0x" + "f" * 4000 +
                   ", 1e400 W, nan MiB, 0x" + "9" * 4000 + ", -" + "9" * 500 + "\n")
    proc = subprocess.run(gputop_cmd("snapshot", "--json", "--backend", "replay", "--replay",
                                     str(log)), capture_output=True, text=True, timeout=30,
                          cwd=ROOT)
    assert proc.returncode == 0 and proc.stderr == ""
    [dev] = strict(proc.stdout)["devices"]
    assert dev["clock_event_mask"] is None and dev["power_draw_w"] is None
    assert dev["memory_used_mib"] is None and dev["pci_device_id"] is None
    assert dev["temperature_c"] is None


numbers = st.one_of(
    st.integers(min_value=-10**600, max_value=10**600).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e400", "-1e400", "inf", "nan", "NaN", "-0", "1e-320", "0x" + "f" * 3000]),
    st.integers(min_value=0, max_value=2**80).map(hex),
    st.text(alphabet="0123456789abcdefx.e+- ", max_size=60),
)


@hypothesis.settings(max_examples=120, deadline=None)
@hypothesis.given(cells=st.lists(numbers, min_size=6, max_size=6))
def test_any_cells_give_model_numbers_and_strict_json(tmp_path_factory, cells):
    log = tmp_path_factory.mktemp("replay") / "log.csv"
    log.write_text(HEADER + "\n2026/07/14 08:12:38.696, " + ", ".join(c.replace(",", "")
                                                                      for c in cells) + "\n")
    backend = ReplayBackend(BackendOptions(replay=str(log)))
    try:
        backend.open()
    except GputopError as exc:  # a typed, one-line error is fine (a bad index)
        assert "\n" not in str(exc)
        return
    doc = snapshot_to_json(backend.sample())
    strict(jsonout.dumps(doc))
    for dev in doc["devices"]:
        for key, value in dev.items():
            if type(value) in (int, float):
                assert number_ok(value), (key, value)

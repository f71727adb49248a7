"""State files are untrusted input: the simulator's --sim-state file and the advisor's journal.

Each is checked for shape, types, finiteness and the device's own power-limit range before it is
used; a bad one is one line naming the file and what is wrong, and nothing is changed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gputop.advisor import journal
from gputop.backends import open_backend
from gputop.backends.base import BackendError, BackendOptions
from gputop.core import userfile
from gputop.core.errors import GputopError

MIN_W, MAX_W = 200, 700  # the training scenario's H100: power_limit_min_w .. max_w


def sim_uuid0(tmp_path: Path) -> str:
    backend = open_backend("sim", BackendOptions())
    try:
        return backend.info().devices[0].uuid
    finally:
        backend.close()


BAD_DOCUMENTS = {
    "list-for-limits": ('{"power_limits": [1]}', "must map GPU UUIDs to watts, found an array"),
    "list-document": ("[1]", "expected a JSON object, found an array"),
    "null-document": ("null", "expected a JSON object, found null"),
    "truncated": ('{"power_limits": {', "not valid JSON"),
    "string-limits": ('{"power_limits": "700"}', "found a string"),
}
BAD_LIMITS = ["0", "true", "NaN", "-500", "1", "Infinity", "1e400", '"700"', "null", "[600]",
              "{}", "9" * 400, "700.5"]


@pytest.mark.parametrize("text,message", BAD_DOCUMENTS.values(), ids=BAD_DOCUMENTS.keys())
def test_a_bad_sim_state_document_is_one_line(tmp_path, text, message):
    state = tmp_path / "state.json"
    state.write_text(text)
    with pytest.raises(BackendError, match=message) as caught:
        open_backend("sim", BackendOptions(sim_state=str(state)))
    assert str(state) in str(caught.value)


@pytest.mark.parametrize("value", BAD_LIMITS, ids=lambda v: v[:12])
def test_a_limit_outside_the_devices_range_is_refused(tmp_path, value):
    uuid = sim_uuid0(tmp_path)
    state = tmp_path / "state.json"
    state.write_text(f'{{"power_limits": {{"{uuid}": {value}}}}}')
    with pytest.raises(BackendError) as caught:
        open_backend("sim", BackendOptions(sim_state=str(state)))
    text = str(caught.value)
    # NaN and Infinity are not JSON at all: refused by the reader before any range is looked at
    why = "is not a number JSON allows" if value in ("NaN", "Infinity") else \
        f"range {MIN_W}-{MAX_W} W"
    assert str(state) in text and why in text and len(text) < 300


def test_a_good_limit_is_used(tmp_path):
    uuid = sim_uuid0(tmp_path)
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"power_limits": {uuid: 450, "GPU-of-another-node": 1}}))
    backend = open_backend("sim", BackendOptions(sim_state=str(state)))
    try:
        assert backend.sample([0]).devices[0].power_limit_w == 450
    finally:
        backend.close()


def journal_doc(**devices_and_fields) -> dict:
    doc = {"schema": journal.SCHEMA, "host": "h", "backend": "sim", "pid": 1, "started": 1.0,
           "devices": [{"index": 0, "uuid": "GPU-x", "original_limit_w": 700.0}]}
    doc.update(devices_and_fields)
    return doc


BAD_JOURNALS = {
    "list": ([1], "the document is an array"),
    "devices-null": (journal_doc(devices=None), '"devices" is null'),
    "devices-dict": (journal_doc(devices={}), '"devices" is an object'),
    "entry-list": (journal_doc(devices=[[0, 700]]), "devices[0] is an array"),
    "limit-true": (journal_doc(devices=[{"index": 0, "uuid": "GPU-x", "original_limit_w": True}]),
                   '"original_limit_w"] is a boolean'),
    "limit-string": (journal_doc(devices=[{"index": 0, "uuid": "GPU-x",
                                           "original_limit_w": "700"}]), "is a string"),
    "limit-negative": (journal_doc(devices=[{"index": 0, "uuid": "GPU-x",
                                             "original_limit_w": -500}]), "out of range"),
    "limit-zero": (journal_doc(devices=[{"index": 0, "uuid": "GPU-x", "original_limit_w": 0}]),
                   "out of range"),
    "index-float": (journal_doc(devices=[{"index": 0.5, "uuid": "GPU-x",
                                          "original_limit_w": 700}]), '"index"] is a number 0.5'),
    "uuid-number": (journal_doc(devices=[{"index": 0, "uuid": 7, "original_limit_w": 700}]),
                    '"uuid"] is a number'),
    "pid-string": (journal_doc(pid="1"), '"pid" is a string'),
    "host-null": (journal_doc(host=None), '"host" is null'),
}


@pytest.mark.parametrize("doc,message", BAD_JOURNALS.values(), ids=BAD_JOURNALS.keys())
def test_a_bad_journal_is_one_clear_error(tmp_path, doc, message):
    path = tmp_path / "power-limits-h-sim-x.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(GputopError) as caught:
        journal.read(path)
    text = str(caught.value)
    assert str(path) in text and message in text and "\n" not in text, text


def test_a_journal_with_nan_or_truncated_json_is_one_clear_error(tmp_path):
    path = tmp_path / "power-limits-h-sim-x.json"
    path.write_text(json.dumps(journal_doc()).replace("700.0", "NaN"))
    with pytest.raises(GputopError, match="NaN is not a number JSON allows"):
        journal.read(path)
    path.write_text(json.dumps(journal_doc())[:40])
    with pytest.raises(GputopError, match="unreadable"):
        journal.read(path)


def test_restoring_a_limit_outside_the_devices_range_changes_nothing(tmp_path, monkeypatch):
    """A journal holding 50 W (below the minimum) must not end in 'could not restore' after touching the GPUs."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    state = tmp_path / "state.json"
    backend = open_backend("sim", BackendOptions(sim_state=str(state)))
    try:
        info = backend.info()
        backend.set_power_limit(1, 500)  # something a restore would change
        entries = [journal.JournalEntry(1, info.devices[1].uuid, 700.0),
                   journal.JournalEntry(0, info.devices[0].uuid, 50.0)]
        path = journal.journal_path(info.host, "sim", [e.uuid for e in entries])
        j = journal.write(path, info.host, "sim", entries)
        with pytest.raises(GputopError) as caught:
            journal.restore_from(backend, journal.read(j.path))
        text = str(caught.value)
        assert "outside its range 200-700 W; nothing was changed" in text
        assert "could not restore" not in text
        assert backend.sample([1]).devices[0].power_limit_w == 500  # untouched
        assert path.exists()
    finally:
        backend.close()


def test_a_state_file_or_journal_that_never_ends_is_refused_at_once(tmp_path):
    with pytest.raises(BackendError, match="not a regular file"):
        open_backend("sim", BackendOptions(sim_state="/dev/zero"))
    fifo = tmp_path / "power-limits-fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(GputopError, match="not a regular file"):
        journal.read(fifo)
    big = tmp_path / "power-limits-big.json"
    big.write_text(" " * (userfile.MAX_BYTES + 1))
    with pytest.raises(GputopError, match="larger than 1 MiB"):
        journal.read(big)

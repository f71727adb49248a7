"""The dashboard's recording (gputop.query.recorder.Recording): the CSV log as before, and
beside it the snapshot stream, which `gputop report` reads back."""

from __future__ import annotations

import json

import pytest

from gputop.analysis.waste import READS
from gputop.cluster.protocol import AgentDecoder, Checked, Hello, build_snapshot
from gputop.core import budget
from gputop.core.errors import GputopError
from gputop.core.model import SCHEMA
from gputop.query.recorder import Recorder, Recording, stream_path
from tests.support.demo import demo_backend


def samples(n: int = 3):
    sim = demo_backend("idle-rank")
    out = []
    for _ in range(n):
        out.append(sim.sample())
        sim.clock.sleep(1.0)
    return out


def test_the_csv_is_unchanged_and_the_stream_is_the_agents_lines(tmp_path):
    snaps = samples()
    with Recorder(str(tmp_path / "alone.csv")) as alone:
        for s in snaps:
            alone.write(s)
    with Recording(str(tmp_path / "rec.csv"), "sim", "node-a") as rec:
        for s in snaps:
            rec.write(s)
    assert (tmp_path / "rec.csv").read_bytes() == (tmp_path / "alone.csv").read_bytes()
    assert rec.paths == (str(tmp_path / "rec.csv"), str(tmp_path / "rec.ndjson"))
    assert rec.shown_name == "rec.{csv,ndjson}"
    lines = (tmp_path / "rec.ndjson").read_bytes().splitlines()
    decoder = AgentDecoder()
    hello = decoder.feed(lines[0])
    assert isinstance(hello, Hello) and (hello.backend, hello.host) == ("sim", "node-a")
    assert json.loads(lines[0])["schema"] == SCHEMA
    events = [decoder.feed(line) for line in lines[1:]]
    assert all(isinstance(e, Checked) for e in events)
    assert [build_snapshot(e.doc) for e in events] == snaps  # processes and all


def test_a_stream_that_cannot_be_opened_closes_the_csv_and_says_so(tmp_path):
    (tmp_path / "rec.ndjson").mkdir()  # a folder where the stream would go
    with pytest.raises(GputopError, match="rec.ndjson"):
        Recording(str(tmp_path / "rec.csv"), "sim", "node-a")
    assert stream_path("/x/gputop-a.csv") == "/x/gputop-a.ndjson"


def test_the_recordings_wants_cover_its_csv_fields_and_the_ledgers(tmp_path):
    with Recording(str(tmp_path / "rec.csv"), "sim", "n", "timestamp,index,power.draw") as rec:
        assert budget.covers(rec.wants, READS) and budget.covers(rec.wants, rec.csv.wants)
        assert not budget.covers(rec.csv.wants, READS)  # the CSV alone reads no processes

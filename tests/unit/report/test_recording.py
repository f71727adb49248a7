"""Recordings of the agent stream read back (gputop.report.recording): records per host, and
bad input named by file and line."""

from __future__ import annotations

import json

import pytest

from gputop.core.errors import UsageError
from gputop.core.model import Device, Job, Process, Snapshot, snapshot_to_json
from gputop.formats.agent_stream import encode_line, hello_document
from gputop.report.recording import newest_time, read_records

GIB = 1024.0


def snap(t: float, host: str = "n1", util: float = 0.0, pid: int = 1, job: str = "4242",
         energy: float | None = None) -> Snapshot:
    p = Process(pid=pid, user="alice", gpu_memory_mib=4 * GIB, started=1.0, command="python x",
                job=Job("slurm", job))
    return Snapshot(host=host, time=t, backend="sim", devices=(Device(
        index=0, uuid="GPU-0", utilization_gpu_pct=util, energy_j=energy, processes=(p,)),))


def write(path, snaps, hello: bool = True, extra: bytes = b"") -> str:
    lines = [encode_line(hello_document("sim", "n1"))] if hello else []
    lines += [encode_line(snapshot_to_json(s)) for s in snaps]
    path.write_bytes(b"".join(lines) + extra)
    return str(path)


def test_each_host_is_folded_oldest_first_into_records_with_its_node(tmp_path):
    f = write(tmp_path / "a.ndjson", [snap(t, energy=100.0 * t) for t in range(11)])
    got = read_records([f])
    (rec,) = got.records
    assert rec["nodes"] == ["n1"] and rec["job"] == "job 4242" and rec["user"] == "alice"
    assert rec["gpu_s"] == 10.0 and rec["idle_gpu_s"] == 10.0 and rec["energy_j"] == 1000.0
    assert (got.hosts, got.samples, got.first, got.last) == (["n1"], 11, 0.0, 10.0)


def test_keep_alives_unknown_keys_and_a_second_hello_are_skipped(tmp_path):
    first = json.loads(encode_line(snapshot_to_json(snap(0.0))))
    first["alerts"] = [{"rule": "x"}]  # a key the reader does not know
    first["devices"][0]["future_key"] = 1
    body = (encode_line(hello_document("sim", "n1")) + b"\n\n" + encode_line(first) + b"\n"
            + encode_line(hello_document("sim", "n2"))
            + encode_line(snapshot_to_json(snap(5.0))))
    (tmp_path / "a.ndjson").write_bytes(body)
    (rec,) = read_records([str(tmp_path / "a.ndjson")]).records
    assert rec["gpu_s"] == 5.0


def test_one_file_of_two_hosts_is_two_nodes(tmp_path):
    snaps = [snap(t, host=h) for t in range(3) for h in ("n1", "n2")]
    got = read_records([write(tmp_path / "all.ndjson", snaps)])
    assert got.hosts == ["n1", "n2"]
    assert [(r["nodes"], r["gpu_s"]) for r in got.records] == [(["n1"], 2.0), (["n2"], 2.0)]


def test_one_hosts_files_are_read_oldest_first_and_an_overlap_counted_once(tmp_path):
    late = write(tmp_path / "late.ndjson", [snap(t) for t in (10.0, 15.0, 20.0)])
    early = write(tmp_path / "early.ndjson", [snap(t) for t in (0.0, 5.0, 10.0, 15.0)])
    (rec,) = read_records([late, early]).records
    assert rec["gpu_s"] == 20.0


def test_a_job_that_ended_days_before_the_end_is_still_reported(tmp_path):
    # the live ledger lets an ended account go after a day; a report keeps the whole recording
    old = [snap(t, job="1", pid=1) for t in (0.0, 30.0)]
    new = [snap(3 * 86400 + t, job="2", pid=2) for t in (0.0, 30.0)]
    got = read_records([write(tmp_path / "a.ndjson", old + new)])
    assert sorted(r["job"] for r in got.records) == ["job 1", "job 2"]


def test_the_range_keeps_only_its_samples(tmp_path):
    f = write(tmp_path / "a.ndjson", [snap(float(t)) for t in range(0, 101, 10)])
    got = read_records([f], start=20.0, stop=50.0)
    (rec,) = got.records
    assert rec["gpu_s"] == 30.0 and (got.first, got.last, got.samples) == (20.0, 50.0, 4)
    with pytest.raises(UsageError, match="a.ndjson: no snapshot in the range asked for"):
        read_records([f], start=500.0)


def test_the_newest_time_is_read_from_the_files_ends(tmp_path):
    a = write(tmp_path / "a.ndjson", [snap(t) for t in (1.0, 2.0)], extra=b"\n\n")
    b = write(tmp_path / "b.ndjson", [snap(t) for t in (5.0, 7.5)])
    assert newest_time([a, b]) == 7.5
    assert newest_time([write(tmp_path / "c.ndjson", [])]) is None


@pytest.mark.parametrize(("body", "where", "says"), [
    (b'{"hello":"gputop","schema":"gputop/1"}\n\n{"schema": "gputop/1", "time": ', 3,
     "not JSON"),
    (b'{"hello":"gputop","schema":"gputop/1"}\n[1, 2]\n', 2, "not a valid snapshot"),
    (b'{"hello":"gputop","schema":"gputop/1"}\n{"schema":"gputop/1","host":"n","time":"x",'
     b'"backend":"sim","devices":[]}\n', 2, "not a valid snapshot"),
    (b'{"hello":"gputop","schema":"gputop/9"}\n', 1, "recorded by a gputop that speaks 'gputop/9'"),
    (b"timestamp, index, name\n", 1, "not a gputop recording"),
])
def test_a_bad_line_names_its_file_and_number(tmp_path, body, where, says):
    (tmp_path / "bad.ndjson").write_bytes(body)
    with pytest.raises(UsageError, match=rf"bad\.ndjson:{where}: {says}"):
        read_records([str(tmp_path / "bad.ndjson")])


def test_a_missing_file_and_a_file_with_no_snapshot_are_one_line_each(tmp_path):
    with pytest.raises(UsageError, match=r"cannot read .*missing\.ndjson: No such file"):
        read_records([str(tmp_path / "missing.ndjson")])
    empty = write(tmp_path / "hello-only.ndjson", [])
    good = write(tmp_path / "good.ndjson", [snap(0.0), snap(1.0)])
    with pytest.raises(UsageError, match=r"hello-only\.ndjson: no snapshot \(the recording"):
        read_records([good, empty])


def test_a_dashboard_recording_reads_as_an_agents(tmp_path):
    from gputop.query.recorder import Recording
    from tests.support.demo import demo_backend

    sim = demo_backend("idle-rank")
    with Recording(str(tmp_path / "rec.csv"), "sim", "node-a") as rec:
        for _ in range(3):
            rec.write(sim.sample())
            sim.clock.sleep(1.0)
    got = read_records([str(tmp_path / "rec.ndjson")])
    (job,) = got.records
    assert (job["job"], job["gpu_s"], job["idle_gpu_s"]) == ("job 4242", 2 * 4.0, 2 * 1.0)
    assert got.hosts == ["node-a"] and got.samples == 3


def test_adjacent_ranges_add_up_to_the_range_over_both(tmp_path):
    f = write(tmp_path / "a.ndjson", [snap(float(t), energy=10.0 * t) for t in range(0, 101, 10)])

    def used(start, stop):
        (rec,) = read_records([f], start=start, stop=stop).records
        return rec["gpu_s"], rec["energy_j"]

    # a range that starts between two samples counts the interval its first sample ends
    assert used(0.0, 45.0) == (40.0, 400.0) and used(45.0, 100.0) == (60.0, 600.0)
    assert used(0.0, 100.0) == (100.0, 1000.0)

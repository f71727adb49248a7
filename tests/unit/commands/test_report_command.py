"""`gputop report`: tables per job and user from recordings (one node, a cluster), sorted,
priced, as text, CSV and JSON; bad input is one line and exit 2."""

from __future__ import annotations

import contextlib
import csv
import io
import json

import pytest

from gputop.commands.main import main
from gputop.query.recorder import StreamRecorder
from gputop.report.rows import SORT_KEYS
from tests.support.demo import FIXED_EPOCH, demo_backend

SAMPLES, STEP = 31, 10.0  # five minutes of samples, one each 10 s
SPAN_H = (SAMPLES - 1) * STEP / 3600


def record(path, host: str, scenario: str = "idle-rank") -> str:
    """Record ``scenario`` on a simulated node named ``host`` as the dashboard's r does."""
    sim = demo_backend(scenario, host=host)
    rec = StreamRecorder(str(path), "sim", host)
    try:
        for _ in range(SAMPLES):
            rec.write(sim.sample())
            sim.clock.sleep(STEP)
    finally:
        rec.close()
        sim.close()
    return str(path)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Two nodes, each running its four ranks of Slurm job 4242, rank 3 held idle on each."""
    tmp = tmp_path_factory.mktemp("report")
    return record(tmp / "n1.ndjson", "n1"), record(tmp / "n2.ndjson", "n2")


def report(*args: str) -> tuple[int, str, str]:
    """Run `gputop report ARGS` in this process: its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["report", *args])
        except SystemExit as exc:  # argparse's refusals
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def test_a_slurm_job_on_two_nodes_is_one_row_with_both(cluster, tmp_path):
    # the simulator's truth: job 4242 holds GPUs 0-3 of each node all along, GPU 3 idle
    code, out, err = report(*cluster, "--format", "json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    (job,) = doc["jobs"]
    assert (job["job"], job["hpc_job"], job["user"], job["inferred"]) == \
        ("job 4242", "4242", "alice", False)
    assert (job["nodes"], job["hosts"], job["gpus"]) == (2, ["n1", "n2"], 8)
    assert job["gpu_h"] == pytest.approx(8 * SPAN_H, abs=1e-4)
    assert job["idle_gpu_h"] == pytest.approx(2 * SPAN_H, abs=1e-4)
    assert job["idle_pct"] == pytest.approx(25.0)
    assert (doc["nodes"], doc["samples"]) == (["n1", "n2"], 2 * SAMPLES)
    assert (doc["start"], doc["end"]) == (FIXED_EPOCH, FIXED_EPOCH + (SAMPLES - 1) * STEP)
    (user,) = doc["users"]
    assert (user["user"], user["jobs"], user["nodes"]) == ("alice", 1, 2)
    # one file holding both hosts reads the same
    both = cluster[0].replace("n1.ndjson", "both.ndjson")
    with open(both, "wb") as fh:
        for path in cluster:
            fh.write(open(path, "rb").read())
    assert json.loads(report(both, "--format", "json")[1])["jobs"] == doc["jobs"]


def test_text_shows_the_job_table_then_the_users_and_by_picks_one(cluster):
    code, out, _ = report(*cluster)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"gputop report of {cluster[0]}, {cluster[1]}: 2 nodes (n1, n2),"
                               f" {2 * SAMPLES} samples from ")
    assert lines[0].endswith("(5 min)")
    assert lines[2] == "Jobs" and lines[3].split()[:4] == ["JOB", "USER", "NODES", "GPUS"]
    assert lines[4].startswith("job 4242 alice")
    assert lines[6] == "Users" and lines[8].startswith("alice")
    assert "COST" not in out  # no price, no cost
    _, users, _ = report(*cluster, "--by", "user")
    assert "Jobs" not in users and "\nUsers\n" in users


def test_a_price_adds_the_cost_of_the_kwh(cluster):
    doc = json.loads(report(*cluster, "--format", "json", "--price", "0.25",
                            "--currency", "EUR")[1])
    (job,) = doc["jobs"]
    assert job["kwh"] > 0 and job["cost"] == pytest.approx(job["kwh"] * 0.25, abs=1e-4)
    assert (doc["price_per_kwh"], doc["currency"]) == (0.25, "EUR")
    out = report(*cluster, "--price", "0.25", "--currency", "EUR")[1]
    assert "COST (EUR)" in out and "cost at 0.25 EUR per kWh" in out


def test_csv_is_one_table_keyed_as_sort_names_its_columns(cluster):
    code, out, _ = report(*cluster, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [r["job"] for r in rows] == ["job 4242"]
    assert rows[0]["hosts"] == "n1 n2" and rows[0]["inferred"] == "false"
    assert set(rows[0]) - {"inferred", "hpc_job", "hosts"} <= set(SORT_KEYS)
    users = list(csv.DictReader(io.StringIO(report(*cluster, "--format", "csv", "--by",
                                                   "user")[1])))
    assert [u["user"] for u in users] == ["alice"]


def test_the_range_restricts_the_samples(cluster):
    doc = json.loads(report(*cluster, "--format", "json", "--since", "1m")[1])
    (job,) = doc["jobs"]
    assert doc["end"] - doc["start"] == 60.0 and doc["samples"] == 2 * 7
    assert job["gpu_h"] == pytest.approx(8 * 60 / 3600, abs=1e-4)
    until = json.loads(report(*cluster, "--format", "json", "--until",
                              str(FIXED_EPOCH + 100))[1])
    assert until["end"] == FIXED_EPOCH + 100


def test_sort_takes_any_column_and_a_bad_one_lists_the_choices(tmp_path, cluster):
    other = record(tmp_path / "n3.ndjson", "n3", scenario="training")
    doc = json.loads(report(*cluster, other, "--format", "json")[1])
    assert [j["job"] for j in doc["jobs"]][0] == "job 4242"  # the idle holder first
    by_sm = json.loads(report(*cluster, other, "--format", "json", "--sort", "sm_pct")[1])
    assert [j["inferred"] for j in by_sm["jobs"]] == [True, False]  # training's, all busy
    assert by_sm["jobs"][0]["sm_pct"] > by_sm["jobs"][1]["sm_pct"]
    code, out, err = report(*cluster, "--sort", "idle")
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "invalid choice: 'idle'" in err and "'idle_gpu_h'" in err and "'kwh'" in err


@pytest.mark.parametrize(("args", "says"), [
    ([], "name the recordings to read (FILE...) or --prometheus URL"),
    (["--price", "-1"], "expected a price per kWh of 0 or more"),
    (["--currency", "EUR"], "--currency heads the cost column: it needs --price"),
    (["--sort", "cost"], "there is a cost column only with --price"),
    (["--since", "yesterday"], "--since 'yesterday': expected a Unix time"),
    (["--since", "300", "--until", "100"], "--until 100 is not after --since 300"),
    (["--selector", '{job="gpus"}'], "--selector picks Prometheus series: it needs --prometheus"),
    (["--prometheus", "http://127.0.0.1:1"], "--prometheus needs --since"),
])
def test_bad_options_are_one_line_and_exit_2(cluster, args, says):
    files = [] if not args or args[0] == "--prometheus" else [cluster[0]]
    code, out, err = report(*files, *args)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and says in err, err


def test_bad_input_is_one_line_naming_the_file_and_exit_2(tmp_path, cluster):
    bad = tmp_path / "bad.ndjson"
    bad.write_bytes(open(cluster[0], "rb").read() + b"{not json\n")
    for args, says in [([str(tmp_path / "none.ndjson")], "cannot read"),
                       ([cluster[0], str(bad)], f"{bad}:{SAMPLES + 2}: not JSON"),
                       ([cluster[0], "--since", "2030-01-01T00:00"], "no snapshot in the range")]:
        code, out, err = report(*args)
        assert code == 2 and out == "" and err.startswith("gputop: ") and says in err, err
        assert len(err.splitlines()) == 1


def test_prometheus_hands_the_range_to_the_source_and_reports_its_records(monkeypatch):
    calls = []

    def fetch_records(url, start, end, *, selector=None, timeout=30.0, note=None):
        calls.append((url, start, end, selector))
        note("no copies here")  # what the source has to say goes to stderr, named
        return [{"job": "job 7", "inferred": False, "hpc_job": "7", "user": "bob",
                 "users": ["bob"], "gpus": ["GPU-a"], "first_seen": 1000.0,
                 "last_seen": 4600.0, "started": None, "gpu_s": 3600.0, "idle_gpu_s": 900.0,
                 "energy_j": 3.6e6, "idle_energy_j": None, "sm_active_pct": 50.0,
                 "peak_memory_mib": 100.0, "nodes": ["p1"]}]

    monkeypatch.setattr("gputop.report.prometheus.fetch_records", fetch_records)
    code, out, err = report("--prometheus", "http://prom:9090", "--since", "1000",
                            "--until", "2h", "--selector", '{job="gpus"}', "--format", "json")
    assert (code, err) == (0, "gputop report: no copies here\n")
    ((url, start, end, selector),) = calls
    assert (url, start, selector) == ("http://prom:9090", 1000.0, '{job="gpus"}')
    doc = json.loads(out)
    assert doc["end"] == end and doc["samples"] is None and doc["nodes"] == ["p1"]
    (job,) = doc["jobs"]
    assert (job["gpu_h"], job["idle_pct"], job["kwh"], job["idle_kwh"]) == (1.0, 25.0, 1.0, None)
    assert "N/A" in report("--prometheus", "http://prom:9090", "--since", "1000")[1]


def test_a_prometheus_that_does_not_answer_is_one_line_and_exit_1():
    from tests.support.ssh_harness import free_port

    code, out, err = report("--prometheus", f"http://127.0.0.1:{free_port()}", "--since", "2h")
    assert code == 1 and out == "" and len(err.splitlines()) == 1, err
    assert err.startswith("gputop: --prometheus http://127.0.0.1:"), err

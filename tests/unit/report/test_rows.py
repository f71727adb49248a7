"""The report's rows (gputop.report.rows): records of several nodes merged per job and user."""

from __future__ import annotations

import pytest

from gputop.report.rows import SORT_KEYS, job_rows, sort_rows, user_rows


def rec(job="job 4242", node="n1", user="alice", gpus=("GPU-0",), gpu_s=3600.0, idle_s=0.0,
        energy=None, idle_energy=None, sm=None, peak=1000.0, inferred=False, hpc_job="4242",
        first=100.0, last=200.0, started=None) -> dict:
    return {"job": job, "inferred": inferred, "hpc_job": hpc_job, "user": user,
            "users": [user] if user else [], "gpus": list(gpus), "first_seen": first,
            "last_seen": last, "started": started, "gpu_s": gpu_s, "idle_gpu_s": idle_s,
            "energy_j": energy, "idle_energy_j": idle_energy, "sm_active_pct": sm,
            "peak_memory_mib": peak, "nodes": [node]}


def test_a_scheduler_job_on_two_nodes_is_one_row_with_both():
    a = rec(node="n1", gpus=("GPU-0", "GPU-1"), gpu_s=7200.0, idle_s=3600.0, energy=3.6e6,
            idle_energy=0.9e6, sm=40.0, first=100.0, last=500.0, started=50.0)
    b = rec(node="n2", gpus=("GPU-0", "GPU-1"), gpu_s=7200.0, energy=7.2e6, idle_energy=0.0,
            sm=90.0, first=110.0, last=400.0)
    (row,) = job_rows([a, b], price=0.25)
    assert (row["job"], row["nodes"], row["hosts"]) == ("job 4242", 2, ["n1", "n2"])
    assert row["gpus"] == 4  # each node's GPU-0 and GPU-1: the same UUIDs, other GPUs
    assert row["gpu_h"] == 4.0 and row["idle_gpu_h"] == 1.0 and row["idle_pct"] == 25.0
    assert row["kwh"] == pytest.approx(3.0) and row["idle_kwh"] == pytest.approx(0.25)
    assert row["cost"] == pytest.approx(0.75)
    assert row["sm_pct"] == pytest.approx(65.0)  # weighted by GPU-hours: equal here
    assert row["peak_mem_mib"] == 2000.0
    assert (row["start"], row["end"], row["first_seen"]) == (50.0, 500.0, 100.0)


def test_prometheus_records_name_no_gpu_and_count_the_most_held_at_once():
    a, b = rec(node="p1", gpus=()), rec(node="p2", gpus=())
    a["gpu_count"], b["gpu_count"] = 8, 4
    (row,) = job_rows([a, b])
    assert row["gpus"] == 12 and row["nodes"] == 2


def test_mean_sm_activity_is_weighted_by_gpu_hours_over_the_records_that_measured_it():
    rows = job_rows([rec(node="n1", gpu_s=3 * 3600.0, sm=80.0), rec(node="n2", sm=0.0),
                     rec(node="n3", gpu_s=100 * 3600.0, sm=None)])
    assert rows[0]["sm_pct"] == pytest.approx(60.0)


def test_an_inferred_job_stays_one_per_node():
    same = {"job": "python serve.py", "inferred": True, "hpc_job": None}
    rows = job_rows([rec(node="n1", **same), rec(node="n2", **same)])
    assert [(r["job"], r["hosts"], r["inferred"]) for r in rows] == \
        [("python serve.py", ["n1"], True), ("python serve.py", ["n2"], True)]


def test_two_users_of_one_job_are_one_job_row_and_two_user_rows():
    records = [rec(user="alice", idle_s=600.0), rec(user="bob", gpus=("GPU-1",))]
    (job,) = job_rows(records)
    assert job["user"] == "alice,bob" and job["gpus"] == 2 and job["gpu_h"] == 2.0
    users = user_rows(records)
    assert [(u["user"], u["jobs"], u["gpu_h"], u["idle_gpu_h"]) for u in users] == \
        [("alice", 1, 1.0, 600.0 / 3600), ("bob", 1, 1.0, 0.0)]


def test_a_figure_no_record_reported_stays_none_never_zero():
    (row,) = job_rows([rec(energy=None, sm=None), rec(node="n2", energy=None, sm=None)],
                      price=0.3)
    assert row["kwh"] is None and row["idle_kwh"] is None and row["cost"] is None
    assert row["sm_pct"] is None
    (empty,) = job_rows([rec(gpu_s=0.0, peak=None)])
    assert empty["idle_pct"] is None and empty["peak_mem_mib"] is None
    (unpriced,) = job_rows([rec(energy=3.6e6)])
    assert unpriced["kwh"] == 1.0 and unpriced["cost"] is None
    # energy read on one node only: what was read, not N/A
    (partial,) = job_rows([rec(energy=3.6e6), rec(node="n2", energy=None)])
    assert partial["kwh"] == 1.0


def test_an_unknown_user_is_a_question_mark_as_the_ledger_names_it():
    (row,) = user_rows([rec(user=None)])
    assert row["user"] == "?"


def test_the_top_idle_holders_come_first_then_any_column_in_its_direction():
    records = [rec(job="job 1", hpc_job="1", idle_s=10.0, gpu_s=500.0, energy=1e6, first=3.0),
               rec(job="job 2", hpc_job="2", idle_s=90.0, gpu_s=100.0, energy=None, first=1.0),
               rec(job="job 3", hpc_job="3", idle_s=10.0, gpu_s=900.0, energy=2e6, first=2.0)]
    rows = job_rows(records)
    assert [r["job"] for r in rows] == ["job 2", "job 3", "job 1"]
    assert [r["job"] for r in sort_rows(rows, "gpu_h")] == ["job 3", "job 1", "job 2"]
    # N/A last whatever the direction, after a real 0
    assert [r["job"] for r in sort_rows(rows, "kwh")] == ["job 3", "job 1", "job 2"]
    zero = job_rows([rec(job="job b", hpc_job="b", energy=0.0), rec(job="job a", hpc_job="a")])
    assert [r["job"] for r in sort_rows(zero, "kwh")] == ["job b", "job a"]
    # names and times in order
    assert [r["job"] for r in sort_rows(rows, "start")] == ["job 2", "job 3", "job 1"]
    assert [r["job"] for r in sort_rows(rows, "job")] == ["job 1", "job 2", "job 3"]
    # a column the user table lacks leaves it in its own order
    users = user_rows(records + [rec(user="bob", idle_s=5.0)])
    assert sort_rows(users, "start") == users and users[0]["user"] == "alice"
    assert {"job", "user", "gpu_h", "idle_gpu_h", "idle_pct", "kwh", "cost", "sm_pct",
            "start", "end", "peak_mem_mib", "jobs", "nodes", "gpus"} == set(SORT_KEYS) - {"idle_kwh"}

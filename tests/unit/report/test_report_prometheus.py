"""The report's Prometheus source without a server: which instant queries it asks (at the
range's end, under the selector), when it asks a node's figures again in full, how their
answers become job records, and its errors, each one line of the cluster source's kinds. The
PromQL itself runs in a real Prometheus (tests/e2e/report)."""

from __future__ import annotations

import re
import threading

import pytest

from gputop.cluster.prometheus import PrometheusError, PrometheusTimeout
from gputop.core.units import MIB
from gputop.exporter import own
from gputop.report.prometheus import (
    NO_COPIES,
    build_records,
    copies_query,
    edges,
    exact_queries,
    exact_selectors,
    fetch_records,
    merge,
    node_selector,
    queries,
    recheck_query,
    start_queries,
)

URL = "http://prom:9090"
START, END = 1000.0, 4600.0
ALICE = {"hostname": "n1", "user": "alice", "hpc_job": "4242", "workload": "job 4242",
         "inferred": "false"}
BOB = {"Hostname": "n2", "user": "bob", "workload": "python nb.py", "inferred": "true"}
OLD = {"hostname": "n1", "user": "carol", "workload": "python old.py", "inferred": "true"}


def vector(*series: tuple[dict[str, str], float]) -> list[dict]:
    return [{"labels": labels, "value": value} for labels, value in series]


ANSWERS = {
    "gpu_s": vector((ALICE, 7200.0), (BOB, 3600.0), (OLD, 0.0)),
    "idle_gpu_s": vector((ALICE, 1800.0), (BOB, 3600.0), (OLD, 0.0)),
    "energy_j": vector((ALICE, 3.6e6)),  # Bob's GPU reports no energy
    "idle_energy_j": vector((ALICE, 1.8e5)),
    "sm_active_pct": vector((ALICE, 61.234)),  # Bob's 0 / 0: NaN, left out of the answer
    "first_seen": vector((ALICE, 900.0), (BOB, 2000.0), (OLD, 100.0)),
    "last_seen": vector((ALICE, 4600.0), (BOB, 4500.0), (OLD, 990.0)),
    "peak_memory_mib": vector((ALICE, 2 * 8192.04), (BOB, 1024.0)),
    "gpu_count": vector((ALICE, 2.0), (BOB, 1.0)),
}


# What Prometheus answers `queries` at END and `start_queries` at START, whose rises are ANSWERS.
AT_END = {
    "gpu_s": vector((ALICE, 9000.0), (BOB, 3600.0), (OLD, 50.0)),
    "idle_gpu_s": vector((ALICE, 2000.0), (BOB, 3600.0), (OLD, 0.0)),
    "energy_j": vector((ALICE, 4.0e6)),
    "idle_energy_j": vector((ALICE, 2.0e5)),
    "sm_active_s": vector((ALICE, 700.0), (BOB, 0.0)),
    "sm_measured_s": vector((ALICE, 1000.0), (BOB, 0.0)),
    **{name: ANSWERS[name] for name in ("first_seen", "last_seen", "peak_memory_mib", "gpu_count")},
    "first_low": ANSWERS["first_seen"],
}
AT_START = {  # Bob's job is new since START: none of his series were there
    "gpu_s": vector((ALICE, 1800.0), (OLD, 50.0)),
    "idle_gpu_s": vector((ALICE, 200.0), (OLD, 0.0)),
    "energy_j": vector((ALICE, 4.0e5)),
    "idle_energy_j": vector((ALICE, 2.0e4)),
    "sm_active_s": vector((ALICE, 148.894)),
    "sm_measured_s": vector((ALICE, 100.0)),
    "first_seen": vector((ALICE, 900.0), (OLD, 100.0)),
}


def answer(promql: str, at: float, selector: str = "", copies: bool = False) -> list[dict]:
    """Prometheus's answer to one of the first round's queries, by where it is asked."""
    for texts, when, answers in ((queries(START, END, selector, copies), END, AT_END),
                                 (start_queries(selector), START, AT_START)):
        names = [k for k, v in texts.items() if v == promql]
        if names and at == when:
            return answers[names[0]]
    return []  # whether there are copies, and the nodes to read again: none


def test_each_account_and_node_is_a_record_in_the_ledgers_format():
    bob, alice = build_records(ANSWERS, START)  # the most idle first
    assert alice == {
        "job": "job 4242", "inferred": False, "hpc_job": "4242", "user": "alice",
        "users": ["alice"], "gpus": [], "gpu_count": 2, "first_seen": 900.0,
        "last_seen": 4600.0, "started": None, "gpu_s": 7200.0, "idle_gpu_s": 1800.0,
        "energy_j": 3.6e6, "idle_energy_j": 1.8e5, "sm_active_pct": 61.23,
        "peak_memory_mib": 16384.1, "nodes": ["n1"]}
    # no energy read and no activity measured are None, never 0; either host label names it
    assert (bob["job"], bob["inferred"], bob["hpc_job"], bob["nodes"]) == \
        ("python nb.py", True, None, ["n2"])
    assert bob["energy_j"] is None and bob["idle_energy_j"] is None
    assert bob["sm_active_pct"] is None


def test_a_job_that_ended_before_the_range_is_no_record():
    assert "python old.py" not in {r["job"] for r in build_records(ANSWERS, START)}
    assert "python old.py" in {r["job"] for r in build_records(ANSWERS, 900.0)}


FAMILIES = [own.JOB_GPU_SECONDS, own.IDLE_SECONDS, own.JOB_ENERGY, own.IDLE_ENERGY,
            own.JOB_SM_ACTIVE, own.JOB_SM_MEASURED, own.JOB_FIRST_SEEN, own.JOB_LAST_SEEN,
            own.JOB_MEMORY_PEAK, own.JOB_GPUS_PEAK]


def test_every_family_is_asked_under_the_selector_at_each_edge_and_at_steps():
    selector = '{job="gpus", cluster=~"a|b"}'
    texts, starts = queries(START, END, selector), start_queries(selector)
    assert set(texts) == set(AT_END) and set(starts) == set(AT_START)
    asked = "\n".join([*texts.values(), *starts.values()])
    for family in FAMILIES:
        assert family + selector in asked, family
        # no family without it, and every subquery the whole range at half a day's steps
        assert not re.search(re.escape(family) + r"(?!\{)", asked), family
    assert set(re.findall(r"\[(\w+(?::\w+)?)\]", asked)) == {"3600000ms:43200s"}
    # each edge in queries of its own: no query reads the raw series at both
    assert "offset" not in asked and "[" not in "\n".join(starts.values())
    assert "by (Hostname, hostname, user, hpc_job, workload, inferred)" in texts["gpu_s"]
    # what is held now is not read: it is gone at the steps after a job's end
    assert own.JOB_MEMORY + "{" not in asked and own.JOB_GPUS + "{" not in asked


def test_a_figure_is_its_rise_between_the_edges_and_a_new_job_all_of_its_newest():
    figures, suspects = edges(AT_END, AT_START, START)
    assert build_records(figures, START) == build_records(ANSWERS, START)
    assert suspects == []


def test_an_account_unseen_at_the_start_or_opened_again_has_its_node_read_again():
    # Bob ran at the start (first seen before it) but no series of his was scraped there
    unseen = {**AT_END, "first_seen": vector((ALICE, 900.0), (BOB, 500.0), (OLD, 100.0))}
    assert edges(unseen, AT_START, START)[1] == [{"Hostname": "n2"}]
    # Alice's job was forgotten after its day and seen again: two first-seen times
    again = {**AT_END, "first_low": vector((ALICE, 200.0), (BOB, 2000.0), (OLD, 100.0))}
    assert edges(again, AT_START, START)[1] == [{"hostname": "n1"}]
    before = {**AT_START, "first_seen": vector((ALICE, 300.0), (OLD, 100.0))}
    assert edges(AT_END, before, START)[1] == [{"hostname": "n1"}]


def test_the_exact_queries_read_every_sample_of_the_range():
    texts = exact_queries(START, END, '{hostname=~"n2"}')
    assert set(texts) == set(ANSWERS)
    asked = "\n".join(texts.values())
    assert set(re.findall(r"\[(\w+(?::\w+)?)\]", asked)) == {"3600000ms"}
    assert "resets(" + own.JOB_GPU_SECONDS + '{hostname=~"n2"}' in asked


def test_the_nodes_are_picked_by_the_selector_less_its_account_matchers():
    assert node_selector('{job="gpus", user="alice", hpc_job=~"4.*", cluster!="b"}') == \
        '{job="gpus", cluster!="b"}'
    assert node_selector('{user="a,b", workload="x=\\"y\\""}') == ""
    assert node_selector("") == ""


def test_the_nodes_to_read_again_are_named_by_their_host_label():
    nodes = [{"hostname": "n.2"}, {"Hostname": "N3"}, {"hostname": "n4", "Hostname": "N4"}]
    assert exact_selectors('{job="gpus"}', nodes) == [
        '{job="gpus", Hostname=~"N3|N4"}', '{job="gpus", hostname=~"n\\\\.2"}']
    # a node with no host label to pick it by: all of them
    assert exact_selectors('{job="gpus"}', [{"hostname": "n2"}, {}]) == ['{job="gpus"}']


def test_a_node_read_again_has_its_series_from_the_second_round_alone():
    first = {"gpu_s": vector((ALICE, 1.0), (BOB, 2.0))}
    second = {"gpu_s": vector(({**ALICE, "user": "dave"}, 5.0), (BOB, 9.0))}
    merged = merge(first, second, {("", "n1")})
    assert merged == {"gpu_s": vector((BOB, 2.0), ({**ALICE, "user": "dave"}, 5.0))}


def test_it_asks_instant_queries_at_each_edge_and_builds_the_records():
    asked = []

    def ask(base: str, promql: str, timeout: float, at: float) -> list[dict]:
        asked.append((base, promql, at))
        return answer(promql, at)

    got = fetch_records(URL + "/", START, END, ask=ask)
    assert got == build_records(ANSWERS, START)
    # whether there are copies, then one round: each edge's queries at it, and the recheck
    assert asked[0] == (URL, copies_query(START, END), END)
    assert sorted(asked[1:]) == sorted(
        [(URL, q, END) for q in queries(START, END).values()]
        + [(URL, q, START) for q in start_queries().values()]
        + [(URL, recheck_query(START, END), END)])


@pytest.mark.parametrize("copied", [False, True])
def test_the_figures_read_the_hourly_copies_where_the_rules_keep_them(copied):
    """With the recording rules' copies in the range, every figure and the recheck read them
    between the edges, and no step; without, the raw series at steps."""
    asked = []

    def ask(base: str, promql: str, timeout: float, at: float) -> list[dict]:
        asked.append(promql)
        if promql == copies_query(START, END):
            return vector(({}, 12.0)) if copied else []
        return answer(promql, at, copies=copied)

    assert fetch_records(URL, START, END, ask=ask) == build_records(ANSWERS, START)
    assert set(asked[1:]) == {*queries(START, END, copies=copied).values(),
                              *start_queries().values(),
                              recheck_query(START, END, copies=copied)}
    between = "\n".join(asked[1:])
    assert (":43200s]" in between) is not copied
    for family in FAMILIES:
        assert (own.copy_of(family) + "[3600000ms]" in between) is copied, family
    # the nodes not copied early in the range (the rules came later) are read again in full
    early = f"last_over_time({own.copy_of(own.EXPORTER_START)}[3600000ms])"
    assert (early in recheck_query(START, END, copies=copied)) is copied
    week = recheck_query(START, START + 7 * 86400, copies=True)
    assert f"last_over_time({own.copy_of(own.EXPORTER_START)}[43200000ms] offset 561600000ms)" \
        in week  # the copies of the week's first half day


def test_the_nodes_the_recheck_names_are_read_again_under_a_selector_naming_them():
    selector = '{job="gpus"}'
    exact = exact_queries(START, END, '{job="gpus", hostname=~"n1"}')
    fixed = {**ALICE, "user": "alice"}
    asked = []

    def ask(base: str, promql: str, timeout: float, at: float) -> list[dict]:
        asked.append(promql)
        if promql in exact.values():
            [name] = [k for k, v in exact.items() if v == promql]
            return vector((fixed, 999.0)) if name == "gpu_s" else ANSWERS[name]
        if promql == recheck_query(START, END, selector):
            return vector(({"hostname": "n1"}, 1.0))
        return answer(promql, at, selector)

    got = fetch_records(URL, START, END, selector=selector, ask=ask)
    assert len(asked) == 1 + len(AT_END) + len(AT_START) + 1 + len(exact)
    by_job = {r["job"]: r for r in got}
    assert by_job["job 4242"]["gpu_s"] == 999.0  # n1's, from the second round
    assert by_job["python nb.py"]["gpu_s"] == 3600.0  # n2's, from the first


def test_a_peak_memory_figure_is_in_mib():
    assert f"/ {MIB}" in queries(START, END)["peak_memory_mib"]
    assert f"/ {MIB}" in exact_queries(START, END)["peak_memory_mib"]


@pytest.mark.parametrize(("url", "selector", "needle"), [
    ("prom:9090", None, "expected an http\\(s\\)://"),
    ("ftp://prom", None, "expected an http\\(s\\)://"),
    (URL, "job=gpus", "expected label matchers in braces"),
])
def test_a_bad_url_or_selector_is_a_prometheus_error(url, selector, needle):
    with pytest.raises(PrometheusError, match=needle):
        fetch_records(url, START, END, selector=selector, ask=lambda *a: [])


def test_a_range_that_ends_before_it_starts_is_refused():
    with pytest.raises(ValueError, match="ends"):
        fetch_records(URL, END, START, ask=lambda *a: [])


def test_a_refused_query_names_its_figure_in_one_line():
    def ask(base: str, promql: str, timeout: float, at: float) -> list[dict]:
        raise PrometheusError(f"Prometheus at {base} refused {promql}: bad_data")

    with pytest.raises(PrometheusError) as caught:
        fetch_records(URL, START, END, ask=ask)
    message = str(caught.value)
    assert message.startswith(f"Prometheus at {URL} refused the query for ") and \
        message.endswith(": bad_data") and len(message) < 120, message


def test_a_server_that_does_not_answer_in_time_is_a_timeout_in_one_line():
    hold = threading.Event()

    def ask(base: str, promql: str, timeout: float, at: float) -> list[dict]:
        hold.wait(timeout)  # as http_query: each request ends by the time it is given
        raise PrometheusTimeout(f"Prometheus at {base} did not answer {promql}")

    try:
        with pytest.raises(PrometheusTimeout) as caught:
            fetch_records(URL, START, END, timeout=0.2, ask=ask)
    finally:
        hold.set()
    assert str(caught.value) == f"Prometheus at {URL} did not answer within 0.2 s"


@pytest.mark.parametrize(("copied", "span", "heard"), [
    (False, 2 * 86400.0, True), (True, 2 * 86400.0, False), (False, 3600.0, False)])
def test_a_long_range_without_copies_says_how_to_make_it_fast(copied, span, heard):
    """Over days, the raw series at steps are slow: the person is told, once and before the
    figures are asked (a report that then runs out of time has said why)."""
    end = START + span
    heard_lines: list[str] = []

    def ask(base: str, promql: str, timeout: float, at: float) -> list[dict]:
        if promql == copies_query(START, end):
            return vector(({}, 3.0)) if copied else []
        assert heard_lines == [NO_COPIES] if heard else not heard_lines
        return []

    fetch_records(URL, START, end, ask=ask, note=heard_lines.append)
    assert heard_lines == ([NO_COPIES] if heard else [])
    assert "gputop exporter --recording-rules" in NO_COPIES

"""The one validation layer (gputop/core/untrusted.py): whatever a remote agent sends, the viewer
gets either a document whose every number is finite and within ±2^63 and whose every key has the
model's type, or a SchemaError naming what was wrong; it never crashes the cluster view, its
table, or `--once --json`."""

from __future__ import annotations

import json
import math
from dataclasses import fields

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.cluster import states
from gputop.cluster.hosts import HostSpec
from gputop.cluster.node import Node, Policy
from gputop.cluster.protocol import AgentDecoder, Checked, Problem, build_snapshot
from gputop.commands.cluster import once_document, render_table
from gputop.core import jsonout, untrusted
from gputop.core.model import Device, Process, Saturation, SchemaError, Snapshot, snapshot_to_json
from tests.support import strict_json

HELLO = b'{"hello":"gputop","version":"0.1.0","schema":"gputop/1","backend":"sim","host":"n"}'


def sim_doc() -> dict:
    backend = SimBackend(BackendOptions(scenario="mixed", seed=3))
    backend.open()
    return snapshot_to_json(backend.sample())


DOC = sim_doc()

# JSON values a liar may send: huge and negative integers, non-finite and huge floats (as Python
# reads them: 1e400 is inf), strings, nulls, bools, nested junk, lists.
scalars = (st.none() | st.booleans() | st.text(max_size=20) |
           st.integers(min_value=-10**400, max_value=10**400) |
           st.sampled_from([2**63, 2**63 + 1, -2**63 - 1, 10**400, -10**400]) |
           st.floats(allow_nan=True, allow_infinity=True) |
           st.sampled_from([math.inf, -math.inf, math.nan, 1e308, -1e308]))
junk = st.recursive(scalars, lambda kids: st.lists(kids, max_size=4) |
                    st.dictionaries(st.text(max_size=6), kids, max_size=4), max_leaves=12)

SNAPSHOT_KEYS = [f.name for f in fields(Snapshot)]
DEVICE_KEYS = [f.name for f in fields(Device)]
SAT_KEYS = [f.name for f in fields(Saturation)]
PROC_KEYS = [f.name for f in fields(Process)]


def all_numbers(value) -> list:
    if isinstance(value, dict):
        return [n for v in value.values() for n in all_numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in all_numbers(v)]
    return [value] if type(value) in (int, float) else []


def survives(doc: dict) -> None:
    """Through the decoder, the node, the table, the summary and `--once --json`."""
    line = json.dumps(doc).encode()  # Python writes inf/nan as Infinity/NaN: a liar may too
    node = Node(HostSpec("liar"), Policy(reconnect=False))
    node.session_started(0.0)
    node.on_line(HELLO, 0.1)
    node.on_line(json.dumps(DOC).encode(), 0.2)  # one good sample first
    assert node.state == states.OK
    node.on_line(line, 0.3)
    status = node.status()
    assert status.state in (states.OK, states.PROTOCOL_ERROR, states.INCOMPATIBLE)
    if status.state == states.OK:
        assert all(untrusted.number_ok(n) for n in all_numbers(status.data))
    else:
        assert status.reason
    text = jsonout.dumps(once_document([status], 1.0))
    strict_json.loads(text)
    render_table([status], 1.0)
    assert status.summary is not None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.sampled_from(DEVICE_KEYS), value=junk, where=st.integers(0, 7))
def test_any_value_in_any_device_key(key, value, where):
    doc = json.loads(json.dumps(DOC))
    doc["devices"][where % len(doc["devices"])][key] = value
    survives(doc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.sampled_from(SAT_KEYS + PROC_KEYS + SNAPSHOT_KEYS), value=junk)
def test_any_value_in_saturation_process_or_snapshot_keys(key, value):
    doc = json.loads(json.dumps(DOC))
    if key in SNAPSHOT_KEYS and key != "schema":
        doc[key] = value
    else:
        dev = doc["devices"][0]
        (dev["saturation"] if key in SAT_KEYS else
         (dev["processes"] or [{"pid": 1}])[0])[key] = value
    survives(doc)


@pytest.mark.parametrize("key,text,why", [
    ("power_draw_w", "1e400", "power_draw_w: a non-finite number"),
    ("power_draw_w", "9" * 400, "power_draw_w: a 400-digit integer"),
    ("memory_used_mib", str(-(2**63) - 1), "memory_used_mib"),
    ("index", str(2**64), "index"),
    ("saturation", "null", "saturation is null, object expected"),
    ("processes", "null", "processes is null, list expected"),
    ("utilization_gpu_pct", '"97"', "utilization_gpu_pct: num expected, got str"),
    ("clock_event_reasons", "[[[[]]]]", "clock_event_reasons: strlist expected"),
    ("sim", '{"work_rate": {"x": [1]}}', "sim: numdict expected"),
])
def test_the_lies_of_the_issue_are_protocol_errors_naming_the_key(key, text, why):
    doc = json.loads(json.dumps(DOC))
    doc["devices"][2][key] = "@LIE@"
    decoder = AgentDecoder()
    decoder.feed(HELLO)
    event = decoder.feed(json.dumps(doc).replace('"@LIE@"', text).encode())
    assert isinstance(event, Problem) and event.state == states.PROTOCOL_ERROR
    assert not event.fatal and f"devices[2].{why}" in event.reason


def test_a_400_digit_number_as_text_and_infinity_are_refused():
    decoder = AgentDecoder()
    decoder.feed(HELLO)
    text = json.dumps(DOC)
    for lie in ('"power_draw_w": 1e400', '"power_draw_w": ' + "9" * 400,
                '"power_draw_w": Infinity', '"power_draw_w": NaN'):
        line = text.replace('"power_draw_w": ', lie + ', "x": ', 1).encode()
        event = decoder.feed(line)
        assert isinstance(event, Problem) and event.state == states.PROTOCOL_ERROR, lie


@pytest.mark.parametrize("line", [b"[" * 200_000, b'{"a":' * 200_000, b"{" + b'"k":1,' * 10**5])
def test_deeply_nested_and_huge_junk_is_a_problem_not_a_crash(line):
    decoder = AgentDecoder()
    decoder.feed(HELLO)
    assert isinstance(decoder.feed(line), Problem)


def test_huge_lists_are_refused():
    doc = json.loads(json.dumps(DOC))
    doc["devices"] = [doc["devices"][0]] * (untrusted.MAX_DEVICES + 1)
    with pytest.raises(SchemaError, match="devices has 1025 entries"):
        untrusted.clean_document(doc)
    doc = json.loads(json.dumps(DOC))
    doc["hints"] = {"not": "a list"}
    with pytest.raises(SchemaError, match="hints: list expected, got dict"):
        untrusted.clean_document(doc)


def test_a_good_document_passes_unchanged():
    decoder = AgentDecoder()
    decoder.feed(HELLO)
    event = decoder.feed(json.dumps(DOC).encode())
    assert isinstance(event, Checked)
    assert snapshot_to_json(build_snapshot(event.doc)) == DOC


@given(st.text(max_size=80) | st.from_regex(r"-?[0-9a-fA-FxX.eE+]{0,5000}", fullmatch=True))
@settings(max_examples=300, deadline=None)
def test_parse_numbers_are_in_range_or_none(text):
    for value in (untrusted.parse_float(text), untrusted.parse_int(text),
                  untrusted.parse_int(text, 16)):
        assert value is None or untrusted.number_ok(value)


def test_parse_numbers_edges():
    assert untrusted.parse_float("1e400") is None and untrusted.parse_float("nan") is None
    assert untrusted.parse_float("-inf") is None and untrusted.parse_float("97.5") == 97.5
    assert untrusted.parse_int("9" * 4000) is None and untrusted.parse_int("-12") == -12
    assert untrusted.parse_int("0x" + "f" * 4000, 16) is None
    assert untrusted.parse_int("0x0000000000000004", 16) == 4
    assert untrusted.parse_int(str(2**63)) == 2**63 and untrusted.parse_int(str(2**63 + 1)) is None


@pytest.mark.parametrize("job", [{}, {"scheduler": "slurm"}, {"id": "4242"}])
def test_a_job_without_its_scheduler_and_id_is_a_protocol_error(job):
    """The model cannot build a Job without both; the check must come before, at the border."""
    doc = sim_doc()
    doc["devices"][0]["processes"][0]["job"] = job
    with pytest.raises(SchemaError, match=r"processes\[0\]\.job without"):
        untrusted.clean_document(doc)


def test_an_attributed_process_crosses_the_border_whole():
    doc = sim_doc()
    proc = doc["devices"][0]["processes"][0]
    proc["job"] = {"scheduler": "slurm", "id": "4242", "step": "0"}
    proc["container"] = {"runtime": "docker", "id": "ab" * 32, "name": "trainer"}
    snap = build_snapshot(untrusted.clean_document(doc))
    got = snap.devices[0].processes[0]
    assert (got.job.id, got.job.step, got.container.name) == ("4242", "0", "trainer")

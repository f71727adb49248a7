"""Xid errors explained (#29): NVIDIA's catalog as data, attribution of an Xid to the processes,
users and jobs on its GPU (pure), the bounded log, and the xid hint that names all of it."""

from __future__ import annotations

import pytest

from gputop.analysis import hints as H
from gputop.analysis.xid import XidLog, catalog, explain, parse_catalog
from gputop.core.model import Device, Job, Process, Snapshot, XidEvent


def snap(t: float, *devices: Device) -> Snapshot:
    return Snapshot(host="node-a", time=t, backend="sim", devices=devices)


ALICE = Process(pid=4242, user="alice", name="python", job=Job("slurm", "1234", "0"))
BOB = Process(pid=777, user="bob", name="sweep")


def test_the_catalog_names_its_source_and_driver_and_decodes_known_codes():
    cat = catalog()
    assert cat.url == "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
    assert cat.driver == "R575" and len(cat.entries) == 172
    x79 = cat.describe(79)
    assert (x79.name, x79.bucket, x79.action, x79.severity, x79.known) == (
        "GPU has fallen off the bus", "RESTART_BM", "drain the node and reboot it", "critical",
        True)
    assert x79.meaning.startswith("This event is logged when the GPU driver attempts to access")
    x13 = cat.describe(13)
    assert (x13.name, x13.action, x13.severity) == ("Graphics Engine Exception",
                                                    "restart the job", "warning")
    assert cat.describe(63).severity == "info"  # IGNORE: a row remap, nothing to do
    assert cat.describe(9).name == "ROBUST_CHANNEL_GR_ERROR_INSTANCE, unused on Ampere and newer"


def test_a_code_the_catalog_does_not_list_says_so_and_invents_nothing():
    for code in (0, 173, 99999):
        info = catalog().describe(code)
        assert info.name == f"unknown Xid {code} (not in NVIDIA's catalog of R575)"
        assert not info.known and info.bucket is None
        assert info.action == "the catalog gives no action for it"
    # a row whose Immediate Action column is empty has no made-up action either
    assert catalog().describe(167).action == "the catalog gives no action for it"


@pytest.mark.parametrize("data, message", [
    ({"source": {"url": "u", "driver": "d"}, "bucket": {"X": {"action": "a", "severity": "loud",
                                                              "nvidia": "n"}}}, "severity"),
    ({"source": {"url": "u", "driver": "d"},
      "xid": [{"code": 1, "mnemonic": "M", "description": "D", "immediate": "NOPE"}]},
     r"has no \[bucket\]"),
    ({"source": {"url": "u", "driver": "d"},
      "xid": [{"code": 1, "mnemonic": "M", "description": "D"}] * 2}, "listed twice"),
])
def test_a_malformed_catalog_is_refused_by_name(data, message):
    with pytest.raises(ValueError, match=message):
        parse_catalog(data)


def test_an_xid_is_tied_to_the_processes_users_and_jobs_on_its_gpu_at_that_moment():
    now = snap(20.0, Device(index=1, uuid="GPU-1", processes=(ALICE,),
                            xid_events=(XidEvent(1, 79, 20.0),)),
               Device(index=2, processes=(BOB,)))
    x = explain(XidEvent(1, 79, 20.0), now)
    assert (x.host, x.time, x.device, x.uuid, x.info.code) == ("node-a", 20.0, 1, "GPU-1", 79)
    assert [h.pid for h in x.hits] == [4242]  # not bob's: he is on another GPU
    assert x.jobs == ("job 1234",) and x.users == ("alice",)
    assert x.summary() == "GPU 1 Xid 79 (GPU has fallen off the bus): job 1234 (alice)"
    doc = x.to_json()
    assert (doc["code"], doc["name"], doc["action"], doc["pids"], doc["users"], doc["jobs"]) == (
        79, "GPU has fallen off the bus", "drain the node and reboot it", [4242], ["alice"],
        ["job 1234"])


def test_a_process_the_xid_ended_before_the_sample_is_still_named():
    """An Xid often ends the process it hit before gputop sees the event (a GPU off the bus
    lists no processes at all): the processes there one sample earlier and gone now count."""
    before = snap(19.0, Device(index=1, processes=(ALICE, BOB)))
    now = snap(20.0, Device(index=1, status="lost", processes=(),
                            xid_events=(XidEvent(1, 79, 20.0),)))
    x = explain(XidEvent(1, 79, 20.0), now, before)
    assert [(h.pid, h.ended) for h in x.hits] == [(4242, True), (777, True)]
    assert x.whom() == "job 1234 (alice, bob)"
    assert explain(XidEvent(1, 79, 20.0), now).whom() == "no process seen on it"


def test_without_a_job_the_processes_are_named():
    now = snap(5.0, Device(index=0, processes=(BOB,)))
    assert explain(XidEvent(0, 13, 5.0), now).summary() == (
        "GPU 0 Xid 13 (Graphics Engine Exception): pid 777 sweep (bob)")


def test_the_log_keeps_the_last_n_explained_events_newest_first():
    log = XidLog(size=2)
    log.add(snap(1.0, Device(index=0, processes=(BOB,))))
    for t, code in ((2.0, 13), (3.0, 31), (4.0, 43)):
        new = log.add(snap(t, Device(index=0, processes=(BOB,),
                                     xid_events=(XidEvent(0, code, t),))))
        assert [e.info.code for e in new] == [code]
    assert [e.info.code for e in log.events()] == [43, 31]  # bounded: 13 dropped
    assert log.latest(0).info.code == 43 and log.latest(1) is None


def test_the_xid_hint_names_the_xid_its_meaning_the_job_it_hit_and_what_to_do():
    history = [snap(19.0, Device(index=1, processes=(ALICE,), xid_last=0)),
               snap(20.0, Device(index=1, status="lost", status_reason="GPU has fallen off the bus",
                                 xid_events=(XidEvent(1, 79, 20.0),))),
               snap(21.0, Device(index=1, status="lost"))]
    found = [h for h in H.analyze(history) if h.code == "xid"]
    assert [(h.device, h.severity, h.message) for h in found] == [
        (1, "critical", "GPU 1 Xid 79 (GPU has fallen off the bus): job 1234 (alice) — drain the"
                        " node and reboot it")]
    assert found[0].advice.startswith("This event is logged when the GPU driver attempts")


def test_the_toml_parser_loads_with_the_catalog_at_the_first_xid_not_before():
    """A dashboard that sees no Xid (and reads no settings file) keeps the parser out (#26)."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from gputop.analysis.xid import XidLog\n"
            "from gputop.core.model import Device, Snapshot, XidEvent\n"
            "log = XidLog()\n"
            "log.add(Snapshot(host='n', time=1.0, backend='sim', devices=(Device(index=0),)))\n"
            "print('tomllib' in sys.modules)\n"
            "log.add(Snapshot(host='n', time=2.0, backend='sim', devices=(\n"
            "    Device(index=0, xid_events=(XidEvent(0, 79, 2.0),)),)))\n"
            "print('tomllib' in sys.modules, log.events()[0].info.code)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split("\n")[:2] == ["False", "True 79"]

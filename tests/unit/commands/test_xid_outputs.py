"""An Xid seen on a GPU reaches `snapshot --json` explained, with the job it hit (#29)."""

from __future__ import annotations

import json

from tests.unit.commands.test_bad_combinations import run_inline


def test_snapshot_json_lists_each_xid_of_its_window_explained_newest_first():
    code, out, err = run_inline(["--backend", "sim", "--scenario", "xid-thermal",
                                 "--sim-speed", "1000", "snapshot", "--json", "--window", "45"])
    assert code == 0, err
    doc = json.loads(out)
    events = doc["xid_events"]
    assert [(e["device"], e["code"], e["name"], e["action"]) for e in events] == [
        (3, 13, "Graphics Engine Exception", "restart the job"),
        (1, 79, "GPU has fallen off the bus", "drain the node and reboot it")]
    assert events[1]["users"] == ["alice"] and events[1]["pids"]  # the job on GPU 1 then
    assert (events[1]["jobs"], events[0]["jobs"]) == (["job 4242"], ["job 4243"])
    assert events[0]["users"] == ["bob"]
    assert events[1]["time"] - events[0]["time"] == -20.0
    # the hint says the same in words
    assert any(h["code"] == "xid" and h["message"].startswith(
        "GPU 1 Xid 79 (GPU has fallen off the bus): job 4242 (alice)")
               for h in doc["hints"])

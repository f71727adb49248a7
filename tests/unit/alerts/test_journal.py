"""The journal: JSON lines that survive a crash, stay bounded, and let a restart carry on."""

from __future__ import annotations

from gputop.alerts.engine import AlertEngine
from gputop.alerts.journal import Journal, default_path, journal_path, load_state, read
from gputop.alerts.model import Alert, Rule
from gputop.alerts.rules import parse_condition
from gputop.core.model import Device, Snapshot


def alert(n: int, state: str = "firing", key: str | None = None) -> Alert:
    return Alert(rule="r", key=key or f"r/node1/gpu{n}", state=state,  # type: ignore[arg-type]
                 severity="warning", at=float(n), summary=f"GPU {n} hot", node="node1", gpu=n,
                 since=float(n), labels=(("value", "91"),))


def test_appends_and_reads_back(tmp_path):
    path = tmp_path / "state" / "alerts.jsonl"
    journal = Journal(path)
    journal.append([alert(0), alert(1)])
    journal.append([alert(0, "resolved")])
    assert read(path) == ([alert(0), alert(1), alert(0, "resolved")], 0)
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_a_torn_last_line_is_skipped_without_an_exception(tmp_path):
    path = tmp_path / "alerts.jsonl"
    Journal(path).append([alert(0)])
    with open(path, "ab") as fh:
        fh.write(b'{"rule": "r", "key": "r/no')  # the crash
    assert read(path) == ([alert(0)], 1)


def test_the_next_append_after_a_torn_line_stays_whole(tmp_path):
    path = tmp_path / "alerts.jsonl"
    Journal(path).append([alert(0)])
    with open(path, "ab") as fh:
        fh.write(b'{"rule": "r", "ke')
    Journal(path).append([alert(1)])
    assert read(path) == ([alert(0), alert(1)], 1)


def test_rotation_bounds_the_journal(tmp_path):
    path = tmp_path / "alerts.jsonl"
    Journal(path).append([alert(100)])
    line = path.stat().st_size  # one line; the others are as long
    path.unlink()
    journal = Journal(path, max_bytes=10 * line)
    for n in range(100, 300):
        journal.append([alert(n)])
    assert path.stat().st_size <= 10 * line
    rotated = path.with_name("alerts.jsonl.1")
    assert rotated.stat().st_size <= 10 * line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["alerts.jsonl", "alerts.jsonl.1"]
    alerts, skipped = read(path, max_bytes=10 * line)
    assert skipped == 0 and alerts[-1] == alert(299) and len(alerts) == 20
    assert [a.at for a in alerts] == sorted(a.at for a in alerts)  # .1 first, then the file


def test_a_missing_journal_is_empty(tmp_path):
    assert read(tmp_path / "nothing.jsonl") == ([], 0)


def test_paths(tmp_path):
    assert default_path({"XDG_STATE_HOME": "/s"}) == \
        default_path({"XDG_STATE_HOME": "/s", "HOME": "/h"})
    assert str(default_path({"XDG_STATE_HOME": "/s"})) == "/s/gputop/alerts.jsonl"
    assert str(journal_path({"journal": "/j/a.jsonl"}, "f")) == "/j/a.jsonl"
    assert journal_path(None, "f", {"XDG_STATE_HOME": "/s"}) == default_path({"XDG_STATE_HOME": "/s"})


def test_a_restarted_engine_does_not_refire_what_its_journal_holds(tmp_path):
    path = tmp_path / "alerts.jsonl"
    rules = [Rule(name="hot", condition=parse_condition("temperature_c > 85"),
                  text="temperature_c > 85", cooldown_s=600)]

    def hot(t: float, temp: float) -> Snapshot:
        return Snapshot(host="node1", time=t, backend="sim",
                        devices=(Device(0, temperature_c=temp),))

    first = AlertEngine(rules, journal_state=load_state(path))
    for t in range(3):
        Journal(path).append(first.observe(hot(t, 91)))
    with open(path, "ab") as fh:
        fh.write(b'{"rule": "hot", "key"')  # killed mid-write
    second = AlertEngine(rules, journal_state=load_state(path))
    assert second.observe(hot(10, 91)) == ()
    third = AlertEngine(rules, journal_state=load_state(path))
    (resolved,) = third.observe(hot(20, 60))
    assert (resolved.state, resolved.since) == ("resolved", 0.0)
